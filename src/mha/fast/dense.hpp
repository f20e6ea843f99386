/// @file dense.hpp
/// @brief The engine behind the block and the language model's training step:
///        the position-wise stages (linear layers, LayerNorm, GELU, the
///        cross-entropy) over the cores, the same numbers as the teaching
///        core's within float rounding.
///
/// B batch, T positions, E embed_dim, F hidden, V vocabulary.
#pragma once
#include "mha/backward.hpp"
#include "mha/model/feed_forward.hpp"
#include "mha/model/layer_norm.hpp"
#include "mha/model/loss.hpp"

namespace mha::fast {

/// @addtogroup engine
/// @{

/// mha::linear(): y = x W^T + b, one gemm split over the cores.
/// @param x `[B, T, in]`, @param layer weight `[out, in]`
/// @return  `[B, T, out]`
Tensor3 linear(const Tensor3& x, const Linear& layer);

/// mha::linear_backward(): dW = dy^T x, db = the column sums of dy, and the
/// returned dx = dy W; the two products split over the cores.
/// @param x `[B, T, in]`, @param dy `[B, T, out]`, @param layer the layer
/// @param grad gets dW `[out, in]` and db `[out]`
/// @return dx `[B, T, in]`
Tensor3 linear_backward(const Tensor3& x, const Tensor3& dy, const Linear& layer,
                        LinearGrad& grad);

/// mha::layer_norm(), the positions spread over the cores.
/// @param x `[B, T, E]`, @param n the layer, @param keep nullptr or the trace
/// @return `[B, T, E]`
Tensor3 layer_norm(const Tensor3& x, const LayerNorm& n, NormTrace* keep = nullptr);

/// mha::layer_norm_backward(), the positions spread over the cores, each
/// worker summing its own dw and db, added at the end.
/// @param t the trace, @param dy `[B, T, E]`, @param n the layer
/// @param g gets dw, db `[E]`
/// @return dx `[B, T, E]`
Tensor3 layer_norm_backward(const NormTrace& t, const Tensor3& dy, const LayerNorm& n,
                            NormGrad& g);

/// mha::feed_forward(), with the GELU in vectors: erf from Abramowitz and
/// Stegun's 7.1.26 (absolute error under 1.5e-7) on the engine's e^x.
/// @param x `[B, T, E]`, @param f the two layers, @param keep nullptr or the trace
/// @return `[B, T, E]`
Tensor3 feed_forward(const Tensor3& x, const FeedForward& f, FeedForwardTrace* keep = nullptr);

/// mha::feed_forward_backward(), the same way.
/// @param x `[B, T, E]`, @param t the trace, @param dy `[B, T, E]`
/// @param f the two layers, @param g gets both layers' gradients
/// @return dx `[B, T, E]`
Tensor3 feed_forward_backward(const Tensor3& x, const FeedForwardTrace& t, const Tensor3& dy,
                              const FeedForward& f, FeedForwardGrads& g);

/// mha::cross_entropy(), the positions spread over the cores, each row's
/// softmax with the engine's e^x, computed once.
/// @param logits `[B, T, V]`, @param targets `[B, T]`
/// @param smoothing label smoothing in [0, 1); 0 is the plain loss, bit for bit
/// @return the mean loss, dL/d logits `[B, T, V]`, the count right
CrossEntropy cross_entropy(const Tensor3& logits, const Tokens& targets, double smoothing = 0);

/// @}

}  // namespace mha::fast
