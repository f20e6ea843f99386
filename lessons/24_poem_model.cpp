// Lesson 24 (past the articles): a model of Tang poems, trained here.
//
// Lesson 20's model learns lesson 23's poems. Against lesson 23's baselines it must show
// what no bigram knows, where a line ends; then it writes poems: do they keep the form,
// and how much do they copy? Lesson 25 opens its heads. B windows, T_max, V, E, H, L.
#include <cmath>
#include <cstdio>
#include <set>
#include <string>
#include <vector>

#include "mha/model/poems.hpp"
#include "mha/model/progress.hpp"
#include "support/lesson.hpp"
#include "support/poem_input.hpp"

int main(int argc, char** argv) {
    lesson::Info info;
    info.name = "24_poem_model", info.default_heads = 4, info.default_batch = 32;
    info.summary = "a model of Tang poems: loss, samples, form";
    info.default_time = 64, info.default_d_model = 128, info.tiny_batch = 8;
    info.tiny_time = 32, info.tiny_d_model = 32;
    info.extra = {{"--steps", "N", "most training steps", 600, 10, 20000, true, 150},
                  {"--temperature", "X", "sampling temperature", 0.7, 0, 5, false},
                  {"--top-k", "K", "sample among the K likeliest", 10, 1, 100000, true},
                  {"--made-up", "X", "share of made-up poems (train)", 0.75, 0, 1, false},
                  {"--dropout", "X", "dropout (train)", 0.3, 0, 0.9, false},
                  {"--smoothing", "X", "label smoothing (train)", 0.1, 0, 0.9, false}};
    info.text = {{"--train", "", "train here (minutes) instead of loading data/tang"},
                 {"--corpus", "FILE", "poems in FILE, UTF-8, '%' or blank lines between"},
                 {"--save", "DIR", "write the trained model there (data/tang's format)"},
                 {"--model", "DIR", "load the model from DIR (default: data/tang)"}};
    info.sizes_unless = lesson::trains, info.sizes_from = "data/tang";
    info.flags_fit = lesson::model_refused;  // a bad corpus or checkpoint: 1 line, exit 2
    return lesson::run(argc, argv, info, [](lesson::Lesson& L) {
        using lesson::fixed, lesson::model_of, lesson::trains;
        const std::string corpus = lesson::corpus_of(L.opt);
        if (lesson::corpus_missing(corpus)) return 77;  // "skipped: needs ..."
        const mha::PoemSplit s = mha::split_poems(mha::read_poems(corpus));  // lesson 23
        const mha::Vocab v = mha::build_vocab(s.train);
        const std::vector<std::int32_t> ids = mha::poem_ids(s.train, v);
        const std::size_t T = trains(L.opt) ? L.opt.time : 64;
        const auto val = mha::poem_windows(s.validation, v, T);
        const auto held = mha::poem_windows(s.held_out, v, T);
        const mha::Ngrams g = mha::fit_ngrams(ids, v.size(), val);

        L.section("1. Lesson 20's model, trained with Adam, stopped by validation");
        mha::PoemCheckpoint c{{}, v, {}, 0, 0, {}};  // trained or loaded below
        if (trains(L.opt)) {
            const auto& t = c.training = lesson::poem_training(L.opt, v.size(), T);
            const mha::LineBank lines = mha::line_bank(s.train, v);  // couplets 5 5, 7 7
            mha::Progress bar(t.steps, double(t.batch * T), mha::stderr_if_terminal());
            const mha::PoemRun run = mha::train_poems(t, ids, val, 0,  // Adam
                [&](const auto& r) { bar.update(r.step, r.train_loss); }, lines);
            SHOWN(L, c.model = run.best);  // the step of lowest validation loss
            c.best_step = run.best_step, c.best_val = run.best_val, c.log = run.log;
            if (L.opt.text.count("--save"))
                mha::save_poem_checkpoint(c, L.opt.text.at("--save"));
            L.code("model = LanguageModel(V, T_max, E, H, F, L)  # + early stopping");
        } else {
            SHOWN(L, c = mha::load_poem_checkpoint(model_of(L.opt)));  // vocabulary v
            L.code("model.load_state_dict(...)  # the .npy files of data/tang");
        }
        lesson::print_run(c, L.opt);  // where from, its sizes, 8 rows of its log

        L.section("2. Loss on the held-out poems, nats per token");
        SHOWN(L, const auto predictions = mha::model_predictions(c.model, held));
        L.code("F.cross_entropy(model(x).view(-1, V), y.view(-1), reduction=\"none\")");
        const mha::LossSplit model = mha::split_losses(predictions, v);
        const mha::LossSplit one = mha::split_losses(g.predictions(held, 1), v);
        const mha::LossSplit two = mha::split_losses(g.predictions(held, 2), v);
        std::printf("          all   marks, \\n (%zu)   the rest (%zu)   right\n",
                    model.n_marks, model.n_rest);
        for (const auto& [name, r] : {std::pair{"unigram", one}, std::pair{"bigram", two},
                                      std::pair{"model", model}})
            std::printf("%-7s %6.3f %13.3f %15.3f %9.1f%%\n", name, r.all, r.marks,
                        r.rest, 100 * r.accuracy);
        L.say("The baselines are lesson 23's (alpha " + fixed(g.alpha(), 0) + "). Where "
              "a line ends takes a count of places, which no bigram has: see the marks.");

        L.section("3. Where the model is sure, and where not");
        std::size_t sure = 0, sure_right = 0, unsure = 0, lines = 0;  // p > 0.5; p < 0.1
        std::string text, digits;  // held-out poem 0, p(the right token) in tenths
        for (const mha::Prediction& q : predictions) {
            sure += q.confidence > 0.5, sure_right += q.confidence > 0.5 && q.correct;
            unsure += q.confidence < 0.1;
            const std::string& t = v.token(q.target);
            if (lines == 3) continue;  // the first 3 lines only
            text += t == "\n" ? "| " : t == "<unk>" ? "＊" : t.size() == 1 ? t + " " : t;
            digits += std::to_string(std::min(9, int(10 * std::exp(-q.loss)))) + " ";
            if (t == "\n") std::printf("%s\n%s\n", text.c_str(), digits.c_str()),
                           text = digits = "", ++lines;
        }
        std::printf("(under each: p in tenths, 9 = 0.9 or more; | line end, ＊ <unk>)\n"
                    "top p above 0.5 at %zu of %zu targets (%zu of them right); "
                    "below 0.1 at %zu\n", sure, predictions.size(), sure_right, unsure);

        L.section("4. Poems it writes, through the KV cache, and how they keep the form");
        const float temp = float(L.opt.extra.at("--temperature"));
        const std::size_t K = std::size_t(L.opt.extra.at("--top-k"));
        std::vector<std::string> training;  // the training poems one after another
        for (const auto& p : s.train) training.insert(training.end(), p.begin(), p.end());
        const mha::NgramIndex seen(training, 4);  // its 4-character runs, counted once
        const auto score = [](double x) { return std::isnan(x) ? "-" : fixed(x); };
        const std::size_t n = L.opt.tiny ? 32 : 128;  // poems a row
        const auto row = [&](const std::string& how, const auto& poems) {  // n poems
            std::vector<std::string> all;  // the poems one after another
            for (const auto& p : poems) all.insert(all.end(), p.begin(), p.end());
            const double f = mha::format_score(all);  // NaN: no line was finished
            std::printf("%-18s %6s %7s %7zu   %s\n", how.c_str(), score(f).c_str(),
                        score(mha::memorisation_score(all, seen)).c_str(),
                        std::set(poems.begin(), poems.end()).size(),
                        lesson::first_line(poems[0]).c_str());
            return f;
        };
        std::printf("%-18s format  copied  differ   poem 0's first line\n",
                    (std::to_string(n) + " poems from").c_str());
        mha::Rng rng(L.opt.seed + 5);  // every row draws from the same seed
        const double bigram_form = row("  the bigram",
            mha::bigram_poems(g, v, n, c.training.model.max_len - 1, rng));
        double form = 0, best = 0, greedy = 0;  // the flags', the best above t 0, at t 0
        for (const auto& [t, k] : std::set<std::pair<float, std::size_t>>{
                 {0.0f, K}, {0.4f, K}, {1.0f, K}, {temp, K}, {temp, 2}}) {
            rng = mha::Rng(L.opt.seed + 5);
            SHOWN(L, const auto poems = mha::sample_poems(c.model, v, n, {t, k}, rng));
            const bool flags = t == temp && k == K;
            const double f = row((flags ? "* t " : "  t ") + fixed(t, 1) + ", top-k " +
                                 (k < v.size() ? std::to_string(k) : "all"), poems);
            best = t > 0 ? std::max(best, f) : best, greedy = t > 0 ? greedy : f;
            form = flags ? f : form;
        }
        L.code("idx = model.generate(idx, T_max - 1, temperature=t, top_k=k)");
        L.say("* the flags'. copied: the share of 4-character runs found in the training "
              "poems. The aim was lines of 5 or 7 in 0.9 of the lines or more: the "
              "flags' row has " + score(form) + ", the best row " + score(best) +
              "; greedy (t 0) " + (std::isnan(greedy) ? "finishes no line" : score(greedy)
              + ", writing one poem " + std::to_string(n) + " times") +
              ". Another --seed moves a row by a few hundredths.");

        int rc = L.claim("the model beats the unigram: " + fixed(model.all) + " < " +
                         fixed(one.all) + " nats", model.all < one.all);
        if (L.opt.tiny) return rc;  // 150 steps of a small model: no more than that
        rc |= L.claim("on marks and line ends, at most half the bigram's loss: " +
                      fixed(model.marks) + " <= " + fixed(two.marks / 2),
                      model.marks <= two.marks / 2);
        return rc | L.claim("its best sampled row has the form more often than the "
                            "bigram's: " + fixed(best) + " > " + fixed(bigram_form),
                            best > bigram_form);
    });
}
