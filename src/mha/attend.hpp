/// @file attend.hpp
/// @brief Stage 6: weights times values.
#pragma once

#include "mha/shape.hpp"

namespace mha {

/// @defgroup attend Stage 6: weights x V
/// @brief \f$O_{bh} = W_{bh} V_{bh}\f$, one gemm per (batch, head).
/// @{

/// `attention @ V`: each query's output is its weighted average of values.
/// @param weights `[B, H, Tq, Tk]`
/// @param v       `[B, H, Tk, D]`
/// @return        `[B, H, Tq, D]`
/// @throws std::invalid_argument when B, H or Tk differ.
Tensor4 attend(const Tensor4& weights, const Tensor4& v);

/// @}

}  // namespace mha
