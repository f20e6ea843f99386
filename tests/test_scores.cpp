// Tests for mha/scores.hpp: Q K^T / sqrt(D).
#include <doctest/doctest.h>

#include <cmath>
#include <stdexcept>

#include <xtensor/xview.hpp>

#include "mha/init.hpp"
#include "mha/scores.hpp"

TEST_CASE("scaled_scores: a hand-computed Tq=2, Tk=3, D=2 example") {
    /*py
    import torch
    Q = torch.tensor([[[[1., 0.], [0., 2.]]]])
    K = torch.tensor([[[[1., 1.], [2., 0.], [0., -1.]]]])
    Q @ K.transpose(2, 3) / 2 ** 0.5
    # [[[[0.7071, 1.4142, 0.0000], [1.4142, 0.0000, -1.4142]]]]
    By hand: q0.k1 = 2 -> 2 / sqrt(2) = 1.4142; q1.k2 = -2 -> -1.4142.
    */
    const mha::Tensor4 q = {{{{1, 0}, {0, 2}}}};
    const mha::Tensor4 k = {{{{1, 1}, {2, 0}, {0, -1}}}};
    const mha::Tensor4 s = mha::scaled_scores(q, k);
    const float r = std::sqrt(2.0f);
    const mha::Tensor4 want = {{{{1 / r, 2 / r, 0}, {2 / r, 0, -2 / r}}}};
    CHECK(mha::shape_of(s) == "[1, 1, 2, 3]");
    CHECK(mha::max_abs_diff(s, want) < 1e-6);
}

TEST_CASE("scaled_scores: each (batch, head) block is its own product") {
    mha::Rng rng(4);
    mha::Tensor4 q({2, 3, 4, 5}), k({2, 3, 6, 5});
    for (float& x : q) x = rng.normal();
    for (float& x : k) x = rng.normal();
    const mha::Tensor4 s = mha::scaled_scores(q, k);
    CHECK(mha::shape_of(s) == "[2, 3, 4, 6]");
    for (std::size_t b = 0; b < 2; ++b)
        for (std::size_t h = 0; h < 3; ++h)
            for (std::size_t i = 0; i < 4; ++i)
                for (std::size_t j = 0; j < 6; ++j) {
                    double dot = 0;
                    for (std::size_t d = 0; d < 5; ++d)
                        dot += double(q(b, h, i, d)) * k(b, h, j, d);
                    CHECK(s(b, h, i, j) ==
                          doctest::Approx(dot / std::sqrt(5.0)).epsilon(1e-5));
                }
}

TEST_CASE("scaled_scores: grouped heads read their kv head, as repeat_interleave") {
    /*py
    k_rep = k.repeat_interleave(H // H_kv, dim=1)  # [B, H, Tk, D]: head h reads h // group
    */
    mha::Rng rng(14);
    mha::Tensor4 q({2, 6, 3, 4}), k({2, 2, 5, 4});  // H = 6 query heads, H_kv = 2
    for (float& x : q) x = rng.normal();
    for (float& x : k) x = rng.normal();
    mha::Tensor4 k_rep({2, 6, 5, 4});
    for (std::size_t b = 0; b < 2; ++b)
        for (std::size_t h = 0; h < 6; ++h) xt::view(k_rep, b, h) = xt::view(k, b, h / 3);
    CHECK(mha::max_abs_diff(mha::scaled_scores(q, k), mha::scaled_scores(q, k_rep)) == 0.0);
}

TEST_CASE("scaled_scores: mismatched B or D, and key heads that do not divide, are refused") {
    const auto q = mha::Tensor4::from_shape({1, 2, 3, 4});
    CHECK_THROWS_WITH_AS(mha::scaled_scores(q, mha::Tensor4::from_shape({1, 2, 3, 5})),
                         doctest::Contains("[1, 2, 3, 5]"), std::invalid_argument);
    CHECK_THROWS_AS(mha::scaled_scores(q, mha::Tensor4::from_shape({2, 2, 3, 4})),
                    std::invalid_argument);
    CHECK_THROWS_WITH_AS(mha::scaled_scores(q, mha::Tensor4::from_shape({1, 3, 3, 4})),
                         doctest::Contains("k's heads divide q's"), std::invalid_argument);
    CHECK_THROWS_AS(mha::scaled_scores(q, mha::Tensor4::from_shape({1, 2, 0, 4})),
                    std::invalid_argument);
}
