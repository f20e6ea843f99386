/// @file tiled_backward.hpp
/// @brief One (sequence, head) pair of the engine's FlashAttention-2
///        backward: the weights rebuilt a tile at a time from the
///        log-sum-exp, never held.
#pragma once

#include <cstddef>

#include "mha/fast/attend_head.hpp"

namespace mha::fast {

/// @addtogroup engine
/// @{

/// One (sequence, head) pair's tensors for head_backward_tiled(), read in
/// place as the forward reads them.
struct HeadGrads {
    const float* q;    ///< Q `[Tq, D]`, rows E apart
    const float* k;    ///< K `[Tk, D]`, rows H_kv*D apart
    const float* v;    ///< V `[Tk, D]`, rows H_kv*D apart
    const float* o;    ///< O, the forward's context `[Tq, D]`, rows E apart
    const float* d_o;  ///< dL/dO `[Tq, D]`, rows @p ld_do apart
    std::size_t ld_do; ///< distance between rows of d_o
    const float* lse;  ///< L `[Tq]`, the forward's log-sum-exp per row
    float* dq;         ///< dL/dQ `[Tq, D]`, contiguous, overwritten
    float* dk;         ///< dL/dK `[Tk, D]`, contiguous, added to
    float* dv;         ///< dL/dV `[Tk, D]`, contiguous, added to
};

/// The backward of one head from Q, K, V, O, dO and L (mha::tiled_attention_backward()
/// is the same algorithm written to be read): D = rowsum(dO o O), then per
/// tile of 64 keys (the outer loop, their dK and dV in cache) and 64
/// queries: \f$P = e^{S - L}\f$ recomputed, \f$dV \mathrel{+}= P^T dO\f$,
/// \f$dP = dO V^T\f$, \f$dS = P \circ (dP - D)\f$, \f$dQ \mathrel{+}= \mathrm{scale}\, dS K\f$,
/// \f$dK \mathrel{+}= \mathrm{scale}\, dS^T Q\f$. With soft-capping
/// (s.softcap = C > 0), P is rebuilt from \f$S' = C \tanh(S / C)\f$ and
/// \f$dS = P \circ (dP - D) \circ (1 - \tanh^2(S / C))\f$. Under a mask with the -inf
/// fill, or causal HeadSizes, tiles past the last key a query block sees
/// are skipped, unless a NaN or an Inf is about (0 x NaN is NaN). The same
/// gradients as backward_stages() within float rounding.
/// @param x          the head's tensors
/// @param b          the sequence, for the mask and the score bias
/// @param h          the head, for the mask and the score bias
/// @param s          the sizes
/// @param mask       nullptr, or `[B or 1, H or 1, Tq or 1, Tk]`, checked
/// @param fill       what masked scores became
/// @param score_bias nullptr, or `[B or 1, H or 1, Tq or 1, Tk]`, checked
void head_backward_tiled(const HeadGrads& x, std::size_t b, std::size_t h, const HeadSizes& s,
                         const Mask* mask, float fill, const Tensor4* score_bias);

/// @}

}  // namespace mha::fast
