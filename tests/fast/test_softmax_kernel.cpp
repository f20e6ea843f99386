// Tests for mha/fast/softmax.hpp: the engine's softmax kernel, in both
// builds, against exp() in double and against the plain softmax of stage 5
// (mha::softmax_row), and its own e^x alone.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "../worst.hpp"
#include "mha/fast/softmax.hpp"
#include "mha/init.hpp"
#include "mha/softmax.hpp"

// The 4-lane build of the kernel, compiled into this test: on a machine with
// AVX2, fast::softmax_row() runs the 8-lane build instead, and both must
// give the same weights.
#define MHA_LANES 4
#include "mha/fast/softmax_kernel.hpp"

TEST_CASE("exp_nonpositive: 1e-7 relative down to -87.3, exactly 0 from -87.7 down") {
    // The kernel's own e^x (the 4-lane build), four values per call.
    auto exp4 = [](float a, float b, float c, float d) {
        return mha::fast::exp_nonpositive(mha::fast::F{a, b, c, d});
    };
    double worst = 0;
    mha::Rng rng(3);
    for (int i = 0; i < 200000; ++i) {
        // Evenly down to -87.3, and as many again in [-3, 0], where the
        // weights that matter are.
        const float x[4] = {-87.3f * float(i) / 200000, rng.uniform(-3.0f, 0.0f),
                            -87.3f * (float(i) + 0.5f) / 200000, -rng.uniform(0.0f, 1e-3f)};
        const mha::fast::F y = exp4(x[0], x[1], x[2], x[3]);
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
    const mha::fast::F zeros = exp4(-87.7f, -88.0f, -1e30f, -inf);
    for (int l = 0; l < 4; ++l) CHECK(zeros[l] == 0.0f);
    const mha::fast::F edges = exp4(0.0f, -0.0f, NAN, -1e-30f);
    CHECK(edges[0] == 1.0f);
    CHECK(edges[1] == 1.0f);
    CHECK(std::isnan(edges[2]));
    CHECK(edges[3] == 1.0f);
}

TEST_CASE("softmax kernel: both builds against exp() in double, long rows") {
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
        mha::fast::softmax_row(fast.data(), n);
        mha::fast::softmax_row_kernel(four.data(), n);
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

TEST_CASE("softmax kernel: long fully masked and NaN rows, in both builds") {
    for (int build = 0; build < 2; ++build) {
        CAPTURE(build);
        auto run = [build](std::vector<float>& row) {
            if (build == 0) mha::fast::softmax_row(row.data(), row.size());
            else mha::fast::softmax_row_kernel(row.data(), row.size());
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

TEST_CASE("softmax kernel: equals the plain softmax of stage 5, in both builds") {
    // The same rows through mha::softmax_row (std::exp, plain loops) and
    // both kernel builds: lengths across the vector steps, scores from -60
    // to 20 with masked keys, huge logits, and a fully masked row.
    const float inf = std::numeric_limits<float>::infinity();
    mha::Rng rng(8);
    for (std::size_t n : {1, 2, 5, 8, 9, 16, 23, 64, 65, 300}) {
        for (int kind = 0; kind < 3; ++kind) {
            CAPTURE(n); CAPTURE(kind);
            std::vector<float> s(n);
            for (std::size_t j = 0; j < n; ++j) {
                s[j] = kind == 1 ? rng.uniform(-1e30f, 1e30f) : rng.uniform(-60.0f, 20.0f);
                if (kind == 2 || j % 4 == 1) s[j] = -inf;  // kind 2: all masked
            }
            std::vector<float> plain = s, fast = s, four = s;
            mha::softmax_row(plain.data(), n);
            mha::fast::softmax_row(fast.data(), n);
            mha::fast::softmax_row_kernel(four.data(), n);
            double worst = 0;
            for (std::size_t j = 0; j < n; ++j) {
                mha_test::keep_worst(worst, std::abs(double(fast[j]) - plain[j]));
                mha_test::keep_worst(worst, std::abs(double(four[j]) - plain[j]));
                if (plain[j] == 0.0f) CHECK((fast[j] == 0.0f && four[j] == 0.0f));
            }
            CHECK(worst < 1e-6);  // each e^x within 2e-7 relative; weights <= 1
        }
    }
}

TEST_CASE("softmax gradient kernel: both builds against the formula in double") {
    // dS_j = P_j (dP_j - sum_k P_k dP_k) over the first c keys; 0 where the
    // mask says masked and from c on. Lengths across the vector steps and
    // their leftovers; a NaN in dP makes every kept key NaN, as the sum.
    mha::Rng rng(9);
    for (std::size_t n : {1, 7, 8, 9, 16, 17, 64, 100}) {
        for (std::size_t c : {std::size_t(0), n / 2, n - 1, n}) {
            for (int masked = 0; masked < 2; ++masked) {
                CAPTURE(n); CAPTURE(c); CAPTURE(masked);
                std::vector<float> p(n), dp(n);
                std::vector<unsigned char> keep(n);
                for (std::size_t j = 0; j < n; ++j) {
                    p[j] = rng.uniform(0.0f, 1.0f);
                    dp[j] = rng.uniform(-2.0f, 2.0f);
                    keep[j] = masked == 0 || j % 3 != 1;
                }
                double dot = 0;
                for (std::size_t j = 0; j < c; ++j) dot += double(p[j]) * dp[j];
                const unsigned char* k = masked != 0 ? keep.data() : nullptr;
                std::vector<float> fast = dp, four = dp;
                fast.push_back(7.0f);  // one past n: must stay
                mha::fast::softmax_grad_row(p.data(), fast.data(), k, c, n);
                mha::fast::softmax_grad_row_kernel(p.data(), four.data(), k, c, n);
                double worst = 0;
                for (std::size_t j = 0; j < n; ++j) {
                    const double want = j < c && keep[j] != 0 ? p[j] * (dp[j] - dot) : 0.0;
                    mha_test::keep_worst(worst, std::abs(fast[j] - want));
                    mha_test::keep_worst(worst, std::abs(four[j] - want));
                    if (want == 0.0) CHECK((fast[j] == 0.0f && four[j] == 0.0f));
                }
                CHECK(worst < 1e-5);  // |terms| <= 2, up to 100 of them, in float
                CHECK(fast[n] == 7.0f);
            }
        }
    }
    for (std::size_t nan_at : {3, 17}) {  // in the vector loop, in the leftovers
        CAPTURE(nan_at);
        std::vector<float> p(20, 0.05f), fast(20, 0.5f);
        std::vector<unsigned char> keep(20, 1);
        keep[5] = 0;
        fast[nan_at] = NAN;
        std::vector<float> four = fast;
        mha::fast::softmax_grad_row(p.data(), fast.data(), keep.data(), 20, 20);
        mha::fast::softmax_grad_row_kernel(p.data(), four.data(), keep.data(), 20, 20);
        for (std::size_t j = 0; j < 20; ++j) {
            CAPTURE(j);
            CHECK(std::isnan(fast[j]) == (j != 5));
            CHECK(std::isnan(four[j]) == (j != 5));
        }
    }
}

TEST_CASE("row max kernel: both builds against std::max, any length, NaN passed over") {
    mha::Rng rng(5);
    for (std::size_t n : {0, 1, 7, 8, 31, 32, 33, 100}) {
        std::vector<float> row(n);
        for (float& x : row) x = 3 * rng.normal();
        if (n > 9) row[n / 2] = NAN;  // passed over, as std::max(m, NaN) keeps m
        for (float init : {-std::numeric_limits<float>::infinity(), 2.5f}) {
            float want = init;
            for (float x : row) want = std::max(want, x);
            CAPTURE(n);
            CAPTURE(init);
            CHECK(mha::fast::row_max(row.data(), n, init) == want);  // the machine's build
            CHECK(mha::fast::row_max_kernel(row.data(), n, init) == want);  // 4 lanes
        }
    }
}

TEST_CASE("soft-cap kernel: both builds against tanh() in double, and its derivative") {
    // Scores from tiny to huge around the branch at |s / C| = 0.125, for
    // C = 0.5 and 50; the cap and 1 - tanh^2 within 5e-7 of C (and of 1).
    mha::Rng rng(6);
    for (float cap : {0.5f, 50.0f}) {
        for (std::size_t n : {1, 7, 8, 33, 1000}) {
            std::vector<float> row(n);
            for (std::size_t j = 0; j < n; ++j) {
                const double scale = std::pow(10.0, double(j % 9) - 5.0);  // 1e-5 .. 1e3
                row[j] = float(cap * scale * rng.normal());
            }
            for (int build = 0; build < 2; ++build) {
                std::vector<float> got = row, d(n);
                if (build == 0) mha::fast::soft_cap_row(got.data(), n, cap, d.data());
                else mha::fast::soft_cap_kernel(got.data(), n, cap, d.data());  // 4 lanes
                double worst = 0, worst_d = 0;
                for (std::size_t j = 0; j < n; ++j) {
                    const double t = std::tanh(double(row[j]) / cap);
                    mha_test::keep_worst(worst, std::fabs(got[j] - cap * t) / cap);
                    mha_test::keep_worst(worst_d, std::fabs(d[j] - (1.0 - t * t)));
                }
                CAPTURE(cap); CAPTURE(n); CAPTURE(build);
                CHECK(worst < 5e-7);
                CHECK(worst_d < 5e-7);
            }
        }
    }
    // +-inf to +-C, NaN stays NaN, and without the derivative too
    const float inf = std::numeric_limits<float>::infinity();
    std::vector<float> odd = {inf, -inf, NAN, 0.0f, -0.0f, 1e-30f, 100.0f, -100.0f, 3.0f};
    mha::fast::soft_cap_row(odd.data(), odd.size(), 2.0f, nullptr);
    CHECK(odd[0] == 2.0f);
    CHECK(odd[1] == -2.0f);
    CHECK(std::isnan(odd[2]));
    CHECK(odd[3] == 0.0f);
    CHECK(odd[5] == doctest::Approx(1e-30f));
    CHECK(odd[6] == 2.0f);
    CHECK(odd[7] == -2.0f);
    CHECK(odd[8] == doctest::Approx(2.0 * std::tanh(1.5)).epsilon(1e-6));
}
