/// @file backward.hpp
/// @brief The backward pass: hand-written gradients of the whole forward.
#pragma once

#include <vector>

#include "mha/attention.hpp"
#include "mha/model/optim.hpp"

namespace mha {

/// @defgroup backward Backward pass
/// @brief Gradients of MultiHeadAttention::forward, written out by hand:
///        backward_stages() to read, backward() to run fast.
///
/// For a loss L with dL/d(output) given, the chain runs the forward in
/// reverse: w_o, merge, weights x V, softmax, mask, scores, split, and the
/// three projections.
/// @{

/// The gradient of a linear layer's parameters.
struct LinearGrad {
    Tensor2 weight;  ///< dL/dW `[out, in]`
    Tensor1 bias;    ///< dL/db `[out]`
};

/// The gradients of `y = layer(x)` (linear()): dW = dy^T x, db = the sum
/// of dy over the B T rows, and the returned dx = dy W.
/// @param x     the layer's input `[B, T, in]`
/// @param dy    dL/dy `[B, T, out]`
/// @param layer the layer
/// @param grad  gets dL/dW `[out, in]` and dL/db `[out]`
/// @return      dL/dx `[B, T, in]`
/// @throws std::invalid_argument when the shapes do not fit the layer.
Tensor3 linear_backward(const Tensor3& x, const Tensor3& dy, const Linear& layer,
                        LinearGrad& grad);

/// The gradient through the softmax over the last axis (softmax()): for each
/// row, \f$dS_j = P_j (dP_j - \sum_k P_k\, dP_k)\f$. A masked key has
/// \f$P_j = 0\f$ under -inf, so its gradient is 0 here too.
/// @param weights   the softmax's output P `[B, H, Tq, Tk]`
/// @param d_weights dL/dP `[B, H, Tq, Tk]`
/// @return          dL/dS, the gradient of the scores `[B, H, Tq, Tk]`
/// @throws std::invalid_argument when the two shapes differ.
Tensor4 softmax_backward(const Tensor4& weights, const Tensor4& d_weights);

/// Every gradient of one forward call.
struct AttentionGrads {
    LinearGrad wq;               ///< dL/d wq's weight and bias
    LinearGrad wk;               ///< dL/d wk's weight and bias
    LinearGrad wv;               ///< dL/d wv's weight and bias
    LinearGrad w_o;              ///< dL/d w_o's weight and bias
    Tensor3 query;               ///< dL/d query `[B, Tq, E]`
    Tensor3 key;                 ///< dL/d key `[B, Tk, E]`
    Tensor3 value;               ///< dL/d value `[B, Tk, E]`
    Tensor3 input;               ///< dL/dX `[B, T, E]`: backward_self_attention() only
};

/// dL/d(everything) given dL/d(output), for the same arguments forward()
/// took: the stages of forward_stages() in reverse, each written out in
/// backward.cpp. For self-attention `forward(X, X, X)`, dL/dX is the sum
/// query + key + value (backward_self_attention() makes it at once).
///
/// Softmax backward: with P the weights of one row and G = dL/dP,
/// \f$\partial L / \partial s_j = P_j (G_j - \sum_k P_k G_k)\f$.
/// A masked score is a constant (the fill), so its gradient is 0; a fully
/// masked row (all-zero weights) passes no gradient to the scores.
/// @param m        the module
/// @param query    `[B, Tq, E]`
/// @param key      `[B, Tk, E]`
/// @param value    `[B, Tk, E]`
/// @param d_output dL/d output `[B, Tq, E]`
/// @param mask     nullptr, or `[B or 1, H or 1, Tq or 1, Tk]`, 0 = masked
/// @param fill     what masked scores become, as in forward()
/// @param score_bias nullptr, or added to the scores, as in forward()
/// @return         the gradients, each shaped like what it differentiates
/// @throws std::invalid_argument when a shape does not fit.
AttentionGrads backward_stages(const MultiHeadAttention& m, const Tensor3& query,
                               const Tensor3& key, const Tensor3& value,
                               const Tensor3& d_output, const Mask* mask = nullptr,
                               float fill = kNegInf, const Tensor4* score_bias = nullptr);

/// The same gradients, fast: a trace() of the forward, then the engine's
/// backward (src/mha/fast/backward.cpp). Arguments as backward_stages().
/// @param m        the module
/// @param query    `[B, Tq, E]`
/// @param key      `[B, Tk, E]`
/// @param value    `[B, Tk, E]`
/// @param d_output dL/d output `[B, Tq, E]`
/// @param mask     nullptr, or `[B or 1, H or 1, Tq or 1, Tk]`, 0 = masked
/// @param fill     what masked scores become, as in forward()
/// @param score_bias nullptr, or added to the scores, as in forward()
/// @return         the gradients
AttentionGrads backward(const MultiHeadAttention& m, const Tensor3& query,
                        const Tensor3& key, const Tensor3& value, const Tensor3& d_output,
                        const Mask* mask = nullptr, float fill = kNegInf,
                        const Tensor4* score_bias = nullptr);

/// backward() from a trace the caller kept: a training step runs trace()
/// once, makes its loss's gradient from `trace.output`, and passes both
/// here, so the forward is not run again.
/// @param m        the module
/// @param trace    what m.trace() returned for these inputs
/// @param query    `[B, Tq, E]`
/// @param key      `[B, Tk, E]`
/// @param value    `[B, Tk, E]`
/// @param d_output dL/d output `[B, Tq, E]`
/// @param mask     the mask the trace was made with, or nullptr
/// @param fill     the fill it was made with
/// @param score_bias the score bias it was made with, or nullptr
/// @param softcap  the soft-cap C it was made with (a trace_no_weights()
///                 only: the tiles then take \f$1 - \tanh^2(s / C)\f$
///                 into dS), or 0
/// @return         the gradients
AttentionGrads backward(const MultiHeadAttention& m, const ForwardTrace& trace,
                        const Tensor3& query, const Tensor3& key, const Tensor3& value,
                        const Tensor3& d_output, const Mask* mask = nullptr,
                        float fill = kNegInf, const Tensor4* score_bias = nullptr,
                        float softcap = 0.0f);

/// Self-attention's backward from a kept `trace(x, x, x, ...)`: X is read
/// as query, key and value, so dL/dX is the sum of what backward() gives
/// those three. It is returned in `input` (`query`, `key`, `value` stay
/// empty), made as one product [dQ dK dV] [Wq; Wk; Wv], as PyTorch's
/// `in_proj` makes `x.grad`; what a training step runs.
/// @param m        the module
/// @param trace    what m.trace(x, x, x, ...) returned
/// @param x        `[B, T, E]`
/// @param d_output dL/d output `[B, T, E]`
/// @param mask     the mask the trace was made with, or nullptr
/// @param fill     the fill it was made with
/// @param score_bias the score bias it was made with, or nullptr
/// @param softcap  the soft-cap C it was made with (a trace_no_weights()
///                 only), or 0
/// @return         the four layers' gradients and `input`
AttentionGrads backward_self_attention(const MultiHeadAttention& m, const ForwardTrace& trace,
                                       const Tensor3& x, const Tensor3& d_output,
                                       const Mask* mask = nullptr, float fill = kNegInf,
                                       const Tensor4* score_bias = nullptr,
                                       float softcap = 0.0f);

/// backward_self_attention() of a causal trace (trace_into() with mha::causal).
/// @param m        the module
/// @param trace    what m.trace_into(t, x, x, x, mha::causal) filled
/// @param x        `[B, T, E]`
/// @param d_output dL/d output `[B, T, E]`
/// @param softcap  the soft-cap C it was made with (a trace_no_weights()
///                 only), or 0
/// @return         the four layers' gradients and `input`
AttentionGrads backward_self_attention(const MultiHeadAttention& m, const ForwardTrace& trace,
                                       const Tensor3& x, const Tensor3& d_output, Causal,
                                       float softcap = 0.0f);

/// The module's eight parameters paired with their gradients, in a fixed
/// order: wq, wk, wv, w_o, each .weight then .bias; what Sgd::step() and
/// Adam::step() take.
/// @param m the module, updated through the result
/// @param g its gradients, which must outlive the result
/// @return  the eight parameters
std::vector<Parameter> parameters(MultiHeadAttention& m, const AttentionGrads& g);

/// @}

}  // namespace mha
