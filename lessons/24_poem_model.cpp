// Lesson 24 (past the articles): a model of Tang poems, trained here.
//
// Lesson 20's model learns lesson 23's poems, split and counted the same way. Against
// lesson 23's baselines it must show what no bigram knows: where a line ends. Then it
// writes poems: do they keep the form, and how much do they copy? Lesson 25 opens its
// heads. B windows, T_max positions, V tokens, E, H, L layers.
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "mha/model/poem_heads.hpp"
#include "mha/model/poems.hpp"
#include "mha/model/progress.hpp"
#include "support/lesson.hpp"

using Options = lesson::Options;
std::string corpus_of(const Options& o) {
    return o.text.count("--corpus") ? o.text.at("--corpus")
                                    : "/usr/share/games/fortunes/tang300";
}
std::string model_of(const Options& o) {
    return o.text.count("--model") ? o.text.at("--model") : MHA_DATA_DIR "/tang";
}
bool trains(const Options& o) {  // a class's own poems are trained on here
    return o.text.count("--train") || o.text.count("--corpus") || o.tiny;
}
std::string refused(const Options& o) {  // bad input: one line before any output
    if (!o.text.count("--corpus") && !std::filesystem::exists(corpus_of(o))) return "";
    try {
        const mha::PoemSplit s = mha::split_poems(mha::read_poems(corpus_of(o)));
        const mha::Vocab v = mha::build_vocab(s.train);
        const std::size_t n = mha::poem_ids(s.train, v).size();
        if (s.held_out.empty()) return corpus_of(o) + ": fewer than 10 poems to split";
        if (n < (trains(o) ? o.time : 64) + 1)
            return corpus_of(o) + ": " + std::to_string(n) + " tokens, not one window";
        if (trains(o)) return "";
        if (mha::load_poem_checkpoint(model_of(o)).vocab.tokens() != v.tokens())
            return model_of(o) + "/vocab.json: not the training poems' vocabulary";
    } catch (const std::invalid_argument& e) {
        return e.what();
    }
    return "";
}

int main(int argc, char** argv) {
    lesson::Info info;
    info.name = "24_poem_model";
    info.summary = "a model of Tang poems: loss, samples, form";
    info.default_heads = 4;
    info.default_batch = 32, info.default_time = 64, info.default_d_model = 128;
    info.tiny_batch = 8, info.tiny_time = 32, info.tiny_d_model = 32;
    info.extra = {{"--steps", "N", "most training steps", 600, 10, 20000, true, 150},
                  {"--temperature", "X", "sampling temperature", 0.7, 0, 5, false},
                  {"--top-k", "K", "sample among the K likeliest", 10, 1, 100000, true}};
    info.text = {{"--train", "", "train here (minutes) instead of loading data/tang"},
                 {"--corpus", "FILE", "poems in FILE, UTF-8, '%' or blank lines between"},
                 {"--save", "DIR", "write the trained model there (data/tang's format)"},
                 {"--model", "DIR", "load the model from DIR (default: data/tang)"}};
    info.flags_fit = refused;
    return lesson::run(argc, argv, info, [](lesson::Lesson& L) {
        using lesson::fixed;
        const std::string corpus = corpus_of(L.opt);
        if (!std::filesystem::exists(corpus))
            return std::printf("skipped: needs %s (fortunes-zh)\n", corpus.c_str()), 77;
        const mha::PoemSplit s = mha::split_poems(mha::read_poems(corpus));  // lesson 23
        const mha::Vocab v = mha::build_vocab(s.train);  // from the training poems only
        const std::vector<std::int32_t> ids = mha::poem_ids(s.train, v);
        const std::size_t T = trains(L.opt) ? L.opt.time : 64;
        const auto val = mha::poem_windows(s.validation, v, T);
        const auto held = mha::poem_windows(s.held_out, v, T);

        L.section("1. Lesson 20's model, trained with Adam, stopped by validation");
        mha::PoemCheckpoint c{mha::make_language_model({3, 1, 2, 1, 1, 1}, 0), v,
                              {}, 0, 0, {}};  // a placeholder until trained or loaded
        if (trains(L.opt)) {
            const std::size_t E = L.opt.d_model, layers = L.opt.tiny ? 2 : 4;
            c.training.model = {v.size(), T, E, L.opt.heads, 4 * E, layers};
            c.training.batch = L.opt.batch;
            c.training.steps = int(L.opt.extra.at("--steps"));
            c.training.seed = 34 + L.opt.seed, c.training.lr = L.opt.tiny ? 3e-3f : 1e-3f;
            mha::Progress bar(c.training.steps, double(L.opt.batch * T),
                              mha::stderr_if_terminal());
            const mha::PoemRun run = mha::train_poems(c.training, ids, val, 0,
                [&](const mha::TrainLogRow& r) { bar.update(r.step, r.train_loss); });
            SHOWN(L, c.model = run.best);  // the step of lowest validation loss
            c.best_step = run.best_step, c.best_val = run.best_val;
            c.log = run.log;
            if (L.opt.text.count("--save"))
                mha::save_poem_checkpoint(c, L.opt.text.at("--save"));
            L.code("model = LanguageModel(V, T_max, E, H, F, L)  # + early stopping");
        } else {
            SHOWN(L, c = mha::load_poem_checkpoint(model_of(L.opt)));  // its vocabulary is v
            L.code("model.load_state_dict(...)  # the .npy files of data/tang");
        }
        const mha::ModelConfig m = c.model.config();
        std::printf("%s: E %zu, H %zu, L %zu, F %zu, T_max %zu, %zu parameters\n"
                    "step  train loss  validation loss\n",
                    trains(L.opt) ? "trained here"
                    : L.opt.text.count("--model") ? model_of(L.opt).c_str() : "data/tang",
                    m.embed_dim,
                    m.num_heads, m.layers, m.hidden, m.max_len,
                    mha::parameter_count(c.model));
        const int every = c.training.eval_every * int(c.log.size() / 200 + 1);  // 8 rows
        for (const mha::TrainLogRow& r : c.log)
            if (!std::isnan(r.val_loss) && r.step % every == 0)
                std::printf("%4d  %10.3f  %15.3f\n", r.step, r.train_loss, r.val_loss);
        std::printf("stopped after %zu steps; kept step %d (validation %.3f)\n",
                    c.log.size(), c.best_step, c.best_val);

        L.section("2. Loss on the held-out poems, nats per token");
        const mha::Ngrams g = mha::fit_ngrams(ids, v.size(), val);
        SHOWN(L, const auto predictions = mha::model_predictions(c.model, held));
        const mha::LossSplit model = mha::split_losses(predictions, v);
        const mha::LossSplit one = mha::split_losses(g.predictions(held, 1), v);
        const mha::LossSplit two = mha::split_losses(g.predictions(held, 2), v);
        L.code("F.cross_entropy(model(x).view(-1, V), y.view(-1), reduction=\"none\")");
        std::printf("          all   marks, \\n (%zu)   the rest (%zu)   right\n",
                    model.n_marks, model.n_rest);
        for (const auto& [name, r] : {std::make_pair("unigram", one),
                                      std::make_pair("bigram", two),
                                      std::make_pair("model", model)})
            std::printf("%-7s %6.3f %13.3f %15.3f %9.1f%%\n", name, r.all, r.marks,
                        r.rest, 100 * r.accuracy);
        L.say("The baselines are lesson 23's, on the same windows (the bigram's alpha " +
              fixed(g.alpha(), 0) + "). Which character follows which is hard to learn "
              "better than a bigram counts it from so few tokens; where a line ends takes "
              "a count of places, which no bigram has: compare the marks column.");

        L.section("3. Where the model is sure, and where not");
        std::size_t sure = 0, sure_right = 0, unsure = 0;
        for (const mha::Prediction& q : predictions)
            sure += q.confidence > 0.5, sure_right += q.confidence > 0.5 && q.correct,
                unsure += q.confidence < 0.1;
        std::string text, digits;  // held-out poem 0, p(the right token) in tenths
        for (std::size_t j = 0, lines = 0; lines < 3 && j < predictions.size(); ++j) {
            const std::string& t = v.token(predictions[j].target);
            text += t == "\n" ? "| " : t == "<unk>" ? "＊" : t.size() == 1 ? t + " " : t;
            const double p = std::exp(-predictions[j].loss);
            digits += std::to_string(std::min(9, int(10 * p))) + " ";
            if (t == "\n") std::printf("%s\n%s\n", text.c_str(), digits.c_str()),
                           text = digits = "", ++lines;
        }
        std::printf("(under each: p in tenths, 9 = 0.9 or more; | line end, ＊ <unk>)\n"
                    "top p above 0.5 at %zu of %zu targets (%zu of them right); "
                    "below 0.1 at %zu\n", sure, predictions.size(), sure_right, unsure);

        L.section("4. Poems it writes, through the KV cache");
        const mha::Sampling how{float(L.opt.extra.at("--temperature")),
                                std::size_t(L.opt.extra.at("--top-k"))};
        mha::Rng rng(L.opt.seed + 5);
        SHOWN(L, const auto poems = mha::sample_poems(c.model, v, 32, how, rng));
        L.code("idx = model.generate(idx, T_max - 1, temperature=" +
               fixed(how.temperature, 2) + ", top_k=" + std::to_string(*how.top_k) + ")");
        std::vector<std::string> all, training;
        for (std::size_t k = 0; k < poems.size(); ++k) {
            all.insert(all.end(), poems[k].begin(), poems[k].end());
            std::string shown;  // its first two lines, at most 36 tokens
            for (std::size_t j = 1, n = 0; j < poems[k].size() && j < 37 && n < 2; ++j)
                n += poems[k][j] == "\n",
                    shown += poems[k][j] == "\n" ? " / " : poems[k][j];
            if (k < 4) std::printf("  %s\n", shown.c_str());
        }
        for (const auto& p : s.train) training.insert(training.end(), p.begin(), p.end());
        const double form = mha::format_score(all);
        std::vector<std::string> paired;  // the bigram's poems, as long, for comparison
        for (const auto& poem : poems) {
            std::int32_t a = 1;  // <poem>
            paired.push_back("<poem>");
            for (std::size_t n = 1; n < poem.size(); ++n) {
                std::int32_t b = 0;
                double u = rng.uniform(0, 1);
                while (b + 1 < std::int32_t(v.size()) && (u -= g.bigram(a, b)) > 0) ++b;
                if (b == 1) break;  // a second <poem>: the poem ends, as the model's do
                paired.push_back(v.token(b)), a = b;
            }
        }
        const double bigram_form = mha::format_score(paired);
        const double copied = mha::memorisation_score(all, training, 4);
        std::printf("32 poems (temperature %g, top-k %zu): format %.3f, "
                    "memorisation %.3f\n(format: the lines of 5 or 7 characters; "
                    "memorisation: the\n4-character runs found in the training poems)\n"
                    "the bigram's poems, as many tokens: format %.3f\n",
                    double(how.temperature), *how.top_k, form, copied, bigram_form);
        L.say("The form is learned, not finished: " + fixed(form, 2) + " of the lines "
              "have 5 or 7 characters, against the bigram's " +
              fixed(bigram_form, 2) + ". Greedy decoding (--temperature 0) writes the "
              "form more often and the same poem every time.");

        int rc = L.claim("the model beats the unigram: " + fixed(model.all) + " < " +
                         fixed(one.all) + " nats", model.all < one.all);
        if (L.opt.tiny) return rc;  // 150 steps of a small model: no more than that
        rc |= L.claim("on marks and line ends, at most half the bigram's loss: " +
                      fixed(model.marks) + " <= " + fixed(two.marks / 2),
                      model.marks <= two.marks / 2);
        return rc | L.claim("its lines have the form more often than the bigram's: " +
                            fixed(form) + " > " + fixed(bigram_form), form > bigram_form);
    });
}
