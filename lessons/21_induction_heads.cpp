// Lesson 21 (past the articles): induction heads form.
//
// Task: T random tokens, then the same T again; predict each next token. The first half
// cannot be predicted (loss near ln(V-1)); the second can, by copying in context: after the
// current token A comes what followed A before. Olsson et al. (2022): two layers do it with
// a previous-token head in layer 0 (each position takes in its predecessor) and an
// induction head in layer 1 (it finds the position whose predecessor is A and copies its
// token); they form suddenly, and one layer cannot do it. Mirrors a GPT-2 style
// `model(idx)`, `F.cross_entropy`, Adam with warm-up and cosine, TransformerLens's head
// scores and zero-ablation. B sequences, N = 2T + 1 positions, V tokens, E, H, 2 layers.
#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "mha/model/induction.hpp"
#include "mha/model/train.hpp"
#include "support/lesson.hpp"

int main(int argc, char** argv) {
    lesson::Info info{"21_induction_heads", "two layers learn to copy: induction heads form",
                      true, 0.5, 2};
    info.default_batch = 32, info.default_time = 12, info.default_d_model = 64;
    info.tiny_batch = 32, info.tiny_time = 8, info.tiny_d_model = 32;
    info.extra = {{"--steps", "N", "training steps", 800, 10, 100000, true, 700},
                  {"--lr", "R", "Adam's peak learning rate", 3e-3, 1e-6, 1, false, 5e-3},
                  {"--vocab", "V", "tokens, BOS included (T + 1 to 53)", 25, 3, 53, true, 17},
                  {"--ff", "K", "the feed-forward's width over E", 4, 1, 8, true, 1}};
    return lesson::run(argc, argv, info, [](lesson::Lesson& L) {
        const std::size_t B = L.opt.batch, T = L.opt.time, E = L.opt.d_model, H = L.opt.heads;
        const std::size_t V = std::size_t(L.opt.extra.at("--vocab")), N = 2 * T + 1;
        const int steps = int(L.opt.extra.at("--steps")), every = std::max(10, steps / 120 * 10);
        const mha::LrSchedule lr{float(L.opt.extra.at("--lr")), steps / 10, steps, 0.1f};
        using lesson::fixed, lesson::fixed_list;
        L.let("V", V), L.let("N", N);

        L.section("1. The task and the model");
        mha::Rng data(L.opt.seed + 1), held_out(L.opt.seed + 2);
        const mha::TokenBatch test = mha::repeated_batch(B, T, V, held_out);  // BOS ++ r ++ r
        auto name = [](int id) {  // ^ for BOS, then a..z, A..Z
            return std::string(1, id == mha::kBos ? '^' : id <= 26 ? 'a' + id - 1 : 'A' + id - 27);
        };
        std::vector<std::string> tokens;  // test sequence 0
        std::string x0, y0;
        for (std::size_t i = 0; i < N; ++i) {
            tokens.push_back(name(test.x(0, i)));
            x0 += " " + tokens[i], y0 += " " + name(test.y(0, i));
        }
        std::printf("x =%s\ny =%s\n", x0.c_str(), y0.c_str());
        mha::ModelConfig c{V, N, E, H, std::size_t(L.opt.extra.at("--ff")) * E, 2};
        mha::LanguageModel m = mha::make_language_model(c, L.opt.seed);  // V, T_max, E, H, F, L
        const mha::ModelTrace t = mha::forward(m, test.x);
        L.step("logits = model(x)", "t.logits", t.logits, "B, N, V",
               "logits = model(x)  # tok_emb + pos_emb, 2 causal blocks, norm, head",
               "const mha::ModelTrace t = mha::forward(m, test.x);", lesson::Show::shape_only);
        L.say("^ is BOS, the start of every sequence. Training sequences hide where to copy "
              "from: some random tokens, then a stretch of 2 to " + std::to_string(T) +
              " over and over; on r ++ r alone one layer would learn the offset from the "
              "positions. The test sequences, as above, are BOS ++ r ++ r.");

        // The one training loop, for two layers and then one; every 10 steps, a report.
        auto train = [&](mha::LanguageModel& model, auto&& report) {
            mha::Adam adam(lr.at(1));
            mha::ModelTrace trace;
            for (int step = 1; step <= steps; ++step) {
                adam.set_lr(lr.at(step));
                const mha::TokenBatch batch = mha::repeated_batch(B, T, V, data, 2);
                mha::train_step(model, adam, batch, trace, 1.0);
                if (step % 10 == 0 || step == steps) report(step, mha::score_heads(model, test));
            }
        };
        auto best = [](const std::vector<double>& v) {  // the head that scores highest
            return std::size_t(std::max_element(v.begin(), v.end()) - v.begin());
        };

        L.section("2. Two layers learn: each half's loss, each head's scores");
        std::printf("step  loss: first repeated    previous-token L0 | L1   "
                    "induction  L0 | L1\n");
        using Frame = std::pair<std::string, std::vector<mha::Tensor4>>;  // weights per layer
        std::vector<Frame> frames{{"before training", mha::score_heads(m, test).weights}};
        std::vector<mha::HalfLosses> losses;  // every 10 steps
        mha::HeadScores end;
        int jump = 0;  // the step where layer 1's best induction score first passes 0.5
        train(m, [&](int step, const mha::HeadScores& s) {
            losses.push_back(s.loss), end = s;
            if (jump == 0 && s.ind[1][best(s.ind[1])] >= 0.5)
                jump = step, frames.push_back({"at the jump, step " + std::to_string(jump),
                                               s.weights});
            if (step % every != 0 && step != steps) return;
            std::printf("%4d  %11.3f %8.3f    %s |%s   %s |%s\n", step, s.loss.first,
                        s.loss.repeated, fixed_list(s.prev[0], 2).c_str(),
                        fixed_list(s.prev[1], 2).c_str(), fixed_list(s.ind[0], 2).c_str(),
                        fixed_list(s.ind[1], 2).c_str());
        });
        frames.push_back({"the end, step " + std::to_string(steps), end.weights});
        std::vector<double> repeated;
        for (const mha::HalfLosses& h : losses) repeated.push_back(h.repeated);
        std::printf("repeated half %s\n", lesson::sparkline(repeated, 56).c_str());
        const int k = int(losses.size()), j = std::max(jump / 10, 1) - 1;  // jump = step 10j+10
        const int a = std::max(j - 3, 0), b = std::min(j + 3, k - 1);  // 30 steps each side
        if (jump > 0)  // under the sparkline's column c, which shows value c k / min(56, k)
            std::printf("%*s^ the jump, step %d\nFrom step %d to %d the repeated half's loss "
                        "fell from %.2f to %.2f; the first half's:\n%.2f to %.2f.\n",
                        14 + (j * std::min(56, k) + k - 1) / k, "", jump, 10 * a + 10,
                        10 * b + 10, losses[a].repeated, losses[b].repeated, losses[a].first,
                        losses[b].first);

        L.section("3. Every layer and head on test sequence 0");
        for (std::size_t f = 0; f < frames.size(); ++f)  // a row of H heads per layer
            L.figure(frames[f].first, "21_heads_" + std::to_string(f),
                     lesson::layer_grids(frames[f].second, 0, tokens), false, "query", "key", {}, H);
        L.explore_layers("induction heads forming (test sequence 0)", frames, tokens);
        const mha::Tensor4& w = end.weights[1];  // layer 1's [B, H, N, N]
        L.dump("layer0.weights.end", end.weights[0]), L.dump("layer1.weights.end", w);
        const std::size_t ind = best(end.ind[1]), prev = best(end.prev[0]);
        std::printf("query       layer 1 head %zu weighs most   the answer\n", ind);
        for (std::size_t i = T + 1; i < N; ++i) {  // the second half's queries
            std::size_t key = 0;
            for (std::size_t k2 = 1; k2 <= i; ++k2)
                if (w(0, ind, i, k2) > w(0, ind, i, key)) key = k2;
            std::printf("%4zu (%s)    key %2zu (%s), %.2f             %s\n", i,
                        tokens[i].c_str(), key, tokens[key].c_str(), w(0, ind, i, key),
                        name(test.y(0, i)).c_str());
        }
        L.say("Query i's token occurred at i - " + std::to_string(T) + "; the head weighs the "
              "key just after it, whose token is the answer.");

        L.section("4. Evidence: the model without its heads");
        std::printf("zeroed               loss: first repeated\n");
        mha::LanguageModel cut = m;  // without each layer-1 head whose induction score >= 0.5
        std::string which;
        for (std::size_t l = 0; l < 2; ++l)
            for (std::size_t h = 0; h < H; ++h) {
                const mha::HalfLosses s = mha::score_heads(mha::without_head(m, l, h), test).loss;
                std::printf("layer %zu head %zu %17.3f %8.3f\n", l, h, s.first, s.repeated);
                if (l == 1 && end.ind[1][h] >= 0.5)
                    cut = mha::without_head(cut, 1, h), which += " " + std::to_string(h);
            }
        const mha::HalfLosses none = mha::score_heads(cut, test).loss;
        std::printf("%-20s %11.3f %8.3f\n", ("layer 1, heads" + which).c_str(), none.first,
                    none.repeated);

        L.section("5. The same training with one layer");
        c.layers = 1;
        mha::LanguageModel one = mha::make_language_model(c, L.opt.seed);
        data = mha::Rng(L.opt.seed + 1);
        double lowest = 1e9;  // the repeated half's loss over the first half's, at its lowest
        repeated.clear();
        mha::HeadScores last;
        train(one, [&](int, const mha::HeadScores& s) {
            lowest = std::min(lowest, s.loss.repeated / s.loss.first);
            repeated.push_back(s.loss.repeated), last = s;
        });
        std::printf("repeated half %s\nthe end: loss first %.3f, repeated %.3f; induction "
                    "scores%s\n", lesson::sparkline(repeated, 56).c_str(), last.loss.first,
                    last.loss.repeated, fixed_list(last.ind[0], 2).c_str());

        const double ratio = end.loss.repeated / end.loss.first;
        int rc = L.claim("two layers: the repeated half's loss ends at " + fixed(ratio, 3) +
                         "x the first half's (at most 0.1x)", ratio <= 0.1);
        rc |= L.claim("layer 1 head " + std::to_string(ind) + "'s induction score " +
                      fixed(end.ind[1][ind], 2) + " >= 0.8", end.ind[1][ind] >= 0.8);
        rc |= L.claim("layer 0 head " + std::to_string(prev) + "'s previous-token score " +
                      fixed(end.prev[0][prev], 2) + " >= 0.8 (first half)",
                      end.prev[0][prev] >= 0.8);
        rc |= L.claim("the jump: step " + std::to_string(jump), jump > 0);
        rc |= L.claim("zeroing layer 1's induction heads: repeated half " +
                      fixed(none.repeated / none.first, 2) + "x the first (at least 0.8x)",
                      !which.empty() && none.repeated >= 0.8 * none.first);
        rc |= L.claim("one layer: the repeated half never below " + fixed(lowest, 2) +
                      "x the first half (at least 0.5x)", lowest >= 0.5);
        return rc;
    });
}
