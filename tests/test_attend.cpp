// Tests for mha/attend.hpp: weights x V.
#include <doctest/doctest.h>

#include <stdexcept>

#include <xtensor/xview.hpp>

#include "mha/init.hpp"
#include "mha/attend.hpp"

TEST_CASE("attend: a hand-computed weighted average of values") {
    /*py
    import torch
    W = torch.tensor([[[[0.5, 0.5, 0.0], [0.25, 0.25, 0.5]]]])
    V = torch.tensor([[[[1., 2.], [3., 4.], [5., 6.]]]])
    W @ V  # [[[[2.0, 3.0], [3.5, 4.5]]]]
    By hand: row 1 = 0.25*(1,2) + 0.25*(3,4) + 0.5*(5,6) = (3.5, 4.5).
    */
    const mha::Tensor4 w = {{{{0.5f, 0.5f, 0.0f}, {0.25f, 0.25f, 0.5f}}}};
    const mha::Tensor4 v = {{{{1, 2}, {3, 4}, {5, 6}}}};
    const mha::Tensor4 o = mha::attend(w, v);
    const mha::Tensor4 want = {{{{2.0f, 3.0f}, {3.5f, 4.5f}}}};
    CHECK(mha::shape_of(o) == "[1, 1, 2, 2]");
    CHECK(mha::max_abs_diff(o, want) < 1e-6);
}

TEST_CASE("attend: batches and heads do not mix") {
    mha::Tensor4 w({2, 2, 1, 1}), v({2, 2, 1, 3});
    w.fill(1.0f);
    for (std::size_t i = 0; i < v.size(); ++i) v.data()[i] = float(i);
    const mha::Tensor4 o = mha::attend(w, v);
    CHECK(mha::max_abs_diff(o, v) == 0.0);  // weight 1 on the only key
}

TEST_CASE("attend: grouped heads read their value head, as repeat_interleave") {
    mha::Rng rng(15);
    mha::Tensor4 w({1, 4, 3, 5}), v({1, 1, 5, 2});  // multi-query: H_kv = 1
    for (float& x : w) x = rng.uniform(0, 1);
    for (float& x : v) x = rng.normal();
    mha::Tensor4 v_rep({1, 4, 5, 2});
    for (std::size_t h = 0; h < 4; ++h) xt::view(v_rep, 0, h) = xt::view(v, 0, 0);
    CHECK(mha::max_abs_diff(mha::attend(w, v), mha::attend(w, v_rep)) == 0.0);
}

TEST_CASE("attend: mismatched B, H or Tk are refused") {
    const auto w = mha::Tensor4::from_shape({1, 2, 3, 4});
    CHECK_THROWS_WITH_AS(mha::attend(w, mha::Tensor4::from_shape({1, 2, 5, 8})),
                         doctest::Contains("[1, 2, 5, 8]"), std::invalid_argument);
    CHECK_THROWS_AS(mha::attend(w, mha::Tensor4::from_shape({1, 3, 4, 8})),
                    std::invalid_argument);
    CHECK_THROWS_AS(mha::attend(w, mha::Tensor4::from_shape({2, 2, 4, 8})),
                    std::invalid_argument);
    CHECK_THROWS_AS(mha::attend(w, mha::Tensor4::from_shape({1, 2, 4, 0})),
                    std::invalid_argument);
}
