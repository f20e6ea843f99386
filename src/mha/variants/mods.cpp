// Variants: mask_mod and score_mod, the two stages that use them, and the
// named variants, each a few lines.
//
// B = batch, H = heads, Tq = queries, Tk = keys; b, h, q, k index them.
#include "mha/variants/mods.hpp"

#include <cmath>
#include <string>
#include <utility>

namespace mha {

Tensor4 apply_mask_mod(const Tensor4& scores, const MaskMod& mask_mod, float fill) {
    return apply_mask_with(scores, mask_mod, fill);  // [B, H, Tq, Tk]
}

Tensor4 apply_score_mod(const Tensor4& scores, const ScoreMod& score_mod) {
    const std::size_t B = scores.shape(0), H = scores.shape(1);
    const std::size_t Tq = scores.shape(2), Tk = scores.shape(3);
    require_nonzero({B, H, Tq, Tk}, "apply_score_mod scores [B, H, Tq, Tk]");
    Tensor4 out = Tensor4::from_shape(scores.shape());  // [B, H, Tq, Tk]
    for (std::size_t b = 0; b < B; ++b)
        for (std::size_t h = 0; h < H; ++h)
            for (std::size_t q = 0; q < Tq; ++q)
                for (std::size_t k = 0; k < Tk; ++k)
                    out(b, h, q, k) = score_mod(scores(b, h, q, k), b, h, q, k);
    return out;
}

Mask mask_of(const MaskMod& mask_mod, std::size_t b, std::size_t h,
             std::size_t tq, std::size_t tk) {
    require_nonzero({b, h, tq, tk}, "mask_of [B, H, Tq, Tk]");
    Mask m({b, h, tq, tk});
    for (std::size_t i = 0; i < b; ++i)
        for (std::size_t j = 0; j < h; ++j)
            for (std::size_t q = 0; q < tq; ++q)
                for (std::size_t k = 0; k < tk; ++k) m(i, j, q, k) = mask_mod(i, j, q, k);
    return m;
}

MaskMod mask_mod_of(const Mask& mask) {
    return [mask](std::size_t b, std::size_t h, std::size_t q, std::size_t k) {
        return mask_row(mask, b, h, q)[k];  // broadcast over axes of size 1
    };
}

ScoreMod bias_mod_of(const Tensor4& bias) {
    return [bias](float s, std::size_t b, std::size_t h, std::size_t q, std::size_t k) {
        return s + broadcast_row(bias, b, h, q)[k];
    };
}

// The masks. Each compares indices only: no tensor, no size.

MaskMod full() {
    return [](std::size_t, std::size_t, std::size_t, std::size_t) { return true; };
}

MaskMod causal_mod() {
    return [](std::size_t, std::size_t, std::size_t q, std::size_t k) { return k <= q; };
}

MaskMod sliding_window(std::size_t w) {
    if (w == 0) fail("sliding_window: W = 0 would hide every key; W must be at least 1");
    // q - W < k, written k + W > q so that no unsigned subtraction wraps
    return [w](std::size_t, std::size_t, std::size_t q, std::size_t k) {
        return k <= q && k + w > q;
    };
}

MaskMod sinks_window(std::size_t s, std::size_t w) {
    if (w == 0) fail("sinks_window: W = 0; the window must hold at least the query itself");
    return [s, w](std::size_t, std::size_t, std::size_t q, std::size_t k) {
        return k <= q && (k < s || k + w > q);
    };
}

MaskMod prefix_lm(std::size_t p) {
    return [p](std::size_t, std::size_t, std::size_t q, std::size_t k) {
        return k < p || k <= q;
    };
}

MaskMod documents(const xt::xtensor<std::int64_t, 2>& ids) {
    require_nonzero({ids.shape(0), ids.shape(1)}, "documents ids [B, T]");
    return [ids](std::size_t b, std::size_t, std::size_t q, std::size_t k) {
        if (b >= ids.shape(0) || q >= ids.shape(1) || k >= ids.shape(1)) {
            fail("documents: ids " + shape_of(ids) + " have no (b, q, k) = (" +
                 std::to_string(b) + ", " + std::to_string(q) + ", " + std::to_string(k) +
                 "); they must be [B, T] with Tq = Tk = T");
        }
        return ids(b, k) == ids(b, q) && k <= q;
    };
}

MaskMod and_masks(MaskMod a, MaskMod b) {
    return [a = std::move(a), b = std::move(b)](std::size_t i, std::size_t h, std::size_t q,
                                                 std::size_t k) {
        return a(i, h, q, k) && b(i, h, q, k);
    };
}

MaskMod or_masks(MaskMod a, MaskMod b) {
    return [a = std::move(a), b = std::move(b)](std::size_t i, std::size_t h, std::size_t q,
                                                 std::size_t k) {
        return a(i, h, q, k) || b(i, h, q, k);
    };
}

// The score modifications.

namespace {

// m_i = 2^(-8 i / n), i = 1..n, for n a power of two
std::vector<double> power_of_two_slopes(std::size_t n) {
    std::vector<double> m(n);
    for (std::size_t i = 1; i <= n; ++i) m[i - 1] = std::exp2(-8.0 * double(i) / double(n));
    return m;
}

}  // namespace

std::vector<float> alibi_slopes(std::size_t h) {
    require_nonzero({h}, "alibi_slopes H");
    std::size_t c = 1;  // the closest power of two at or below H
    while (c * 2 <= h) c *= 2;
    std::vector<double> m = power_of_two_slopes(c);
    // H not a power of two: the slopes of 2c at odd places (1st, 3rd, ...),
    // which fall between the ones above, until there are H of them
    const std::vector<double> finer = power_of_two_slopes(2 * c);
    for (std::size_t i = 0; m.size() < h; i += 2) m.push_back(finer[i]);
    return std::vector<float>(m.begin(), m.end());
}

ScoreMod alibi(std::size_t num_heads) {
    const std::vector<float> m = alibi_slopes(num_heads);  // [H]
    return [m](float s, std::size_t, std::size_t h, std::size_t q, std::size_t k) {
        if (h >= m.size()) {
            fail("alibi: head " + std::to_string(h) + " asked of slopes for H = " +
                 std::to_string(m.size()) + "; make it with alibi(H) for the query heads");
        }
        // -m_h (q - k), in float from signed positions
        return s - m[h] * (float(q) - float(k));
    };
}

ScoreMod softcap(float cap) {
    if (!(cap > 0.0f)) fail("softcap: C = " + std::to_string(cap) + "; C must be above 0");
    return [cap](float s, std::size_t, std::size_t, std::size_t, std::size_t) {
        return cap * std::tanh(s / cap);
    };
}

ScoreMod chain(ScoreMod first, ScoreMod then) {
    return [first = std::move(first), then = std::move(then)](
               float s, std::size_t b, std::size_t h, std::size_t q, std::size_t k) {
        return then(first(s, b, h, q, k), b, h, q, k);
    };
}

// Each pair: the mod as above, and ds'/ds written from its formula.

namespace {
float one(float, std::size_t, std::size_t, std::size_t, std::size_t) { return 1.0f; }
}  // namespace

ScoreModGrad alibi_with_grad(std::size_t num_heads) { return {alibi(num_heads), one}; }

ScoreModGrad softcap_with_grad(float cap) {
    ScoreMod mod = softcap(cap);  // checks C
    return {std::move(mod), [cap](float s, std::size_t, std::size_t, std::size_t,
                                  std::size_t) {
                const float t = std::tanh(s / cap);  // d/ds C tanh(s / C) = 1 - tanh^2
                return 1.0f - t * t;
            }};
}

ScoreModGrad bias_with_grad(const Tensor4& bias) { return {bias_mod_of(bias), one}; }

ScoreModGrad chain_with_grad(ScoreModGrad first, ScoreModGrad then) {
    if (!first.derivative || !then.derivative)
        fail("chain_with_grad: both score_mods need their derivative");
    ScoreMod mod = chain(first.mod, then.mod);
    return {std::move(mod), [first = std::move(first), then = std::move(then)](
                                float s, std::size_t b, std::size_t h, std::size_t q,
                                std::size_t k) {
                const float inner = first.mod(s, b, h, q, k);  // first(s)
                return then.derivative(inner, b, h, q, k) * first.derivative(s, b, h, q, k);
            }};
}

}  // namespace mha
