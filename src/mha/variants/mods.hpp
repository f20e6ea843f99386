/// @file mods.hpp
/// @brief Variants: every attention variant is a mask_mod or a score_mod.
///
/// B batch, H query heads, Tq queries, Tk keys; b, h, q, k index them.
/// A mask_mod says whether query q may see key k; a score_mod changes a
/// scaled score before the mask. The stage-4 functions apply_mask() and
/// add_score_bias() are the two special cases where the answer is read from
/// a tensor; the named variants below compute it from the indices instead,
/// as PyTorch's FlexAttention writes them.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "mha/mask.hpp"
#include "mha/shape.hpp"

namespace mha {

/// @defgroup mods Variants: mask_mod and score_mod
/// @brief Causal, windows, sinks, prefix-LM, documents, ALiBi, soft-capping:
///        each a few lines, each one of two small functions.
///
/// `mask_mod(b, h, q, k) -> bool`: true = query q may see key k (the
/// articles' keep polarity). `score_mod(score, b, h, q, k) -> float`: the
/// new score. In the forward: scores, then the score_mod, then the mask.
/// @{

/// `mask_mod(b, h, q, k)`: true when query q of sequence b, head h may see
/// key k.
using MaskMod = std::function<bool(std::size_t b, std::size_t h, std::size_t q,
                                   std::size_t k)>;

/// `score_mod(score, b, h, q, k)`: the score of query q against key k
/// after the modification (a bias, a cap, ...).
using ScoreMod = std::function<float(float score, std::size_t b, std::size_t h,
                                     std::size_t q, std::size_t k)>;

/// @name The two stages, from a function
/// @{

/// `scores.masked_fill(~mask_mod, fill)`: every score whose key the mod
/// hides becomes @p fill. apply_mask() is this with the mod reading a Mask.
/// @param scores   `[B, H, Tq, Tk]`
/// @param mask_mod true = may attend
/// @param fill     what hidden scores become: -inf (default) or e.g. -1e10
/// @return         `[B, H, Tq, Tk]`
/// @warning with -inf, a row that sees no key has no finite score: the
///          core gives it zero weights (see softmax_row()).
Tensor4 apply_mask_mod(const Tensor4& scores, const MaskMod& mask_mod,
                       float fill = kNegInf);

/// apply_mask_mod() for any callable `mask_mod(b, h, q, k) -> bool`, its
/// type known here: the compiler calls it in place, where a MaskMod costs a
/// std::function call per score. apply_mask() is this with a mod reading the
/// tensor (through a MaskMod it took 3.7x its old direct loop at
/// 128 x 8 x 64^2; this way 0.9x, mha_bench --masks); apply_mask_mod() is
/// this with a MaskMod.
/// @param scores   `[B, H, Tq, Tk]`
/// @param mask_mod true = may attend
/// @param fill     what hidden scores become
/// @return         `[B, H, Tq, Tk]`
template <class Mod>
Tensor4 apply_mask_with(const Tensor4& scores, const Mod& mask_mod, float fill = kNegInf) {
    const std::size_t B = scores.shape(0), H = scores.shape(1);
    const std::size_t Tq = scores.shape(2), Tk = scores.shape(3);
    require_nonzero({B, H, Tq, Tk}, "apply_mask_mod scores [B, H, Tq, Tk]");
    Tensor4 out = scores;  // [B, H, Tq, Tk]
    for (std::size_t b = 0; b < B; ++b)
        for (std::size_t h = 0; h < H; ++h)
            for (std::size_t q = 0; q < Tq; ++q) {
                float* row = &out(b, h, q, 0);  // [Tk]
                for (std::size_t k = 0; k < Tk; ++k)
                    if (!mask_mod(b, h, q, k)) row[k] = fill;
            }
    return out;
}

/// Every score through @p score_mod. add_score_bias() is this with the mod
/// adding a tensor's entry.
/// @param scores    `[B, H, Tq, Tk]`
/// @param score_mod the new score from the old one and its indices
/// @return          `[B, H, Tq, Tk]`
Tensor4 apply_score_mod(const Tensor4& scores, const ScoreMod& score_mod);

/// The mask a mask_mod describes, written out: to hand to forward(), to
/// print, or to compare.
/// @param mask_mod true = may attend
/// @param b, h, tq, tk the sizes B, H, Tq, Tk, each at least 1
/// @return `[B, H, Tq, Tk]`
Mask mask_of(const MaskMod& mask_mod, std::size_t b, std::size_t h,
             std::size_t tq, std::size_t tk);

/// A Mask tensor as a mask_mod (it keeps a copy): the special case behind
/// apply_mask().
/// @param mask `[B or 1, H or 1, Tq or 1, Tk]`, broadcast as in apply_mask()
/// @return     the mod reading it
MaskMod mask_mod_of(const Mask& mask);

/// An additive bias tensor as a score_mod, `score + bias[b, h, q, k]` (it
/// keeps a copy): the special case behind add_score_bias().
/// @param bias `[B or 1, H or 1, Tq or 1, Tk]`
/// @return     the mod adding it
ScoreMod bias_mod_of(const Tensor4& bias);

/// @}

/// @name Masks
/// @{

/// Every key visible: \f$\mathrm{full}(q, k) = \mathrm{true}\f$.
/// @return the mask_mod
MaskMod full();

/// Causal: \f$k \le q\f$, what causal_mask() holds (`torch.tril`).
/// @return the mask_mod
MaskMod causal_mod();

/// Sliding window of @p w keys (Mistral, Gemma's local layers): key k is
/// visible from query q iff \f$q - W < k \le q\f$, so each query sees
/// itself and the W - 1 keys before it.
/// @param w W, at least 1
/// @return the mask_mod
MaskMod sliding_window(std::size_t w);

/// Attention sinks with a window (StreamingLLM): the first @p s keys stay
/// visible to every later query, and the window of @p w does the rest:
/// \f$k \le q \wedge (k < S \vee q - W < k)\f$.
/// @param s S, the sink keys (0: the window alone)
/// @param w W, at least 1
/// @return the mask_mod
MaskMod sinks_window(std::size_t s, std::size_t w);

/// Prefix-LM (T5's prefix-LM, PaLI): the first @p p keys, the prefix, are
/// visible to every query; the rest is causal:
/// \f$k < P \vee k \le q\f$.
/// @param p P, the prefix length (0: causal)
/// @return the mask_mod
MaskMod prefix_lm(std::size_t p);

/// Packed documents: several documents in one row of the batch, each
/// position with its document's id. A query sees the keys of its own
/// document, causally:
/// \f$\mathrm{id}[b, k] = \mathrm{id}[b, q] \wedge k \le q\f$.
/// Self-attention only: q and k index the same ids.
/// @param ids `[B, T]`, one id per position
/// @return the mask_mod (it keeps a copy of @p ids); it throws when asked
///         about b >= B, or q or k >= T
MaskMod documents(const xt::xtensor<std::int64_t, 2>& ids);

/// Both: \f$a(q, k) \wedge b(q, k)\f$ (`and_masks` in FlexAttention).
/// @param a, b the two mask_mods
/// @return the mask_mod
MaskMod and_masks(MaskMod a, MaskMod b);

/// Either: \f$a(q, k) \vee b(q, k)\f$ (`or_masks`).
/// @param a, b the two mask_mods
/// @return the mask_mod
MaskMod or_masks(MaskMod a, MaskMod b);

/// @}

/// @name Score modifications
/// @{

/// ALiBi's slope per head (Press et al., "Train Short, Test Long"). For H a
/// power of two, head h = 1..H has \f$m_h = 2^{-8h/H}\f$. For other H, as
/// the paper's code: the slopes of the closest power of two below, \f$c\f$,
/// then every other slope of \f$2c\f$ (the 1st, 3rd, ...) until there are H.
/// @param h H, at least 1
/// @return `[H]`, element h - 1 the slope of head h
std::vector<float> alibi_slopes(std::size_t h);

/// ALiBi (BLOOM, MPT): no position embedding, a bias on the scores that
/// grows with the distance: \f$s - m_h (q - k)\f$, m_h from alibi_slopes().
/// Meant with a causal mask (k <= q), where the bias is never positive.
/// @param num_heads H, the query heads (with GQA each query head has its
///                  own slope)
/// @return the score_mod; it throws when asked about h >= H
ScoreMod alibi(std::size_t num_heads);

/// Logit soft-capping (Gemma 2): \f$C \tanh(s / C)\f$, smooth, close to s
/// for |s| << C, never beyond ±C. Applied before the mask.
/// @param cap C, above 0
/// @return the score_mod
ScoreMod softcap(float cap);

/// One score_mod then another: \f$\mathrm{then}(\mathrm{first}(s))\f$.
/// @param first applied first
/// @param then  applied to what @p first gives
/// @return the score_mod
ScoreMod chain(ScoreMod first, ScoreMod then);

/// @}

/// @name Score modifications with their derivative, for a backward
/// @{

/// A score_mod and its derivative, a named pair. A backward goes through
/// the score_mod with the chain rule,
/// \f$\partial L / \partial s = \partial L / \partial s' \cdot ds'/ds\f$, so it
/// needs ds'/ds beside the mod (tiled_attention_backward()). An additive
/// bias (ALiBi) has ds'/ds = 1; soft-capping \f$s' = C \tanh(s / C)\f$ has
/// \f$ds'/ds = 1 - \tanh^2(s / C)\f$.
struct ScoreModGrad {
    ScoreMod mod;         ///< \f$s' = \mathrm{mod}(s, b, h, q, k)\f$; empty = no mod
    ScoreMod derivative;  ///< \f$ds'/ds\f$ at the same (s, b, h, q, k); empty = unknown
};

/// alibi() and its derivative 1 (a bias does not depend on s).
/// @param num_heads H, the query heads
/// @return the pair
ScoreModGrad alibi_with_grad(std::size_t num_heads);

/// softcap() and its derivative \f$1 - \tanh^2(s / C)\f$.
/// @param cap C, above 0
/// @return the pair
ScoreModGrad softcap_with_grad(float cap);

/// bias_mod_of() and its derivative 1.
/// @param bias `[B or 1, H or 1, Tq or 1, Tk]`
/// @return the pair
ScoreModGrad bias_with_grad(const Tensor4& bias);

/// chain() of two pairs, with the chain rule for the derivative:
/// \f$\mathrm{then}'(\mathrm{first}(s)) \cdot \mathrm{first}'(s)\f$.
/// @param first applied first
/// @param then  applied to what @p first gives
/// @return the pair
ScoreModGrad chain_with_grad(ScoreModGrad first, ScoreModGrad then);

/// @}

/// @}

}  // namespace mha
