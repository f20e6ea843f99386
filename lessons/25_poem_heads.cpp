// Lesson 25 (past the articles): what the heads of the poem model look at.
//
// Lesson 24's model (data/tang) writes lines of 5 or 7 characters. For every layer x
// head we measure its mean weight on four keys the form singles out, name the head
// that scores highest on each, draw it over a held-out poem, and test it: without that
// head, does the loss rise where its pattern matters, more than without another head?
// T positions, V tokens, E, H heads, L layers.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "mha/model/induction.hpp"
#include "mha/model/poem_heads.hpp"
#include "mha/model/poems.hpp"
#include "support/lesson.hpp"
#include "support/poem_input.hpp"

int main(int argc, char** argv) {
    lesson::Info info;
    info.name = "25_poem_heads", info.draws = true, info.default_heads = 4;
    info.summary = "the poem model's heads: scores, ablation";
    info.default_batch = 1, info.default_time = 64, info.default_d_model = 128;
    info.fixed_sizes = true, info.sizes_from = "data/tang";
    info.flags_fit = lesson::model_dir_refused;  // a bad checkpoint: one line, exit 2
    return lesson::run(argc, argv, info, [](lesson::Lesson& L) {
        using lesson::fixed;
        const std::string corpus = lesson::corpus_of(L.opt);
        if (lesson::corpus_missing(corpus)) return 77;  // "skipped: needs ..."
        L.section("1. The model and the held-out poems");
        const mha::PoemCheckpoint c = mha::load_poem_checkpoint(lesson::model_of(L.opt));
        const mha::Vocab& v = c.vocab;
        const mha::ModelConfig m = c.model.config();
        const std::size_t NL = m.layers, H = m.num_heads;
        const mha::PoemSplit s = mha::split_poems(mha::read_poems(corpus));
        auto held = mha::poem_windows(s.held_out, v, m.max_len);
        if (L.opt.tiny) held.resize(8);  // --tiny: the first 8 windows only
        std::printf("data/tang: E %zu, H %zu, L %zu; %zu held-out windows\n", m.embed_dim,
                    H, NL, held.size());
        L.say("A head's score for a key is its mean weight there, over the queries that "
              "have that key: previous (the character before), partner (the same place "
              "in the previous line, a couplet's match), last-mark (the latest mark "
              "before), start (<poem>). A head spread evenly scores 1/(q + 1).");

        L.section("2. Every head's four scores, over the held-out windows");
        mha::HeadPatterns even;  // a uniform causal head's scores over the same windows
        SHOWN(L, const auto score = mha::mean_head_patterns(c.model, v, held, even));
        L.code("w = model.layers[l].self_attn(x, x, x, need_weights=True)[1]");  // [L][H]
        const auto get = [](const mha::HeadPatterns& p, std::size_t k) {
            return k < 2 ? (k ? p.partner : p.previous) : k == 2 ? p.last_mark : p.start;
        };
        const char* names[4] = {"previous", "partner", "last-mark", "start"};
        std::printf("layer head   previous  partner  last-mark   start\n");
        std::vector<std::pair<std::size_t, std::size_t>> best(4, {0, 0});  // (l, h)
        for (std::size_t l = 0; l < NL; ++l)
            for (std::size_t h = 0; h < H; ++h) {
                for (std::size_t k = 0; k < 4; ++k) {  // the highest so far
                    const auto [bl, bh] = best[k];
                    if (get(score[l][h], k) > get(score[bl][bh], k)) best[k] = {l, h};
                }
                const mha::HeadPatterns& p = score[l][h];
                std::printf("%5zu %4zu %10.3f %8.3f %10.3f %7.3f\n", l, h, p.previous,
                            p.partner, p.last_mark, p.start);
            }
        std::printf("uniform    %10.3f %8.3f %10.3f %7.3f\n", even.previous, even.partner,
                    even.last_mark, even.start);
        bool above = true;  // each best head looks at its thing more than a uniform one
        for (std::size_t k = 0; k < 4; ++k) {
            const auto [l, h] = best[k];
            std::printf("best %-9s: layer %zu head %zu, %.3f (uniform %.3f)\n", names[k],
                        l, h, get(score[l][h], k), get(even, k));
            above = above && get(score[l][h], k) > get(even, k);
        }

        std::vector<std::string> shown;  // held-out poem 0's first 18 tokens
        mha::Tokens x({1, std::min<std::size_t>(18, held[0].size())});  // [1, 18]
        for (std::size_t j = 0; j < x.shape(1); ++j) {
            const std::string& t = v.token(x(0, j) = held[0][j]);
            shown.push_back(t == "<poem>" ? "▸" : t == "\n" ? "↵" : t == "<unk>" ? "＊"
                                                                                : t);
        }
        const mha::ModelTrace trace = mha::forward(c.model, x);
        for (const std::size_t k : {1, 2}) {  // a couplet's partner, the count of a line
            const auto [l, h] = best[k];
            L.section(std::to_string(k + 2) + ". The best " + names[k] +
                      " head on held-out poem 0 (▸ <poem>, ↵ line end)");
            const mha::Tensor4& w = trace.layers[l].attn.weights;  // [1, H, T, T]
            L.picture(std::string(names[k]) + " head: layer " + std::to_string(l) +
                          ", head " + std::to_string(h),
                      std::string("25_") + names[k],
                      lesson::grid_of(w, 0, h, "").value, "query", "key", {}, false,
                      {shown, shown});
        }

        L.section("5. Without the head: the loss where its pattern matters");
        L.say("without_head(m, l, h) zeroes the columns of w_o that read head h. "
              "Counting places (last-mark, start) should matter on marks and line ends, "
              "the previous character on the rest, a partner on a couplet's 2nd lines.");
        const auto losses = [&](const mha::LanguageModel& model) -> std::vector<double> {
            const auto p = mha::model_predictions(model, held);
            const mha::LossSplit s = mha::split_losses(p, v);
            return {s.marks, s.rest, mha::second_line_loss(p, held, v)};  // as where[]
        };
        const char* where[3] = {"marks, \\n", "the rest", "2nd lines"};
        const std::vector<double> base = losses(c.model);
        std::vector<std::vector<std::vector<double>>> cut(NL);
        for (std::size_t l = 0; l < NL; ++l)
            for (std::size_t h = 0; h < H; ++h) {  // every head zeroed in turn
                SHOWN(L, cut[l].push_back(losses(mha::without_head(c.model, l, h))));
            }
        L.code("m.layers[l].self_attn.out_proj.weight.data[:, h * D:(h + 1) * D] = 0");
        std::printf("the whole model: marks and \\n %.3f, the rest %.3f, 2nd lines %.3f "
                    "nats\nzeroed           on           rise  others: mean  median   it "
                    "beats\n", base[0], base[1], base[2]);
        std::vector<std::size_t> beats(4);  // how many of the other heads it out-rises
        std::string yes, no;  // the heads that beat a random other more often than not
        for (std::size_t k = 0; k < 4; ++k) {
            const auto [l, h] = best[k];
            const std::size_t at = k == 0 ? 1 : k == 1 ? 2 : 0;  // where[at], as said
            const auto rise = [&](auto a, auto b) { return cut[a][b][at] - base[at]; };
            std::vector<double> others;  // the rise without each other head
            double mean = 0;
            for (std::size_t i = 0; i < NL * H; ++i)  // layer i / H, head i % H
                if (i != l * H + h) others.push_back(rise(i / H, i % H));
            for (const double o : others)
                beats[k] += rise(l, h) > o, mean += o / double(others.size());
            std::sort(others.begin(), others.end());
            std::printf("%-9s L%zu H%zu  %-9s %7.3f %13.3f %7.3f %6zu of %zu\n",
                        names[k], l, h, where[at], rise(l, h),
                        mean, others[others.size() / 2], beats[k], others.size());
            (2 * beats[k] > others.size() ? yes : no) += std::string(", ") + names[k];
        }
        L.say("It beats: how many of the others, zeroed, raise the loss less (its chance "
              "to beat a random other head; their mean is pulled up by the few heads the "
              "loss needs most). More often than not for: " +
              (yes.empty() ? "none" : yes.substr(2)) + "; not for: " +
              (no.empty() ? "none" : no.substr(2)) + ". A head that looks at something "
              "is not always a head the model relies on.");
        const auto top = std::max_element(beats.begin(), beats.end()) - beats.begin();
        const int rc = L.claim("each best head scores above a uniform head", above);
        if (L.opt.tiny)  // 8 windows: rises of a few hundredths are noise
            return std::printf("(at --tiny, 8 windows are too few to test it: "
                               "run without)\n"), rc;
        const std::size_t n = NL * H - 1;  // the other heads
        return rc | L.claim("a named head beats a random other more often than not: " +
                            std::string(names[top]) + ", " + std::to_string(beats[top]) +
                            " of " + std::to_string(n), 2 * beats[top] > n);
    });
}
