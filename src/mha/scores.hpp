/// @file scores.hpp
/// @brief Stage 3: scaled dot-product scores.
#pragma once

#include "mha/shape.hpp"

namespace mha {

/// @defgroup scores Stage 3: scores
/// @brief \f$S = Q K^\top / \sqrt{D}\f$, one gemm per (batch, head).
/// @{

/// \f$S_{bh} = Q_{bh} K_{bh}^\top / \sqrt{D}\f$ for every batch b and head h,
/// as `Q @ K.transpose(2, 3) / math.sqrt(n_d)`.
/// @param q `[B, H, Tq, D]`
/// @param k `[B, H, Tk, D]`
/// @return  scores `[B, H, Tq, Tk]`
/// @throws std::invalid_argument when B, H or D differ between q and k.
/// @warning dividing by sqrt(E) instead of sqrt(D), or not at all, changes
///          how peaked the softmax is. See \ref lesson13.
Tensor4 scaled_scores(const Tensor4& q, const Tensor4& k);

/// @}

}  // namespace mha
