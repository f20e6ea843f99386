// Lesson 23 (past the articles): a model of Tang poems, trained here.
//
// 313 poems of 唐诗三百首 (fortunes-zh), their characters the tokens. The model of lesson 20
// learns them; against a unigram and a bigram it must show that it has learned what no
// bigram can: where a line ends. Then it writes poems, and we count how many keep the form
// and how much it copies. Lesson 24 opens its heads.
// B windows, T_max positions, V characters, E, H, L layers.
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "mha/model/poem_heads.hpp"
#include "mha/model/poems.hpp"
#include "mha/model/progress.hpp"
#include "support/lesson.hpp"

int main(int argc, char** argv) {
    lesson::Info info{"23_tang_poems", "a model of Tang poems: loss, samples, form", false, 0, 4};
    info.default_batch = 16, info.default_time = 64, info.default_d_model = 128;
    info.tiny_batch = 8, info.tiny_time = 32, info.tiny_d_model = 32;
    info.extra = {{"--steps", "N", "most training steps (--train, --tiny)", 1200, 10, 20000,
                   true, 150},
                  {"--temperature", "X", "sampling temperature (0: greedy)", 0.7, 0, 5, false},
                  {"--top-k", "K", "sample among the K likeliest", 10, 1, 100000, true}};
    info.text = {{"--train", "", "train the model here (about 10 min) instead of loading it"},
                 {"--corpus", "FILE", "poems from FILE (UTF-8; '%' or empty lines between)"},
                 {"--save", "DIR", "write the trained model as a checkpoint folder"}};
    return lesson::run(argc, argv, info, [](lesson::Lesson& L) {
        const std::string corpus = L.opt.text.count("--corpus") ? L.opt.text.at("--corpus")
                                   : "/usr/share/games/fortunes/tang300";
        const bool train = L.opt.text.count("--train") || L.opt.text.count("--corpus") ||
                           L.opt.tiny;  // a class's own poems: trained here
        using lesson::fixed;

        L.section("1. The poems, split before anything is learned");
        if (!L.opt.text.count("--corpus") && !std::filesystem::exists(corpus)) {
            std::printf("skipped: needs %s (apt install fortunes-zh)\n", corpus.c_str());
            return 77;
        }
        const mha::PoemSplit s = mha::split_poems(mha::read_poems(corpus));
        const mha::Vocab v = mha::build_vocab(s.train);  // from the training poems only
        L.code("poems = [p.split(\"\\n\", 2)[2] for p in text.split(\"\\n%\\n\")]",
               "const mha::PoemSplit s = mha::split_poems(mha::read_poems(corpus));");
        const std::vector<std::int32_t> ids = mha::poem_ids(s.train, v);
        const std::size_t T = train ? L.opt.time : 64;
        if (s.held_out.empty())
            throw std::invalid_argument(corpus + ": fewer than 10 poems (poem 9 is held out)");
        if (ids.size() < T + 1)
            throw std::invalid_argument(corpus + ": " + std::to_string(ids.size()) + " training"
                                        " tokens, not one window of " + std::to_string(T + 1));
        const auto val = mha::poem_windows(s.validation, v, T);
        const auto held = mha::poem_windows(s.held_out, v, T);
        std::size_t unknown = 0, targets = 0;
        for (const auto& w : held)
            for (std::size_t j = 1; j < w.size(); ++j) ++targets, unknown += w[j] == 0;
        std::printf("%s: %zu poems (their bodies: titles and authors dropped)\n"
                    "training %zu poems, %zu tokens | validation %zu | held out %zu, "
                    "%zu targets\nV = %zu: <unk>, <poem>, \\n, marks, characters; %zu "
                    "held-out targets (%.1f%%) are <unk>\n", corpus.c_str(),
                    s.train.size() + s.validation.size() + s.held_out.size(), s.train.size(),
                    ids.size(), s.validation.size(), s.held_out.size(), targets, v.size(),
                    unknown, 100.0 * double(unknown) / double(targets));
        L.say("Poem i is held out when i % 10 == 9 and validation when i % 10 == 4: the "
              "validation poems choose when to stop, the held-out ones only score.");

        L.section(train ? "2. Training (Adam, warm-up and cosine, stopped by validation)"
                        : "2. The model trained by --train, loaded from data/tang/");
        mha::PoemCheckpoint c{mha::make_language_model({3, 1, 2, 1, 1, 1}, 0), v, {}, 0, 0, {}};
        if (train) {
            c.training.model = {v.size(), T, L.opt.d_model, L.opt.heads, 4 * L.opt.d_model,
                                L.opt.tiny ? 2u : 4u};
            c.training.batch = L.opt.batch, c.training.steps = int(L.opt.extra.at("--steps"));
            c.training.seed = 34 + L.opt.seed, c.training.lr = L.opt.tiny ? 3e-3f : 1e-3f;
            mha::Progress progress(c.training.steps, double(L.opt.batch * T),
                                   mha::stderr_if_terminal());
            mha::PoemRun run = mha::train_poems(c.training, ids, val, 0, [&](const auto& r) {
                progress.update(r.step, r.train_loss);
            });
            c.model = run.best, c.best_step = run.best_step, c.best_val = run.best_val;
            c.log = run.log;
            if (L.opt.text.count("--save")) mha::save_poem_checkpoint(c, L.opt.text.at("--save"));
        } else {
            c = mha::load_poem_checkpoint(MHA_DATA_DIR "/tang");
            if (c.vocab.tokens() != v.tokens())
                throw std::invalid_argument("data/tang/vocab.json is not this corpus's "
                                            "training vocabulary: run with --train");
        }
        L.code("model = LanguageModel(V, T_max, E, H, F, L)  # lesson 20's, x L blocks",
               "c.model = run.best, c.best_step = run.best_step, c.best_val = run.best_val;");
        const mha::ModelConfig m = c.model.config();
        std::printf("E %zu, H %zu, L %zu, F %zu, T_max %zu: %zu parameters\n", m.embed_dim,
                    m.num_heads, m.layers, m.hidden, m.max_len, mha::parameter_count(c.model));
        std::printf("step  train loss  validation loss (every %d steps)\n",
                    c.training.eval_every);
        const std::size_t rows = c.log.size() / std::size_t(c.training.eval_every);
        for (const mha::TrainLogRow& r : c.log)
            if (!std::isnan(r.val_loss) && (r.step / c.training.eval_every) % ((rows + 7) / 8) == 0)
                std::printf("%4d  %10.3f  %15.3f\n", r.step, r.train_loss, r.val_loss);
        std::printf("stopped after %zu steps; kept step %d, validation loss %.3f\n",
                    c.log.size(), c.best_step, c.best_val);

        L.section("3. Loss on the held-out poems, nats per token");
        const mha::Ngrams g = mha::fit_ngrams(ids, v.size(), val);
        const mha::LossSplit model = mha::split_losses(mha::model_predictions(c.model, held), v);
        const mha::LossSplit uni = mha::split_losses(g.predictions(held, 1), v);
        const mha::LossSplit bi = mha::split_losses(g.predictions(held, 2), v);
        L.code("F.cross_entropy(model(x).view(-1, V), y.view(-1))",
               "mha::split_losses(mha::model_predictions(c.model, held), v);");
        std::printf("             all   marks and \\n (%zu)   the rest (%zu)   right\n",
                    model.n_marks, model.n_rest);
        for (const auto& [name, r] : {std::pair<const char*, const mha::LossSplit&>{"unigram", uni},
                                      {"bigram", bi}, {"model", model}})
            std::printf("%-9s %6.3f %15.3f %16.3f %10.1f%%\n", name, r.all, r.marks, r.rest,
                        100 * r.accuracy);
        L.say("The bigram (alpha " + fixed(g.alpha(), 0) + " on validation) knows which "
              "character follows which; with " + std::to_string(ids.size()) + " training "
              "tokens it is hard to beat on the rest. A mark comes after 5 or 7 characters: "
              "only a model that counts places can be sure of it.");

        L.section("4. Where the model is sure, and where not");
        std::size_t sure = 0, sure_right = 0, unsure = 0;
        const auto p = mha::model_predictions(c.model, {held[0]});
        std::string text, digits;  // the first held-out poem, p(right) in tenths below
        for (const mha::Prediction& q : mha::model_predictions(c.model, held))
            sure += q.confidence > 0.5, sure_right += q.confidence > 0.5 && q.correct,
                unsure += q.confidence < 0.1;
        for (std::size_t j = 0; j < p.size() && j < 39; ++j) {
            const std::string& t = v.token(p[j].target);
            text += t == "\n" ? "| " : t == "<unk>" ? "＊" : t.size() == 1 ? t + " " : t;
            digits += std::to_string(std::min(9, int(std::exp(-p[j].loss) * 10))) + " ";
            if (t == "\n") std::printf("%s\n%s\n", text.c_str(), digits.c_str()), text = digits = "";
        }
        std::printf("(under each: p(it) in tenths, 9 = at least 0.9; | = line end, ＊ = <unk>)\n"
                    "top p above 0.5 at %zu of %zu targets, right at %zu of them; below 0.1 at"
                    " %zu\n", sure, targets, sure_right, unsure);

        L.section("5. Poems it writes, through the KV cache");
        const mha::Sampling how{float(L.opt.extra.at("--temperature")),
                                std::size_t(L.opt.extra.at("--top-k"))};
        mha::Rng rng(L.opt.seed + 5);
        const auto poems = mha::sample_poems(c.model, c.vocab, 32, how, rng);
        L.code("idx = model.generate(idx, T_max - 1, temperature=0.7, top_k=10)",
               "const auto poems = mha::sample_poems(c.model, c.vocab, 32, how, rng);");
        std::vector<std::string> all, training;
        for (std::size_t k = 0; k < poems.size(); ++k) {
            all.insert(all.end(), poems[k].begin(), poems[k].end());
            std::string shown;  // its first two lines, at most 36 tokens
            for (std::size_t j = 1, n = 0; j < poems[k].size() && j < 37 && n < 2; ++j)
                n += poems[k][j] == "\n", shown += poems[k][j] == "\n" ? " / " : poems[k][j];
            if (k < 4) std::printf("  %s\n", shown.c_str());
        }
        for (const auto& poem : s.train) training.insert(training.end(), poem.begin(), poem.end());
        const double form = mha::format_score(all);
        const double copied = mha::memorisation_score(all, training, 4);
        std::printf("32 poems, temperature %g, top-k %zu: format %.3f (lines of 5 or 7), "
                    "memorisation %.3f\n(4-character runs found in the training poems)\n",
                    double(how.temperature), *how.top_k, form, copied);

        int rc = L.claim("the model beats the unigram: " + fixed(model.all) + " < " +
                         fixed(uni.all) + " nats", model.all < uni.all);
        if (L.opt.tiny) return rc;  // 150 steps of a small model: no more than that
        rc |= L.claim("on marks and line ends, at most half the bigram's loss: " +
                      fixed(model.marks) + " <= " + fixed(bi.marks / 2), model.marks <= bi.marks / 2);
        rc |= L.claim("format score " + fixed(form) + " >= 0.9", form >= 0.9);
        return rc;
    });
}
