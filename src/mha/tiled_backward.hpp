/// @file tiled_backward.hpp
/// @brief Past the articles: the FlashAttention-2 backward, which rebuilds
///        each tile's weights from the log-sum-exp instead of keeping them.
///
/// B batch, Tq queries, Tk keys, H heads, H_kv key/value heads, D head_dim;
/// Bq and Bk the rows of a query block and of a key block.
#pragma once

#include <cstddef>
#include <optional>

#include "mha/backward.hpp"
#include "mha/online_softmax.hpp"
#include "mha/variants/mods.hpp"
#include "mha/variants/rope.hpp"

namespace mha {

/// @defgroup tiled_backward Past the articles: the tiled backward
/// @brief The gradients of tiled_attention() from Q, K, V, O, dO and the
///        log-sum-exp L alone (FlashAttention-2, Dao 2023, Algorithm 2):
///        each `[Bq, Bk]` tile's weights are recomputed as
///        \f$P = e^{S - L}\f$, so no `[Tq, Tk]` tensor exists in the
///        backward either.
/// @{

/// What tiled_attention_backward() returns: the gradients of the loss with
/// respect to the split heads.
struct TiledGrads {
    Tensor4 dq;  ///< dL/dQ `[B, H, Tq, D]`
    Tensor4 dk;  ///< dL/dK `[B, H_kv, Tk, D]`, summed over each kv head's group
    Tensor4 dv;  ///< dL/dV `[B, H_kv, Tk, D]`, summed over each kv head's group
};

/// The backward of O = softmax(scale Q K^T, masked) V, a tile at a time.
/// With \f$D_i = \sum_d dO_{id} O_{id}\f$ (which equals
/// \f$\sum_j P_{ij} dP_{ij}\f$, the sum the softmax's backward needs), each
/// tile of Bq query rows and Bk keys does:
/// \f$S = \mathrm{scale}\, Q_i K_j^T\f$, \f$P = e^{S - L_i}\f$,
/// \f$dV_j \mathrel{+}= P^T dO_i\f$, \f$dP = dO_i V_j^T\f$,
/// \f$dS = P \circ (dP - D_i)\f$, \f$dQ_i \mathrel{+}= \mathrm{scale}\, dS K_j\f$,
/// \f$dK_j \mathrel{+}= \mathrm{scale}\, dS^T Q_i\f$.
/// With a score_mod s' = mod(s) (\ref mods), P is rebuilt from mod(S) and
/// the chain rule goes through it before the scale:
/// \f$dS = P \circ (dP - D_i) \circ ds'/ds\f$ at the tile's S.
/// A tile whose scores are all hidden under the -inf fill has P = 0 and is
/// skipped (unless a NaN or an Inf is about: 0 times NaN is NaN). A row
/// that sees no key (L = -inf) has P = 0 and gradient 0; under a finite
/// fill its weights are those of the fill, as in the forward. The same
/// gradients as backward_stages() within float rounding, NaN where it puts
/// NaN.
/// @param q        Q `[B, H, Tq, D]`
/// @param k        K `[B, H_kv, Tk, D]`, H_kv dividing H
/// @param v        V `[B, H_kv, Tk, D]`
/// @param o        O, the forward's context `[B, H, Tq, D]`
/// @param d_o      dL/dO `[B, H, Tq, D]`
/// @param lse      L, the forward's log-sum-exp per row `[B, H, Tq]`
/// @param mask_mod empty (every key), or true = may attend (\ref mods)
/// @param fill     what hidden scores became in the forward
/// @param block_q  Bq, at least 1
/// @param block_k  Bk, at least 1
/// @param score_mod the forward's score_mod and its derivative ds'/ds
///                 (alibi_with_grad(), softcap_with_grad(), ...); both empty:
///                 no score_mod
/// @return         dQ, dK and dV
/// @throws std::invalid_argument when the shapes do not fit, or when the
///         score_mod comes without its derivative.
TiledGrads tiled_attention_backward(const Tensor4& q, const Tensor4& k, const Tensor4& v,
                                    const Tensor4& o, const Tensor4& d_o, const Tensor3& lse,
                                    const MaskMod& mask_mod, float fill, std::size_t block_q,
                                    std::size_t block_k, const ScoreModGrad& score_mod = {});

/// A training step's gradients the FlashAttention-2 way: the projections,
/// tiled_attention() (which keeps only O and L), w_o; then back through
/// w_o, tiled_attention_backward() and the projections. The same gradients
/// as backward_stages() within float rounding, and no `[Tq, Tk]` tensor.
/// @param m        the module
/// @param query    `[B, Tq, E]`
/// @param key      `[B, Tk, E]`
/// @param value    `[B, Tk, E]`
/// @param d_output dL/d output `[B, Tq, E]`
/// @param mask_mod empty (every key), or true = may attend
/// @param fill     what hidden scores become
/// @param block_q  Bq, at least 1
/// @param block_k  Bk, at least 1
/// @param score_mod empty, or a score_mod with its derivative, applied to
///                 the scaled scores before the mask (as forward_stages()
///                 with Mods{score_mod.mod, mask_mod, fill})
/// @param rope     none, or RoPE on Q and K after the projections (query i
///                 at position i, key j at j, as Mods::rope); dQ and dK then
///                 go back through it, apply_rope_backward(), before the
///                 projections
/// @return         the four layers' gradients and query, key, value
/// @throws std::invalid_argument when a shape does not fit, or when the
///         score_mod comes without its derivative.
AttentionGrads backward_tiled(const MultiHeadAttention& m, const Tensor3& query,
                              const Tensor3& key, const Tensor3& value,
                              const Tensor3& d_output, const MaskMod& mask_mod = {},
                              float fill = kNegInf, std::size_t block_q = 64,
                              std::size_t block_k = 64, const ScoreModGrad& score_mod = {},
                              const std::optional<Rope>& rope = std::nullopt);

/// @}

}  // namespace mha
