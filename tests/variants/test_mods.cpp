// Tests for mha/variants/mods.hpp: every variant against its formula,
// written again here in plain signed loops, and the whole forward through
// it against a plain-loop attention in double written here too; the mask
// algebra; rows that see nothing; Tq != Tk; GQA; bad input.
//
// B = batch, Tq / Tk = queries / keys, E = embed_dim, H = heads, H_kv =
// key/value heads, D = E / H.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "mha/reference.hpp"
#include "mha/variants/mods.hpp"

namespace {

using Sees = std::function<bool(long b, long h, long i, long j)>;
using Bias = std::function<double(double s, long b, long h, long i, long j)>;

// The forward in plain loops, in double, from the module's weights: scores,
// the modification, the mask, the softmax (a row that sees nothing gets
// zero weights under -inf, the fill's softmax otherwise), weights x V, w_o.
struct Oracle {
    xt::xtensor<double, 3> output;   // [B, Tq, E]
    xt::xtensor<double, 4> weights;  // [B, H, Tq, Tk]
};

Oracle oracle(const mha::MultiHeadAttention& m, const mha::Tensor3& x,
              const mha::Tensor3& y, const Sees& sees, const Bias& bias, float fill) {
    const long B = long(x.shape(0)), Tq = long(x.shape(1)), Tk = long(y.shape(1));
    const long E = long(m.embed_dim()), H = long(m.num_heads()), D = long(m.head_dim());
    const long G = H / long(m.num_kv_heads());  // query heads per kv head
    auto lin = [](const mha::Tensor3& in, const mha::Linear& l, long b, long t, long o) {
        double acc = l.bias(o);
        for (std::size_t e = 0; e < in.shape(2); ++e) acc += double(in(b, t, e)) * l.weight(o, e);
        return acc;
    };
    Oracle out;
    out.weights = xt::xtensor<double, 4>::from_shape(
        {std::size_t(B), std::size_t(H), std::size_t(Tq), std::size_t(Tk)});
    xt::xtensor<double, 3> ctx = xt::zeros<double>({std::size_t(B), std::size_t(Tq),
                                                    std::size_t(E)});
    for (long b = 0; b < B; ++b)
        for (long h = 0; h < H; ++h)
            for (long i = 0; i < Tq; ++i) {
                const long g = h / G;
                std::vector<double> s(Tk);
                double top = -INFINITY;
                for (long j = 0; j < Tk; ++j) {
                    double dot = 0;
                    for (long d = 0; d < D; ++d)
                        dot += lin(x, m.wq, b, i, h * D + d) * lin(y, m.wk, b, j, g * D + d);
                    s[j] = dot / std::sqrt(double(D));
                    if (bias) s[j] = bias(s[j], b, h, i, j);
                    if (!sees(b, h, i, j)) s[j] = fill;
                    top = std::max(top, s[j]);
                }
                double sum = 0;
                for (long j = 0; j < Tk; ++j) {
                    s[j] = top == -INFINITY ? 0.0 : std::exp(s[j] - top);
                    sum += s[j];
                }
                for (long j = 0; j < Tk; ++j) {
                    const double w = sum > 0 ? s[j] / sum : 0.0;
                    out.weights(b, h, i, j) = w;
                    for (long d = 0; d < D; ++d)
                        ctx(b, i, h * D + d) += w * lin(y, m.wv, b, j, g * D + d);
                }
            }
    out.output = xt::xtensor<double, 3>::from_shape(ctx.shape());
    for (long b = 0; b < B; ++b)
        for (long i = 0; i < Tq; ++i)
            for (long o = 0; o < E; ++o) {
                double acc = m.w_o.bias(o);
                for (long e = 0; e < E; ++e) acc += ctx(b, i, e) * m.w_o.weight(o, e);
                out.output(b, i, o) = acc;
            }
    return out;
}

// One variant: its mods, and the same thing as formulas on signed indices.
struct Variant {
    std::string name;
    mha::MaskMod mask_mod;
    mha::ScoreMod score_mod;
    Sees sees;
    Bias bias;
    bool self_only = false;  // documents: q and k index the same ids
};

// ALiBi's slope of head h (0-based) for H = 4 and H = 6, from the paper's
// get_slopes(): 2^(-8(h+1)/H) for H = 4; for H = 6 the four of H = 4, then
// get_slopes(8)[0::2][:2] = 2^-1, 2^-3.
double slope(long H, long h) {
    if (H == 4) return std::pow(2.0, -2.0 * (h + 1));
    const double six[] = {0.25, 0.0625, 0.015625, 0.00390625, 0.5, 0.125};
    return six[h];
}

std::vector<Variant> variants(long H) {
    const xt::xtensor<std::int64_t, 2> ids = {{0, 0, 0, 1, 1, 2, 2, 2, 2},
                                              {5, 5, 5, 5, 5, 5, 7, 7, 7}};
    const auto ID = ids;
    std::vector<Variant> v;
    v.push_back({"full", mha::full(), {}, [](long, long, long, long) { return true; }, {}});
    v.push_back({"causal", mha::causal_mod(), {},
                 [](long, long, long i, long j) { return j <= i; }, {}});
    v.push_back({"window 3", mha::sliding_window(3), {},
                 [](long, long, long i, long j) { return i - 3 < j && j <= i; }, {}});
    v.push_back({"window 1", mha::sliding_window(1), {},
                 [](long, long, long i, long j) { return j == i; }, {}});
    v.push_back({"sinks 2 window 3", mha::sinks_window(2, 3), {},
                 [](long, long, long i, long j) { return j <= i && (j < 2 || i - 3 < j); }, {}});
    v.push_back({"prefix 4", mha::prefix_lm(4), {},
                 [](long, long, long i, long j) { return j < 4 || j <= i; }, {}});
    v.push_back({"documents", mha::documents(ids), {},
                 [ID](long b, long, long i, long j) { return ID(b, j) == ID(b, i) && j <= i; },
                 {}, true});
    const mha::MaskMod first3 = [](std::size_t, std::size_t, std::size_t, std::size_t k) {
        return k < 3;
    };
    v.push_back({"window 2 or the first 3 keys", mha::or_masks(mha::sliding_window(2), first3),
                 {}, [](long, long, long i, long j) { return (i - 2 < j && j <= i) || j < 3; },
                 {}});
    v.push_back({"alibi, causal", mha::causal_mod(), mha::alibi(std::size_t(H)),
                 [](long, long, long i, long j) { return j <= i; },
                 [H](double s, long, long h, long i, long j) {
                     return s - slope(H, h) * (i - j);
                 }});
    v.push_back({"softcap 0.5, window 3", mha::sliding_window(3), mha::softcap(0.5f),
                 [](long, long, long i, long j) { return i - 3 < j && j <= i; },
                 [](double s, long, long, long, long) { return 0.5 * std::tanh(s / 0.5); }});
    v.push_back({"softcap 0.5 then alibi, causal", mha::causal_mod(),
                 mha::chain(mha::softcap(0.5f), mha::alibi(std::size_t(H))),
                 [](long, long, long i, long j) { return j <= i; },
                 [H](double s, long, long h, long i, long j) {
                     return 0.5 * std::tanh(s / 0.5) - slope(H, h) * (i - j);
                 }});
    return v;
}

}  // namespace

TEST_CASE("variants: each mask_mod is its formula, element by element") {
    for (long H : {4L, 6L}) {
        for (const Variant& v : variants(H)) {
            for (std::size_t Tq : {9, 5}) {
                const std::size_t Tk = v.self_only ? Tq : 9;
                if (v.self_only && Tq != 9) continue;
                CAPTURE(v.name); CAPTURE(Tq);
                const mha::Mask m = mha::mask_of(v.mask_mod, 2, std::size_t(H), Tq, Tk);
                int wrong = 0;
                for (long b = 0; b < 2; ++b)
                    for (long h = 0; h < H; ++h)
                        for (long i = 0; i < long(Tq); ++i)
                            for (long j = 0; j < long(Tk); ++j)
                                wrong += m(b, h, i, j) != v.sees(b, h, i, j);
                CHECK(wrong == 0);
            }
        }
    }
}

TEST_CASE("variants: forward_stages and reference_forward with each equal the oracle" *
          doctest::test_suite("oracle")) {
    // Self-attention (Tq = Tk = 9) and cross-attention (Tq = 5, Tk = 9),
    // every H_kv (GQA, MQA), both fills; the oracle is the loops above.
    struct Case {
        std::size_t Tq, H, H_kv;
    };
    std::uint64_t seed = 3600;
    for (const Case& c : {Case{9, 4, 4}, Case{9, 4, 2}, Case{9, 4, 1}, Case{5, 6, 3},
                          Case{9, 6, 1}}) {
        const std::size_t B = 2, Tk = 9, E = 4 * c.H;
        mha::Rng rng(++seed);
        const mha::MultiHeadAttention m(E, c.H, c.H_kv, mha::Init::xavier(seed));
        const mha::Tensor3 x = mha::randn(B, c.Tq, E, rng);
        const mha::Tensor3 y = c.Tq == Tk ? x : mha::randn(B, Tk, E, rng);
        for (const Variant& v : variants(long(c.H))) {
            if (v.self_only && c.Tq != Tk) continue;
            for (float fill : {mha::kNegInf, -1e10f}) {
                CAPTURE(v.name); CAPTURE(c.Tq); CAPTURE(c.H); CAPTURE(c.H_kv); CAPTURE(fill);
                const mha::Mods mods{v.score_mod, v.mask_mod, fill, {}};
                const Oracle want = oracle(m, x, y, v.sees, v.bias, fill);
                const mha::Stages s = m.forward_stages(x, y, y, mods);
                CHECK(mha::max_abs_diff(s.output, want.output) < 2e-5);
                CHECK(mha::max_abs_diff(s.weights, want.weights) < 2e-5);
                const mha::ReferenceOutput r = mha::reference_forward(m, x, y, y, mods);
                CHECK(mha::max_abs_diff(r.output, want.output) < 2e-5);
            }
        }
    }
}

TEST_CASE("variants: apply_mask and add_score_bias are the mods reading a tensor") {
    // The stage-4 functions take the mods' path: the same floats, bit for bit.
    mha::Rng rng(3610);
    mha::Tensor4 scores({2, 3, 5, 7}), bias({1, 3, 5, 7});
    for (float& s : scores) s = rng.normal();
    for (float& s : bias) s = rng.normal();
    const mha::Mask mask = mha::combine_masks(mha::causal_mask(5, 7),
                                              mha::padding_mask({7, 3}, 7));
    for (float fill : {mha::kNegInf, -1e9f}) {
        CHECK(mha::apply_mask(scores, mask, fill) ==
              mha::apply_mask_mod(scores, mha::mask_mod_of(mask), fill));
    }
    CHECK(mha::add_score_bias(scores, bias) ==
          mha::apply_score_mod(scores, mha::bias_mod_of(bias)));
    CHECK(mha::mask_of(mha::mask_mod_of(mask), 2, 3, 5, 7) ==
          mha::combine_masks(mask, mha::Mask(xt::ones<bool>({2, 3, 5, 7}))));
    CHECK(mha::mask_of(mha::causal_mod(), 1, 1, 5, 7) == mha::causal_mask(5, 7));
    // and so forward_stages with tensors is forward_stages with their mods
    const mha::MultiHeadAttention m(12, 3, mha::Init::xavier(3610));
    const mha::Tensor3 x = mha::randn(2, 5, 12, rng), y = mha::randn(2, 7, 12, rng);
    const mha::Tensor4 b4 = bias;
    const mha::Stages a = m.forward_stages(x, y, y, &mask, mha::kNegInf, &b4);
    const mha::Stages b = m.forward_stages(
        x, y, y, mha::Mods{mha::bias_mod_of(b4), mha::mask_mod_of(mask), mha::kNegInf, {}});
    CHECK(a.output == b.output);
}

TEST_CASE("variants: the mask algebra") {
    // On a 2 x 2 x 9 x 9 grid, self-attention, so the documents mask fits.
    const xt::xtensor<std::int64_t, 2> ids = {{0, 0, 1, 1, 1, 1, 2, 3, 3},
                                              {4, 4, 4, 4, 4, 4, 4, 4, 4}};
    const std::vector<std::pair<std::string, mha::MaskMod>> mods = {
        {"full", mha::full()},          {"causal", mha::causal_mod()},
        {"window 3", mha::sliding_window(3)}, {"sinks 1, 2", mha::sinks_window(1, 2)},
        {"prefix 3", mha::prefix_lm(3)}, {"documents", mha::documents(ids)}};
    auto grid = [](const mha::MaskMod& f) { return mha::mask_of(f, 2, 2, 9, 9); };
    auto same = [&](const mha::MaskMod& f, const mha::MaskMod& g) { return grid(f) == grid(g); };
    for (const auto& [na, a] : mods) {
        CAPTURE(na);
        CHECK(same(mha::and_masks(a, mha::full()), a));               // full is and's unit
        CHECK(same(mha::or_masks(a, mha::full()), mha::full()));
        CHECK(same(mha::and_masks(a, a), a));                          // idempotent
        CHECK(same(mha::or_masks(a, a), a));
        for (const auto& [nb, b] : mods) {
            CAPTURE(nb);
            CHECK(same(mha::and_masks(a, b), mha::and_masks(b, a)));   // commutative
            CHECK(same(mha::or_masks(a, b), mha::or_masks(b, a)));
            CHECK(same(mha::and_masks(a, mha::or_masks(a, b)), a));    // absorption
            for (const auto& [nc, c] : mods) {
                CAPTURE(nc);                                           // associative
                CHECK(same(mha::and_masks(mha::and_masks(a, b), c),
                           mha::and_masks(a, mha::and_masks(b, c))));
                CHECK(same(mha::or_masks(mha::or_masks(a, b), c),
                           mha::or_masks(a, mha::or_masks(b, c))));
                CHECK(same(mha::and_masks(a, mha::or_masks(b, c)),     // distributive
                           mha::or_masks(mha::and_masks(a, b), mha::and_masks(a, c))));
            }
        }
    }
    const mha::MaskMod causal = mha::causal_mod();
    CHECK(same(mha::and_masks(causal, mha::full()), causal));
    CHECK(same(mha::and_masks(mha::sliding_window(3), causal), mha::sliding_window(3)));
    CHECK(same(mha::sliding_window(9), causal));      // a window as long as T
    CHECK(same(mha::sinks_window(0, 3), mha::sliding_window(3)));
    CHECK(same(mha::sinks_window(9, 1), causal));     // every key a sink
    CHECK(same(mha::prefix_lm(0), causal));
    CHECK(same(mha::prefix_lm(9), mha::full()));
    const xt::xtensor<std::int64_t, 2> one_doc = xt::zeros<std::int64_t>({2, 9});
    CHECK(same(mha::documents(one_doc), causal));
    // sinks = window or (causal and the first S keys)
    const mha::MaskMod first2 = [](std::size_t, std::size_t, std::size_t, std::size_t k) {
        return k < 2;
    };
    CHECK(same(mha::sinks_window(2, 3),
               mha::or_masks(mha::sliding_window(3), mha::and_masks(causal, first2))));
    CHECK(same(mha::prefix_lm(2), mha::or_masks(causal, first2)));
    CHECK_FALSE(same(mha::sliding_window(3), mha::sliding_window(4)));  // the test can fail
}

TEST_CASE("variants: a row that sees nothing, as apply_mask treats it") {
    // Sequence 0 is all padding (length 0): under -inf its rows get zero
    // weights and the output w_o.bias; under -1e10 the fill's softmax,
    // uniform. Both as the same mask given as a tensor.
    mha::Rng rng(3620);
    const std::size_t B = 2, T = 6, E = 8, H = 2;
    const mha::MultiHeadAttention m(E, H, 1, mha::Init::xavier(3620));
    const mha::Tensor3 x = mha::randn(B, T, E, rng);
    const mha::Mask pad = mha::padding_mask({0, 4}, T);
    const mha::MaskMod mod = mha::and_masks(mha::sliding_window(2), mha::mask_mod_of(pad));
    const mha::Mask tensor = mha::combine_masks(mha::mask_of(mha::sliding_window(2), 1, 1, T, T),
                                                pad);
    for (float fill : {mha::kNegInf, -1e10f}) {
        CAPTURE(fill);
        const mha::Stages s = m.forward_stages(x, x, x, mha::Mods{{}, mod, fill, {}});
        const mha::Stages t = m.forward_stages(x, x, x, &tensor, fill);
        CHECK(s.output == t.output);
        const Sees sees = [](long b, long, long i, long j) {
            return b == 1 && j < 4 && i - 2 < j && j <= i;  // sequence 0 sees nothing
        };
        const Oracle want = oracle(m, x, x, sees, {}, fill);
        CHECK(mha::max_abs_diff(s.output, want.output) < 2e-5);
        for (std::size_t i = 0; i < T; ++i)
            for (std::size_t j = 0; j < T; ++j)
                CHECK(s.weights(0, 1, i, j) ==
                      doctest::Approx(fill == mha::kNegInf ? 0.0 : 1.0 / T));
        if (fill == mha::kNegInf)
            for (std::size_t e = 0; e < E; ++e) CHECK(s.output(0, 3, e) == m.w_o.bias(e));
    }
}

TEST_CASE("variants: ALiBi slopes as the paper gives them") {
    // H a power of two: 2^(-8h/H), h = 1..H. Otherwise the paper's code:
    // the closest power of two c, then get_slopes(2c)[0::2] up to H.
    auto check = [](std::size_t H, const std::vector<double>& want) {
        CAPTURE(H);
        const std::vector<float> m = mha::alibi_slopes(H);
        REQUIRE(m.size() == want.size());
        for (std::size_t i = 0; i < H; ++i) CHECK(m[i] == doctest::Approx(want[i]).epsilon(1e-6));
    };
    check(1, {std::pow(2.0, -8)});
    check(8, {0.5, 0.25, 0.125, 0.0625, 0.03125, 0.015625, 0.0078125, 0.00390625});
    check(6, {0.25, 0.0625, 0.015625, 0.00390625, 0.5, 0.125});
    check(12, {0.5, 0.25, 0.125, 0.0625, 0.03125, 0.015625, 0.0078125, 0.00390625,
               std::pow(2.0, -0.5), std::pow(2.0, -1.5), std::pow(2.0, -2.5),
               std::pow(2.0, -3.5)});
    std::vector<double> sixteen;
    for (int h = 1; h <= 16; ++h) sixteen.push_back(std::pow(2.0, -0.5 * h));
    check(16, sixteen);
    // the bias itself: -m_h (q - k), zero on the diagonal
    const mha::ScoreMod a = mha::alibi(8);
    CHECK(a(1.5f, 0, 2, 7, 7) == 1.5f);
    CHECK(a(1.5f, 0, 2, 7, 3) == doctest::Approx(1.5 - 0.125 * 4));
}

TEST_CASE("variants: soft-capping stays within C and keeps small scores") {
    const mha::ScoreMod cap = mha::softcap(50.0f);
    CHECK(cap(1e6f, 0, 0, 0, 0) <= 50.0f);
    CHECK(cap(-1e6f, 0, 0, 0, 0) >= -50.0f);
    CHECK(cap(0.5f, 0, 0, 0, 0) == doctest::Approx(0.5).epsilon(1e-4));
    CHECK(cap(100.0f, 0, 0, 0, 0) == doctest::Approx(50.0 * std::tanh(2.0)));
}

TEST_CASE("variants: each score_mod's derivative against a central difference of the mod") {
    // ds'/ds against (mod(s + h) - mod(s - h)) / 2h, h = 1e-2, over s in
    // [-3, 3]: the difference's own error, about h^2 / 6 times the third
    // derivative, is below 2e-4 at C = 0.5. Head 0 at (q, k) = (5, 2) has
    // ALiBi's bias -3 m_1 = -0.75 (H = 4), so softcap after alibi is asked
    // its derivative at alibi(s), not at s.
    mha::Tensor4 bias({1, 1, 1, 3});
    bias(0, 0, 0, 0) = 0.5f;
    bias(0, 0, 0, 1) = -2.0f;
    bias(0, 0, 0, 2) = 1.0f;
    const std::vector<std::pair<std::string, mha::ScoreModGrad>> pairs = {
        {"alibi", mha::alibi_with_grad(4)},
        {"softcap 0.5", mha::softcap_with_grad(0.5f)},
        {"softcap 2", mha::softcap_with_grad(2.0f)},
        {"bias", mha::bias_with_grad(bias)},
        {"softcap 2 then alibi",
         mha::chain_with_grad(mha::softcap_with_grad(2.0f), mha::alibi_with_grad(4))},
        {"alibi then softcap 0.5",
         mha::chain_with_grad(mha::alibi_with_grad(4), mha::softcap_with_grad(0.5f))}};
    const double h = 1e-2;
    for (const auto& [name, pair] : pairs) {
        CAPTURE(name);
        double worst = 0;
        for (int i = -12; i <= 12; ++i) {
            const float s = 0.25f * float(i);
            const double fd = (double(pair.mod(float(s + h), 0, 0, 5, 2)) -
                               double(pair.mod(float(s - h), 0, 0, 5, 2))) / (2 * h);
            worst = std::max(worst, std::fabs(fd - pair.derivative(s, 0, 0, 5, 2)));
        }
        CHECK(worst < 1e-3);
    }
    // the chain rule's point matters: softcap 0.5's derivative at s = 0
    // and at alibi(0) = -0.75 differ by far more than the tolerance
    const mha::ScoreModGrad cap = mha::softcap_with_grad(0.5f);
    CHECK(std::fabs(cap.derivative(0.0f, 0, 0, 5, 2) - cap.derivative(-0.75f, 0, 0, 5, 2)) >
          0.1);
}

TEST_CASE("variants: bad arguments are one clear line") {
    CHECK_THROWS_AS(mha::sliding_window(0), std::invalid_argument);
    CHECK_THROWS_AS(mha::sinks_window(2, 0), std::invalid_argument);
    CHECK_THROWS_AS(mha::softcap(0.0f), std::invalid_argument);
    CHECK_THROWS_AS(mha::alibi_slopes(0), std::invalid_argument);
    // documents asked past its ids (cross-attention with Tk > T)
    mha::Rng rng(3630);
    const mha::MultiHeadAttention m(8, 2, mha::Init::xavier(3630));
    const mha::Tensor3 x = mha::randn(1, 4, 8, rng), y = mha::randn(1, 6, 8, rng);
    const xt::xtensor<std::int64_t, 2> ids = xt::zeros<std::int64_t>({1, 4});
    const mha::Mods docs{{}, mha::documents(ids), mha::kNegInf, {}};
    CHECK_THROWS_WITH_AS(m.forward_stages(x, y, y, docs), doctest::Contains("Tq = Tk = T"),
                         std::invalid_argument);
    // ALiBi made for fewer heads than the module has
    const mha::Mods one_slope{mha::alibi(1), {}, mha::kNegInf, {}};
    CHECK_THROWS_WITH_AS(m.forward_stages(x, x, x, one_slope), doctest::Contains("alibi(H)"),
                         std::invalid_argument);
}
