/// @file induction.hpp
/// @brief The block, 5: in-context copying, and the scores that find induction heads.
///
/// B batch, n tokens in each half, T = 2n + 1 positions (a BOS token first),
/// V vocabulary, H heads, L layers.
///
/// Olsson et al. (2022), "In-context learning and induction heads": on text
/// that repeats, a two-layer model forms a pair of heads. A *previous-token
/// head* in layer 0 copies each position's previous token into it; an
/// *induction head* in layer 1 then finds, for the current token A, the
/// earlier position whose previous token was A, the position just after the
/// earlier A, and copies the token there (B in "A B ... A -> B"). Each head
/// is given a number from its weights, as TransformerLens and ARENA do.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "mha/model/language_model.hpp"
#include "mha/model/sequence_model.hpp"
#include "mha/model/train.hpp"

namespace mha {

/// @addtogroup block
/// @{

/// The token every repeated_batch() sequence starts with (beginning of
/// sequence): position 0 then has no earlier token to stand for, which would
/// make it look, to an induction head, like the position after its own token.
constexpr std::int32_t kBos = 0;

/// B sequences of a BOS token and 2n tokens in which random tokens are
/// followed by the same tokens again, and the targets, the next token:
/// `y(b, i) = x(b, i + 1)`. The other tokens are 1 .. V-1.
///
/// With @p n_min = 0 (or n), each sequence is BOS, n random tokens r and r
/// again, `x = [BOS] ++ r ++ r`: the first half's targets (positions 0 .. n)
/// are random, nothing predicts them; the second half's (positions n+1 .. 2n)
/// are the token after the earlier occurrence, `y(b, i) = x(b, i - n + 1)`,
/// the last one r's first token (the repetition going on). The n tokens of r
/// are distinct, so that each token of the second half occurred exactly
/// once before.
///
/// With n_min < n, each sequence is instead BOS, a random tokens, then a
/// stretch r of m distinct tokens over and over to the end,
/// `x(b, 1 + a + i) = r(i mod m)`: m uniform in [n_min, n], a uniform in
/// [0, 2n - 2m], so that r occurs at least twice. How far back to copy from,
/// and from where, then changes from sequence to sequence, so that only the
/// tokens tell where to look. On r ++ r alone a model can also learn the
/// offset n - 1 from the positions, or that the next token is the one seen
/// longest ago: a single layer does both.
/// @param batch B, at least 1
/// @param n     tokens in each half, from 1 to V - 1
/// @param vocab V, BOS included
/// @param rng   the generator to draw from
/// @param n_min the shortest stretch, 0 or from 1 to n
/// @return      x and y `[B, 2n + 1]`
/// @throws std::invalid_argument for a size of 0, n > V - 1 or n_min > n.
TokenBatch repeated_batch(std::size_t batch, std::size_t n, std::size_t vocab, Rng& rng,
                          std::size_t n_min = 0);

/// Head h's previous-token score: its mean weight on key i - 1, over the
/// queries i = 1 .. q - 1 and every sequence. 1 for a head that always looks
/// one back; 1/(i + 1) at query i for a head that spreads evenly under a
/// causal mask. On a repeated_batch() pass q = n + 1, the first half: there
/// every token is new, and these are the keys an induction head reads (in
/// the second half a trained layer-0 head may look elsewhere).
/// @param weights `[B, H, T, T]`, T at least 2
/// @param queries q, from 2 to T; 0: T, every query
/// @return        H numbers in [0, 1]
/// @throws std::invalid_argument when weights is not `[B, H, T, T]`, T < 2, or q
///         is out of range.
std::vector<double> previous_token_scores(const Tensor4& weights, std::size_t queries = 0);

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
/// stay near ln (V - 1) (random targets) while the second half's fall once
/// the model copies in context.
/// @param logits  `[B, T, V]`
/// @param targets `[B, T]`, each in [0, V)
/// @return        T numbers
/// @throws std::invalid_argument when the shapes differ or a target is out of range.
std::vector<double> position_losses(const Tensor3& logits, const Tokens& targets);

/// The loss over each half of a repeated_batch() `[BOS] ++ r ++ r`.
struct HalfLosses {
    double first = 0;     ///< mean over positions 0 .. n, BOS and r (random targets)
    double repeated = 0;  ///< mean over positions n+1 .. 2n, r again (copied targets)
};

/// position_losses() averaged over each half.
/// @param logits  `[B, 2n + 1, V]`
/// @param targets `[B, 2n + 1]`
/// @return        the two means
/// @throws std::invalid_argument for an even T, or as position_losses().
HalfLosses half_losses(const Tensor3& logits, const Tokens& targets);

/// What a model does on a test batch of repeated_batch(): each half's loss,
/// each head's two scores, and the weights they come from.
struct HeadScores {
    HalfLosses loss;                        ///< on the test batch
    std::vector<std::vector<double>> prev;  ///< `[L][H]` previous-token scores, first half
    std::vector<std::vector<double>> ind;   ///< `[L][H]` induction scores
    std::vector<Tensor4> weights;           ///< each layer's `[B, H, T, T]`
};

/// The forward of @p m on @p test, and what it tells about the heads:
/// half_losses(), previous_token_scores() over the first half (queries 0 .. n)
/// and induction_scores() of every layer.
/// @param m    the model
/// @param test x and y `[B, 2n + 1]` from repeated_batch() without n_min
/// @return     the losses, the scores `[L][H]` and the weights
/// @throws std::invalid_argument as forward() and half_losses().
HeadScores score_heads(const LanguageModel& m, const TokenBatch& test);

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

/// Trains @p m on repeated text and watches its heads: for step = 1 ..
/// lr.total, one train_step() (gradients clipped at norm 1) with Adam at
/// lr.at(step) on a fresh repeated_batch(B, n, V, data, n_min), B and n those
/// of @p test; every 10 steps and at the last, report(step, score_heads(m,
/// test)). The loop lesson 21 runs for two layers and then one.
/// @param m      the model, trained in place
/// @param lr     the schedule; lr.total is the number of steps, at least 1
/// @param test   x and y `[B, 2n + 1]` from repeated_batch() without n_min
/// @param vocab  V, BOS included
/// @param n_min  the shortest stretch of the training batches (see repeated_batch())
/// @param data   the generator the training batches come from
/// @param report called with the step and the scores on @p test
/// @throws std::invalid_argument as repeated_batch(), train_step() and score_heads().
void train_on_repeats(LanguageModel& m, const LrSchedule& lr, const TokenBatch& test,
                      std::size_t vocab, std::size_t n_min, Rng& data,
                      const std::function<void(int, const HeadScores&)>& report);

/// What a run of train_on_repeats() showed, gathered from its reports: each
/// half's loss at every report, the jump (the first report at which the last
/// layer's best induction score reaches 0.5) and every layer's weights before
/// training and at the jump: lessons 21 and 22 read their runs from it.
struct InductionLog {
    std::vector<int> steps;          ///< the reports' steps: 10, 20, ..., the last
    std::vector<HalfLosses> losses;  ///< the losses at each
    int jump = 0;                    ///< the step of the jump; 0 when there was none
    /// (what, every layer's `[B, H, T, T]`): "before training", then "at the
    /// jump, step s" when there is one; the caller may add the end's
    std::vector<std::pair<std::string, std::vector<Tensor4>>> frames;
    HeadScores last;                 ///< the last report: the model at the end
    /// Starts the log with @p m's weights on @p test, before training.
    /// @param m    the model before training
    /// @param test the test batch the reports are scored on
    /// @throws std::invalid_argument as score_heads().
    InductionLog(const LanguageModel& m, const TokenBatch& test);
    /// Records one report of train_on_repeats().
    /// @param step the report's step
    /// @param s    the scores at that step
    /// @return whether this report is the jump
    bool add(int step, const HeadScores& s);
    /// @return the repeated half's loss at each report
    std::vector<double> repeated() const;
    /// @return the lowest ratio of the repeated half's loss to the first's
    ///         over the reports; +inf before any
    double lowest_ratio() const;
};

/// The index of the highest of @p scores, the first one on a tie: the head
/// that scores highest, given the H scores of one layer.
/// @param scores H numbers, at least one
/// @return       h < H
/// @throws std::invalid_argument for no scores.
std::size_t best_head(const std::vector<double>& scores);

/// For each query i, the key j <= i that head @p head weighs most in
/// sequence @p b, the first one on a tie: where the head looks. For an
/// induction head on a repeated_batch(), a query i of the second half gets
/// i - n + 1, the key whose token is the answer.
/// @param weights `[B, H, T, T]`
/// @param b       b < B
/// @param head    h < H
/// @return        T keys
/// @throws std::invalid_argument when weights is not `[B, H, T, T]` or b or h is
///         out of range.
std::vector<std::size_t> top_keys(const Tensor4& weights, std::size_t b, std::size_t head);

/// Sequence @p b of @p tokens as one letter a token, to print or to label a
/// picture with: "^" for kBos, "a" .. "z" for 1 .. 26, "A" .. "Z" for 27 .. 52
/// (so V up to 53).
/// @param tokens `[B, T]`
/// @param b      b < B
/// @return       T strings of one letter
/// @throws std::invalid_argument for b out of range or a token outside [0, 52].
std::vector<std::string> token_letters(const Tokens& tokens, std::size_t b);

/// @}

}  // namespace mha
