/// @file reference.hpp
/// @brief The plain-loop oracle: the whole forward, written to be read.
#pragma once

#include "mha/attention.hpp"

namespace mha {

/// @defgroup reference The plain-loop oracle
/// @brief The same forward as MultiHeadAttention::forward, in plain loops.
/// @{

/// What reference_forward() returns: the same as AttentionOutput, in double.
struct ReferenceOutput {
    xt::xtensor<double, 3> output;   ///< `[B, Tq, E]`
    xt::xtensor<double, 4> weights;  ///< `[B, H, Tq, Tk]`
};

/// The forward pass in plain loops over raw arrays, computed in double from
/// the float inputs and weights: no xtensor expression and no BLAS, so that
/// it can be checked by eye and serves as the tests' oracle (and, being
/// double, as the loss of the gradient checks). Same arguments, same results
/// up to float rounding, same fully-masked-row policy.
/// @param m     the module whose weights are used
/// @param query `[B, Tq, E]`
/// @param key   `[B, Tk, E]`
/// @param value `[B, Tk, E]`
/// @param mask  nullptr, or `[B or 1, H or 1, Tq or 1, Tk]`, 0 = masked
/// @param fill  what masked scores become
/// @param score_bias nullptr, or `[B or 1, H or 1, Tq or 1, Tk]` added to
///              the scores before the mask
/// @return      output `[B, Tq, E]` and weights `[B, H, Tq, Tk]`
ReferenceOutput reference_forward(const MultiHeadAttention& m,
                                  const Tensor3& query, const Tensor3& key,
                                  const Tensor3& value,
                                  const Mask* mask = nullptr,
                                  float fill = kNegInf,
                                  const Tensor4* score_bias = nullptr);

/// reference_forward() with a variant (\ref mods): RoPE turns the
/// projections in double (written out again, in loops), each score in double
/// is handed to `mods.score_mod` as a float, then `mods.mask_mod` decides
/// whether it is replaced by `mods.fill`. The overload above is this one
/// with the mods reading its bias and mask tensors.
/// @param m     the module whose weights are used
/// @param query `[B, Tq, E]`
/// @param key   `[B, Tk, E]`
/// @param value `[B, Tk, E]`
/// @param mods  RoPE, the score_mod, the mask_mod and the fill
/// @return      output `[B, Tq, E]` and weights `[B, H, Tq, Tk]`
ReferenceOutput reference_forward(const MultiHeadAttention& m,
                                  const Tensor3& query, const Tensor3& key,
                                  const Tensor3& value, const Mods& mods);

/// @}

}  // namespace mha
