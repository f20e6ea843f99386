/// @file softmax.hpp
/// @brief Stage 5: softmax over the key axis.
#pragma once

#include "mha/shape.hpp"

namespace mha {

/// @defgroup softmax Stage 5: softmax
/// @brief \f$w_{ij} = e^{s_{ij} - m_i} / \sum_k e^{s_{ik} - m_i}\f$ with
///        \f$m_i = \max_k s_{ik}\f$, over the last axis (`dim=-1`).
/// @{

/// Softmax of one row of @p n scores, in place, numerically stable.
///
/// Policy for a fully masked row (every score -inf): the row becomes all
/// zeros, so that the query attends to nothing and its output is w_o's bias.
/// Why: no key is allowed, so there is nothing to average; PyTorch 1.13
/// returns NaN there, and one NaN row spreads to the whole batch through
/// the gradients. A fill of -1e10 instead gives uniform weights 1/n, which
/// is what the four-linear-layers article's code does.
/// A NaN score gives NaN weights in its row (it is not hidden), and so does
/// +inf (inf - inf is NaN), as in PyTorch.
/// @param row @p n scores in, @p n weights out
/// @param n   Tk, the number of keys
void softmax_row(float* row, std::size_t n);

/// `torch.softmax(scores, dim=-1)`: every query row sums to 1 (or is all 0
/// when fully masked, see softmax_row()).
/// @param scores `[B, H, Tq, Tk]`
/// @return       weights `[B, H, Tq, Tk]`
/// @warning over `dim=-2` the columns sum to 1 instead and, under a causal
///          mask, the future leaks into the past. See \ref lesson11.
/// @warning in xtensor 0.24.3, `xt::exp(s - xt::amax(s, {3}, xt::keep_dims))`
///          reads past the tensor and gives wrong values: evaluate the
///          reducer first. See \ref lesson14.
Tensor4 softmax(const Tensor4& scores);

/// @}

}  // namespace mha
