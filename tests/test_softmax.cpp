// Tests for mha/softmax.hpp: the plain stable softmax over the key axis.
// (The engine's vector kernel is held to it in tests/fast/test_softmax_kernel.cpp.)
#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <stdexcept>
#include <vector>

#include "mha/init.hpp"
#include "mha/mask.hpp"
#include "mha/softmax.hpp"

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

TEST_CASE("softmax_row: a fully masked row, a NaN and an Inf") {
    const float inf = std::numeric_limits<float>::infinity();
    std::vector<float> masked(5, -inf);
    mha::softmax_row(masked.data(), masked.size());
    for (float w : masked) CHECK(w == 0.0f);
    // A NaN hides from the max (std::max drops it) but still spoils its row.
    std::vector<float> nan_masked = {-inf, NAN, -inf};
    mha::softmax_row(nan_masked.data(), nan_masked.size());
    for (float w : nan_masked) CHECK(std::isnan(w));
    std::vector<float> plus_inf = {0.0f, inf, 1.0f};  // inf - inf is NaN
    mha::softmax_row(plus_inf.data(), plus_inf.size());
    for (float w : plus_inf) CHECK(std::isnan(w));
    std::vector<float> one = {-3.0f};
    mha::softmax_row(one.data(), 1);
    CHECK(one[0] == 1.0f);
}
