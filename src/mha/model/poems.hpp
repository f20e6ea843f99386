/// @file poems.hpp
/// @brief Poems, 2: the split, the ids, the baselines, and training a
///        LanguageModel on poems with its checkpoint chosen by validation.
///
/// T_max the model's longest sequence, V vocabulary, B batch.
///
/// The split is by a poem's 0-based index in the corpus: index % 10 == 9 is
/// *held out* (never read by training, the vocabulary or the stopping),
/// index % 10 == 4 is *validation* (chooses the checkpoint), the rest is
/// *training* (the weights, the vocabulary, the baselines' counts).
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "mha/io/corpus_io.hpp"
#include "mha/model/generate.hpp"
#include "mha/model/language_model.hpp"
#include "mha/model/poem_heads.hpp"
#include "mha/model/sequence_model.hpp"

namespace mha {

/// @addtogroup poems
/// @{

/// The three parts of a corpus.
struct PoemSplit {
    std::vector<Poem> train;       ///< index % 10 not 4 or 9
    std::vector<Poem> validation;  ///< index % 10 == 4
    std::vector<Poem> held_out;    ///< index % 10 == 9
};

/// Splits @p poems by their index, as this file's header says.
/// @param poems the corpus's poems, in its order
/// @return      the three parts, each in the corpus's order
PoemSplit split_poems(const std::vector<Poem>& poems);

/// The ids of poems one after another, each starting with `<poem>` (id 1):
/// the training text a model reads in windows.
/// @param poems the poems
/// @param v     the vocabulary (a character it lacks is 0, `<unk>`)
/// @return      one id per token, `<poem>` included
std::vector<std::int32_t> poem_ids(const std::vector<Poem>& poems, const Vocab& v);

/// Each poem as `<poem>` and its ids, cut into windows of at most T_max + 1
/// ids, each starting at the previous one's last id: every id but the
/// `<poem>` is the target of exactly one prediction, and a prediction
/// reads at most T_max ids of its own poem. A window that does not reach the
/// poem's end ends at its last "\n" (when it holds one), so that the next
/// starts at a "\n", as poem_batch()'s windows do.
/// @param poems the poems
/// @param v     the vocabulary
/// @param t_max T_max, at least 1
/// @return      the windows, each of 2 to T_max + 1 ids
std::vector<std::vector<std::int32_t>> poem_windows(const std::vector<Poem>& poems,
                                                    const Vocab& v, std::size_t t_max);

/// B windows of T + 1 ids from @p ids, each starting at a `<poem>` (id 1)
/// or a "\n" (id 2) that a line follows (a poem's last "\n" is followed by
/// the next `<poem>`: no window starts there, as none of poem_windows()'s
/// does), drawn uniformly among such places: x the first T, y
/// the last T (x shifted by one). A line then starts at position 1 of every
/// window, as it does when the model writes a poem from `<poem>` and in
/// poem_windows(), so that a place in the window tells a place in the line
/// (a window at a random place would hide it).
/// @param ids   the training text
/// @param batch B
/// @param t     T
/// @param rng   draws the B start positions
/// @return      x and y `[B, T]`
/// @throws std::invalid_argument when no line starts T + 1 ids before the end.
TokenBatch poem_batch(const std::vector<std::int32_t>& ids, std::size_t batch, std::size_t t,
                      Rng& rng);

/// The training poems' lines (each a couplet: its ids up to and with its
/// "\n") grouped by shape, the counts of characters between its marks
/// (5 5 or 7 7): `[shape][line][id]`, shapes in order of first appearance.
using LineBank = std::vector<std::vector<std::vector<std::int32_t>>>;

/// line_bank(): the lines of @p poems by shape; a shape of fewer than
/// @p min_lines lines (the irregular ones) is left out.
/// @param poems     the training poems
/// @param v         the vocabulary (is_mark() on its tokens)
/// @param min_lines the fewest lines a kept shape has
/// @return          the bank, perhaps empty
LineBank line_bank(const std::vector<Poem>& poems, const Vocab& v, std::size_t min_lines = 20);

/// A poem that no poet wrote: `<poem>` and then lines of one shape, drawn
/// from the bank (the shape uniformly, then each line uniformly), cut at
/// T + 1 ids. Its form is right everywhere, its lines are real, their order
/// is new: more poems to learn the form from than the 250 there are, while
/// what the characters say cannot be learnt by heart from the order.
/// @param bank line_bank()'s, not empty
/// @param t    T: the poem has T + 1 ids
/// @param rng  draws the shape and the lines
/// @return     T + 1 ids
/// @throws std::invalid_argument for an empty bank.
std::vector<std::int32_t> made_up_poem(const LineBank& bank, std::size_t t, Rng& rng);

/// poem_batch(), but each of the B windows is a made_up_poem() with
/// probability @p share (one uniform draw per window, before the window's
/// own draws): share 0 is poem_batch() draw for draw.
/// @param ids   the training text
/// @param batch B
/// @param t     T
/// @param rng   draws every window
/// @param bank  line_bank() of the training poems (may be empty when share is 0)
/// @param share the chance that a window is made up, in [0, 1]
/// @return      x and y `[B, T]`
/// @throws std::invalid_argument as poem_batch(), or for share > 0 with an
///         empty bank or share outside [0, 1].
TokenBatch poem_batch(const std::vector<std::int32_t>& ids, std::size_t batch, std::size_t t,
                      Rng& rng, const LineBank& bank, double share);

/// What a model (or a baseline) says about one target.
struct Prediction {
    std::int32_t previous;  ///< the id before the target
    std::int32_t target;    ///< the id to predict
    double loss;            ///< \f$-\ln p(\text{target})\f$, nats
    bool correct;           ///< whether the most likely id was the target
    double confidence;      ///< the largest probability
};

/// The model's prediction of every target of @p windows (one forward per
/// window), in order.
/// @param m       the model
/// @param windows from poem_windows(), each at most T_max + 1 ids
/// @return        one Prediction per target
std::vector<Prediction> model_predictions(const LanguageModel& m,
                                          const std::vector<std::vector<std::int32_t>>& windows);

/// The mean loss of @p p, nats per token; NaN when empty.
/// @param p predictions
/// @return  the mean of their losses
double mean_loss(const std::vector<Prediction>& p);

/// A unigram and a bigram model of the training text, counted:
/// \f$p_1(b) = (c(b) + 1) / (N + V)\f$ (every id, `<unk>` included, gets
/// at least one count), and
/// \f$p_2(b \mid a) = (c(a\,b) + \alpha\, p_1(b)) / (c(a) + \alpha)\f$, the
/// bigram's counts pulled towards the unigram by \f$\alpha\f$.
class Ngrams {
public:
    /// Counts the N targets of @p ids (every id after the first) and their pairs.
    /// @param ids   the training text, poem_ids() of the training poems
    /// @param vocab V
    /// @param alpha \f$\alpha\f$, above 0
    /// @throws std::invalid_argument for an id out of range or alpha <= 0.
    Ngrams(const std::vector<std::int32_t>& ids, std::size_t vocab, double alpha);
    /// @param b an id
    /// @return  \f$p_1(b)\f$
    double unigram(std::int32_t b) const;
    /// @param a the previous id
    /// @param b the id
    /// @return  \f$p_2(b \mid a)\f$
    double bigram(std::int32_t a, std::int32_t b) const;
    /// The unigram's (@p order 1) or the bigram's (@p order 2) prediction of
    /// every target of @p windows, in the order of model_predictions().
    /// @param windows from poem_windows()
    /// @param order   1 or 2
    /// @return        one Prediction per target
    std::vector<Prediction> predictions(const std::vector<std::vector<std::int32_t>>& windows,
                                        int order) const;
    /// @return \f$\alpha\f$
    double alpha() const { return alpha_; }

private:
    std::size_t V_;
    double alpha_, N_ = 0;
    std::vector<double> uni_;                          // c(b)
    std::vector<std::vector<std::pair<std::int32_t, double>>> pairs_;  // c(a b), by a
    std::vector<double> after_;                        // c(a): pairs starting with a
};

/// The \f$\alpha\f$ among 0.5, 1, 2, 5, 10, 20, 50, 100, 200 whose bigram
/// has the lowest loss on the validation windows.
/// @param train_ids  the training text
/// @param vocab      V
/// @param validation the validation windows
/// @return           the bigram with that \f$\alpha\f$
Ngrams fit_ngrams(const std::vector<std::int32_t>& train_ids, std::size_t vocab,
                  const std::vector<std::vector<std::int32_t>>& validation);

/// How a model is trained on poems.
struct PoemTraining {
    ModelConfig model;       ///< the sizes (vocab from the vocabulary)
    std::size_t batch = 16;  ///< B windows a step
    int steps = 1500;        ///< the most steps
    float lr = 1e-3f;        ///< Adam's peak rate; warm-up steps / 20, cosine to lr / 10
    double clip = 1.0;       ///< the gradient norm let through
    int eval_every = 25;     ///< steps between two validation losses
    int patience = 8;        ///< stop after this many validations without a new best
    std::uint64_t seed = 34; ///< the weights' and the batches' seed
    double made_up = 0;      ///< the share of windows that are made_up_poem()s
    float dropout = 0;       ///< forward()'s dropout while training, masks from Rng(seed + 2)
    double smoothing = 0;    ///< cross_entropy()'s label smoothing while training
};

/// One step of the training log.
struct TrainLogRow {
    int step = 0;           ///< 1, 2, ...
    double train_loss = 0;  ///< the batch's loss before the update
    double val_loss = 0;    ///< the validation loss after the update; NaN when not measured
    float lr = 0;           ///< the rate used
};

/// What train_poems() returns.
struct PoemRun {
    LanguageModel best;              ///< the weights of the lowest validation loss
    int best_step = 0;               ///< their step (0: the initial weights)
    double best_val = 0;             ///< their validation loss
    std::vector<TrainLogRow> log;    ///< every step done
};

/// Trains a model from make_language_model(c.model, c.seed) with Adam on
/// poem_batch() windows of the training text, a share c.made_up of them
/// made up from @p lines (T = T_max, drawn from Rng(c.seed + 1)), LrSchedule{c.lr, c.steps / 20, c.steps, 0.1}, clipping
/// at c.clip; every c.eval_every steps measures the validation loss and keeps
/// the best weights; stops after c.patience validations without a new best,
/// at c.steps, or after @p stop_after steps (0: no such limit), whichever
/// comes first. The same arguments give the same bits.
/// @param c          the sizes and the schedule
/// @param train_ids  the training text, at least T_max + 1 ids
/// @param validation the validation windows
/// @param stop_after the most steps to run now, e.g. 20 to re-run a log's start
/// @param on_step    called after each step with its row (may be empty)
/// @param lines      line_bank() of the training poems when c.made_up > 0
/// @return           the best weights, their step and loss, the log
/// @throws std::invalid_argument as make_language_model() or poem_batch().
PoemRun train_poems(const PoemTraining& c, const std::vector<std::int32_t>& train_ids,
                    const std::vector<std::vector<std::int32_t>>& validation, int stop_after = 0,
                    const std::function<void(const TrainLogRow&)>& on_step = nullptr,
                    const LineBank& lines = {});

/// Writes the log as train_log.tsv: a header `step train_loss val_loss lr`
/// (tab-separated), then a row a step, losses to 17 digits (exact for a
/// double), an empty val_loss where none was measured.
/// @param log  the rows
/// @param path the file
/// @throws std::invalid_argument when it cannot be written.
void save_train_log(const std::vector<TrainLogRow>& log, const std::string& path);

/// Reads what save_train_log() writes.
/// @param path the file
/// @return     the rows
/// @throws std::invalid_argument naming the file and the line for a bad row.
std::vector<TrainLogRow> load_train_log(const std::string& path);

/// Losses of predictions, split as mark_losses() splits them: where the
/// target is a mark or "\n" (where a model must count the characters of a
/// line), and the rest.
struct LossSplit {
    double all = 0;            ///< the mean loss over every target
    double marks = 0;          ///< over the targets that are a mark or "\n"; NaN if none
    double rest = 0;           ///< over the others; NaN if none
    double accuracy = 0;       ///< the share of targets predicted right
    std::size_t n_marks = 0;   ///< how many targets are a mark or "\n"
    std::size_t n_rest = 0;    ///< how many are not
};

/// The losses of @p p, overall and split by their target.
/// @param p predictions
/// @param v the vocabulary, to tell the marks
/// @return  the means, the accuracy and the counts
LossSplit split_losses(const std::vector<Prediction>& p, const Vocab& v);

/// The mean loss over the targets of @p windows that lie in a couplet's second line:
/// those after an odd number of marks since the line began (`<poem>` or "\n"), its
/// closing mark included, e.g. 黃河入海流。 of 白日依山盡，黃河入海流。. Its length and
/// its places are fixed by its partner, the first line, 6 or 8 tokens back.
/// @param p       one prediction per target of @p windows, in order (model_predictions())
/// @param windows from poem_windows()
/// @param v       the vocabulary, to tell the marks
/// @return        their mean loss, nats; NaN when no target lies in a second line
/// @throws std::invalid_argument when p does not hold one prediction per target.
double second_line_loss(const std::vector<Prediction>& p,
                        const std::vector<std::vector<std::int32_t>>& windows, const Vocab& v);

/// @p n poems written by the model through the KV cache (generate()), as one
/// batch of n rows: each from `<poem>`, T_max - 1 tokens drawn, cut before a
/// second `<poem>`.
/// @param m the model
/// @param v the vocabulary
/// @param n how many poems
/// @param s the temperature and top-k
/// @param rng the generator to draw from
/// @return  n poems as tokens, `<poem>` first
std::vector<std::vector<std::string>> sample_poems(const LanguageModel& m, const Vocab& v,
                                                   std::size_t n, const Sampling& s, Rng& rng);

/// @p n poems written by the bigram of @p g, as sample_poems() writes the
/// model's: each from `<poem>`, up to @p tokens ids drawn one after another,
/// each by \f$p_2(b \mid a)\f$ of the id before, cut before a second `<poem>`.
/// Lesson 23 writes this loop out; later lessons call it.
/// @param g      the unigram and bigram
/// @param v      the vocabulary
/// @param n      how many poems
/// @param tokens the most ids drawn a poem (T_max - 1, as a model's)
/// @param rng    the generator to draw from
/// @return       n poems as tokens, `<poem>` first
std::vector<std::vector<std::string>> bigram_poems(const Ngrams& g, const Vocab& v,
                                                   std::size_t n, std::size_t tokens, Rng& rng);

/// model_head_patterns() over many windows: each of a head's four scores
/// is the mean over the windows where it is not NaN (each window counts
/// once), and so is a uniform causal head's (weight 1/(q + 1) on keys 0 .. q)
/// over the same windows, the baseline a score is read against.
/// @param m       the model
/// @param v       the vocabulary, to give head_patterns() the tokens
/// @param windows from poem_windows(); the model reads each one's first
///                min(size, T_max) ids
/// @param uniform gets the uniform head's four means
/// @return        `[L][H]` mean scores
std::vector<std::vector<HeadPatterns>> mean_head_patterns(
    const LanguageModel& m, const Vocab& v,
    const std::vector<std::vector<std::int32_t>>& windows, HeadPatterns& uniform);

/// A trained model of poems as a folder: the model (save_model()), its
/// vocab.json, config.json (`vocab`, `t_max`, `embed_dim`, `num_heads`,
/// `ff_dim`, `num_layers`, then the training's `batch`, `steps`, `lr`,
/// `clip`, `eval_every`, `patience`, `seed`, `best_step`, `best_val`) and
/// train_log.tsv.
struct PoemCheckpoint {
    LanguageModel model;            ///< the weights
    Vocab vocab;                    ///< the tokens by id
    PoemTraining training;          ///< how it was trained
    int best_step = 0;              ///< the step whose weights these are
    double best_val = 0;            ///< their validation loss
    std::vector<TrainLogRow> log;   ///< every step of the run
};

/// Writes @p c into @p dir (created if missing).
/// @param c   the checkpoint
/// @param dir the folder
/// @throws std::invalid_argument when a file cannot be written.
void save_poem_checkpoint(const PoemCheckpoint& c, const std::string& dir);

/// Reads what save_poem_checkpoint() writes.
/// @param dir the folder
/// @return    the checkpoint
/// @throws std::invalid_argument with one line naming the file, for a file
///         missing or bad, or sizes that do not agree (config, vocabulary, weights).
PoemCheckpoint load_poem_checkpoint(const std::string& dir);

/// @}

}  // namespace mha
