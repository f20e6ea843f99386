/// @file online_softmax.hpp
/// @brief Past the articles: the softmax a block at a time, and attention
///        in tiles that never holds the `[Tq, Tk]` scores.
///
/// B batch, Tq queries, Tk keys, H heads, H_kv key/value heads, D head_dim;
/// Bq and Bk the rows of a query block and of a key block.
#pragma once

#include <cstddef>
#include <vector>

#include "mha/mask.hpp"
#include "mha/variants/mods.hpp"

namespace mha {

/// @defgroup online_softmax Past the articles: the online softmax
/// @brief \f$m' = \max(m, \max_j s_j)\f$, \f$\ell' = \ell\, e^{m - m'} + \sum_j e^{s_j - m'}\f$:
///        a softmax over a row read a block at a time, and attention that
///        walks the keys a block at a time with an accumulator rescaled the
///        same way (what FlashAttention does), so that the whole score
///        matrix never exists.
/// @{

/// What the online softmax knows after a block of a row: the running max
/// m of the scores so far and the running sum of \f$e^{s - m}\f$.
struct RunningSoftmax {
    float max = -1.0f / 0.0f;  ///< m, -inf before the first score
    float sum = 0.0f;          ///< \f$\ell = \sum e^{s_j - m}\f$ over the scores so far
};

/// Takes the next block of scores into @p state: the new max, and the old
/// sum rescaled by \f$e^{m_{old} - m_{new}}\f$ before the block's terms are
/// added (a -inf max, a row all masked so far, contributes nothing).
/// @param state the running max and sum, updated
/// @param block @p n scores
/// @param n     how many
void take_block(RunningSoftmax& state, const float* block, std::size_t n);

/// The softmax of one row of @p n scores read @p block at a time: one pass
/// keeps the running max and sum (take_block()), a second writes
/// \f$e^{s_j - m} / \ell\f$. The same weights as softmax_row() within float
/// rounding, with its policy for fully masked rows (all 0) and NaN.
/// @param row   @p n scores in, @p n weights out
/// @param n     Tk
/// @param block scores per block, at least 1
/// @param steps when not null, gets the state after every block
void online_softmax_row(float* row, std::size_t n, std::size_t block,
                        std::vector<RunningSoftmax>* steps = nullptr);

/// What tiled_attention() returns.
struct TiledAttention {
    Tensor4 context;  ///< `[B, H, Tq, D]`, the weighted sums of V (weights x V)
    Tensor3 lse;      ///< `[B, H, Tq]`, \f$m + \log \ell\f$ per query row: what a
                      ///< FlashAttention-2 backward keeps to rebuild the weights
};

/// weights x V without the weights: for each block of @p block_q queries,
/// walk the keys @p block_k at a time; each block's scores update the rows'
/// running max and sum, and the accumulator of weighted values is rescaled
/// by \f$e^{m_{old} - m_{new}}\f$ before the block's \f$e^{s - m} V\f$ is added;
/// at the end it is divided by \f$\ell\f$. At most `[block_q, block_k]` scores
/// exist at a time. The same context as attend(softmax(apply_mask(scores)))
/// within float rounding; a fully masked row gets 0 (and lse -inf).
/// @param q       `[B, H, Tq, D]`
/// @param k       `[B, H_kv, Tk, D]`, H_kv dividing H
/// @param v       `[B, H_kv, Tk, D]`
/// @param mask    nullptr, or `[B or 1, H or 1, Tq or 1, Tk]`, 0 = masked
/// @param fill    what masked scores become
/// @param block_q Bq, at least 1
/// @param block_k Bk, at least 1
/// @return        context `[B, H, Tq, D]` and lse `[B, H, Tq]`
/// @throws std::invalid_argument when the shapes do not fit.
TiledAttention tiled_attention(const Tensor4& q, const Tensor4& k, const Tensor4& v,
                               const Mask* mask, float fill, std::size_t block_q,
                               std::size_t block_k);

/// tiled_attention() with the mask as a mask_mod (\ref mods): `causal_mod()`,
/// `sliding_window(w)`, ... asked per score of a tile, so no mask tensor
/// exists either; and a score_mod (alibi(), softcap(), ...) on each scaled
/// score of a tile before the mask, as in forward_stages() with the same
/// Mods. The overload above is this one with mask_mod_of(*mask).
/// @param q         `[B, H, Tq, D]`
/// @param k         `[B, H_kv, Tk, D]`, H_kv dividing H
/// @param v         `[B, H_kv, Tk, D]`
/// @param mask_mod  empty (every key), or true = may attend
/// @param fill      what hidden scores become
/// @param block_q   Bq, at least 1
/// @param block_k   Bk, at least 1
/// @param score_mod empty (none), or the new score from the scaled one
/// @return          context `[B, H, Tq, D]` and lse `[B, H, Tq]`
/// @throws std::invalid_argument when the shapes do not fit.
TiledAttention tiled_attention(const Tensor4& q, const Tensor4& k, const Tensor4& v,
                               const MaskMod& mask_mod, float fill, std::size_t block_q,
                               std::size_t block_k, const ScoreMod& score_mod = {});

/// @}

}  // namespace mha
