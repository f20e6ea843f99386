// Tests for mha/tiled_backward.hpp: the FlashAttention-2 backward gives
// backward_stages()'s gradients (which read the whole [Tq, Tk] weights)
// within 1e-5 of the largest gradient of each tensor, on sizes across tile
// edges, with masks (tensors and mask_mods), grouped-query heads, Tq != Tk
// and rows that see no key; NaN where backward_stages() puts NaN; and its
// dQ, dK, dV agree with central finite differences of a loss computed in
// double; with ALiBi and soft-capping (a score_mod and its derivative)
// too, against finite differences and, for ALiBi, against
// backward_stages() given it as a score bias. The engine's tiles with
// soft-capping (a float C in the call) against forward_stages() and the
// teaching backward_tiled(); backward_tiled() with RoPE against finite
// differences.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "mha/attention.hpp"
#include "mha/backward.hpp"
#include "mha/fast/backward.hpp"
#include "mha/init.hpp"
#include "mha/tiled_backward.hpp"
#include "oracle_case.hpp"
#include "worst.hpp"

namespace tiled_bwd {

// The worst |ours - want| / max |want| over the tensors of two gradients,
// or a large number when NaN stands in different places. The key bias's
// exact gradient is 0 (q . b_k shifts a whole row of scores), so it is
// measured against the largest gradient of all.
double worst_relative(const mha::AttentionGrads& ours, const mha::AttentionGrads& want) {
    const mha::Tensor2* w_ours[] = {&ours.wq.weight, &ours.wk.weight, &ours.wv.weight,
                                    &ours.w_o.weight};
    const mha::Tensor2* w_want[] = {&want.wq.weight, &want.wk.weight, &want.wv.weight,
                                    &want.w_o.weight};
    const mha::Tensor1* b_ours[] = {&ours.wq.bias, &ours.wk.bias, &ours.wv.bias,
                                    &ours.w_o.bias};
    const mha::Tensor1* b_want[] = {&want.wq.bias, &want.wk.bias, &want.wv.bias,
                                    &want.w_o.bias};
    const mha::Tensor3* x_ours[] = {&ours.query, &ours.key, &ours.value, &ours.input};
    const mha::Tensor3* x_want[] = {&want.query, &want.key, &want.value, &want.input};
    std::vector<std::pair<const float*, const float*>> pairs;  // (ours, want) data
    std::vector<std::size_t> sizes;
    for (int l = 0; l < 4; ++l) {
        REQUIRE(w_ours[l]->shape() == w_want[l]->shape());
        REQUIRE(b_ours[l]->shape() == b_want[l]->shape());
        pairs.push_back({w_ours[l]->data(), w_want[l]->data()});
        sizes.push_back(w_want[l]->size());
        pairs.push_back({b_ours[l]->data(), b_want[l]->data()});
        sizes.push_back(b_want[l]->size());
    }
    for (int l = 0; l < 4; ++l) {
        REQUIRE(x_ours[l]->shape() == x_want[l]->shape());
        pairs.push_back({x_ours[l]->data(), x_want[l]->data()});
        sizes.push_back(x_want[l]->size());
    }
    auto largest_of = [](const float* x, std::size_t n) {
        double m = 0;
        for (std::size_t i = 0; i < n; ++i)
            if (std::isfinite(x[i])) m = std::max(m, double(std::fabs(x[i])));
        return m;
    };
    double largest = 0;
    for (std::size_t t = 0; t < pairs.size(); ++t)
        largest = std::max(largest, largest_of(pairs[t].second, sizes[t]));
    double worst = 0;
    for (std::size_t t = 0; t < pairs.size(); ++t) {
        const float *a = pairs[t].first, *w = pairs[t].second;
        const bool key_bias = t == 3;  // the order above: wq.w, wq.b, wk.w, wk.b, ...
        const double scale = std::max(key_bias ? largest : largest_of(w, sizes[t]), 1e-30);
        for (std::size_t i = 0; i < sizes[t]; ++i) {
            if (std::isnan(w[i]) != std::isnan(a[i])) return 1e30;  // NaN elsewhere
            if (std::isnan(w[i])) continue;
            mha_test::keep_worst(worst, std::fabs(double(a[i]) - w[i]) / scale);
        }
    }
    return worst;
}

// How many NaN the gradients hold, over every tensor.
std::size_t nan_count(const mha::AttentionGrads& g) {
    std::size_t n = 0;
    auto count = [&](const auto& t) {
        for (float x : t) n += std::isnan(x) ? 1 : 0;
    };
    for (const mha::LinearGrad* l : {&g.wq, &g.wk, &g.wv, &g.w_o}) {
        count(l->weight);
        count(l->bias);
    }
    count(g.query);
    count(g.key);
    count(g.value);
    count(g.input);
    return n;
}

// A score_mod in double: the new score from the old one and b, h, i, j.
using DoubleMod = std::function<double(double s, std::size_t b, std::size_t h, std::size_t i,
                                       std::size_t j)>;

// The loss sum(O o R) of attention of q over k, v under @p mod (and the
// score_mod @p smod before it, if any), in double.
double attention_loss(const mha::Tensor4& q, const mha::Tensor4& k, const mha::Tensor4& v,
                      const mha::MaskMod& mod, const mha::Tensor4& r,
                      const DoubleMod& smod = {}) {
    const std::size_t B = q.shape(0), H = q.shape(1), Tq = q.shape(2), D = q.shape(3);
    const std::size_t Tk = k.shape(2), group = H / k.shape(1);
    const double scale = 1.0 / std::sqrt(double(D));
    double loss = 0;
    std::vector<double> s(Tk);
    for (std::size_t b = 0; b < B; ++b)
        for (std::size_t h = 0; h < H; ++h)
            for (std::size_t i = 0; i < Tq; ++i) {
                double max = -INFINITY;
                for (std::size_t j = 0; j < Tk; ++j) {
                    double dot = 0;
                    for (std::size_t d = 0; d < D; ++d)
                        dot += double(q(b, h, i, d)) * k(b, h / group, j, d);
                    const double s_mod = smod ? smod(dot * scale, b, h, i, j) : dot * scale;
                    s[j] = !mod || mod(b, h, i, j) ? s_mod : -INFINITY;
                    max = std::max(max, s[j]);
                }
                if (max == -INFINITY) continue;  // sees nothing: O = 0
                double sum = 0;
                for (std::size_t j = 0; j < Tk; ++j) sum += std::exp(s[j] - max);
                for (std::size_t j = 0; j < Tk; ++j) {
                    const double p = std::exp(s[j] - max) / sum;
                    for (std::size_t d = 0; d < D; ++d)
                        loss += p * v(b, h / group, j, d) * r(b, h, i, d);
                }
            }
    return loss;
}

// A module E wide, 2 query heads over 1 key/value head (Xavier, seed), and
// query, key, value and g_out [1, T, E] of normals from Rng(seed + where),
// with a NaN at (0, row, 3) of the query (where 0), key (1) or value (2).
struct Spoiled {
    mha::MultiHeadAttention m;
    mha::Tensor3 query, key, value, g_out;  // [1, T, E]
};
Spoiled spoiled(std::size_t T, std::size_t E, std::uint64_t seed, int where, std::size_t row) {
    mha::Rng rng(seed + where);
    Spoiled s{mha::MultiHeadAttention(E, 2, 1, mha::Init::xavier(seed)),
              mha::randn(1, T, E, rng), mha::randn(1, T, E, rng), mha::randn(1, T, E, rng),
              mha::randn(1, T, E, rng)};  // in this order: braces go left to right
    mha::Tensor3* tensors[] = {&s.query, &s.key, &s.value};
    (*tensors[where])(0, row, 3) = NAN;
    return s;
}

// One way to mask a case: a mask (nullptr: none), its fill, a score bias.
struct Masking {
    const char* name;
    const mha::Mask* mask;
    float fill;
    const mha::Tensor4* bias;
};

// The maskings the engine's tiles are checked under, for one case: none,
// causal, padding (sequence 0 all padding: rows that see nothing) under
// both fills, a sliding window of 40, and causal with a score bias of
// normals x 0.5 drawn from rng. list() points into it: it is not copied.
struct Maskings {
    Maskings(const mha_test::Case& c, mha::Rng& rng) : bias({1, c.H, c.Tq, c.Tk}) {
        std::vector<std::size_t> lengths;  // sequence 0 all padding: rows that see nothing
        for (std::size_t b = 0; b < c.B; ++b) lengths.push_back(b == 0 ? 0 : 1 + 67 * b % c.Tk);
        for (float& x : bias) x = 0.5f * rng.normal();
        causal = mha::causal_mask(c.Tq, c.Tk);
        pad = mha::padding_mask(lengths, c.Tk);
        window = mha::mask_of(mha::sliding_window(40), c.B, c.H, c.Tq, c.Tk);
    }
    Maskings(const Maskings&) = delete;
    Maskings& operator=(const Maskings&) = delete;
    std::vector<Masking> list() const {
        return {{"none", nullptr, mha::kNegInf, nullptr},
                {"causal", &causal, mha::kNegInf, nullptr},
                {"padding", &pad, mha::kNegInf, nullptr},
                {"padding, fill -1e10", &pad, -1e10f, nullptr},
                {"sliding window 40", &window, mha::kNegInf, nullptr},
                {"causal + score bias", &causal, mha::kNegInf, &bias}};
    }
    mha::Tensor4 bias;  // [1, H, Tq, Tk]
    mha::Mask causal, pad, window;
};

}  // namespace tiled_bwd

TEST_CASE("backward_tiled equals backward_stages: tile edges, masks, GQA, Tq != Tk" *
          doctest::test_suite("oracle")) {
    // blocks of 4 against T = 3, 4, 5, 8, 9; one tile; Bq != Bk; T = 1
    const std::vector<mha_test::Case> cases = {
        {1, 4, 4, 8, 2, 2, 4, 4},   {2, 5, 5, 8, 2, 1, 4, 4},   {1, 9, 9, 16, 4, 2, 4, 4},
        {2, 8, 3, 8, 2, 2, 4, 4},   {1, 3, 9, 16, 4, 1, 2, 4},  {2, 7, 7, 16, 4, 4, 3, 5},
        {1, 1, 1, 8, 2, 2, 4, 4},   {2, 6, 11, 12, 3, 3, 64, 64}};
    std::uint64_t seed = 3700;
    for (const mha_test::Case& c : cases) {
        const auto [rng, m, query, kv, g_out] = mha_test::Setup(c, ++seed);
        std::vector<std::size_t> lengths;  // sequence 0 all padding: rows that see nothing
        for (std::size_t b = 0; b < c.B; ++b) lengths.push_back(b == 0 ? 0 : 1 + b % c.Tk);
        const std::vector<std::pair<std::string, mha::MaskMod>> masks = {
            {"none", {}},
            {"causal", mha::causal_mod()},
            {"padding", mha::mask_mod_of(mha::padding_mask(lengths, c.Tk))},
            {"sliding window 3", mha::sliding_window(3)},
            {"prefix-LM 2", mha::prefix_lm(2)},
            {"sinks 1 + window 2", mha::sinks_window(1, 2)}};
        for (const auto& [name, mod] : masks) {
            CAPTURE(c.B); CAPTURE(c.Tq); CAPTURE(c.Tk); CAPTURE(c.H); CAPTURE(c.H_kv);
            CAPTURE(c.bq); CAPTURE(c.bk); CAPTURE(name);
            const mha::Mask mask = mod ? mha::mask_of(mod, c.B, c.H, c.Tq, c.Tk) : mha::Mask();
            const mha::AttentionGrads want =
                mha::backward_stages(m, query, kv, kv, g_out, mod ? &mask : nullptr);
            const mha::AttentionGrads got =
                mha::backward_tiled(m, query, kv, kv, g_out, mod, mha::kNegInf, c.bq, c.bk);
            CHECK(tiled_bwd::worst_relative(got, want) < 1e-5);
        }
    }
}

TEST_CASE("backward_tiled: the fill -1e10 on rows that see nothing, as backward_stages") {
    mha::Rng rng(3710);
    const mha::MultiHeadAttention m(8, 2, mha::Init::xavier(3710));
    const mha::Tensor3 x = mha::randn(2, 6, 8, rng), g_out = mha::randn(2, 6, 8, rng);
    const mha::Mask pad = mha::padding_mask({0, 4}, 6);  // sequence 0 sees nothing
    const mha::AttentionGrads want = mha::backward_stages(m, x, x, x, g_out, &pad, -1e10f);
    const mha::AttentionGrads got =
        mha::backward_tiled(m, x, x, x, g_out, mha::mask_mod_of(pad), -1e10f, 4, 4);
    CHECK(tiled_bwd::worst_relative(got, want) < 1e-5);
}

TEST_CASE("backward_tiled: NaN where backward_stages puts NaN") {
    // A NaN in one query row, in one key, in one value; causal, so that
    // skipped tiles would hide the NaN if they were skipped.
    for (int where = 0; where < 3; ++where) {
        CAPTURE(where);
        const auto [m, query, key, value, g_out] =
            tiled_bwd::spoiled(9, 8, 3720, where, 6);
        const mha::Mask causal = mha::causal_mask(9, 9);
        const mha::AttentionGrads want =
            mha::backward_stages(m, query, key, value, g_out, &causal);
        const mha::AttentionGrads got = mha::backward_tiled(
            m, query, key, value, g_out, mha::causal_mod(), mha::kNegInf, 4, 4);
        CHECK(tiled_bwd::nan_count(want) > 0);  // the case is what it says
        CHECK(tiled_bwd::nan_count(got) == tiled_bwd::nan_count(want));
        CHECK(tiled_bwd::worst_relative(got, want) < 1e-5);  // NaN in the same places
    }
}

TEST_CASE("tiled_attention_backward against central finite differences in double") {
    // GQA (4 query heads over 2), Tq != Tk, blocks that do not divide T, and
    // a mask_mod under which query 0 sees nothing
    const std::size_t B = 1, H = 4, H_kv = 2, Tq = 5, Tk = 7, D = 4;
    const mha::MaskMod mod = [](std::size_t, std::size_t, std::size_t i, std::size_t j) {
        return i > 0 && j <= i + 1;
    };
    for (const mha::MaskMod& mask_mod : {mha::MaskMod{}, mod}) {
        CAPTURE(bool(mask_mod));
        mha::Rng rng(3730);
        mha::Tensor4 q = mha_test::randn4(B, H, Tq, D, rng);
        mha::Tensor4 k = mha_test::randn4(B, H_kv, Tk, D, rng);
        mha::Tensor4 v = mha_test::randn4(B, H_kv, Tk, D, rng);
        const mha::Tensor4 r = mha_test::randn4(B, H, Tq, D, rng);  // dL/dO
        const mha::TiledAttention f = mha::tiled_attention(q, k, v, mask_mod, mha::kNegInf, 2, 3);
        const mha::TiledGrads g = mha::tiled_attention_backward(
            q, k, v, f.context, r, f.lse, mask_mod, mha::kNegInf, 2, 3);
        const std::function<double()> loss = [&] {
            return tiled_bwd::attention_loss(q, k, v, mask_mod, r);
        };
        // floor 1e-2: a zero gradient (query 0, keys no one sees) must be
        // within 1e-5 absolute
        CHECK(mha_test::fd_error(q, g.dq, loss, 1e-2) < 1e-3);
        CHECK(mha_test::fd_error(k, g.dk, loss, 1e-2) < 1e-3);
        CHECK(mha_test::fd_error(v, g.dv, loss, 1e-2) < 1e-3);
    }
}

TEST_CASE("tiled_attention_backward with ALiBi and soft-capping against finite differences") {
    // GQA (4 query heads over 2), Tq != Tk both ways, blocks that do not
    // divide T; the loss in double with the mods written out in double
    // (ALiBi's slopes from alibi_slopes(), C tanh(s / C) with C = 1, where
    // the scores here, about N(0, 1), are bent).
    const std::size_t B = 1, H = 4, H_kv = 2, D = 4;
    const std::vector<float> slope = mha::alibi_slopes(H);  // [H]
    const tiled_bwd::DoubleMod alibi_d = [&](double s, std::size_t, std::size_t h,
                                             std::size_t i, std::size_t j) {
        return s - slope[h] * (double(i) - double(j));
    };
    const tiled_bwd::DoubleMod cap_d = [](double s, std::size_t, std::size_t, std::size_t,
                                          std::size_t) { return std::tanh(s); };
    const tiled_bwd::DoubleMod cap_then_alibi_d = [&](double s, std::size_t b, std::size_t h,
                                                      std::size_t i, std::size_t j) {
        return alibi_d(cap_d(s, b, h, i, j), b, h, i, j);
    };
    struct Variant {
        const char* name;
        mha::ScoreModGrad pair;
        tiled_bwd::DoubleMod in_double;
    };
    const Variant variants[] = {
        {"alibi", mha::alibi_with_grad(H), alibi_d},
        {"softcap 1", mha::softcap_with_grad(1.0f), cap_d},
        {"softcap 1 then alibi", mha::chain_with_grad(mha::softcap_with_grad(1.0f),
                                                      mha::alibi_with_grad(H)),
         cap_then_alibi_d}};
    const std::pair<std::size_t, std::size_t> sizes[] = {{5, 7}, {7, 4}};  // Tq, Tk
    for (const auto& [Tq, Tk] : sizes)
        for (const Variant& var : variants)
            for (const mha::MaskMod& mask_mod : {mha::MaskMod{}, mha::causal_mod()}) {
                CAPTURE(Tq); CAPTURE(Tk); CAPTURE(var.name); CAPTURE(bool(mask_mod));
                mha::Rng rng(3735 + Tq);
                mha::Tensor4 q = mha_test::randn4(B, H, Tq, D, rng);
                mha::Tensor4 k = mha_test::randn4(B, H_kv, Tk, D, rng);
                mha::Tensor4 v = mha_test::randn4(B, H_kv, Tk, D, rng);
                const mha::Tensor4 r = mha_test::randn4(B, H, Tq, D, rng);  // dL/dO
                const mha::TiledAttention f = mha::tiled_attention(
                    q, k, v, mask_mod, mha::kNegInf, 2, 3, var.pair.mod);
                const mha::TiledGrads g = mha::tiled_attention_backward(
                    q, k, v, f.context, r, f.lse, mask_mod, mha::kNegInf, 2, 3, var.pair);
                const std::function<double()> loss = [&] {
                    return tiled_bwd::attention_loss(q, k, v, mask_mod, r, var.in_double);
                };
                CHECK(mha_test::fd_error(q, g.dq, loss, 1e-2) < 1e-3);
                CHECK(mha_test::fd_error(k, g.dk, loss, 1e-2) < 1e-3);
                CHECK(mha_test::fd_error(v, g.dv, loss, 1e-2) < 1e-3);
                // the comparison can fail: soft-capping's derivative taken
                // as 1 (a plain bias's) gives dQ and dK wrong by far more
                if (std::string(var.name) != "alibi") {
                    const mha::ScoreMod one = [](float, std::size_t, std::size_t,
                                                 std::size_t, std::size_t) { return 1.0f; };
                    const mha::ScoreModGrad wrong{var.pair.mod, one};
                    const mha::TiledGrads bad = mha::tiled_attention_backward(
                        q, k, v, f.context, r, f.lse, mask_mod, mha::kNegInf, 2, 3, wrong);
                    CHECK(mha_test::fd_error(q, bad.dq, loss, 1e-2) > 1e-1);
                }
            }
}

TEST_CASE("backward_tiled with ALiBi equals backward_stages given ALiBi as a score bias" *
          doctest::test_suite("oracle")) {
    // blocks of 4 against T = 5, 9; Tq != Tk both ways; blocks of 64 over 70
    const std::vector<mha_test::Case> cases = {
        {2, 5, 5, 8, 2, 1, 4, 4}, {1, 9, 9, 16, 4, 2, 4, 4}, {2, 8, 3, 8, 2, 2, 4, 4},
        {1, 3, 9, 16, 4, 1, 2, 4}, {1, 70, 70, 16, 4, 2, 64, 64}};
    std::uint64_t seed = 3780;
    for (const mha_test::Case& c : cases) {
        const auto [rng, m, query, kv, g_out] = mha_test::Setup(c, ++seed);
        // ALiBi written out: -m_h (i - j) for every (h, i, j)  [1, H, Tq, Tk]
        const mha::Tensor4 zeros = xt::zeros<float>({std::size_t(1), c.H, c.Tq, c.Tk});
        const mha::Tensor4 bias = mha::apply_score_mod(zeros, mha::alibi(c.H));
        for (const mha::MaskMod& mask_mod : {mha::MaskMod{}, mha::causal_mod()}) {
            CAPTURE(c.B); CAPTURE(c.Tq); CAPTURE(c.Tk); CAPTURE(c.H); CAPTURE(c.H_kv);
            CAPTURE(c.bq); CAPTURE(c.bk); CAPTURE(bool(mask_mod));
            const mha::Mask mask = mha::mask_of(mha::causal_mod(), c.B, c.H, c.Tq, c.Tk);
            const mha::AttentionGrads want = mha::backward_stages(
                m, query, kv, kv, g_out, mask_mod ? &mask : nullptr, mha::kNegInf, &bias);
            const mha::AttentionGrads got =
                mha::backward_tiled(m, query, kv, kv, g_out, mask_mod, mha::kNegInf, c.bq,
                                    c.bk, mha::alibi_with_grad(c.H));
            CHECK(tiled_bwd::worst_relative(got, want) < 1e-5);
            // and the bias matters here: without ALiBi the gradients differ
            const mha::AttentionGrads plain = mha::backward_tiled(
                m, query, kv, kv, g_out, mask_mod, mha::kNegInf, c.bq, c.bk);
            CHECK(tiled_bwd::worst_relative(plain, want) > 1e-3);
        }
    }
}

TEST_CASE("tiled_attention_backward: a score_mod without its derivative is one line") {
    mha::Rng rng(3790);
    const mha::Tensor4 q = mha_test::randn4(1, 2, 3, 4, rng);
    const mha::Tensor3 lse = mha::Tensor3::from_shape({1, 2, 3});
    const mha::ScoreModGrad no_derivative{mha::softcap(1.0f), {}};
    CHECK_THROWS_WITH_AS(mha::tiled_attention_backward(q, q, q, q, q, lse, {}, mha::kNegInf,
                                                       2, 2, no_derivative),
                         doctest::Contains("no derivative"), std::invalid_argument);
    const mha::MultiHeadAttention m(8, 2, mha::Init::xavier(3790));
    const mha::Tensor3 x = mha::randn(1, 3, 8, rng);
    CHECK_THROWS_WITH_AS(mha::backward_tiled(m, x, x, x, x, {}, mha::kNegInf, 2, 2,
                                             no_derivative),
                         doctest::Contains("backward_tiled: the score_mod has no derivative"),
                         std::invalid_argument);
    CHECK_THROWS_AS(mha::chain_with_grad(no_derivative, mha::alibi_with_grad(2)),
                    std::invalid_argument);
}

TEST_CASE("tiled_attention_backward: shapes that do not fit, and block 0, are one line") {
    mha::Rng rng(3740);
    const mha::Tensor4 q = mha_test::randn4(1, 4, 3, 8, rng);
    const mha::Tensor4 k = mha_test::randn4(1, 2, 5, 8, rng);
    const mha::Tensor3 lse = mha::Tensor3::from_shape({1, 4, 3});
    CHECK_NOTHROW(mha::tiled_attention_backward(q, k, k, q, q, lse, {}, mha::kNegInf, 2, 2));
    CHECK_THROWS_AS(mha::tiled_attention_backward(q, k, k, q, q, lse, {}, mha::kNegInf, 0, 2),
                    std::invalid_argument);
    const mha::Tensor3 short_lse = mha::Tensor3::from_shape({1, 4, 2});
    CHECK_THROWS_AS(
        mha::tiled_attention_backward(q, k, k, q, q, short_lse, {}, mha::kNegInf, 2, 2),
        std::invalid_argument);
    const mha::Tensor4 k3 = mha_test::randn4(1, 3, 5, 8, rng);  // 3 does not divide 4
    CHECK_THROWS_AS(mha::tiled_attention_backward(q, k3, k3, q, q, lse, {}, mha::kNegInf, 2, 2),
                    std::invalid_argument);
}

// The engine: backward() given a trace_no_weights() runs the tiles of
// src/mha/fast/tiled_backward.cpp; equal to the stages and to the teaching
// backward_tiled() on sizes across its 64-row and 64-key tiles.
TEST_CASE("backward() from trace_no_weights() equals backward_stages and backward_tiled" *
          doctest::test_suite("oracle")) {
    const std::vector<mha_test::Case> cases = {{2, 5, 5, 8, 2, 2},       {1, 64, 64, 16, 2, 1},
                                               {1, 65, 130, 16, 4, 2},   {2, 129, 70, 32, 2, 2},
                                               {1, 1, 1, 8, 2, 1},       {1, 200, 200, 32, 4, 1}};
    std::uint64_t seed = 3750;
    for (const mha_test::Case& c : cases) {
        auto [rng, m, query, kv, g_out] = mha_test::Setup(c, ++seed);
        const tiled_bwd::Maskings masks(c, rng);  // the bias drawn from rng
        for (const tiled_bwd::Masking& k : masks.list()) {
            CAPTURE(c.B); CAPTURE(c.Tq); CAPTURE(c.Tk); CAPTURE(c.H); CAPTURE(c.H_kv);
            CAPTURE(k.name);
            const mha::AttentionGrads want =
                mha::backward_stages(m, query, kv, kv, g_out, k.mask, k.fill, k.bias);
            const mha::ForwardTrace t =
                m.trace_no_weights(query, kv, kv, k.mask, k.fill, k.bias);
            CHECK(t.weights.size() == 0);
            const mha::AttentionGrads got =
                mha::backward(m, t, query, kv, kv, g_out, k.mask, k.fill, k.bias);
            CHECK(tiled_bwd::worst_relative(got, want) < 1e-5);
            if (k.bias == nullptr) {  // the teaching version has no score bias
                const mha::MaskMod mod = k.mask ? mha::mask_mod_of(*k.mask) : mha::MaskMod{};
                const mha::AttentionGrads taught =
                    mha::backward_tiled(m, query, kv, kv, g_out, mod, k.fill);
                CHECK(tiled_bwd::worst_relative(got, taught) < 1e-5);
            }
        }
    }
}

TEST_CASE("backward_self_attention from trace_no_weights(mha::causal), no [T, T] tensor") {
    for (std::size_t T : {7, 64, 150}) {
        CAPTURE(T);
        mha::Rng rng(3760 + T);
        const mha::MultiHeadAttention m(32, 4, 2, mha::Init::xavier(3760));
        const mha::Tensor3 x = mha::randn(2, T, 32, rng), g_out = mha::randn(2, T, 32, rng);
        mha::ForwardTrace with;  // with the weights: the engine's other backward
        m.trace_into(with, x, x, x, mha::causal);
        const mha::AttentionGrads want =
            mha::backward_self_attention(m, with, x, g_out, mha::causal);
        const mha::ForwardTrace t = m.trace_no_weights(x, x, x, mha::causal);
        CHECK(t.lse.shape() == mha::Tensor3::shape_type{2, 4, T});
        const mha::AttentionGrads got = mha::backward_self_attention(m, t, x, g_out, mha::causal);
        CHECK(tiled_bwd::worst_relative(got, want) < 1e-5);
    }
}

TEST_CASE("backward() from trace_no_weights(): NaN where backward_stages puts NaN") {
    for (int where = 0; where < 3; ++where) {
        CAPTURE(where);
        const auto [m, query, key, value, g_out] =
            tiled_bwd::spoiled(80, 16, 3770, where, 70);  // in the second tile of 64
        const mha::Mask causal = mha::causal_mask(80, 80);
        const mha::AttentionGrads want =
            mha::backward_stages(m, query, key, value, g_out, &causal);
        const mha::ForwardTrace t = m.trace_no_weights(query, key, value, &causal);
        const mha::AttentionGrads got = mha::backward(m, t, query, key, value, g_out, &causal);
        CHECK(tiled_bwd::nan_count(want) > 0);
        CHECK(tiled_bwd::nan_count(got) == tiled_bwd::nan_count(want));
        CHECK(tiled_bwd::worst_relative(got, want) < 1e-5);
    }
}

// Soft-capping in the engine's tiles: forward_no_weights() and the tiled
// backward with softcap C equal forward_stages() with Mods{softcap(C)} and
// the teaching backward_tiled() with softcap_with_grad(C), on sizes across
// the 64-row and 64-key tiles, masks (causal, a window, padding with a
// sequence that sees nothing, the fill -1e10), GQA and a score bias after
// the cap (the order of the --softcap help: the cap, then the bias).
namespace tiled_bwd {

// The gradients of self-attention as backward_self_attention() returns
// them: dL/dX = dL/dquery + dL/dkey + dL/dvalue in `input`.
mha::AttentionGrads as_self(mha::AttentionGrads g) {
    g.input = g.query + g.key + g.value;
    g.query = g.key = g.value = mha::Tensor3();
    return g;
}

}  // namespace tiled_bwd

TEST_CASE("the engine's tiles with soft-capping equal the stages and backward_tiled" *
          doctest::test_suite("oracle")) {
    const std::vector<mha_test::Case> cases = {{2, 5, 5, 8, 2, 2},     {1, 65, 130, 16, 4, 2},
                                               {2, 129, 70, 32, 2, 2}, {1, 1, 1, 8, 2, 1},
                                               {2, 200, 200, 32, 4, 1}};
    const float C = 0.5f;  // the scores here are about N(0, 0.5): the cap bends them
    std::uint64_t seed = 3800;
    for (const mha_test::Case& c : cases) {
        auto [rng, m, query, kv, g_out] = mha_test::Setup(c, ++seed);
        const tiled_bwd::Maskings masks(c, rng);  // the bias drawn from rng
        for (const tiled_bwd::Masking& k : masks.list()) {
            CAPTURE(c.B); CAPTURE(c.Tq); CAPTURE(c.Tk); CAPTURE(c.H); CAPTURE(c.H_kv);
            CAPTURE(std::string(k.name));
            const mha::MaskMod mask_mod = k.mask ? mha::mask_mod_of(*k.mask) : mha::MaskMod{};
            // the cap first, then the bias, then the mask
            const mha::ScoreModGrad pair =
                k.bias ? mha::chain_with_grad(mha::softcap_with_grad(C),
                                              mha::bias_with_grad(*k.bias))
                       : mha::softcap_with_grad(C);
            const mha::Stages stages =
                m.forward_stages(query, kv, kv, mha::Mods{pair.mod, mask_mod, k.fill, {}});
            const mha::Tensor3 fast =
                m.forward_no_weights(query, kv, kv, k.mask, k.fill, k.bias, C);
            CHECK(mha::max_abs_diff(fast, stages.output) < 2e-5);
            // the engine's call with the weights caps them the same way
            mha::ForwardTrace with;
            mha::fast::forward(m, {query, kv, kv, k.mask, k.fill, k.bias, true, false, C}, with,
                               false);
            CHECK(mha::max_abs_diff(with.weights, stages.weights) < 2e-5);
            CHECK(mha::max_abs_diff(with.output, stages.output) < 2e-5);
            const mha::ForwardTrace t =
                m.trace_no_weights(query, kv, kv, k.mask, k.fill, k.bias, C);
            CHECK(mha::max_abs_diff(t.output, stages.output) < 2e-5);
            const mha::AttentionGrads got =
                mha::backward(m, t, query, kv, kv, g_out, k.mask, k.fill, k.bias, C);
            const mha::AttentionGrads taught =
                mha::backward_tiled(m, query, kv, kv, g_out, mask_mod, k.fill, 64, 64, pair);
            CHECK(tiled_bwd::worst_relative(got, taught) < 1e-5);
            // the cap matters: without it in the backward, the gradients
            // differ (where scores have a gradient: more than one key, and
            // not a batch of one whose only sequence is all padding)
            if (c.Tk > 1 && k.mask != &masks.pad) {
                const mha::AttentionGrads uncapped =
                    mha::backward(m, t, query, kv, kv, g_out, k.mask, k.fill, k.bias);
                CHECK(tiled_bwd::worst_relative(uncapped, taught) > 1e-3);
            }
        }
    }
}

TEST_CASE("soft-capping through mha::causal tiles, self-attention, no [T, T] tensor") {
    for (std::size_t T : {7, 64, 150}) {
        CAPTURE(T);
        mha::Rng rng(3810 + T);
        const mha::MultiHeadAttention m(32, 4, 2, mha::Init::xavier(3810));
        const mha::Tensor3 x = mha::randn(2, T, 32, rng), g_out = mha::randn(2, T, 32, rng);
        const float C = 0.5f;
        const mha::Stages stages = m.forward_stages(
            x, x, x, mha::Mods{mha::softcap(C), mha::causal_mod(), mha::kNegInf, {}});
        CHECK(mha::max_abs_diff(m.forward_no_weights(x, x, x, mha::causal, C), stages.output) <
              2e-5);
        const mha::ForwardTrace t = m.trace_no_weights(x, x, x, mha::causal, C);
        const mha::AttentionGrads got =
            mha::backward_self_attention(m, t, x, g_out, mha::causal, C);
        const mha::AttentionGrads taught = tiled_bwd::as_self(
            mha::backward_tiled(m, x, x, x, g_out, mha::causal_mod(), mha::kNegInf, 64, 64,
                                mha::softcap_with_grad(C)));
        CHECK(tiled_bwd::worst_relative(got, taught) < 1e-5);
    }
}

TEST_CASE("soft-capping: a bad C, or a trace with weights, is one line") {
    mha::Rng rng(3820);
    const mha::MultiHeadAttention m(8, 2, mha::Init::xavier(3820));
    const mha::Tensor3 x = mha::randn(1, 4, 8, rng);
    CHECK_THROWS_WITH_AS(m.forward_no_weights(x, x, x, mha::causal, -1.0f),
                         doctest::Contains("softcap C"), std::invalid_argument);
    CHECK_THROWS_AS(m.trace_no_weights(x, x, x, nullptr, mha::kNegInf, nullptr, NAN),
                    std::invalid_argument);
    const mha::ForwardTrace with = m.trace(x, x, x);  // the weights' backward has no cap
    CHECK_THROWS_WITH_AS(
        mha::backward(m, with, x, x, x, x, nullptr, mha::kNegInf, nullptr, 2.0f),
        doctest::Contains("trace_no_weights"), std::invalid_argument);
}

// RoPE's backward: dQ and dK turned back by R^T, against central finite
// differences of the loss sum(output o G) through forward_stages() with RoPE.
TEST_CASE("backward_tiled with RoPE against finite differences, both conventions") {
    const std::size_t B = 1, T = 5, E = 8, H = 2;
    for (const mha::RopeStyle style : {mha::RopeStyle::interleaved, mha::RopeStyle::half}) {
        CAPTURE(int(style));
        mha::Rng rng(3830);
        const mha::MultiHeadAttention m(E, H, 1, mha::Init::xavier(3830));
        mha::Tensor3 x = mha::randn(B, T, E, rng);
        const mha::Tensor3 g_out = mha::randn(B, T, E, rng);
        mha::Rope rope;
        rope.style = style;
        rope.theta = 10.0;  // angles large enough to matter at positions 0..4
        const mha::Mods mods{{}, mha::causal_mod(), mha::kNegInf, rope};
        const std::function<double()> loss = [&] {
            const mha::Tensor3 y = m.forward_stages(x, x, x, mods).output;  // [B, T, E]
            double sum = 0;
            for (std::size_t i = 0; i < y.size(); ++i)
                sum += double(y.data()[i]) * g_out.data()[i];
            return sum;
        };
        const mha::AttentionGrads g = tiled_bwd::as_self(mha::backward_tiled(
            m, x, x, x, g_out, mha::causal_mod(), mha::kNegInf, 2, 3, {}, rope));
        CHECK(mha_test::fd_error(x, g.input, loss, 1e-2) < 1e-2);
        // and the turn back matters: without RoPE's backward dX is wrong
        const mha::AttentionGrads plain = tiled_bwd::as_self(
            mha::backward_tiled(m, x, x, x, g_out, mha::causal_mod(), mha::kNegInf, 2, 3));
        CHECK(mha_test::fd_error(x, plain.input, loss, 1e-2) > 5e-2);
    }
}

// RoPE in the engine (Call::rope): Q and K turned after the projections,
// dQ and dK turned back (R^T) before them; with and without the weights,
// self-attention's one dL/dX and the three inputs' gradients, soft-capping
// too, against forward_stages() and the teaching backward_tiled().
TEST_CASE("the engine with RoPE equals the stages and backward_tiled with RoPE" *
          doctest::test_suite("oracle")) {
    struct Case {
        std::size_t B, T, E, H, H_kv;
    };
    const std::vector<Case> cases = {{2, 5, 8, 2, 1}, {1, 70, 16, 4, 2}, {2, 130, 32, 2, 2}};
    std::uint64_t seed = 3840;
    for (const Case& c : cases)
        for (const mha::RopeStyle style : {mha::RopeStyle::interleaved, mha::RopeStyle::half}) {
            mha::Rng rng(++seed);
            const mha::MultiHeadAttention m(c.E, c.H, c.H_kv, mha::Init::xavier(seed));
            const mha::Tensor3 x = mha::randn(c.B, c.T, c.E, rng);
            const mha::Tensor3 g_out = mha::randn(c.B, c.T, c.E, rng);
            const mha::Mask tril = mha::causal_mask(c.T, c.T);
            mha::Rope rope;
            rope.style = style;
            rope.theta = 500.0;
            for (const bool causal : {false, true})
                for (const float C : {0.0f, 0.5f})
                    for (const bool weights : {true, false}) {
                        if (weights && C > 0.0f) continue;  // the cap: tiles only
                        CAPTURE(c.B); CAPTURE(c.T); CAPTURE(c.H); CAPTURE(c.H_kv);
                        CAPTURE(int(style)); CAPTURE(causal); CAPTURE(C); CAPTURE(weights);
                        const mha::MaskMod mod = causal ? mha::causal_mod() : mha::MaskMod{};
                        const mha::ScoreModGrad cap =
                            C > 0.0f ? mha::softcap_with_grad(C) : mha::ScoreModGrad{};
                        const mha::Stages stages =
                            m.forward_stages(x, x, x, mha::Mods{cap.mod, mod, mha::kNegInf, rope});
                        const mha::fast::Call call{x, x, x, causal ? &tril : nullptr,
                                                   mha::kNegInf, nullptr, weights, false, C,
                                                   &rope};
                        mha::ForwardTrace t;
                        mha::fast::forward(m, call, t, true);
                        CHECK(mha::max_abs_diff(t.output, stages.output) < 2e-5);
                        if (weights) CHECK(mha::max_abs_diff(t.weights, stages.weights) < 2e-5);
                        const mha::AttentionGrads taught = mha::backward_tiled(
                            m, x, x, x, g_out, mod, mha::kNegInf, 64, 64, cap, rope);
                        const mha::AttentionGrads three = mha::fast::backward(m, call, t, g_out);
                        CHECK(tiled_bwd::worst_relative(three, taught) < 1e-5);
                        const mha::AttentionGrads self =
                            mha::fast::backward(m, call, t, g_out, true);
                        CHECK(tiled_bwd::worst_relative(self, tiled_bwd::as_self(taught)) <
                              1e-5);
                        // and the turn back matters
                        const mha::AttentionGrads plain = mha::backward_tiled(
                            m, x, x, x, g_out, mod, mha::kNegInf, 64, 64, cap);
                        if (c.T > 1) CHECK(tiled_bwd::worst_relative(three, plain) > 1e-3);
                    }
        }
}

TEST_CASE("soft-capping in the engine: NaN where the teaching backward_tiled puts NaN") {
    // A NaN in one query row, key or value, in the second tile of 64, causal:
    // the tiles past the diagonal must not hide it (tanh(NaN) is NaN)
    for (int where = 0; where < 3; ++where) {
        CAPTURE(where);
        const auto [m, query, key, value, g_out] =
            tiled_bwd::spoiled(80, 16, 3850, where, 70);
        const mha::Mask causal = mha::causal_mask(80, 80);
        const mha::AttentionGrads want =
            mha::backward_tiled(m, query, key, value, g_out, mha::causal_mod(), mha::kNegInf,
                                64, 64, mha::softcap_with_grad(0.5f));
        const mha::ForwardTrace t =
            m.trace_no_weights(query, key, value, &causal, mha::kNegInf, nullptr, 0.5f);
        const mha::AttentionGrads got =
            mha::backward(m, t, query, key, value, g_out, &causal, mha::kNegInf, nullptr, 0.5f);
        CHECK(tiled_bwd::nan_count(want) > 0);
        CHECK(tiled_bwd::nan_count(got) == tiled_bwd::nan_count(want));
        CHECK(tiled_bwd::worst_relative(got, want) < 1e-5);
    }
}
