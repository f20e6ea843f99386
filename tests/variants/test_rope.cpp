// Tests for mha/variants/rope.hpp: what makes RoPE right. The rotated score
// depends only on i - j; norms are kept; R(a) R(b) = R(a + b); the two
// conventions are one permutation of the head apart; the forward with RoPE
// equals the oracle's; a cache keeps its keys turned, and decoding equals
// the causal forward with RoPE at every position, for every H_kv; its
// backward apply_rope_backward() is the transpose R^T.
//
// B = batch, H = heads, T = positions, D = head_dim, E = embed_dim.
#include <doctest/doctest.h>

#include <cmath>
#include <stdexcept>
#include <vector>

#include <xtensor/xview.hpp>

#include "mha/kv_cache.hpp"
#include "mha/reference.hpp"
#include "mha/scores.hpp"
#include "mha/variants/rope.hpp"
#include "../oracle_case.hpp"

namespace {

using mha_test::randn4;

const mha::Rope kStyles[] = {{mha::RopeStyle::interleaved, 10000.0},
                             {mha::RopeStyle::half, 10000.0},
                             {mha::RopeStyle::half, 500000.0}};

}  // namespace

TEST_CASE("RoPE: a pair turns by pos * theta^(-2p/D), in either convention") {
    // D = 4, position 3, theta 100: pair 0 turns by 3 rad, pair 1 by 3/10.
    const float x[4] = {1.0f, 2.0f, 3.0f, 4.0f};
    const double a0 = 3.0, a1 = 0.3;
    float in[4], half[4];
    std::copy(x, x + 4, in);
    std::copy(x, x + 4, half);
    mha::rope_rotate(in, 4, 3, {mha::RopeStyle::interleaved, 100.0});
    mha::rope_rotate(half, 4, 3, {mha::RopeStyle::half, 100.0});
    // llama2.c: (x0, x1) and (x2, x3) are the pairs
    CHECK(in[0] == doctest::Approx(1 * std::cos(a0) - 2 * std::sin(a0)));
    CHECK(in[1] == doctest::Approx(1 * std::sin(a0) + 2 * std::cos(a0)));
    CHECK(in[2] == doctest::Approx(3 * std::cos(a1) - 4 * std::sin(a1)));
    CHECK(in[3] == doctest::Approx(3 * std::sin(a1) + 4 * std::cos(a1)));
    // Hugging Face: x * cos + rotate_half(x) * sin, rotate_half(x) = (-x2, -x3, x0, x1)
    CHECK(half[0] == doctest::Approx(1 * std::cos(a0) - 3 * std::sin(a0)));
    CHECK(half[1] == doctest::Approx(2 * std::cos(a1) - 4 * std::sin(a1)));
    CHECK(half[2] == doctest::Approx(3 * std::cos(a0) + 1 * std::sin(a0)));
    CHECK(half[3] == doctest::Approx(4 * std::cos(a1) + 2 * std::sin(a1)));
    // position 0 turns nothing
    mha::Rng rng(3700);
    const mha::Tensor4 q = randn4(1, 2, 1, 8, rng);
    CHECK(mha::apply_rope(q, {}) == q);
}

TEST_CASE("RoPE: the rotated score depends only on i - j") {
    // q and k at positions 0..T-1, then the same vectors at s..s+T-1: every
    // score Q K^T / sqrt(D) stays within 1e-4, for s up to 4096.
    mha::Rng rng(3701);
    const std::size_t T = 12, D = 64;
    const mha::Tensor4 q = randn4(2, 3, T, D, rng), k = randn4(2, 3, T, D, rng);
    for (const mha::Rope& r : kStyles) {
        CAPTURE(int(r.style)); CAPTURE(r.theta);
        const mha::Tensor4 s0 = mha::scaled_scores(mha::apply_rope(q, r), mha::apply_rope(k, r));
        double worst = 0;
        for (std::size_t s : {1, 7, 100, 1000, 4000, 4096}) {
            CAPTURE(s);
            const mha::Tensor4 ss =
                mha::scaled_scores(mha::apply_rope(q, r, s), mha::apply_rope(k, r, s));
            worst = std::max(worst, mha::max_abs_diff(s0, ss));
        }
        CHECK(worst < 1e-4);
        // and it does depend on i - j: without the shift on k the scores move
        const mha::Tensor4 moved =
            mha::scaled_scores(mha::apply_rope(q, r, 5), mha::apply_rope(k, r));
        CHECK(mha::max_abs_diff(s0, moved) > 0.1);
    }
}

TEST_CASE("RoPE: norms are kept, and R(a) R(b) = R(a + b)") {
    mha::Rng rng(3702);
    const std::size_t D = 32;
    const mha::Tensor4 x = randn4(2, 3, 1, D, rng);  // one position: the offset is its angle
    for (const mha::Rope& r : kStyles) {
        CAPTURE(int(r.style));
        for (std::size_t pos : {1, 17, 4096}) {
            const mha::Tensor4 y = mha::apply_rope(x, r, pos);
            for (std::size_t b = 0; b < 2; ++b)
                for (std::size_t h = 0; h < 3; ++h) {
                    double n0 = 0, n1 = 0;
                    for (std::size_t d = 0; d < D; ++d) {
                        n0 += double(x(b, h, 0, d)) * x(b, h, 0, d);
                        n1 += double(y(b, h, 0, d)) * y(b, h, 0, d);
                    }
                    CHECK(std::sqrt(n1) == doctest::Approx(std::sqrt(n0)).epsilon(1e-6));
                }
        }
        using Pair = std::pair<std::size_t, std::size_t>;
        for (auto [a, b] : {Pair{3, 5}, Pair{1000, 24}, Pair{4096, 4096}}) {
            CAPTURE(a); CAPTURE(b);
            const mha::Tensor4 twice = mha::apply_rope(mha::apply_rope(x, r, b), r, a);
            CHECK(mha::max_abs_diff(twice, mha::apply_rope(x, r, a + b)) < 1e-5);
        }
    }
}

TEST_CASE("RoPE's backward is R^T: <R x, g> = <x, R^T g>, and R^T R x = x") {
    mha::Rng rng(3703);
    const std::size_t D = 16, T = 6;
    const mha::Tensor4 x = randn4(2, 3, T, D, rng), g = randn4(2, 3, T, D, rng);
    for (const mha::Rope& r : kStyles) {
        for (std::size_t offset : {0, 4090}) {
            CAPTURE(int(r.style)); CAPTURE(offset);
            const mha::Tensor4 rx = mha::apply_rope(x, r, offset);
            const mha::Tensor4 rtg = mha::apply_rope_backward(g, r, offset);
            double a = 0, b = 0;
            for (std::size_t i = 0; i < x.size(); ++i) {
                a += double(rx.data()[i]) * g.data()[i];
                b += double(x.data()[i]) * rtg.data()[i];
            }
            CHECK(a == doctest::Approx(b).epsilon(1e-5));
            CHECK(mha::max_abs_diff(mha::apply_rope_backward(rx, r, offset), x) < 1e-5);
            // the check can fail: R in place of R^T breaks the first equality
            if (offset > 0) CHECK(mha::max_abs_diff(rtg, mha::apply_rope(g, r, offset)) > 1e-2);
        }
    }
}

TEST_CASE("RoPE: the two conventions give the same scores once D is permuted") {
    // Interleaved pair p is (2p, 2p+1), rotate-half's is (p, p + D/2): the
    // permutation (0, 2, 4, ..., 1, 3, 5, ...) of the head takes one to the
    // other (the one Hugging Face applies to wq and wk when converting Llama).
    mha::Rng rng(3703);
    const std::size_t T = 9, D = 16;
    const mha::Tensor4 q = randn4(1, 2, T, D, rng), k = randn4(1, 2, T, D, rng);
    auto permute = [&](const mha::Tensor4& x) {  // [.., D]: evens first, then odds
        mha::Tensor4 y = x;
        for (std::size_t h = 0; h < x.shape(1); ++h)
            for (std::size_t t = 0; t < x.shape(2); ++t)
                for (std::size_t p = 0; p < D / 2; ++p) {
                    y(0, h, t, p) = x(0, h, t, 2 * p);
                    y(0, h, t, p + D / 2) = x(0, h, t, 2 * p + 1);
                }
        return y;
    };
    const mha::Rope inter{mha::RopeStyle::interleaved, 10000.0};
    const mha::Rope half{mha::RopeStyle::half, 10000.0};
    const mha::Tensor4 a = mha::apply_rope(q, inter, 40), b = mha::apply_rope(k, inter, 40);
    const mha::Tensor4 c = mha::apply_rope(permute(q), half, 40);
    const mha::Tensor4 d = mha::apply_rope(permute(k), half, 40);
    CHECK(mha::max_abs_diff(permute(a), c) < 1e-6);  // the same numbers, moved
    CHECK(mha::max_abs_diff(mha::scaled_scores(a, b), mha::scaled_scores(c, d)) < 1e-5);
    // without the permutation they differ
    const mha::Tensor4 e = mha::apply_rope(q, half, 40), f = mha::apply_rope(k, half, 40);
    CHECK(mha::max_abs_diff(mha::scaled_scores(a, b), mha::scaled_scores(e, f)) > 0.1);
}

TEST_CASE("RoPE: forward_stages with RoPE equals the oracle" * doctest::test_suite("oracle")) {
    // Self- and cross-attention, GQA, with and without a causal mask.
    std::uint64_t seed = 3710;
    struct Case {
        std::size_t Tq, Tk, H, H_kv;
    };
    for (const Case& c : {Case{7, 7, 4, 4}, Case{7, 7, 4, 2}, Case{5, 9, 4, 1}}) {
        for (const mha::Rope& r : kStyles) {
            CAPTURE(c.Tq); CAPTURE(c.Tk); CAPTURE(c.H_kv); CAPTURE(int(r.style));
            mha::Rng rng(++seed);
            const std::size_t E = 32;
            const mha::MultiHeadAttention m(E, c.H, c.H_kv, mha::Init::xavier(seed));
            const mha::Tensor3 x = mha::randn(2, c.Tq, E, rng), y = mha::randn(2, c.Tk, E, rng);
            for (int causal = 0; causal < 2; ++causal) {
                const mha::Mods mods{{}, causal ? mha::causal_mod() : mha::MaskMod{},
                                     mha::kNegInf, r};
                const mha::Stages s = m.forward_stages(x, y, y, mods);
                const auto ref = mha::reference_forward(m, x, y, y, mods);
                CHECK(mha::max_abs_diff(s.output, ref.output) < 2e-5);
                CHECK(mha::max_abs_diff(s.weights, ref.weights) < 2e-5);
                // RoPE changes the answer (the test can fail)
                const mha::Mods plain{{}, mods.mask_mod, mha::kNegInf, {}};
                CHECK(mha::max_abs_diff(m.forward_stages(x, y, y, plain).output, ref.output) >
                      1e-3);
            }
        }
    }
}

TEST_CASE("RoPE: the KV cache keeps keys turned, decoding equals the causal forward" *
          doctest::test_suite("oracle")) {
    struct Shape {
        std::size_t B, prompt, steps, E, H;
    };
    std::uint64_t seed = 3720;
    for (const Shape& c : {Shape{1, 1, 6, 8, 2}, Shape{2, 5, 5, 32, 4}, Shape{2, 70, 3, 32, 8}}) {
        for (std::size_t H_kv : mha::divisors(c.H)) {
            for (const mha::Rope& r : kStyles) {
                CAPTURE(c.B); CAPTURE(c.prompt); CAPTURE(c.H); CAPTURE(H_kv);
                CAPTURE(int(r.style));
                mha::Rng rng(++seed);
                const mha::MultiHeadAttention m(c.E, c.H, H_kv, mha::Init::xavier(seed));
                const std::size_t T = c.prompt + c.steps;
                const mha::Tensor3 x = mha::randn(c.B, T, c.E, rng);
                const mha::Mods mods{{}, mha::causal_mod(), mha::kNegInf, r};
                const auto want = mha::reference_forward(m, x, x, x, mods).output;  // [B, T, E]
                const mha::Stages full = m.forward_stages(x, x, x, mods);
                for (int fast = 0; fast < 2; ++fast) {
                    CAPTURE(fast);
                    mha::KVCache cache = mha::make_cache(m, c.B, T, r);
                    const mha::Tensor3 prompt = xt::view(x, xt::all(), xt::range(0, c.prompt));
                    const mha::Tensor3 first = fast ? m.prefill(prompt, cache)
                                                    : mha::extend_stages(m, prompt, cache);
                    CHECK(mha::max_abs_diff(
                              first, xt::view(want, xt::all(), xt::range(0, c.prompt))) < 2e-5);
                    for (std::size_t t = c.prompt; t < T; ++t) {
                        CAPTURE(t);
                        const mha::Tensor3 x_t = xt::view(x, xt::all(), xt::range(t, t + 1));
                        const mha::Tensor3 y = fast ? m.decode(x_t, cache)
                                                    : mha::extend_stages(m, x_t, cache);
                        CHECK(mha::max_abs_diff(
                                  y, xt::view(want, xt::all(), xt::range(t, t + 1))) < 2e-5);
                    }
                    // the cached keys are the forward's turned keys, position by position
                    CHECK(mha::max_abs_diff(cache.k, full.k) < 1e-5);
                }
            }
        }
    }
}

TEST_CASE("RoPE: bad settings are one clear line") {
    mha::Rng rng(3730);
    const mha::Tensor4 odd = randn4(1, 1, 2, 5, rng);
    CHECK_THROWS_WITH_AS(mha::apply_rope(odd, {}), doctest::Contains("D must be even"),
                         std::invalid_argument);
    const mha::Tensor4 x = randn4(1, 1, 2, 4, rng);
    CHECK_THROWS_WITH_AS(mha::apply_rope(x, {mha::RopeStyle::half, 0.0}),
                         doctest::Contains("theta"), std::invalid_argument);
    const mha::MultiHeadAttention m(6, 2, mha::Init::xavier(3730));  // D = 3
    CHECK_THROWS_AS(mha::make_cache(m, 1, 4, mha::Rope{}), std::invalid_argument);
}
