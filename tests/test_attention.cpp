// Tests for mha/attention.hpp: the module. forward_stages() against the
// oracle, forward() against forward_stages(), the properties attention must
// have, and bad input. (The engine's own cases: tests/fast/test_forward.cpp.)
#include <doctest/doctest.h>

#include <cmath>
#include <stdexcept>
#include <vector>

#include <xtensor/xview.hpp>

#include "mha/fast/packed_gemm.hpp"
#include "mha/reference.hpp"

namespace {

// Fast path against the oracle: unit-scale data (randn inputs, Xavier
// weights), so float rounding in different summation orders stays < 2e-5.
constexpr double kTol = 2e-5;

struct Case {
    std::size_t B, Tq, Tk, E, H;
};

}  // namespace

TEST_CASE("forward_stages equals the plain-loop oracle, masks, fills and bias" *
          doctest::test_suite("oracle")) {
    // The articles' forward, stage by stage, against the oracle in double:
    // self- and cross-attention, causal and padding masks with a fully
    // padded sequence under both fills, and an additive bias.
    const std::vector<Case> cases = {{1, 1, 1, 4, 2}, {2, 5, 5, 12, 3}, {2, 3, 9, 16, 4},
                                     {3, 7, 4, 8, 1}, {2, 16, 16, 64, 8}};
    std::uint64_t seed = 300;
    for (const Case& c : cases) {
        for (int masked = 0; masked < 3; ++masked) {
            CAPTURE(c.B); CAPTURE(c.Tq); CAPTURE(c.Tk); CAPTURE(c.H); CAPTURE(masked);
            mha::Rng rng(++seed);
            const mha::MultiHeadAttention m(c.E, c.H, mha::Init::xavier(seed));
            const mha::Tensor3 q = mha::randn(c.B, c.Tq, c.E, rng);
            const mha::Tensor3 kv = mha::randn(c.B, c.Tk, c.E, rng);
            std::vector<std::size_t> lengths(c.B, c.Tk);
            lengths[0] = 0;
            mha::Mask mask = mha::causal_mask(c.Tq, c.Tk);
            if (masked == 2) mask = mha::combine_masks(mask, mha::padding_mask(lengths, c.Tk));
            mha::Tensor4 bias({1, c.H, c.Tq, c.Tk});
            for (float& x : bias) x = rng.normal();
            const mha::Mask* mp = masked ? &mask : nullptr;
            const mha::Tensor4* bp = masked == 1 ? &bias : nullptr;
            for (float fill : {mha::kNegInf, -1e10f}) {
                CAPTURE(fill);
                const mha::Stages s = m.forward_stages(q, kv, kv, mp, fill, bp);
                const auto ref = mha::reference_forward(m, q, kv, kv, mp, fill, bp);
                CHECK(mha::shape_of(s.q) == mha::shape_str(std::vector<std::size_t>{
                                                c.B, c.H, c.Tq, c.E / c.H}));
                CHECK(mha::max_abs_diff(s.output, ref.output) < kTol);
                CHECK(mha::max_abs_diff(s.weights, ref.weights) < kTol);
            }
        }
    }
}

TEST_CASE("forward (the engine) equals forward_stages (the articles' stages)" *
          doctest::test_suite("oracle")) {
    // What lesson 07 checks: the fast path and the readable one, on the
    // articles' code path (self-attention, causal) and off it.
    mha::Rng rng(21);
    const mha::MultiHeadAttention m(16, 4, mha::Init::xavier(21));
    const mha::Tensor3 x = mha::randn(3, 6, 16, rng), y = mha::randn(3, 9, 16, rng);
    const mha::Mask causal = mha::causal_mask(6, 6);
    const mha::Mask pad = mha::padding_mask({9, 4, 0}, 9);
    for (int c = 0; c < 3; ++c) {
        CAPTURE(c);
        const mha::Tensor3& kv = c == 2 ? y : x;
        const mha::Mask* mask = c == 0 ? nullptr : c == 1 ? &causal : &pad;
        const auto fast = m.forward(x, kv, kv, mask);
        const mha::Stages s = m.forward_stages(x, kv, kv, mask);
        CHECK(mha::max_abs_diff(fast.weights, s.weights) < 1e-6);
        CHECK(mha::max_abs_diff(fast.output, s.output) < 1e-6);
    }
}

TEST_CASE("causal: changing key or value j > i leaves output row i alone") {
    mha::Rng rng(31);
    const std::size_t T = 7, E = 12;
    const mha::MultiHeadAttention m(E, 3, mha::Init::xavier(31));
    const mha::Tensor3 x = mha::randn(2, T, E, rng);
    const mha::Mask causal = mha::causal_mask(T, T);
    const auto base = m.forward(x, x, x, &causal);
    for (std::size_t j = 1; j < T; ++j) {
        CAPTURE(j);
        mha::Tensor3 k = x, v = x;
        for (std::size_t e = 0; e < E; ++e) {
            k(1, j, e) += 3.0f;
            v(1, j, e) -= 2.0f;
        }
        const auto changed = m.forward(x, k, v, &causal);
        for (std::size_t i = 0; i < T; ++i)
            for (std::size_t e = 0; e < E; ++e) {
                if (i < j) {
                    CHECK(changed.output(1, i, e) == base.output(1, i, e));
                }
            }
        // and the change does reach row j itself
        CHECK(std::fabs(changed.output(1, j, 0) - base.output(1, j, 0)) > 1e-4);
    }
}

TEST_CASE("without a mask, self-attention is permutation-equivariant") {
    mha::Rng rng(41);
    const std::size_t T = 6, E = 8;
    const mha::MultiHeadAttention m(E, 2, mha::Init::xavier(41));
    const mha::Tensor3 x = mha::randn(1, T, E, rng);
    const std::size_t perm[T] = {3, 0, 5, 1, 4, 2};
    mha::Tensor3 px = x;
    for (std::size_t t = 0; t < T; ++t)
        for (std::size_t e = 0; e < E; ++e) px(0, t, e) = x(0, perm[t], e);
    const auto out = m.forward(x, x, x).output;
    const auto pout = m.forward(px, px, px).output;
    for (std::size_t t = 0; t < T; ++t)
        for (std::size_t e = 0; e < E; ++e)
            CHECK(pout(0, t, e) == doctest::Approx(out(0, perm[t], e)).epsilon(1e-5));
}

TEST_CASE("a fully masked query row: zero weights, output = w_o.bias") {
    mha::Rng rng(51);
    const mha::MultiHeadAttention m(8, 2, mha::Init::xavier(51));
    const mha::Tensor3 x = mha::randn(2, 3, 8, rng);
    const mha::Mask pad = mha::padding_mask({0, 3}, 3);  // sequence 0: no keys
    const auto fast = m.forward(x, x, x, &pad);
    const auto ref = mha::reference_forward(m, x, x, x, &pad);
    const mha::Stages stages = m.forward_stages(x, x, x, &pad);
    for (std::size_t i = 0; i < 3; ++i)
        for (std::size_t e = 0; e < 8; ++e) {
            CHECK(fast.output(0, i, e) == m.w_o.bias(e));
            CHECK(ref.output(0, i, e) == m.w_o.bias(e));
            CHECK(stages.output(0, i, e) == m.w_o.bias(e));
        }
    for (std::size_t h = 0; h < 2; ++h)
        for (std::size_t j = 0; j < 3; ++j) CHECK(fast.weights(0, h, 1, j) == 0.0f);
    // With -1e10 the same row is uniform over the three keys instead.
    const auto big = m.forward(x, x, x, &pad, -1e10f);
    CHECK(big.weights(0, 0, 0, 2) == doctest::Approx(1.0 / 3));
}

TEST_CASE("MultiHeadAttention: every bad input names the shapes") {
    CHECK_THROWS_WITH_AS(mha::MultiHeadAttention(512, 7),
                         doctest::Contains("not divisible by num_heads 7; try 4 or 8"),
                         std::invalid_argument);
    CHECK_THROWS_AS(mha::MultiHeadAttention(0, 1), std::invalid_argument);
    CHECK_THROWS_AS(mha::MultiHeadAttention(8, 0), std::invalid_argument);
    CHECK_THROWS_AS(mha::MultiHeadAttention(4, 8), std::invalid_argument);
    mha::Rng rng(0);
    const mha::MultiHeadAttention m(8, 2);
    const mha::Tensor3 x = mha::randn(2, 3, 8, rng);
    CHECK_THROWS_WITH_AS(m.forward(mha::randn(2, 3, 6, rng), x, x),
                         doctest::Contains("query [2, 3, 6]"), std::invalid_argument);
    CHECK_THROWS_WITH_AS(m.forward(x, mha::randn(1, 3, 8, rng), x),
                         doctest::Contains("batch"), std::invalid_argument);
    CHECK_THROWS_WITH_AS(m.forward(x, x, mha::randn(2, 4, 8, rng)),
                         doctest::Contains("same length Tk"), std::invalid_argument);
    CHECK_THROWS_AS(m.forward(mha::Tensor3::from_shape({2, 0, 8}), x, x),
                    std::invalid_argument);
    const mha::Mask wrong = mha::causal_mask(3, 4);
    CHECK_THROWS_WITH_AS(m.forward(x, x, x, &wrong),
                         doctest::Contains("[1, 1, 3, 4]"), std::invalid_argument);
    CHECK_THROWS_AS(mha::reference_forward(m, x, x, x, &wrong),
                    std::invalid_argument);
    CHECK_THROWS_WITH_AS(m.forward_stages(x, x, x, &wrong),
                         doctest::Contains("[1, 1, 3, 4]"), std::invalid_argument);
    CHECK_THROWS_WITH_AS(m.forward_stages(x, mha::randn(1, 3, 8, rng), x),
                         doctest::Contains("batch"), std::invalid_argument);
    mha::MultiHeadAttention broken(8, 2);
    broken.w_o.weight = mha::zeros(8, 4);
    CHECK_THROWS_WITH_AS(broken.forward(x, x, x), doctest::Contains("[8, 4]"),
                         std::invalid_argument);
}

TEST_CASE("grouped-query attention: both forwards equal the oracle, H_kv = H, H/2, 1" *
          doctest::test_suite("oracle")) {
    // Self- and cross-attention, causal and padding masks, shapes across the
    // engine's chunks and query blocks; the oracle computes in double.
    struct Shape {
        std::size_t B, Tq, Tk, E, H;
    };
    std::uint64_t seed = 900;
    for (const Shape& c : {Shape{2, 5, 5, 16, 4}, Shape{3, 7, 9, 24, 6}, Shape{40, 17, 17, 16, 8},
                           Shape{1, 70, 70, 32, 8}}) {
        for (std::size_t H_kv : {c.H, c.H / 2, std::size_t{1}}) {
            for (int masked = 0; masked < 2; ++masked) {
                CAPTURE(c.B); CAPTURE(c.Tq); CAPTURE(c.Tk); CAPTURE(H_kv); CAPTURE(masked);
                mha::Rng rng(++seed);
                const mha::MultiHeadAttention m(c.E, c.H, H_kv, mha::Init::xavier(seed));
                CHECK(m.kv_dim() == H_kv * m.head_dim());
                CHECK(mha::shape_of(m.wk.weight) ==
                      mha::shape_str(std::vector<std::size_t>{m.kv_dim(), c.E}));
                const mha::Tensor3 q = mha::randn(c.B, c.Tq, c.E, rng);
                const mha::Tensor3 kv = c.Tq == c.Tk ? q : mha::randn(c.B, c.Tk, c.E, rng);
                std::vector<std::size_t> lengths(c.B, c.Tk);
                lengths[0] = c.Tk / 2;
                const mha::Mask mask = c.Tq == c.Tk ? mha::causal_mask(c.Tq, c.Tk)
                                                    : mha::padding_mask(lengths, c.Tk);
                const mha::Mask* mp = masked ? &mask : nullptr;
                const auto ref = mha::reference_forward(m, q, kv, kv, mp);
                const auto fast = m.forward(q, kv, kv, mp);
                CHECK(mha::max_abs_diff(fast.output, ref.output) < kTol);
                CHECK(mha::max_abs_diff(fast.weights, ref.weights) < kTol);
                if (c.B * c.Tq <= 200) {
                    const mha::Stages s = m.forward_stages(q, kv, kv, mp);
                    CHECK(mha::shape_of(s.k) ==
                          mha::shape_str(std::vector<std::size_t>{c.B, H_kv, c.Tk, c.E / c.H}));
                    CHECK(mha::max_abs_diff(s.output, ref.output) < kTol);
                }
            }
        }
    }
}

TEST_CASE("grouped-query attention: K and V weights copied across a group give MHA, bit for "
          "bit in the engine") {
    // The lesson 17 claim: H_kv heads whose wk, wv rows are those of MHA's
    // first head of each group equal MHA whose heads of a group share them.
    // Bit for bit where each sum adds its terms in one order whatever the
    // product's width (the engine's packed kernels); a BLAS may not (with
    // OpenBLAS's Haswell kernels x wk^T differed by 4.8e-7 for wk [12, 24]
    // against [24, 24], the outputs by 2.4e-7), so the stages are held to rounding.
    mha::Rng rng(33);
    const std::size_t E = 24, H = 6, D = 4;
    for (std::size_t H_kv : {std::size_t{3}, std::size_t{1}}) {
        CAPTURE(H_kv);
        const std::size_t group = H / H_kv;
        const mha::MultiHeadAttention gqa(E, H, H_kv, mha::Init::xavier(33));
        mha::MultiHeadAttention mha_(E, H, mha::Init::xavier(33));
        mha_.wq = gqa.wq;
        mha_.w_o = gqa.w_o;
        for (std::size_t h = 0; h < H; ++h)  // head h's rows: its kv head's
            for (std::size_t r = 0; r < D; ++r) {
                const std::size_t from = (h / group) * D + r, to = h * D + r;
                xt::view(mha_.wk.weight, to) = xt::view(gqa.wk.weight, from);
                xt::view(mha_.wv.weight, to) = xt::view(gqa.wv.weight, from);
                mha_.wk.bias(to) = gqa.wk.bias(from);
                mha_.wv.bias(to) = gqa.wv.bias(from);
            }
        const mha::Tensor3 x = mha::randn(2, 7, E, rng);
        const mha::Mask causal = mha::causal_mask(7, 7);
        const double engine = mha::max_abs_diff(gqa.forward(x, x, x, &causal).output,
                                                mha_.forward(x, x, x, &causal).output);
        if (mha::fast::packed_products_on()) CHECK(engine == 0.0);
        CHECK(engine < 1e-6);
        CHECK(mha::max_abs_diff(gqa.forward_stages(x, x, x, &causal).output,
                                mha_.forward_stages(x, x, x, &causal).output) < 1e-6);
    }
}

TEST_CASE("grouped-query attention: an H_kv that does not divide H is one line naming those that do") {
    CHECK_THROWS_WITH_AS(mha::MultiHeadAttention(512, 8, 3),
                         "num_kv_heads 3 does not divide num_heads 8; it must be one of 1, 2, 4, 8",
                         std::invalid_argument);
    CHECK_THROWS_AS(mha::MultiHeadAttention(512, 8, 0), std::invalid_argument);
    CHECK_THROWS_AS(mha::MultiHeadAttention(512, 8, 16), std::invalid_argument);
    mha::MultiHeadAttention m(16, 4, 2);
    m.wk.weight = mha::zeros(16, 16);  // an MHA-shaped wk in a GQA module
    mha::Rng rng(0);
    const mha::Tensor3 x = mha::randn(1, 3, 16, rng);
    CHECK_THROWS_WITH_AS(m.forward(x, x, x), doctest::Contains("it must be [8, 16]"),
                         std::invalid_argument);
}
