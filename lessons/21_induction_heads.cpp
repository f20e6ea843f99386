// Lesson 21 (past the articles): induction heads form.
//
// T random tokens, then the same T again: the second half is predicted by copying (after
// A comes what followed A before). Two layers learn it suddenly, a previous-token head in
// layer 0 and an induction head in layer 1 (Olsson et al., 2022). Lesson 22 tests the
// claim: the model without those heads, and one layer trained the same way.
// B sequences, N = 2T + 1 positions, V tokens, E, H, 2 layers.
#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "mha/model/induction.hpp"
#include "mha/model/train.hpp"
#include "support/lesson.hpp"

int main(int argc, char** argv) {
    lesson::Info info;
    info.name = "21_induction_heads";
    info.summary = "two layers learn to copy: induction heads form";
    info.draws = true, info.dump_mb = 0.5, info.default_heads = 2;
    info.default_batch = 32, info.default_time = 12, info.default_d_model = 64;
    info.tiny_batch = 32, info.tiny_time = 8, info.tiny_d_model = 32;
    info.extra = {
        {"--steps", "N", "training steps", 800, 10, 100000, true, 700},
        {"--lr", "R", "Adam's peak learning rate", 3e-3, 1e-6, 1, false, 5e-3},
        {"--vocab", "V", "tokens, BOS included (T + 1 to 53)", 24, 3, 53, true, 17},
        {"--ff", "K", "the feed-forward's width over E", 4, 1, 8, true, 1}};
    info.flags_fit = [](const lesson::Options& o) {  // T distinct tokens and BOS
        return o.extra.at("--vocab") > double(o.time) ? std::string()
               : "--vocab must be at least --time + 1 = " + std::to_string(o.time + 1);
    };
    return lesson::run(argc, argv, info, [](lesson::Lesson& L) {
        const std::size_t B = L.opt.batch, T = L.opt.time, N = 2 * T + 1;
        const std::size_t E = L.opt.d_model, H = L.opt.heads;
        const std::size_t V = std::size_t(L.opt.extra.at("--vocab"));
        const int steps = int(L.opt.extra.at("--steps"));
        const int every = std::max(10, steps / 120 * 10);  // print about 12 rows
        const mha::LrSchedule lr{float(L.opt.extra.at("--lr")), steps / 10, steps, 0.1f};
        using lesson::fixed, lesson::fixed_list;
        L.let("V", V), L.let("N", N);

        L.section("1. The task and the model");
        mha::Rng data(L.opt.seed + 1), held_out(L.opt.seed + 2);
        const mha::TokenBatch test = mha::repeated_batch(B, T, V, held_out);  // [B, N]
        const std::vector<std::string> tokens = mha::token_letters(test.x, 0);  // [N]
        const std::vector<std::string> answers = mha::token_letters(test.y, 0);  // [N]
        std::printf("x = %s\ny = %s\n", lesson::joined(tokens).c_str(),
                    lesson::joined(answers).c_str());
        const mha::ModelConfig c{V, N, E, H, std::size_t(L.opt.extra.at("--ff")) * E, 2};
        mha::LanguageModel m = mha::make_language_model(c, L.opt.seed);  // V,N,E,H,F,L
        SHOWN(L, const mha::ModelTrace t = mha::forward(m, test.x));
        L.step("logits = model(x)", "t.logits", t.logits, "B, N, V",
               "logits = model(x)  # tok_emb + pos_emb, 2 causal blocks, norm, head",
               lesson::Show::shape_only);
        L.say("^ is BOS, the start of every sequence; y is x shifted by one, the token "
              "to predict at each position. The test sequences, as above, are BOS ++ r ++ "
              "r. Training sequences hide where to copy from (on r ++ r alone one layer "
              "would learn the offset from the positions): random tokens, then a stretch "
              "of 2 to " + std::to_string(T) + " over and over, such as");
        mha::Rng peek(L.opt.seed + 3);  // a draw of its own: training's stays the same
        const mha::TokenBatch one_draw = mha::repeated_batch(1, T, V, peek, 2);
        std::printf("x = %s\n", lesson::joined(mha::token_letters(one_draw.x, 0)).c_str());

        L.section("2. Two layers learn: each half's loss, each head's scores");
        L.say("A head's previous-token score is its mean weight on the key just before "
              "the query (first half); its induction score, its mean weight on the key "
              "just after the query token's earlier occurrence (repeated half). A head "
              "spreading evenly over i keys scores 1/i. The jump: the step where a layer-1 "
              "head's induction score first passes 0.5.");
        std::string hs;  // "   h0   h1": a label over each head's column
        for (std::size_t h = 0; h < H; ++h) hs += "   h" + std::to_string(h);
        std::printf("%-30s%-*s   %s\n%30s%s |%s   %s |%s\n", "step  loss: first repeated",
                    int(10 * H + 2), "previous-token, L0 | L1", "induction, L0 | L1", "",
                    hs.c_str(), hs.c_str(), hs.c_str(), hs.c_str());
        mha::InductionLog log(m, test);  // the losses, the jump, the weights then
        // Adam on repeated_batch(B, T, V, data, 2); every 10 steps, the scores on test
        mha::train_on_repeats(m, lr, test, V, 2, data, [&](int step, const auto& s) {
            log.add(step, s);
            if (step % every != 0 && step != steps) return;
            std::printf("%4d  %11.3f %8.3f    %s |%s   %s |%s\n", step, s.loss.first,
                        s.loss.repeated, fixed_list(s.prev[0], 2).c_str(),
                        fixed_list(s.prev[1], 2).c_str(), fixed_list(s.ind[0], 2).c_str(),
                        fixed_list(s.ind[1], 2).c_str());
        });
        const mha::HeadScores& end = log.last;
        const std::vector<mha::HalfLosses>& losses = log.losses;
        const int jump = log.jump;
        log.frames.push_back({"the end, step " + std::to_string(steps), end.weights});
        std::printf("repeated half %s\n", lesson::sparkline(log.repeated(), 56).c_str());
        const int k = int(losses.size()), j = std::max(jump / 10, 1) - 1;  // step 10j+10
        const int a = std::max(j - 3, 0), b = std::min(j + 3, k - 1);  // 30 steps around
        const int column = 14 + int(lesson::sparkline_column(j, k, 56));  // under step j
        if (jump > 0)
            std::printf("%*s^ the jump, step %d\nFrom step %d to %d the repeated half's "
                        "loss fell from %.2f to %.2f;\nthe first half's from %.2f to %.2f.\n",
                        column, "", jump, 10 * a + 10, 10 * b + 10, losses[a].repeated,
                        losses[b].repeated, losses[a].first, losses[b].first);

        L.section("3. The induction head on test sequence 0");
        for (std::size_t f = 0; f < log.frames.size(); ++f)  // a row of H heads per layer
            L.figure(log.frames[f].first, "21_heads_" + std::to_string(f),
                     lesson::layer_grids(log.frames[f].second, 0, tokens), false, "query",
                     "key", {}, H);
        if (L.opt.svg_dir.empty())
            L.say("Every layer and head before training, at the jump and at the end: run "
                  "with --svg DIR.");
        L.explore_layers("induction heads forming (test sequence 0)", log.frames, tokens);
        const mha::Tensor4& w = end.weights[1];  // layer 1's [B, H, N, N]
        L.dump("layer0.weights.end", end.weights[0]), L.dump("layer1.weights.end", w);
        const std::size_t ind = mha::best_head(end.ind[1]);  // the induction head
        const std::size_t prev = mha::best_head(end.prev[0]);  // the previous-token head
        L.picture("layer 1 head " + std::to_string(ind) + " at the end", "21_induction_head",
                  lesson::grid_of(w, 0, ind, "").value, "query", "key", {}, false,
                  {tokens, tokens});

        L.section("4. Where the induction head looks");
        const std::vector<std::size_t> key = mha::top_keys(w, 0, ind);  // [N]
        std::printf("query       layer 1 head %zu weighs most   the answer\n", ind);
        for (std::size_t i = T + 1; i < N; ++i)  // the second half's queries
            std::printf("%4zu (%s)    key %2zu (%s), %.2f             %s\n", i,
                        tokens[i].c_str(), key[i], tokens[key[i]].c_str(),
                        w(0, ind, i, key[i]), answers[i].c_str());
        L.say("Query i's token occurred at i - " + std::to_string(T) +
              "; the head weighs the key just after it, whose token is the answer. A "
              "picture is not yet proof that this head does the copying: lesson 22 zeroes "
              "it, and trains one layer the same way.");

        const double ratio = end.loss.repeated / end.loss.first;
        int rc = L.claim("two layers: the repeated half's loss ends at " +
                         fixed(ratio, 3) + "x the first half's (at most 0.1x)",
                         ratio <= 0.1);
        rc |= L.claim("layer 1 head " + std::to_string(ind) + "'s induction score " +
                      fixed(end.ind[1][ind], 2) + " >= 0.8", end.ind[1][ind] >= 0.8);
        rc |= L.claim("layer 0 head " + std::to_string(prev) + "'s previous-token score "
                      + fixed(end.prev[0][prev], 2) + " >= 0.8 (first half)",
                      end.prev[0][prev] >= 0.8);
        rc |= L.claim("the jump: step " + std::to_string(jump), jump > 0);
        return rc;
    });
}
