// Lesson 23 (past the articles): Tang poems, and what counting alone predicts.
//
// The 313 poems of 唐诗三百首 (fortunes-zh), one token per character, split before
// anything is learned; a vocabulary from the training poems only; and the two baselines
// any model of them must beat, a unigram and a bigram, scored on the held-out poems.
// A bigram knows which character follows which, not where a line ends: lesson 24
// trains a model that can count. T = 64 tokens a window (T_max of lesson 24's model).
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "mha/model/poems.hpp"
#include "support/lesson.hpp"
#include "support/poem_input.hpp"

int main(int argc, char** argv) {
    lesson::Info info;
    info.name = "23_tang_poems";
    info.summary = "Tang poems: the split, the vocabulary, two baselines";
    info.default_heads = 4, info.fixed_sizes = true, info.sizes_from = "data/tang";
    info.default_batch = 1, info.default_time = 64, info.default_d_model = 128;
    info.text = {{"--corpus", "FILE", "poems in FILE, UTF-8, '%' or blank lines between"}};
    info.flags_fit = [](const lesson::Options& o) {  // a bad corpus: one line, exit 2
        return lesson::corpus_refused(o, o.time);
    };
    return lesson::run(argc, argv, info, [](lesson::Lesson& L) {
        using lesson::fixed;
        const std::string corpus = lesson::corpus_of(L.opt);
        if (!std::filesystem::exists(corpus))
            return std::printf("skipped: needs %s (fortunes-zh)\n", corpus.c_str()), 77;
        L.section("1. The poems, split before anything is learned");
        SHOWN(L, const mha::PoemSplit s = mha::split_poems(mha::read_poems(corpus)));
        L.code("poems = [p.split(\"\\n\", 2)[2] for p in text.split(\"\\n%\\n\")]");
        std::printf("%s: the poems' bodies (titles, authors dropped)\ntraining %zu "
                    "poems, validation %zu, held out %zu\n", corpus.c_str(),
                    s.train.size(), s.validation.size(), s.held_out.size());
        L.say("Poem i is held out when i % 10 == 9, validation when i % 10 == 4. Nothing "
              "is learned or chosen from the held-out poems: they only score. Validation "
              "chooses (the bigram's alpha here, lesson 24's checkpoint).");

        L.section("2. The vocabulary, from the training poems only");
        SHOWN(L, const mha::Vocab v = mha::build_vocab(s.train));
        L.code("itos = [\"<unk>\", \"<poem>\", \"\\n\"] + marks + chars_by_count");
        const std::vector<std::int32_t> ids = mha::poem_ids(s.train, v);
        const std::size_t T = L.opt.time;
        const auto val = mha::poem_windows(s.validation, v, T);
        const auto held = mha::poem_windows(s.held_out, v, T);
        std::size_t targets = 0, unknown = 0;
        for (const auto& w : held)
            for (std::size_t j = 1; j < w.size(); ++j) ++targets, unknown += w[j] == 0;
        std::string line, numbers;  // the first training poem's first line, and its ids
        for (std::size_t j = 0; j < s.train[0].size() && s.train[0][j] != "\n"; ++j) {
            char id[16];
            std::snprintf(id, sizeof id, "%-5d", v.id(s.train[0][j]));
            line += s.train[0][j] + "   ", numbers += id;  // a character is 2 columns wide
        }
        std::printf("V = %zu: <unk>, <poem>, \\n, the marks, then characters, most "
                    "frequent first\ntraining text %zu tokens; the first line, as ids:\n"
                    "  %s\n  %s\nheld out: %zu windows, %zu targets, %zu of them <unk> "
                    "(id 0)\n", v.size(), ids.size(), line.c_str(), numbers.c_str(),
                    held.size(), targets, unknown);

        L.section("3. Two baselines, counted on the training poems");
        SHOWN(L, const mha::Ngrams g = mha::fit_ngrams(ids, v.size(), val));
        L.code("p2 = (count[a, b] + alpha * p1[b]) / (count[a].sum() + alpha)");
        L.say("p1(b) is b's share of the training text (every count plus one); p2(b | a) "
              "is the share of b after a, pulled towards p1(b) by alpha = " +
              fixed(g.alpha(), 0) + ", the alpha of lowest validation loss.");
        const mha::LossSplit one = mha::split_losses(g.predictions(held, 1), v);
        const mha::LossSplit two = mha::split_losses(g.predictions(held, 2), v);
        std::printf("held out, nats per token:\n"
                    "          all   marks, \\n (%zu)   the rest (%zu)   right\n",
                    one.n_marks, one.n_rest);
        for (const auto& [name, r] : {std::make_pair("unigram", one),
                                      std::make_pair("bigram", two)})
            std::printf("%-7s %6.3f %13.3f %15.3f %9.1f%%\n", name, r.all, r.marks,
                        r.rest, 100 * r.accuracy);

        L.section("4. What a bigram cannot know: where a line ends");
        std::vector<std::int32_t> marks;  // ，。？ ...: a line ends (a \n follows a mark)
        for (std::int32_t b = 3; b < std::int32_t(v.size()); ++b)
            if (mha::is_mark(v.token(b))) marks.push_back(b);
        std::vector<double> seen(9), ended(9), said(9);  // by characters in the line so far
        for (const auto& w : held)  // each window starts at <poem> or \n: a line's start
            for (std::size_t j = 1, n = 0; j < w.size(); ++j) {
                const bool end = std::count(marks.begin(), marks.end(), w[j]) > 0;
                double p = 0;  // the bigram's p(a mark | the token before)
                for (const std::int32_t b : marks) p += g.bigram(w[j - 1], b);
                const std::size_t k = std::min<std::size_t>(n, 8);
                seen[k] += 1, ended[k] += end, said[k] += p;
                n = end || w[j] == 2 ? 0 : n + 1;
            }
        std::printf("characters in the line so far   ");
        for (std::size_t k = 0; k < 9; ++k) std::printf(k < 8 ? "%6zu" : "    8+", k);
        std::printf("\na mark next (held out)          ");
        for (std::size_t k = 0; k < 9; ++k) std::printf("%6.2f", ended[k] / seen[k]);
        std::printf("\nthe bigram's p of it, mean      ");
        for (std::size_t k = 0; k < 9; ++k) std::printf("%6.2f", said[k] / seen[k]);
        std::printf("\n");
        L.say("A line ends after 5 or 7 characters (after 5, a line of 7 goes on) and "
              "almost never elsewhere; the bigram sees one character back, so it spreads "
              "the same doubt over every place. "
              "Counting to 5 or 7 needs the whole line: attention reads it.");

        L.section("5. What the bigram writes");
        mha::Rng rng(5);
        std::vector<std::string> written, training;  // 32 poems, one after another
        const std::int32_t V = std::int32_t(v.size());
        for (int k = 0; k < 32; ++k) {
            written.push_back("<poem>");
            for (std::int32_t a = 1, n = 0; n + 1 < std::int32_t(T); ++n) {  // a: <poem>
                std::int32_t b = 0;  // the first id where the sum of p2(. | a) passes u
                double u = rng.uniform(0, 1);
                SHOWN(L, while (b + 1 < V && (u -= g.bigram(a, b)) > 0) ++b);
                if (b == 1) break;  // a second <poem>: the poem ends
                written.push_back(v.token(b)), a = b;
            }
        }
        L.code("b = torch.multinomial(p2[a], 1).item()  # from <poem> to the next <poem>");
        std::string shown;  // its first poem's first 30 tokens
        for (std::size_t j = 1; j < 31 && j < written.size() && written[j] != "<poem>"; ++j)
            shown += written[j] == "\n" ? " / " : written[j];
        for (const auto& p : s.train) training.insert(training.end(), p.begin(), p.end());
        std::printf("  %s\nformat (the share of lines of 5 or 7 characters): the bigram's "
                    "%.3f,\nthe training poems' %.3f\n", shown.c_str(),
                    mha::format_score(written), mha::format_score(training));
        L.say("Its pairs are the poems' pairs, its lines are not their lines: lesson 24's "
              "model is held to this score too.");

        const int rc = L.claim("the bigram beats the unigram on the held-out poems: " +
                               fixed(two.all) + " < " + fixed(one.all) + " nats",
                               two.all < one.all);
        return rc | L.claim("after 5 characters the bigram's p of a mark is below "
                            "the share: " + fixed(said[5] / seen[5], 2) + " < " +
                            fixed(ended[5] / seen[5], 2), said[5] < ended[5]);
    });
}
