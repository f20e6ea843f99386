/// @file sequence_model.hpp
/// @brief Training, 4: the smallest model that learns with attention.
///
/// B batch, T positions, V vocabulary size, E embed_dim, H heads.
#pragma once

#include <vector>

#include "mha/backward.hpp"
#include "mha/model/embedding.hpp"
#include "mha/model/optim.hpp"

namespace mha {

/// @addtogroup training
/// @{

/// Tokens to logits through one attention layer, with nothing else that
/// could carry a token from one position to another:
/// `x = emb(tokens) + PE`, `a = attn(x, x, x)` (self-attention, no mask),
/// `logits = readout(a)`. Whatever a position predicts about another
/// position's token must come through its attention weights.
struct SequenceModel {
    Embedding embedding;        ///< `[V, E]`
    MultiHeadAttention attn;    ///< E, H
    Linear readout;             ///< `[V, E]`: E -> V logits
    Tensor2 positions;          ///< sinusoidal_encoding(T, E), `[T, E]`

    /// @param vocab V
    /// @param length T, the sequence length it is built for
    /// @param embed_dim E
    /// @param num_heads H, dividing E
    /// @param init the attention layer's scheme and seed; the table and the
    ///        read-out are drawn from the same seed + 1
    SequenceModel(std::size_t vocab, std::size_t length, std::size_t embed_dim,
                  std::size_t num_heads, const Init& init);
};

/// What a forward keeps for the backward.
struct SequenceTrace {
    Tensor3 x;           ///< emb(tokens) + PE `[B, T, E]`
    ForwardTrace attn;   ///< the attention layer's trace (its weights `[B, H, T, T]`)
    Tensor3 logits;      ///< `[B, T, V]`
};

/// Every gradient of the model.
struct SequenceGrads {
    Tensor2 embedding;    ///< dL/d embedding.weight `[V, E]`
    AttentionGrads attn;  ///< the attention layer's
    LinearGrad readout;   ///< dL/d readout
};

/// The forward, keeping what backward() needs.
/// @param m      the model
/// @param tokens `[B, T]`, T the model's length
/// @return       x, the attention trace and the logits
/// @throws std::invalid_argument when T differs from the model's, or a
///         token is out of range.
SequenceTrace forward(const SequenceModel& m, const Tokens& tokens);

/// The gradients from dL/d logits, back through the read-out, the attention
/// layer (mha::backward() from the trace), and the table; the positional
/// encoding has no parameters.
/// @param m        the model
/// @param t        what forward() returned for @p tokens
/// @param tokens   `[B, T]`
/// @param d_logits dL/d logits `[B, T, V]`
/// @return         every gradient
SequenceGrads backward(const SequenceModel& m, const SequenceTrace& t, const Tokens& tokens,
                       const Tensor3& d_logits);

/// The model's parameters paired with their gradients, in a fixed order:
/// embedding.weight, wq/wk/wv/w_o .weight and .bias, readout .weight and
/// .bias: what Sgd::step() and Adam::step() take.
/// @param m the model, updated through the result
/// @param g its gradients, which must outlive the result
/// @return  the ten parameters
std::vector<Parameter> parameters(SequenceModel& m, const SequenceGrads& g);

/// A batch of lesson 19's task: sequences and what the model must answer.
struct TokenBatch {
    Tokens x;  ///< `[B, T]`, the input
    Tokens y;  ///< `[B, T]`, the answer at every position
};

/// B sequences of T tokens drawn uniformly from [0, V), and their reverses:
/// y(b, i) = x(b, T-1-i). Position i's answer sits at key T-1-i only.
/// @param batch B, @param length T, @param vocab V, each at least 1
/// @param rng the generator to draw from
/// @return x and y `[B, T]`
TokenBatch reverse_batch(std::size_t batch, std::size_t length, std::size_t vocab, Rng& rng);

/// Head h's mean weight on the key the reversal needs, T-1-i, over every
/// query i and sequence: 1 when the head looks only at the anti-diagonal,
/// 1/T when it spreads its weight evenly.
/// @param weights `[B, H, T, T]`
/// @param head    h < H
/// @return        in [0, 1]
double anti_diagonal_weight(const Tensor4& weights, std::size_t head);

/// anti_diagonal_weight() of every head.
/// @param weights `[B, H, T, T]`
/// @return        H numbers in [0, 1]
std::vector<double> anti_diagonal_weights(const Tensor4& weights);

/// @}

}  // namespace mha
