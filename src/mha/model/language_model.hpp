/// @file language_model.hpp
/// @brief The block, 4: a small decoder-only language model of L blocks.
///
/// B batch, T positions (at most T_max), V vocabulary, E embed_dim, H heads,
/// F hidden, L layers.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "mha/model/block.hpp"
#include "mha/model/embedding.hpp"

namespace mha {

/// @addtogroup block
/// @{

/// The sizes of a LanguageModel.
struct ModelConfig {
    std::size_t vocab = 0;      ///< V
    std::size_t max_len = 0;    ///< T_max, the longest sequence (pos_emb's rows)
    std::size_t embed_dim = 0;  ///< E
    std::size_t num_heads = 0;  ///< H, dividing E
    std::size_t hidden = 0;     ///< F, the feed-forward's width (often 4E)
    std::size_t layers = 0;     ///< L
};

/// Tokens to next-token logits, the shape of GPT-2 and nanoGPT:
/// `x = tok_emb(idx) + pos_emb(arange(T))`, then L causal pre-norm blocks,
/// then `logits = head(norm(x))`. Position t sees tokens 0..t only, so its
/// logits may predict token t+1.
/// PyTorch's names: `tok_emb.weight`, `pos_emb.weight`, `layers.{i}.`
/// and a Block's names, `norm.weight`, `norm.bias`, `head.weight`, `head.bias`.
struct LanguageModel {
    Embedding tok_emb;          ///< `[V, E]`
    Embedding pos_emb;          ///< `[T_max, E]`, learned, one row per position
    std::vector<Block> layers;  ///< L blocks
    LayerNorm norm;             ///< the final norm, E
    Linear head;                ///< E -> V, weight `[V, E]`
    /// @return the sizes, read from the tensors
    ModelConfig config() const;
};

/// A model with every tensor initialised as the PyTorch modules do
/// (embeddings standard normal, the blocks as Block(), head as nn.Linear).
/// @param c    the sizes, each at least 1, H dividing E
/// @param seed the one seed every tensor is drawn from
/// @return     the model
/// @throws std::invalid_argument naming the size that does not fit.
LanguageModel make_language_model(const ModelConfig& c, std::uint64_t seed);

/// What the forward keeps for the backward.
struct ModelTrace {
    Tensor3 drop;                    ///< dropout's mask on the embeddings `[B, T, E]`; empty: none
    std::vector<Tensor3> x;          ///< the stream entering each block, `[B, T, E]`, L + 1 of them (the last leaves the stack)
    std::vector<BlockTrace> layers;  ///< each block's; `layers[l].attn.weights` `[B, H, T, T]`
    NormTrace norm;                  ///< the final norm's
    Tensor3 h;                       ///< norm(x[L]), the head's input `[B, T, E]`
    Tensor3 logits;                  ///< `[B, T, V]`
};

/// Every gradient of the model.
struct ModelGrads {
    Tensor2 tok_emb;                 ///< `[V, E]`
    Tensor2 pos_emb;                 ///< `[T_max, E]` (rows past T are 0)
    std::vector<BlockGrads> layers;  ///< each block's
    NormGrad norm;                   ///< the final norm's
    LinearGrad head;                 ///< the head's
};

/// The forward, causal in every layer.
/// @param m      the model
/// @param tokens `[B, T]`, T at most T_max, each id in [0, V)
/// @param keep_weights false: each block keeps its attention's log-sum-exp,
///        not its weights, and backward() runs the tiled (FlashAttention-2)
///        backward: no `[B, H, T, T]` is held, so that T can be long
/// @param drop   dropout while training, as nanoGPT places it: on the
///        embeddings' sum and on each block's two branches (block_forward());
///        p = 0, the default, is the model without it, bit for bit
/// @return       the trace, logits `[B, T, V]`
/// @throws std::invalid_argument for T > T_max or an id out of range.
ModelTrace forward(const LanguageModel& m, const Tokens& tokens, bool keep_weights = true,
                   const Dropout& drop = {});

/// The backward from dL/d logits, the forward in reverse.
/// @param m        the model
/// @param t        what forward() returned for @p tokens
/// @param tokens   `[B, T]`
/// @param d_logits dL/d logits `[B, T, V]`
/// @return         every gradient
ModelGrads backward(const LanguageModel& m, const ModelTrace& t, const Tokens& tokens,
                    const Tensor3& d_logits);

/// The model's parameters paired with their gradients, in a fixed order:
/// tok_emb, pos_emb, each block's sixteen (parameters(Block&, ...)), norm, head.
/// @param m the model, updated through the result
/// @param g its gradients, which must outlive the result
/// @return  2 + 16 L + 4 parameters
std::vector<Parameter> parameters(LanguageModel& m, const ModelGrads& g);

/// How many floats the model learns.
/// @param m the model
/// @return  V E + T_max E + L (4 E^2 + 2 E F + 9 E + F) + 2 E + E V + V
std::size_t parameter_count(const LanguageModel& m);

/// @}

}  // namespace mha
