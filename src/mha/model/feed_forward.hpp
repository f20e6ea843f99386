/// @file feed_forward.hpp
/// @brief The block, 2: the position-wise feed-forward, Linear, GELU, Linear.
///
/// B batch, T positions, E embed_dim, F the hidden size (dim_feedforward).
#pragma once
#include "mha/backward.hpp"
#include "mha/linear.hpp"

namespace mha {

/// @addtogroup block
/// @{

/// GELU as PyTorch's default computes it, with erf:
/// \f$\mathrm{gelu}(h) = h\, \Phi(h) = \tfrac{h}{2}\,(1 + \mathrm{erf}(h / \sqrt 2))\f$.
/// @param h any number
/// @return  gelu(h)
float gelu(float h);

/// Its derivative \f$\Phi(h) + h\, \varphi(h)\f$, \f$\varphi\f$ the normal density.
/// @param h any number
/// @return  d gelu / dh at h
float gelu_grad(float h);

/// The feed-forward of a Transformer block, applied to every position on
/// its own: `linear2(gelu(linear1(x)))`. Attention moves information
/// between positions; this is where each position computes on what it got.
/// In nn.TransformerEncoderLayer these are `linear1` and `linear2`.
struct FeedForward {
    Linear linear1;  ///< E -> F, weight `[F, E]`
    Linear linear2;  ///< F -> E, weight `[E, F]`
};

/// What the forward keeps for the backward.
struct FeedForwardTrace {
    Tensor3 h;  ///< linear1(x), before GELU `[B, T, F]`
    Tensor3 a;  ///< gelu(h), linear2's input `[B, T, F]`
};

/// The gradients of the two layers.
struct FeedForwardGrads {
    LinearGrad linear1;  ///< dL/d linear1
    LinearGrad linear2;  ///< dL/d linear2
};

/// nn.Linear's initialisation for both layers (uniform in
/// \f$\pm 1/\sqrt{\mathrm{in}}\f$, weight and bias).
/// @param embed_dim E, @param hidden F, both at least 1
/// @param rng the generator to draw from
/// @return    the two layers
FeedForward make_feed_forward(std::size_t embed_dim, std::size_t hidden, Rng& rng);

/// The forward.
/// @param x    `[B, T, E]`
/// @param f    the two layers
/// @param keep nullptr, or where h and a go for feed_forward_backward()
/// @return     `[B, T, E]`
/// @throws std::invalid_argument when the shapes do not fit.
Tensor3 feed_forward(const Tensor3& x, const FeedForward& f, FeedForwardTrace* keep = nullptr);

/// The backward: linear2's, then \f$dh = da \cdot \mathrm{gelu}'(h)\f$, then linear1's.
/// @param x  the forward's input `[B, T, E]`
/// @param t  what feed_forward() kept
/// @param dy dL/dy `[B, T, E]`
/// @param f  the two layers
/// @param g  gets both layers' gradients
/// @return   dL/dx `[B, T, E]`
Tensor3 feed_forward_backward(const Tensor3& x, const FeedForwardTrace& t, const Tensor3& dy,
                              const FeedForward& f, FeedForwardGrads& g);

/// @}

}  // namespace mha
