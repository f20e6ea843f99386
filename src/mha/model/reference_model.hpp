/// @file reference_model.hpp
/// @brief The block and the language model as plain loops in double: the oracle
///        that tests hold block_forward() and forward(LanguageModel) to.
///
/// B batch, T positions, V vocabulary, E embed_dim.
#pragma once
#include "mha/model/language_model.hpp"

namespace mha {

/// @addtogroup block
/// @{

/// `[B, T, E]` in double.
using Tensor3d = xt::xtensor<double, 3>;

/// One Block's forward in double, every stage a loop: LayerNorm, the four
/// projections, scores, softmax, weights x V, the feed-forward with erf GELU.
/// @param blk    the block (its float weights read as double)
/// @param x      `[B, T, E]`
/// @param causal whether query i sees only keys 0..i
/// @return       `[B, T, E]`
Tensor3d reference_block(const Block& blk, const Tensor3d& x, bool causal);

/// The language model's logits in double: embeddings, reference_block()
/// L times (causal), the final norm and the head.
/// @param m      the model
/// @param tokens `[B, T]`, T at most T_max, ids in [0, V)
/// @return       logits `[B, T, V]`
Tensor3d reference_logits(const LanguageModel& m, const Tokens& tokens);

/// @}

}  // namespace mha
