/// @file attend.hpp
/// @brief Stage 6: weights times values.
#pragma once

#include "mha/shape.hpp"

namespace mha {

/// @defgroup attend Stage 6: weights x V
/// @brief \f$O_{bh} = W_{bh} V_{bh}\f$, one gemm per (batch, head).
/// @{

/// `attention @ V`: each query's output is its weighted average of values.
/// With fewer value heads (grouped-query attention), head h reads value
/// head h / (H / H_kv).
/// @param weights `[B, H, Tq, Tk]`
/// @param v       `[B, H_kv, Tk, D]`, H_kv dividing H
/// @return        `[B, H, Tq, D]`
/// @throws std::invalid_argument when B or Tk differ, or v's heads do not
///         divide the weights'.
Tensor4 attend(const Tensor4& weights, const Tensor4& v);

/// @}

}  // namespace mha
