/// @file poem_heads.hpp
/// @brief Poems, 1: what a head of a model of Tang poems looks at, and how
/// well the poems it writes keep the form.
///
/// T tokens of one sequence, V vocabulary, H heads, L layers.
///
/// A token is one character (its UTF-8 bytes), "\n" (a line of the poem
/// ends) or "<poem>" (a poem starts). Regulated verse has a fixed shape:
/// lines of 5 or 7 characters, each ended by a mark such as `，` or `。`,
/// and couplets whose two lines match place by place (白日依山盡，黃河入海流。).
/// A head that has learned that shape puts its weight on one of a few keys,
/// and each gets a score in [0, 1]: the head's mean weight on that key.
#pragma once
#include <cstddef>
#include <string>
#include <unordered_set>
#include <vector>

#include "mha/model/language_model.hpp"

namespace mha {

/// @defgroup poems Poems: the heads of a model of Tang poems, and its verse
/// @brief Scores of a head's weights over real characters, the loss at each
/// character, and the form and the novelty of generated poems.
/// @{

/// Whether @p token is a mark: one of `，。？！；：、` or ASCII `,.?!;:`.
/// "\n" and "<poem>" are not marks (they end a line and start a poem).
/// @param token one token, e.g. "，"
/// @return      true for the 13 marks only
bool is_mark(const std::string& token);

/// A head's mean weight on four keys that the form of a poem singles out.
/// Each is the mean, over the queries q for which its key exists, of
/// w[q][key]; NaN when no query has one.
struct HeadPatterns {
    double previous;   ///< key q - 1, for q >= 1: the previous character
    double partner;    ///< the same place in the previous line (a couplet's partner)
    double last_mark;  ///< the latest mark before q
    double start;      ///< key 0, for q >= 1: where the poem starts
};

/// The four scores of one head over one sequence.
///
/// The partner: the *segments* are the maximal runs of tokens that are
/// neither a mark, "\n" nor "<poem>". A query at offset j of a segment
/// whose previous segment has more than j tokens has the key at offset j of
/// that previous segment. In 五言 verse that key is 6 tokens back inside a
/// couplet (the mark between) and 7 across a line end (the mark and "\n").
///
/// @param weights `[T, T]`, row q the query's weights over keys 0 .. T-1
///                (causal: only keys <= q carry weight; not checked)
/// @param tokens  T tokens, e.g. "<poem>", "白", ..., "，", ..., "\n"
/// @return        the four means, each NaN when no query has its key
/// @throws std::invalid_argument when weights is not `[T, T]` for the T tokens.
///
/// @warning A uniform causal head is not "0 everywhere": its previous
/// score is the mean of 1/(q + 1), about 0.17 on a 14-token couplet, and the
/// shorter the sequence, the higher. Compare a head's score with that of a
/// uniform head over the same tokens, not with 0.
HeadPatterns head_patterns(const Tensor2& weights, const std::vector<std::string>& tokens);

/// head_patterns() of every layer x head of @p m reading one sequence.
/// @param m          the model
/// @param tokens_1xT `[1, T]`, the ids of @p tokens
/// @param tokens     the T tokens as text
/// @return           `[L][H]` scores
/// @throws std::invalid_argument when tokens_1xT is not `[1, T]` for the T
///         tokens, or as forward().
std::vector<std::vector<HeadPatterns>> model_head_patterns(
    const LanguageModel& m, const Tokens& tokens_1xT, const std::vector<std::string>& tokens);

/// The model's loss at each position of @p tokens: entry i is
/// \f$-\log p(x_{i+1} \mid x_0 \ldots x_i)\f$, the cross-entropy of
/// predicting token i + 1, averaged over the B sequences. The forward reads
/// tokens 0 .. T-2, as the last token has no next one to predict.
/// With without_head() (induction.hpp), what a head contributes at each position.
/// @param m      the model
/// @param tokens `[B, T]`, T from 2 to T_max + 1
/// @return       T - 1 losses in nats; entry i's target is token i + 1
/// @throws std::invalid_argument for T < 2, or as forward().
std::vector<double> next_token_losses(const LanguageModel& m, const Tokens& tokens);

/// The mean loss where the next token is a mark or "\n", and where it is
/// not: where a model must count the characters of a line, and the rest.
struct MarkLosses {
    double marks;          ///< mean over the targets that are a mark or "\n"; NaN if none
    double rest;           ///< mean over the other targets; NaN if none
    std::size_t n_marks;   ///< how many targets are a mark or "\n"
    std::size_t n_rest;    ///< how many are not
};

/// next_token_losses() split by their target.
/// @param losses T - 1 losses, entry i's target being tokens[i + 1]
/// @param tokens the T tokens as text
/// @return       the two means and their counts
/// @throws std::invalid_argument when losses.size() + 1 != tokens.size().
MarkLosses mark_losses(const std::vector<double>& losses, const std::vector<std::string>& tokens);

/// The share of the lines of @p tokens that are 5 or 7 characters long.
/// The tokens are split at the marks, "\n" and "<poem>"; a *line* is a non-empty
/// piece that a mark ends. A piece that "\n" ends (no mark) and the piece
/// after the last mark are not lines: a generation cut short should not count.
/// @param tokens generated text, one token a character
/// @return       in [0, 1]; NaN when there is no line
double format_score(const std::vector<std::string>& tokens);

/// Every run of n tokens of a text, hashed once, to ask whether a run of
/// n generated tokens occurs in it: memorisation_score() for many
/// generations against one training text of tens of thousands of tokens.
class NgramIndex {
public:
    /// @param text the training text's tokens
    /// @param n    the run's length, at least 1
    /// @throws std::invalid_argument for n = 0.
    NgramIndex(const std::vector<std::string>& text, std::size_t n);
    /// Whether tokens[at .. at + n - 1] occur in a row in the text.
    /// @param tokens any tokens, at + n <= tokens.size()
    /// @param at     where the run starts
    /// @return       true when the text holds them in a row somewhere
    bool contains(const std::vector<std::string>& tokens, std::size_t at) const;
    /// @return the n of the runs indexed
    std::size_t n() const { return n_; }

private:
    std::size_t n_;
    std::unordered_set<std::string> runs_;  // each run as one key (see key())
};

/// The share of the n-token windows of @p generated, among those holding
/// no mark, "\n", "<poem>" or "<unk>", that occur verbatim (the same n
/// tokens in a row) in the indexed training text.
/// @param generated the generated tokens
/// @param training  the training text, indexed once
/// @return          in [0, 1]; NaN when no window qualifies
double memorisation_score(const std::vector<std::string>& generated, const NgramIndex& training);

/// memorisation_score() against @p training_text, indexed on the spot
/// (build an NgramIndex once to score many generations).
/// @param generated     the generated tokens
/// @param training_text the training text's tokens
/// @param n             the window's length, at least 1
/// @return              in [0, 1]; NaN when no window qualifies
/// @throws std::invalid_argument for n = 0.
double memorisation_score(const std::vector<std::string>& generated,
                          const std::vector<std::string>& training_text, std::size_t n = 4);

/// @}

}  // namespace mha
