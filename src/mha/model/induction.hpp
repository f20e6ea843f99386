/// @file induction.hpp
/// @brief The block, 5: in-context copying, and the scores that find induction heads.
///
/// B batch, n tokens in the first half, T = 2n positions, V vocabulary,
/// H heads, L layers.
///
/// Olsson et al. (2022), "In-context learning and induction heads": on text
/// that repeats, a two-layer model forms a pair of heads. A *previous-token
/// head* in layer 0 copies each position's previous token into it; an
/// *induction head* in layer 1 then finds, for the current token A, the
/// earlier position whose previous token was A, the position just after the
/// earlier A, and copies the token there (B in "A B ... A -> B"). Each head
/// is given a number from its weights, as TransformerLens and ARENA do.
#pragma once
#include <vector>

#include "mha/model/language_model.hpp"
#include "mha/model/sequence_model.hpp"

namespace mha {

/// @addtogroup block
/// @{

/// B sequences of n random tokens followed by the same n tokens again:
/// `x = r ++ r`, and the targets the next token, `y(b, i) = x(b, i + 1)`,
/// the last one being r's first token (the repetition going on). The n
/// tokens of r are distinct (drawn without replacement), so that each token
/// of the second half has exactly one earlier occurrence. The first half's
/// targets are random (nothing predicts them); the second half's are the
/// token after the earlier occurrence: `y(b, i) = x(b, i - n + 1)` for
/// i >= n.
/// @param batch B, at least 1
/// @param n     tokens in the first half, from 1 to V
/// @param vocab V
/// @param rng   the generator to draw from
/// @return      x and y `[B, 2n]`
/// @throws std::invalid_argument for a size of 0 or n > V.
TokenBatch repeated_batch(std::size_t batch, std::size_t n, std::size_t vocab, Rng& rng);

/// Head h's previous-token score: its mean weight on key i - 1, over every
/// query i >= 1 and sequence. 1 for a head that always looks one back;
/// 1/(i + 1) at query i for a head that spreads evenly under a causal mask.
/// @param weights `[B, H, T, T]`, T at least 2
/// @return        H numbers in [0, 1]
/// @throws std::invalid_argument when weights is not `[B, H, T, T]` or T < 2.
std::vector<double> previous_token_scores(const Tensor4& weights);

/// Head h's induction score: its mean weight, over every query i whose token
/// occurred before, on the key just after that earlier occurrence, j + 1,
/// where j < i is the latest position with tokens(b, j) = tokens(b, i). On a
/// repeated_batch() these queries are the second half and j + 1 = i - n + 1.
/// 1 for a head that always looks there; 0 when no token occurs twice.
/// @param weights `[B, H, T, T]`
/// @param tokens  `[B, T]`, what the model read
/// @return        H numbers in [0, 1]
/// @throws std::invalid_argument when the shapes do not fit.
std::vector<double> induction_scores(const Tensor4& weights, const Tokens& tokens);

/// The mean cross-entropy at each position: entry i is the mean over the B
/// sequences of \f$-\log \mathrm{softmax}(z_{b,i})_{y_{b,i}}\f$. Their mean is
/// cross_entropy()'s loss; on a repeated_batch() the first half's entries
/// stay near ln V (random targets) while the second half's fall once the
/// model copies in context.
/// @param logits  `[B, T, V]`
/// @param targets `[B, T]`, each in [0, V)
/// @return        T numbers
/// @throws std::invalid_argument when the shapes differ or a target is out of range.
std::vector<double> position_losses(const Tensor3& logits, const Tokens& targets);

/// The loss over each half of a repeated_batch().
struct HalfLosses {
    double first = 0;     ///< mean over positions 0 .. n-1 (random targets)
    double repeated = 0;  ///< mean over positions n .. 2n-1 (copied targets)
};

/// position_losses() averaged over each half.
/// @param logits  `[B, 2n, V]`
/// @param targets `[B, 2n]`
/// @return        the two means
/// @throws std::invalid_argument for an odd T, or as position_losses().
HalfLosses half_losses(const Tensor3& logits, const Tokens& targets);

/// A copy of @p m in which head @p head of layer @p layer adds nothing: the
/// head's slice of the context, columns h D .. (h+1) D - 1 of `[B, T, E]`
/// before w_o, is multiplied by zero. Zeroing those columns of w_o.weight
/// `[E, E]` does exactly that, since `output = context w_o^T + b` reads the
/// slice through them only. The head still computes its weights (the trace
/// shows them); nothing of what it reads reaches the stream. What
/// TransformerLens calls zero-ablation.
/// @param m     the model
/// @param layer l < L
/// @param head  h < H
/// @return      the ablated copy
/// @throws std::invalid_argument for a layer or head out of range.
LanguageModel without_head(const LanguageModel& m, std::size_t layer, std::size_t head);

/// @}

}  // namespace mha
