// Tests for mha/mask.hpp: tril, padding, masked_fill.
#include <doctest/doctest.h>

#include <cmath>
#include <stdexcept>

#include "mha/mask.hpp"

TEST_CASE("causal_mask is torch.tril, square and rectangular") {
    /*py
    import torch
    torch.tril(torch.ones(3, 3, dtype=bool)).int()  # [[1,0,0],[1,1,0],[1,1,1]]
    torch.tril(torch.ones(2, 3, dtype=bool)).int()  # [[1,0,0],[1,1,0]]
    */
    const mha::Mask m = mha::causal_mask(3, 3);
    const mha::Mask want = {{{{1, 0, 0}, {1, 1, 0}, {1, 1, 1}}}};
    CHECK(mha::shape_of(m) == "[1, 1, 3, 3]");
    CHECK(m == want);
    const mha::Mask r = mha::causal_mask(2, 3);
    const mha::Mask want_r = {{{{1, 0, 0}, {1, 1, 0}}}};
    CHECK(r == want_r);
}

TEST_CASE("padding_mask from lengths, and combined with causal") {
    const mha::Mask p = mha::padding_mask({2, 3}, 3);
    const mha::Mask want = {{{{1, 1, 0}}}, {{{1, 1, 1}}}};
    CHECK(mha::shape_of(p) == "[2, 1, 1, 3]");
    CHECK(p == want);
    const mha::Mask both = mha::combine_masks(mha::causal_mask(3, 3), p);
    const mha::Mask want_both = {{{{1, 0, 0}, {1, 1, 0}, {1, 1, 0}}},
                                 {{{1, 0, 0}, {1, 1, 0}, {1, 1, 1}}}};
    CHECK(mha::shape_of(both) == "[2, 1, 3, 3]");
    CHECK(both == want_both);
}

TEST_CASE("apply_mask fills where the mask is 0, broadcast over B and H") {
    mha::Tensor4 s({2, 2, 2, 2});
    for (std::size_t i = 0; i < s.size(); ++i) s.data()[i] = float(i);
    const mha::Tensor4 inf = mha::apply_mask(s, mha::causal_mask(2, 2));
    const mha::Tensor4 big = mha::apply_mask(s, mha::causal_mask(2, 2), -1e10f);
    for (std::size_t b = 0; b < 2; ++b)
        for (std::size_t h = 0; h < 2; ++h) {
            CHECK(inf(b, h, 0, 0) == s(b, h, 0, 0));
            CHECK(inf(b, h, 0, 1) == -INFINITY);  // key 1 is after query 0
            CHECK(big(b, h, 0, 1) == -1e10f);
            CHECK(inf(b, h, 1, 0) == s(b, h, 1, 0));
            CHECK(inf(b, h, 1, 1) == s(b, h, 1, 1));
        }
}

TEST_CASE("masks of the wrong shape are refused with both shapes named") {
    const auto s = mha::Tensor4::from_shape({2, 2, 3, 3});
    CHECK_THROWS_WITH_AS(mha::apply_mask(s, mha::causal_mask(3, 4)),
                         doctest::Contains("mask [1, 1, 3, 4] does not fit scores "
                                           "[2, 2, 3, 3]"),
                         std::invalid_argument);
    CHECK_THROWS_AS(mha::apply_mask(s, mha::causal_mask(2, 3)),
                    std::invalid_argument);
    CHECK_THROWS_AS(mha::apply_mask(s, mha::padding_mask({1, 2, 3}, 3)),
                    std::invalid_argument);  // B = 3 against 2
    CHECK_THROWS_WITH_AS(mha::padding_mask({4}, 3), doctest::Contains("lengths[0] = 4"),
                         std::invalid_argument);
    CHECK_THROWS_AS(mha::padding_mask({}, 3), std::invalid_argument);
    CHECK_THROWS_AS(mha::causal_mask(0, 3), std::invalid_argument);
    CHECK_THROWS_AS(mha::combine_masks(mha::causal_mask(2, 2),
                                       mha::causal_mask(3, 3)),
                    std::invalid_argument);
    CHECK_THROWS_AS(mha::combine_masks(mha::causal_mask(2, 2),
                                       mha::padding_mask({1}, 3)),
                    std::invalid_argument);
    CHECK_THROWS_AS(mha::apply_mask(mha::Tensor4::from_shape({1, 1, 0, 3}),
                                    mha::causal_mask(1, 3)),
                    std::invalid_argument);
}
