/// @file scores.hpp
/// @brief Stage 3: scaled dot-product scores.
#pragma once

#include "mha/shape.hpp"

namespace mha {

/// @defgroup scores Stage 3: scores
/// @brief \f$S = Q K^\top / \sqrt{D}\f$, one gemm per (batch, head).
/// @{

/// \f$S_{bh} = Q_{bh} K_{bh}^\top / \sqrt{D}\f$ for every batch b and head h,
/// as `Q @ K.transpose(2, 3) / math.sqrt(n_d)`. With fewer key heads
/// (grouped-query attention), query head h reads key head h / (H / H_kv),
/// as PyTorch code does with `K.repeat_interleave(H // H_kv, dim=1)`.
/// @param q `[B, H, Tq, D]`
/// @param k `[B, H_kv, Tk, D]`, H_kv dividing H (H_kv = H: the articles)
/// @return  scores `[B, H, Tq, Tk]`
/// @throws std::invalid_argument when B or D differ between q and k, or
///         k's heads do not divide q's.
/// @warning dividing by sqrt(E) instead of sqrt(D), or not at all, changes
///          how peaked the softmax is. See \ref lesson13.
Tensor4 scaled_scores(const Tensor4& q, const Tensor4& k);

/// @}

}  // namespace mha
