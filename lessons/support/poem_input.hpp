// What the poem lessons (23, 24 and 25) share and do not teach: where the corpus is,
// and a bad corpus or checkpoint refused in one line before anything is printed.
#pragma once
#include <cstdlib>
#include <filesystem>
#include <stdexcept>
#include <string>

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

}  // namespace lesson
