// Tests for mha/softmax.hpp: softmax over the key axis.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <stdexcept>
#include <vector>

#include "mha/init.hpp"
#include "mha/mask.hpp"
#include "mha/softmax.hpp"
#include "worst.hpp"

// The 4-lane build of the core's softmax kernel, compiled into this test:
// on a machine with AVX2, softmax_row() runs the 8-lane build instead, and
// both must give the same weights.
#define MHA_LANES 4
#include "mha/softmax_kernel.hpp"

TEST_CASE("softmax of [1, 2, 3]") {
    /*py
    import torch
    torch.softmax(torch.tensor([1., 2., 3.]), -1)  # [0.0900, 0.2447, 0.6652]
    By hand: e^-2, e^-1, 1 over their sum 1.5032 = 0.09003, 0.24473, 0.66524.
    */
    mha::Tensor4 s = {{{{1, 2, 3}}}};
    const mha::Tensor4 w = mha::softmax(s);
    const mha::Tensor4 want = {{{{0.09003057f, 0.24472847f, 0.66524096f}}}};
    CHECK(mha::max_abs_diff(w, want) < 1e-7);
}

TEST_CASE("softmax: every row sums to 1, over the last axis only") {
    mha::Rng rng(6);
    mha::Tensor4 s({3, 2, 5, 7});
    for (float& x : s) x = 4 * rng.normal();
    const mha::Tensor4 w = mha::softmax(s);
    for (std::size_t r = 0; r < w.size() / 7; ++r) {
        double sum = 0;
        for (std::size_t j = 0; j < 7; ++j) {
            CHECK(w.data()[r * 7 + j] >= 0.0f);
            sum += w.data()[r * 7 + j];
        }
        CHECK(sum == doctest::Approx(1.0).epsilon(1e-6));
    }
}

TEST_CASE("softmax: huge logits stay finite (the max is subtracted)") {
    mha::Tensor4 s = {{{{1e4f, -1e4f, 0.0f}, {1e30f, -1e30f, 1e30f}}}};
    const mha::Tensor4 w = mha::softmax(s);
    const mha::Tensor4 want = {{{{1, 0, 0}, {0.5f, 0, 0.5f}}}};
    CHECK(mha::max_abs_diff(w, want) < 1e-7);
}

TEST_CASE("softmax: a fully masked row is all 0 with -inf, uniform with -1e10") {
    mha::Tensor4 s = {{{{0.3f, 0.1f, 2.0f}, {1.0f, 2.0f, 3.0f}}}};
    const mha::Mask none_in_row_1 = {{{{1, 1, 1}, {0, 0, 0}}}};
    const mha::Tensor4 w_inf = mha::softmax(mha::apply_mask(s, none_in_row_1));
    const mha::Tensor4 w_big =
        mha::softmax(mha::apply_mask(s, none_in_row_1, -1e10f));
    for (std::size_t j = 0; j < 3; ++j) {
        CHECK(w_inf(0, 0, 1, j) == 0.0f);  // the core's policy: no NaN
        CHECK(w_big(0, 0, 1, j) == doctest::Approx(1.0 / 3));
        CHECK(w_inf(0, 0, 0, j) == w_big(0, 0, 0, j));  // row 0 untouched
    }
}

TEST_CASE("softmax: a NaN score gives NaN weights in its row only") {
    mha::Tensor4 s = {{{{0.0f, NAN, 1.0f}, {1.0f, 2.0f, 3.0f}}}};
    const mha::Tensor4 w = mha::softmax(s);
    CHECK(std::isnan(w(0, 0, 0, 1)));
    CHECK(w(0, 0, 1, 2) == doctest::Approx(0.66524096));
    CHECK_THROWS_AS(mha::softmax(mha::Tensor4::from_shape({1, 1, 1, 0})),
                    std::invalid_argument);
}

TEST_CASE("exp_nonpositive: 1e-7 relative down to -87.3, exactly 0 from -87.7 down") {
    // The kernel's own e^x (the 4-lane build), four values per call.
    auto exp4 = [](float a, float b, float c, float d) {
        return mha::exp_nonpositive(mha::F{a, b, c, d});
    };
    double worst = 0;
    mha::Rng rng(3);
    for (int i = 0; i < 200000; ++i) {
        // Evenly down to -87.3, and as many again in [-3, 0], where the
        // weights that matter are.
        const float x[4] = {-87.3f * float(i) / 200000, rng.uniform(-3.0f, 0.0f),
                            -87.3f * (float(i) + 0.5f) / 200000, -rng.uniform(0.0f, 1e-3f)};
        const mha::F y = exp4(x[0], x[1], x[2], x[3]);
        for (int l = 0; l < 4; ++l) {
            const double want = std::exp(double(x[l]));
            mha_test::keep_worst(worst, std::abs(y[l] - want) / want);
        }
    }
    CHECK(worst < 1e-7);
    // Subnormal results, just above where they flush to 0: still right, to
    // a few units of the smallest subnormal (1.4e-45).
    for (float x = -87.65f; x < -87.3f; x += 0.01f) {
        CAPTURE(x);
        CHECK(std::abs(exp4(x, x, x, x)[0] - std::exp(double(x))) < 5e-45);
    }
    const float inf = std::numeric_limits<float>::infinity();
    const mha::F zeros = exp4(-87.7f, -88.0f, -1e30f, -inf);
    for (int l = 0; l < 4; ++l) CHECK(zeros[l] == 0.0f);
    const mha::F edges = exp4(0.0f, -0.0f, NAN, -1e-30f);
    CHECK(edges[0] == 1.0f);
    CHECK(edges[1] == 1.0f);
    CHECK(std::isnan(edges[2]));
    CHECK(edges[3] == 1.0f);
}

TEST_CASE("softmax_row: both kernel builds against exp() in double, long rows") {
    // Rows long enough to use the vector loops (8 or 16 at a time) and their
    // leftovers; scores in [-30, 10], some -inf (masked). Tolerance: each
    // e^x is within 2e-7 relative, so a weight (<= 1) is within 1e-6.
    mha::Rng rng(5);
    for (std::size_t n : {1, 3, 7, 8, 15, 16, 17, 31, 64, 100, 2048}) {
        CAPTURE(n);
        std::vector<float> s(n);
        for (std::size_t j = 0; j < n; ++j) {
            s[j] = rng.uniform(-30.0f, 10.0f);
            if (j % 5 == 3) s[j] = -std::numeric_limits<float>::infinity();
        }
        double max = -INFINITY, sum = 0;
        for (float x : s) max = std::max(max, double(x));
        for (float x : s) sum += std::exp(double(x) - max);
        std::vector<float> fast = s, four = s;
        mha::softmax_row(fast.data(), n);
        mha::softmax_row_kernel(four.data(), n);
        double worst = 0;
        for (std::size_t j = 0; j < n; ++j) {
            const double want = std::exp(double(s[j]) - max) / sum;
            mha_test::keep_worst(worst, std::abs(fast[j] - want));
            mha_test::keep_worst(worst, std::abs(four[j] - want));
            if (j % 5 == 3) CHECK((fast[j] == 0.0f && four[j] == 0.0f));
        }
        CHECK(worst < 1e-6);
    }
}

TEST_CASE("softmax_row: long fully masked and NaN rows, in both builds") {
    for (int build = 0; build < 2; ++build) {
        CAPTURE(build);
        auto run = [build](std::vector<float>& row) {
            if (build == 0) mha::softmax_row(row.data(), row.size());
            else mha::softmax_row_kernel(row.data(), row.size());
        };
        std::vector<float> masked(37, -std::numeric_limits<float>::infinity());
        run(masked);
        for (float w : masked) CHECK(w == 0.0f);
        std::vector<float> nan_row(37, 0.5f);
        nan_row[9] = NAN;  // inside the vector loop, not the leftovers
        run(nan_row);
        for (float w : nan_row) CHECK(std::isnan(w));
        std::vector<float> nan_masked(37, -std::numeric_limits<float>::infinity());
        nan_masked[20] = NAN;  // the max misses it; the row is still NaN
        run(nan_masked);
        for (float w : nan_masked) CHECK(std::isnan(w));
    }
}
