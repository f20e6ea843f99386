// Lesson 22 (past the articles): induction heads, the evidence.
//
// Lesson 21 saw two heads form and one look where the answer is. Seeing is not proof: here
// the same model, trained the same way, loses one head at a time (its output zeroed, what
// TransformerLens calls zero-ablation), then its induction heads together; and a model of
// one layer is trained the same way, to show that copying needs two.
// B sequences, N = 2T + 1 positions, V tokens, E, H, 2 layers.
#include <cstdio>
#include <string>
#include <vector>

#include "mha/model/induction.hpp"
#include "mha/model/train.hpp"
#include "support/lesson.hpp"

int main(int argc, char** argv) {
    lesson::Info info;
    info.name = "22_induction_evidence";
    info.summary = "induction heads, the evidence: zeroed heads, one layer";
    info.default_heads = 2;
    info.default_batch = 32, info.default_time = 12, info.default_d_model = 64;
    info.tiny_batch = 32, info.tiny_time = 8, info.tiny_d_model = 32;
    info.extra = {  // lesson 21's, so that both train the same model
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
        const mha::LrSchedule lr{float(L.opt.extra.at("--lr")), steps / 10, steps, 0.1f};
        using lesson::fixed, lesson::fixed_list;
        L.let("V", V), L.let("N", N);

        L.section("1. Lesson 21's model, trained again");
        mha::Rng data(L.opt.seed + 1), held_out(L.opt.seed + 2);  // lesson 21's seeds
        const mha::TokenBatch test = mha::repeated_batch(B, T, V, held_out);  // [B, N]
        mha::ModelConfig c{V, N, E, H, std::size_t(L.opt.extra.at("--ff")) * E, 2};
        mha::LanguageModel m = mha::make_language_model(c, L.opt.seed);  // V,N,E,H,F,L
        mha::InductionLog two(m, test);
        mha::train_on_repeats(m, lr, test, V, 2, data, [&](int step, const auto& s) {
            two.add(step, s);
        });
        const mha::HeadScores& end = two.last;
        std::printf("after %d steps (the jump at step %d): loss first %.3f, repeated %.3f\n"
                    "previous-token scores L0%s | L1%s\ninduction scores      L0%s | L1%s\n",
                    steps, two.jump, end.loss.first, end.loss.repeated,
                    fixed_list(end.prev[0], 2).c_str(), fixed_list(end.prev[1], 2).c_str(),
                    fixed_list(end.ind[0], 2).c_str(), fixed_list(end.ind[1], 2).c_str());

        L.section("2. The model without one head, then without its induction heads");
        L.say("without_head(m, l, h) zeroes the columns of layer l's w_o that read head h: "
              "the head still computes its weights, but nothing it reads reaches the "
              "stream. If a head does the copying, the repeated half's loss must rise "
              "without it; if the picture misled us, it will not.");
        mha::LanguageModel cut = m;  // without layer 1's heads of induction score >= 0.5
        std::string which;
        const std::size_t prev = mha::best_head(end.prev[0]);  // the previous-token head
        double without_prev = 0;  // the repeated half's loss without it
        for (std::size_t l = 0; l < 2; ++l)
            for (std::size_t h = 0; h < H; ++h) {
                SHOWN(L, const auto s =
                             mha::score_heads(mha::without_head(m, l, h), test).loss);
                if (l == 0 && h == 0) {  // the code beside PyTorch's, the table's header
                    L.code("m.layers[l].self_attn.out_proj.weight.data"
                           "[:, h * D:(h + 1) * D] = 0");
                    std::printf("zeroed               loss: first repeated\n");
                }
                std::printf("layer %zu head %zu %17.3f %8.3f\n", l, h, s.first,
                            s.repeated);
                if (l == 0 && h == prev) without_prev = s.repeated;
                if (l == 1 && end.ind[1][h] >= 0.5)
                    cut = mha::without_head(cut, 1, h), which += " " + std::to_string(h);
            }
        const mha::HalfLosses none = mha::score_heads(cut, test).loss;
        const std::string zeroed = which.empty() ? "layer 1, none" : "layer 1, heads" + which;
        std::printf("%-20s %11.3f %8.3f\n", zeroed.c_str(), none.first, none.repeated);
        L.say("One induction head may be spared when another copies too; together they "
              "carry the copying. Layer 0's previous-token head (head " +
              std::to_string(prev) + ") matters as well: without it the repeated half's "
              "loss is " + fixed(without_prev) + " against " + fixed(end.loss.repeated) +
              ", as the induction head's keys no longer hold each position's predecessor.");

        L.section("3. The same training with one layer");
        c.layers = 1;
        mha::LanguageModel one = mha::make_language_model(c, L.opt.seed);
        data = mha::Rng(L.opt.seed + 1);
        mha::InductionLog single(one, test);
        mha::train_on_repeats(one, lr, test, V, 2, data, [&](int step, const auto& s) {
            single.add(step, s);
        });
        const double lowest = single.lowest_ratio();
        std::printf("repeated half %s\nthe end: loss first %.3f, repeated %.3f; "
                    "induction scores%s\n", lesson::sparkline(single.repeated(), 56).c_str(),
                    single.last.loss.first, single.last.loss.repeated,
                    fixed_list(single.last.ind[0], 2).c_str());
        L.say("One layer still learns that the second half's tokens are ones seen before, "
              "which narrows the guess from V - 1 tokens towards T, but not which comes "
              "next: that needs a key holding its predecessor, put there by a layer before.");

        int rc = L.claim(which.empty() ? "zeroing layer 1's induction heads: no head's "
                         "induction score reached 0.5, none to zero" : "zeroing layer 1's "
                         "induction heads: repeated half " + fixed(none.repeated /
                         none.first, 2) + "x the first (at least 0.8x)",
                         !which.empty() && none.repeated >= 0.8 * none.first);
        rc |= L.claim("one layer: the repeated half never below " + fixed(lowest, 2) +
                      "x the first half (at least 0.5x)", lowest >= 0.5);
        return rc;
    });
}
