// Stage 4: masks with the articles' polarity (0 = filled).
#include "mha/mask.hpp"

#include <algorithm>
#include <array>

#include <xtensor/xoperation.hpp>

#include "mha/variants/mods.hpp"

namespace mha {

namespace {

std::size_t broadcast_dim(std::size_t a, std::size_t b, const Mask& ma,
                          const Mask& mb) {
    if (a == b || b == 1) return a;
    if (a == 1) return b;
    fail("combine_masks: masks " + shape_of(ma) + " and " + shape_of(mb) +
         " do not broadcast; each axis must match or be 1");
}

}  // namespace

Mask causal_mask(std::size_t tq, std::size_t tk) {
    require_nonzero({tq, tk}, "causal_mask [Tq, Tk]");
    Mask m({1, 1, tq, tk});
    for (std::size_t i = 0; i < tq; ++i)
        for (std::size_t j = 0; j < tk; ++j) m(0, 0, i, j) = (j <= i);
    return m;
}

Mask padding_mask(const std::vector<std::size_t>& lengths, std::size_t tk) {
    require_nonzero({lengths.size(), tk}, "padding_mask lengths [B] and Tk");
    Mask m({lengths.size(), 1, 1, tk});
    for (std::size_t b = 0; b < lengths.size(); ++b) {
        if (lengths[b] > tk) {
            fail("padding_mask: lengths[" + std::to_string(b) + "] = " +
                 std::to_string(lengths[b]) + " is longer than Tk = " +
                 std::to_string(tk) + "; each length must be in 0.." +
                 std::to_string(tk));
        }
        for (std::size_t j = 0; j < tk; ++j) m(b, 0, 0, j) = (j < lengths[b]);
    }
    return m;
}

Mask combine_masks(const Mask& a, const Mask& b) {
    require_nonzero(std::vector<std::size_t>(a.shape().begin(), a.shape().end()),
                    "combine_masks mask a");
    require_nonzero(std::vector<std::size_t>(b.shape().begin(), b.shape().end()),
                    "combine_masks mask b");
    std::array<std::size_t, 4> s{};
    for (std::size_t d = 0; d < 4; ++d)
        s[d] = broadcast_dim(a.shape(d), b.shape(d), a, b);
    if (a.shape(3) != b.shape(3)) {
        fail("combine_masks: masks " + shape_of(a) + " and " + shape_of(b) +
             " must have the same Tk (last axis)");
    }
    Mask m(s);
    for (std::size_t i = 0; i < s[0]; ++i)
        for (std::size_t h = 0; h < s[1]; ++h)
            for (std::size_t q = 0; q < s[2]; ++q) {
                const bool* ra = mask_row(a, i, h, q);
                const bool* rb = mask_row(b, i, h, q);
                for (std::size_t j = 0; j < s[3]; ++j)
                    m(i, h, q, j) = ra[j] && rb[j];
            }
    return m;
}

namespace {

void check_broadcast(const std::array<std::size_t, 4>& shape, const char* what,
                     std::size_t b, std::size_t h, std::size_t tq, std::size_t tk) {
    const std::size_t want[4] = {b, h, tq, tk};
    bool ok = shape[3] == tk;
    for (std::size_t d = 0; d < 3; ++d)
        ok = ok && (shape[d] == want[d] || shape[d] == 1);
    if (!ok) {
        // [B or 1, H or 1, Tq or 1, Tk]: the shapes say which axis is off
        fail(std::string(what) + " " + shape_str(shape) + " does not fit scores " +
             shape_str(std::vector<std::size_t>{b, h, tq, tk}));
    }
}

}  // namespace

void check_mask(const Mask& mask, std::size_t b, std::size_t h,
                std::size_t tq, std::size_t tk) {
    check_broadcast(mask.shape(), "mask", b, h, tq, tk);
}

void check_score_bias(const Tensor4& bias, std::size_t b, std::size_t h,
                      std::size_t tq, std::size_t tk) {
    check_broadcast(bias.shape(), "score bias", b, h, tq, tk);
}

Tensor4 apply_mask(const Tensor4& scores, const Mask& mask, float fill) {
    const std::size_t B = scores.shape(0), H = scores.shape(1);
    const std::size_t Tq = scores.shape(2), Tk = scores.shape(3);
    require_nonzero({B, H, Tq, Tk}, "apply_mask scores [B, H, Tq, Tk]");
    check_mask(mask, B, H, Tq, Tk);
    // A mask tensor is one mask_mod: the flag of (b, h, q, k), broadcast.
    // Handed over as a lambda, not a MaskMod, so that it is called in place.
    const auto read = [&mask](std::size_t b, std::size_t h, std::size_t q, std::size_t k) {
        return mask_row(mask, b, h, q)[k];
    };
    return apply_mask_with(scores, read, fill);  // [B, H, Tq, Tk]
}

Mask from_torch_bool(const Mask& masked_out) {
    Mask keep = !masked_out;  // True = may not attend
    return keep;
}

Mask to_torch_bool(const Mask& keep) {
    Mask masked_out = !keep;
    return masked_out;
}

Tensor4 to_additive(const Mask& keep) {
    Tensor4 additive = xt::where(keep, 0.0f, kNegInf);
    return additive;
}

Mask from_additive(const Tensor4& additive) {
    Mask keep = additive > kNegInf;  // finite: a key to see, maybe biased
    return keep;
}

std::vector<std::size_t> to_lengths(const Mask& keep) {
    const std::size_t B = keep.shape(0), Tk = keep.shape(3);
    if (keep.shape(1) != 1 || keep.shape(2) != 1) {
        fail("to_lengths: mask " + shape_of(keep) + " is not a padding mask [B, 1, 1, Tk]");
    }
    std::vector<std::size_t> lengths(B);
    for (std::size_t b = 0; b < B; ++b) {
        const bool* row = &keep(b, 0, 0, 0);
        std::size_t n = 0;
        while (n < Tk && row[n]) ++n;
        for (std::size_t j = n; j < Tk; ++j) {
            if (row[j]) {
                fail("to_lengths: sequence " + std::to_string(b) + " of mask " +
                     shape_of(keep) + " has key " + std::to_string(j) +
                     " after padding: not ones then zeros");
            }
        }
        lengths[b] = n;
    }
    return lengths;
}

Tensor4 add_score_bias(const Tensor4& scores, const Tensor4& bias) {
    const std::size_t B = scores.shape(0), H = scores.shape(1);
    const std::size_t Tq = scores.shape(2), Tk = scores.shape(3);
    require_nonzero({B, H, Tq, Tk}, "add_score_bias scores [B, H, Tq, Tk]");
    check_score_bias(bias, B, H, Tq, Tk);
    // A bias tensor is one score_mod: score + bias[b, h, q, k], broadcast
    const ScoreMod add = [&bias](float s, std::size_t b, std::size_t h, std::size_t q,
                                 std::size_t k) { return s + broadcast_row(bias, b, h, q)[k]; };
    return apply_score_mod(scores, add);  // [B, H, Tq, Tk]
}

}  // namespace mha
