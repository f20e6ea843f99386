// Tests for mha/heads.hpp: split_heads / merge_heads.
#include <doctest/doctest.h>

#include <stdexcept>

#include "mha/init.hpp"
#include "mha/heads.hpp"

TEST_CASE("split_heads: view(B, T, H, D).permute(0, 2, 1, 3) on arange") {
    /*py
    import torch
    torch.arange(8.).view(1, 2, 4).view(1, 2, 2, 2).permute(0, 2, 1, 3)
    # [[[[0, 1], [4, 5]],    head 0: columns 0..1 of both time steps
    #   [[2, 3], [6, 7]]]]   head 1: columns 2..3
    */
    const mha::Tensor3 x = {{{0, 1, 2, 3}, {4, 5, 6, 7}}};  // [1, 2, 4]
    const mha::Tensor4 s = mha::split_heads(x, 2);
    const mha::Tensor4 want = {{{{0, 1}, {4, 5}}, {{2, 3}, {6, 7}}}};
    CHECK(mha::shape_of(s) == "[1, 2, 2, 2]");
    CHECK(mha::max_abs_diff(s, want) == 0.0);
}

TEST_CASE("merge_heads: the inverse, permute(0, 2, 1, 3).view(B, T, E)") {
    const mha::Tensor4 x = {{{{0, 1}, {4, 5}}, {{2, 3}, {6, 7}}}};
    const mha::Tensor3 want = {{{0, 1, 2, 3}, {4, 5, 6, 7}}};
    CHECK(mha::max_abs_diff(mha::merge_heads(x), want) == 0.0);
}

TEST_CASE("split then merge is exact, for every H that divides E") {
    mha::Rng rng(11);
    const mha::Tensor3 x = mha::randn(3, 5, 12, rng);
    for (std::size_t h : {1, 2, 3, 4, 6, 12}) {
        CAPTURE(h);
        const mha::Tensor4 s = mha::split_heads(x, h);
        CHECK(s.shape(1) == h);
        CHECK(s.shape(3) == 12 / h);
        CHECK(mha::max_abs_diff(mha::merge_heads(s), x) == 0.0);
    }
}

TEST_CASE("head_dim_for: 512 / 7 is refused with the heads that fit") {
    CHECK(mha::head_dim_for(512, 8) == 64);
    CHECK_THROWS_WITH_AS(mha::head_dim_for(512, 7),
                         "embed_dim 512 is not divisible by num_heads 7; try 4 or 8",
                         std::invalid_argument);
    // the nearest that fit, below and above; only below when H > E / 2 has none
    CHECK_THROWS_WITH_AS(mha::head_dim_for(12, 5), doctest::Contains("try 4 or 6"),
                         std::invalid_argument);
    CHECK_THROWS_WITH_AS(mha::head_dim_for(12, 7), doctest::Contains("try 6 or 12"),
                         std::invalid_argument);
    CHECK_THROWS_WITH_AS(mha::head_dim_for(9, 8), doctest::Contains("try 3 or 9"),
                         std::invalid_argument);
    CHECK_THROWS_WITH_AS(mha::head_dim_for(8, 9), doctest::Contains("try 8"),
                         std::invalid_argument);
    CHECK_THROWS_AS(mha::head_dim_for(0, 1), std::invalid_argument);
    CHECK_THROWS_AS(mha::head_dim_for(8, 0), std::invalid_argument);
    mha::Rng rng(0);
    CHECK_THROWS_AS(mha::split_heads(mha::randn(1, 2, 6, rng), 4),
                    std::invalid_argument);
    CHECK_THROWS_AS(mha::merge_heads(mha::Tensor4::from_shape({1, 2, 0, 3})),
                    std::invalid_argument);
}
