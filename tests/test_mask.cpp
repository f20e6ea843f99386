// Tests for mha/mask.hpp: tril, padding, masked_fill.
#include <doctest/doctest.h>

#include <cmath>
#include <stdexcept>
#include <vector>

#include "mha/attention.hpp"
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

TEST_CASE("mask conventions: each converts to the keep-mask, and a flip cannot pass") {
    // Two sequences, 4 queries, 5 keys; sequence 1 has 3 real keys. Every
    // convention must give the keep-mask's weights, and the same mask read
    // with the other polarity must give different ones.
    mha::Rng rng(13);
    const mha::MultiHeadAttention m(8, 2, mha::Init::xavier(13));
    const mha::Tensor3 q = mha::randn(2, 4, 8, rng), kv = mha::randn(2, 5, 8, rng);
    const mha::Mask keep = mha::padding_mask({5, 3}, 5);  // [2, 1, 1, 5]
    const auto want = m.forward_stages(q, kv, kv, &keep).weights;

    /*py
    key_padding_mask = torch.tensor([[False] * 5, [False, False, False, True, True]])
    */
    const mha::Mask torch_bool = mha::to_torch_bool(keep);
    CHECK(torch_bool(1, 0, 0, 3));     // padding is True in PyTorch's polarity
    CHECK_FALSE(torch_bool(1, 0, 0, 0));
    const mha::Mask back = mha::from_torch_bool(torch_bool);
    CHECK(mha::max_abs_diff(m.forward_stages(q, kv, kv, &back).weights, want) == 0.0);
    // read as a keep-mask, PyTorch's mask attends to the padding only
    const auto flipped = m.forward_stages(q, kv, kv, &torch_bool).weights;
    CHECK(mha::max_abs_diff(flipped, want) > 0.1);
    CHECK(flipped(1, 0, 0, 0) == 0.0f);

    const mha::Tensor4 additive = mha::to_additive(keep);  // 0 / -inf
    CHECK(additive(1, 0, 0, 2) == 0.0f);
    CHECK(additive(1, 0, 0, 4) == -INFINITY);
    const auto by_bias = m.forward_stages(q, kv, kv, nullptr, mha::kNegInf, &additive);
    CHECK(mha::max_abs_diff(by_bias.weights, want) < 1e-7);
    CHECK(mha::max_abs_diff(m.forward(q, kv, kv, nullptr, mha::kNegInf, &additive).weights,
                            want) < 1e-6);
    const mha::Mask from_bias = mha::from_additive(additive);
    CHECK(mha::max_abs_diff(from_bias, keep) == 0.0);
    // a 0/1 float mask added as a bias (a flip of meaning) masks nothing
    const mha::Tensor4 ones_and_zeros = xt::cast<float>(keep);
    CHECK(mha::max_abs_diff(m.forward_stages(q, kv, kv, nullptr, mha::kNegInf,
                                             &ones_and_zeros).weights, want) > 0.1);

    CHECK(mha::to_lengths(keep) == std::vector<std::size_t>{5, 3});
    CHECK(mha::max_abs_diff(mha::padding_mask(mha::to_lengths(keep), 5), keep) == 0.0);
    CHECK_THROWS_WITH_AS(mha::to_lengths(mha::causal_mask(4, 5)),
                         doctest::Contains("not a padding mask"), std::invalid_argument);
    const mha::Mask holey = {{{{1, 0, 1}}}};
    CHECK_THROWS_WITH_AS(mha::to_lengths(holey), doctest::Contains("after padding"),
                         std::invalid_argument);
}
