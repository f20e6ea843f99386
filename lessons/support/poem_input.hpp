// What the poem lessons (23, 24 and 25) share and do not teach: where the corpus is,
// the skip without it, a bad corpus or checkpoint refused in one line before anything
// is printed, and lesson 24's training settings and summary of the model it trained
// or loaded.
#pragma once
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <vector>

#include "mha/model/poems.hpp"
#include "support/lesson.hpp"

namespace lesson {

/// --corpus FILE when given, else the Tang poems of fortunes-zh, or the file the
/// environment's MHA_TANG300 names instead (the tests point it at a missing file to see
/// the lessons skip as they do on a machine without fortunes-zh).
inline std::string corpus_of(const Options& o) {
    if (o.text.count("--corpus")) return o.text.at("--corpus");
    const char* instead = std::getenv("MHA_TANG300");
    return instead && *instead ? instead : "/usr/share/games/fortunes/tang300";
}

/// Whether @p corpus is missing (fortunes-zh not installed): then it says
/// "skipped: needs ..." and the lesson exits 77, which its tests count as skipped.
inline bool corpus_missing(const std::string& corpus) {
    if (std::filesystem::exists(corpus)) return false;
    std::printf("skipped: needs %s (fortunes-zh)\n", corpus.c_str());
    return true;
}

/// "" when the corpus reads, splits and holds one window of @p window + 1
/// training tokens (or is fortunes-zh's and missing: the lesson then says
/// "skipped"); else the one line to print.
inline std::string corpus_refused(const Options& o, std::size_t window) {
    if (!o.text.count("--corpus") && !std::filesystem::exists(corpus_of(o))) return "";
    try {
        const mha::PoemSplit s = mha::split_poems(mha::read_poems(corpus_of(o)));
        const std::size_t n = mha::poem_ids(s.train, mha::build_vocab(s.train)).size();
        if (s.held_out.empty()) return corpus_of(o) + ": fewer than 10 poems to split";
        if (n < window + 1)
            return corpus_of(o) + ": " + std::to_string(n) + " tokens, not one window";
    } catch (const std::invalid_argument& e) {
        return e.what();
    }
    return "";
}

/// "" when the checkpoint in @p dir loads and its vocabulary is the one the
/// training poems of @p corpus give (or the corpus is missing: the lesson
/// then says "skipped"); else the one line to print.
inline std::string checkpoint_refused(const std::string& dir, const std::string& corpus) {
    if (!std::filesystem::exists(corpus)) return "";
    try {
        const auto train = mha::split_poems(mha::read_poems(corpus)).train;
        if (mha::load_poem_checkpoint(dir).vocab.tokens() != mha::build_vocab(train).tokens())
            return dir + "/vocab.json: not the training poems' vocabulary";
    } catch (const std::invalid_argument& e) {
        return e.what();
    }
    return "";
}

#ifdef MHA_DATA_DIR  // the lessons that load data/tang/
/// --model DIR when given, else the checkpoint committed in data/tang/.
inline std::string model_of(const Options& o) {
    return o.text.count("--model") ? o.text.at("--model") : MHA_DATA_DIR "/tang";
}
#endif

/// Whether lesson 24 trains its model here rather than loading one: --train,
/// a class's own --corpus (no checkpoint knows its characters), or --tiny.
inline bool trains(const Options& o) {
    return o.text.count("--train") || o.text.count("--corpus") || o.tiny;
}

/// Lesson 24's training from its flags: the sizes (E --d-model, H --heads, F 4 E, 4
/// layers, 2 at --tiny), B --batch, --steps, seed 34 + --seed, Adam's lr 1e-3 (3e-3
/// at --tiny), a validation pass every 25 steps (50 at --tiny, where it is most of
/// the run), and what keeps it from learning by heart: --made-up, --dropout, --smoothing.
/// @param o the flags, @param vocab V, @param t T_max
inline mha::PoemTraining poem_training(const Options& o, std::size_t vocab, std::size_t t) {
    mha::PoemTraining c;
    const std::size_t E = o.d_model;
    c.model = {vocab, t, E, o.heads, 4 * E, std::size_t(o.tiny ? 2 : 4)};
    c.batch = o.batch, c.steps = int(o.extra.at("--steps")), c.seed = 34 + o.seed;
    c.lr = o.tiny ? 3e-3f : 1e-3f, c.eval_every = o.tiny ? 50 : 25;
    c.made_up = o.extra.at("--made-up"), c.dropout = float(o.extra.at("--dropout"));
    c.smoothing = o.extra.at("--smoothing");
    return c;
}

/// A poem's first line for a table: its tokens after `<poem>` up to the first "\n",
/// at most @p most of them; a poem that is `<poem>` alone says so.
inline std::string first_line(const std::vector<std::string>& poem, std::size_t most = 15) {
    if (poem.size() == 1) return "(empty: <poem> came first)";
    std::string line;
    for (std::size_t j = 1; j <= most && j < poem.size() && poem[j] != "\n"; ++j)
        line += poem[j];
    return line;
}

/// Lesson 24's model: where it comes from ("trained here", --model's folder or
/// data/tang), its sizes, about 8 rows of its training log (step, train loss,
/// validation loss), how many steps ran and the step whose weights were kept.
inline void print_run(const mha::PoemCheckpoint& c, const Options& o) {
    const std::string from = trains(o)                ? "trained here"
                             : o.text.count("--model") ? o.text.at("--model")
                                                       : "data/tang";
    const mha::ModelConfig m = c.model.config();
    std::printf("%s: E %zu, H %zu, L %zu, F %zu, T_max %zu, %zu parameters\n",
                from.c_str(), m.embed_dim, m.num_heads, m.layers, m.hidden, m.max_len,
                mha::parameter_count(c.model));
    const mha::PoemTraining& t = c.training;  // the train loss has dropout's and smoothing's
    std::printf("windows made-up %g, dropout %g, label smoothing %g\n", t.made_up,
                double(t.dropout), t.smoothing);
    std::printf("step  train loss  validation loss\n");
    const int every = c.training.eval_every * int(c.log.size() / 200 + 1);  // 8 rows
    for (const mha::TrainLogRow& r : c.log)
        if (!std::isnan(r.val_loss) && r.step % every == 0)
            std::printf("%4d  %10.3f  %15.3f\n", r.step, r.train_loss, r.val_loss);
    std::printf("stopped after %zu steps; kept step %d (validation %.3f)\n", c.log.size(),
                c.best_step, c.best_val);
}

#ifdef MHA_DATA_DIR
/// Lesson 25's flags_fit: the checkpoint (--model DIR or data/tang) against the corpus.
inline std::string model_dir_refused(const Options& o) {
    return checkpoint_refused(model_of(o), corpus_of(o));
}

/// Lesson 24's flags_fit: its corpus, and the checkpoint unless it trains.
inline std::string model_refused(const Options& o) {
    const std::string bad = corpus_refused(o, trains(o) ? o.time : 64);
    return !bad.empty() || trains(o) ? bad : model_dir_refused(o);
}
#endif

}  // namespace lesson
