/// @file backward.hpp
/// @brief The engine's backward: what mha::backward() runs.
#pragma once

#include "mha/backward.hpp"
#include "mha/fast/forward.hpp"

namespace mha::fast {

/// @addtogroup engine
/// @{

/// The gradients of the forward that wrote @p t (trace(), which keeps Q, K,
/// V and the context), with no forward again: the same numbers as
/// mha::backward_stages() within float rounding. Heads are read in place in
/// `[B, T, E]`, as the forward reads them, and the (sequence, head) pairs
/// are spread over the cores.
/// @param m        the module
/// @param in       the forward's inputs, mask, fill and score bias
/// @param t        what trace() or trace_into() wrote for @p in
/// @param d_output dL/d output `[B, Tq, E]`
/// @param self_attention query, key and value are one X: dL/dX goes to
///         `input` (one product for it, one for the three weights'
///         gradients), and `query`, `key`, `value` stay empty
/// @return         every gradient, each shaped like what it differentiates
/// @throws std::invalid_argument when a shape does not fit, or @p t is not a
///         trace of these inputs.
AttentionGrads backward(const MultiHeadAttention& m, const Call& in, const ForwardTrace& t,
                        const Tensor3& d_output, bool self_attention = false);

/// @}

}  // namespace mha::fast
