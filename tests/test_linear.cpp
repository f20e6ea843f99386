// Tests for mha/linear.hpp: y = x W^T + b.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "mha/init.hpp"
#include "mha/linear.hpp"

namespace {

mha::Linear tiny_layer() {
    mha::Linear l;
    l.weight = {{1.0f, 0.0f, -1.0f}, {0.5f, 2.0f, 0.0f}};  // [out 2, in 3]
    l.bias = {0.1f, -0.2f};                               // [2]
    return l;
}

}  // namespace

TEST_CASE("linear: a hand-computed 1x2x3 -> 1x2x2 example") {
    /*py
    import torch
    x = torch.tensor([[[1., 2., 3.], [-1., 0., 0.5]]])
    W = torch.tensor([[1., 0., -1.], [0.5, 2., 0.]]); b = torch.tensor([0.1, -0.2])
    torch.nn.functional.linear(x, W, b)  # [[[-1.9, 4.3], [-1.4, -0.7]]]
    By hand: row 0: 1 - 3 + 0.1 = -1.9 and 0.5 + 4 - 0.2 = 4.3.
    */
    const mha::Tensor3 x = {{{1.0f, 2.0f, 3.0f}, {-1.0f, 0.0f, 0.5f}}};
    const mha::Tensor3 y = mha::linear(x, tiny_layer());
    const mha::Tensor3 want = {{{-1.9f, 4.3f}, {-1.4f, -0.7f}}};
    CHECK(mha::shape_of(y) == "[1, 2, 2]");
    CHECK(mha::max_abs_diff(y, want) < 1e-6);
}

TEST_CASE("linear: every batch row uses the same weights") {
    mha::Rng rng(2);
    const mha::Tensor3 x = mha::randn(3, 5, 3, rng);
    const mha::Tensor3 y = mha::linear(x, tiny_layer());
    const mha::Linear l = tiny_layer();
    for (std::size_t b = 0; b < 3; ++b)
        for (std::size_t t = 0; t < 5; ++t)
            for (std::size_t o = 0; o < 2; ++o) {
                const float want = l.bias(o) + x(b, t, 0) * l.weight(o, 0) +
                                   x(b, t, 1) * l.weight(o, 1) +
                                   x(b, t, 2) * l.weight(o, 2);
                CHECK(y(b, t, o) == doctest::Approx(want).epsilon(1e-5));
            }
}

TEST_CASE("make_linear: shapes, Xavier weights and a seeded bias") {
    mha::Rng a(9), b(9);
    const mha::Linear la = mha::make_linear(6, 4, mha::Init::xavier(), a);
    const mha::Linear lb = mha::make_linear(6, 4, mha::Init::xavier(), b);
    CHECK(mha::shape_of(la.weight) == "[4, 6]");
    CHECK(mha::shape_of(la.bias) == "[4]");
    CHECK(mha::max_abs_diff(la.weight, lb.weight) == 0.0);
    mha::Rng c(9);
    const mha::Linear lz = mha::make_linear(6, 4, mha::Init::zero(), c);
    for (float w : lz.weight) CHECK(w == 0.0f);
}

TEST_CASE("make_linear: nn.Linear's own init, U(-1/sqrt(in), 1/sqrt(in))") {
    /*py
    l = torch.nn.Linear(400, 300)  # l.weight.abs().max() < 0.05, l.weight.var() ~ 1/1200
    */
    mha::Rng rng(4);
    const mha::Linear l = mha::make_linear(400, 300, mha::Init::torch_linear(), rng);
    double sq = 0, biggest = 0;
    for (float w : l.weight) sq += double(w) * w, biggest = std::max(biggest, double(std::fabs(w)));
    CHECK(biggest < 0.05);   // 1 / sqrt(400)
    CHECK(biggest > 0.049);  // and it reaches near the bound
    // var = a^2 / 3 = 1 / 1200 for a = 1/20; 120000 draws: within 2%
    CHECK(sq / l.weight.size() == doctest::Approx(1.0 / 1200).epsilon(0.02));
    // a third of Xavier's 1 / in for the same square layer
    mha::Rng rng2(4);
    const mha::Linear x = mha::make_linear(400, 400, mha::Init::xavier(), rng2);
    double sx = 0;
    for (float w : x.weight) sx += double(w) * w;
    CHECK(sx / x.weight.size() == doctest::Approx(1.0 / 400).epsilon(0.02));
}

TEST_CASE("linear: bad shapes are refused with the shapes named") {
    const mha::Tensor3 x = {{{1.0f, 2.0f}}};  // [1, 1, 2], but in = 3
    CHECK_THROWS_WITH_AS(mha::linear(x, tiny_layer()),
                         doctest::Contains("[1, 1, 2]"), std::invalid_argument);
    mha::Linear bad = tiny_layer();
    bad.bias = {0.0f, 0.0f, 0.0f};  // [3], but out = 2
    const mha::Tensor3 x3 = {{{1.0f, 2.0f, 3.0f}}};
    CHECK_THROWS_WITH_AS(mha::linear(x3, bad), doctest::Contains("bias [3]"),
                         std::invalid_argument);
    const auto empty = mha::Tensor3::from_shape({1, 0, 3});
    CHECK_THROWS_AS(mha::linear(empty, tiny_layer()), std::invalid_argument);
    mha::Rng rng(0);
    CHECK_THROWS_AS(mha::make_linear(0, 3, mha::Init::xavier(), rng),
                    std::invalid_argument);
}
