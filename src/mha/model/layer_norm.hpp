/// @file layer_norm.hpp
/// @brief The block, 1: LayerNorm over the last axis, and its backward.
///
/// B batch, T positions, E embed_dim.
#pragma once
#include "mha/shape.hpp"

namespace mha {

/// @defgroup block The Transformer block
/// @brief What stands around attention in a Transformer: LayerNorm, the
///        feed-forward, the residual connections, and the pre-norm block
///        `x + attn(norm1(x))`, `x + ff(norm2(x))` that a language model
///        stacks. Each stage has a forward to read and a backward by hand.
/// @{

/// `torch.nn.LayerNorm(E)`: each position's E features shifted to mean 0
/// and scaled to variance 1, then scaled by `weight` and shifted by `bias`:
/// \f$y = (x - \mu) / \sqrt{\sigma^2 + \epsilon}\, w + b\f$ with \f$\mu\f$
/// and the biased \f$\sigma^2\f$ over the last axis.
struct LayerNorm {
    Tensor1 weight;     ///< `[E]`, 1 at the start
    Tensor1 bias;       ///< `[E]`, 0 at the start
    float eps = 1e-5f;  ///< PyTorch's default; it matters when \f$\sigma^2\f$ is small
    /// @return E
    std::size_t dim() const { return weight.shape(0); }
};

/// What the forward keeps for the backward.
struct NormTrace {
    Tensor3 x_hat;  ///< \f$(x - \mu) / \sqrt{\sigma^2 + \epsilon}\f$ `[B, T, E]`
    Tensor2 rstd;   ///< \f$1 / \sqrt{\sigma^2 + \epsilon}\f$ per position `[B, T]`
};

/// The gradients of the two parameters.
struct NormGrad {
    Tensor1 weight;  ///< dL/dw `[E]`
    Tensor1 bias;    ///< dL/db `[E]`
};

/// nn.LayerNorm's initialisation: weight 1, bias 0.
/// @param dim E, at least 1
/// @return    the layer
LayerNorm make_layer_norm(std::size_t dim);

/// The forward.
/// @param x    `[B, T, E]`
/// @param n    the layer, E features
/// @param keep nullptr, or where x_hat and rstd go for layer_norm_backward()
/// @return     `[B, T, E]`
/// @throws std::invalid_argument when x's last size is not E.
Tensor3 layer_norm(const Tensor3& x, const LayerNorm& n, NormTrace* keep = nullptr);

/// The backward. With \f$g = dy \cdot w\f$ per position,
/// \f$dx = r\,(g - \overline{g} - \hat x\, \overline{g \hat x})\f$, the bars
/// being means over the E features and r the position's rstd;
/// \f$dw = \sum dy\, \hat x\f$ and \f$db = \sum dy\f$ over the B T positions.
/// @param t  what layer_norm() kept
/// @param dy dL/dy `[B, T, E]`
/// @param n  the layer
/// @param g  gets dL/dw and dL/db `[E]`
/// @return   dL/dx `[B, T, E]`
/// @throws std::invalid_argument when the shapes differ.
Tensor3 layer_norm_backward(const NormTrace& t, const Tensor3& dy, const LayerNorm& n,
                            NormGrad& g);

/// @}

}  // namespace mha
