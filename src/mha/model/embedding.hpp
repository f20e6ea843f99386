/// @file embedding.hpp
/// @brief Training, 1: token embedding and sinusoidal positional encoding.
///
/// B batch, T positions, V vocabulary size, E embed_dim.
#pragma once

#include <cstdint>

#include "mha/init.hpp"

namespace mha {

/// @defgroup training Training: embedding, loss, optimizer, a tiny model
/// @brief The pieces that turn the module into something that learns: tokens
///        in, a loss out, and the parameters updated from the hand-written
///        gradients (no autograd anywhere). Lesson 19 trains with them.
/// @{

/// Token ids `[B, T]`, each in `[0, V)`.
using Tokens = xt::xtensor<std::int32_t, 2>;

/// A table of one row per token, as `torch.nn.Embedding(V, E)`.
struct Embedding {
    Tensor2 weight;  ///< `[V, E]`

    /// @return V, the vocabulary size
    std::size_t vocab() const { return weight.shape(0); }
    /// @return E, the size of each row
    std::size_t dim() const { return weight.shape(1); }
};

/// nn.Embedding's initialisation: every entry standard normal.
/// @param vocab V, at least 1
/// @param dim   E, at least 1
/// @param rng   the generator to draw from
/// @return weight `[V, E]`
Embedding make_embedding(std::size_t vocab, std::size_t dim, Rng& rng);

/// Row tokens(b, t) of the table for every position: `emb(tokens)`.
/// @param e      the table `[V, E]`
/// @param tokens `[B, T]`, each in `[0, V)`
/// @return       `[B, T, E]`
/// @throws std::invalid_argument naming the first token out of range.
Tensor3 embed(const Embedding& e, const Tokens& tokens);

/// The gradient of the table: row v of dL/dW is the sum of dL/dx over every
/// position holding token v (a token never seen gets a zero row).
/// @param e        the table `[V, E]`
/// @param tokens   `[B, T]`, as given to embed()
/// @param d_output dL/d embed(e, tokens) `[B, T, E]`
/// @return         dL/d weight `[V, E]`
/// @throws std::invalid_argument when the shapes do not fit.
Tensor2 embed_backward(const Embedding& e, const Tokens& tokens, const Tensor3& d_output);

/// The sinusoidal positional encoding of "Attention Is All You Need":
/// \f$PE(p, 2i) = \sin(p / 10000^{2i/E})\f$,
/// \f$PE(p, 2i+1) = \cos(p / 10000^{2i/E})\f$.
/// Each pair of columns turns at its own frequency, so PE(p + k) is PE(p)
/// rotated pair by pair: a fixed linear map for each offset k, which
/// attention's products can learn to read.
/// @param positions T, at least 1
/// @param dim       E, at least 1 (an odd E ends with a sine column)
/// @return          `[T, E]`, added to every sequence's embeddings
Tensor2 sinusoidal_encoding(std::size_t positions, std::size_t dim);

/// @}

}  // namespace mha
