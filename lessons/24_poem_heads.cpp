// Lesson 24 (past the articles): what the heads of the poem model look at.
//
// Lesson 23's model (data/tang) writes lines of 5 or 7 characters. For every layer x
// head we measure its mean weight on four keys the form singles out, name the head
// that scores highest on each, draw it over a held-out poem, and test it: without that
// head, does the loss rise where its pattern matters, more than without another head?
// T positions, V tokens, E, H heads, L layers.
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "mha/model/induction.hpp"
#include "mha/model/poem_heads.hpp"
#include "mha/model/poems.hpp"
#include "support/lesson.hpp"

const char* const kCorpus = "/usr/share/games/fortunes/tang300";

int main(int argc, char** argv) {
    lesson::Info info{"24_poem_heads", "the heads of the poem model: scores, pictures, ablation",
                      true, 0, 4};
    info.default_batch = 1, info.default_time = 64, info.default_d_model = 128;
    info.tiny_batch = 1, info.tiny_time = 64, info.tiny_d_model = 128;
    info.fixed_sizes = true;  // data/tang's sizes
    info.flags_fit = [](const lesson::Options&) -> std::string {  // one line, exit 2
        if (!std::filesystem::exists(kCorpus)) return "";
        try {
            mha::load_poem_checkpoint(MHA_DATA_DIR "/tang");
        } catch (const std::invalid_argument& e) {
            return e.what();
        }
        return "";
    };
    return lesson::run(argc, argv, info, [](lesson::Lesson& L) {
        using lesson::fixed;
        L.section("1. The model and the held-out poems");
        if (!std::filesystem::exists(kCorpus))
            return std::printf("skipped: needs %s (fortunes-zh)\n", kCorpus), 77;
        const mha::PoemCheckpoint c = mha::load_poem_checkpoint(MHA_DATA_DIR "/tang");
        const mha::Vocab& v = c.vocab;
        const mha::ModelConfig m = c.model.config();
        const std::size_t NL = m.layers, H = m.num_heads;
        auto held = mha::poem_windows(mha::split_poems(mha::read_poems(kCorpus)).held_out, v,
                                      m.max_len);
        if (L.opt.tiny) held.resize(8);  // --tiny: the first 8 windows only
        std::printf("data/tang: E %zu, H %zu, L %zu; %zu held-out windows\n", m.embed_dim, H,
                    NL, held.size());
        L.say("A head's score for a key is its mean weight there, over every query that "
              "has that key: previous (the character before), partner (the same place in "
              "the previous line, a couplet's match), last mark (the latest ，。 before), "
              "start (<poem>). A head spreading its weight evenly scores 1/(q + 1).");

        L.section("2. Every head's four scores, over the held-out windows");
        std::vector<std::vector<std::vector<double>>> score(  // [L][H][4], then uniform
            NL + 1, std::vector<std::vector<double>>(H, std::vector<double>(4, 0)));
        std::vector<double> count(4, 0);
        for (const auto& w : held) {
            mha::Tokens x({1, w.size()});  // [1, T]
            std::vector<std::string> tokens;
            for (std::size_t j = 0; j < w.size(); ++j) x(0, j) = w[j], tokens.push_back(v.token(w[j]));
            const auto p = mha::model_head_patterns(c.model, x, tokens);  // [L][H]
            mha::Tensor2 even = xt::zeros<float>({w.size(), w.size()});  // [T, T], uniform
            for (std::size_t q = 0; q < w.size(); ++q)
                for (std::size_t k = 0; k <= q; ++k) even(q, k) = 1.0f / float(q + 1);
            const mha::HeadPatterns u = mha::head_patterns(even, tokens);
            const double uv[4] = {u.previous, u.partner, u.last_mark, u.start};
            for (std::size_t k = 0; k < 4; ++k) {
                if (std::isnan(uv[k])) continue;  // no query has that key here
                count[k] += 1, score[NL][0][k] += uv[k];
                for (std::size_t l = 0; l < NL; ++l)
                    for (std::size_t h = 0; h < H; ++h) {
                        const mha::HeadPatterns& s = p[l][h];
                        score[l][h][k] += (k == 0 ? s.previous : k == 1 ? s.partner
                                           : k == 2 ? s.last_mark : s.start);
                    }
            }
        }
        L.code("w = model.layers[l].self_attn(..., need_weights=True)[1]; w[q, q - 1].mean()",
               "const auto p = mha::model_head_patterns(c.model, x, tokens);  // [L][H]");
        const char* names[4] = {"previous", "partner", "last mark", "start"};
        std::printf("layer head   previous  partner  last mark   start\n");
        std::vector<std::pair<std::size_t, std::size_t>> best(4, {0, 0});
        for (std::size_t l = 0; l <= NL; ++l)
            for (std::size_t h = 0; h < (l < NL ? H : 1); ++h) {
                for (std::size_t k = 0; k < 4; ++k) score[l][h][k] /= count[k];
                for (std::size_t k = 0; k < 4 && l < NL; ++k)
                    if (score[l][h][k] > score[best[k].first][best[k].second][k]) best[k] = {l, h};
                std::printf(l < NL ? "%5zu %4zu " : "uniform   ", l, h);
                std::printf("%10.3f %8.3f %10.3f %7.3f\n", score[l][h][0], score[l][h][1],
                            score[l][h][2], score[l][h][3]);
            }

        L.section("3. The best head for each, on held-out poem 0");
        std::vector<std::string> shown;  // its first 18 tokens: <poem> and a line and more
        for (std::size_t j = 0; j < 18 && j < held[0].size(); ++j) {
            const std::string& t = v.token(held[0][j]);
            shown.push_back(t == "<poem>" ? "▸" : t == "\n" ? "↵" : t == "<unk>" ? "?" : t);
        }
        mha::Tokens x({1, shown.size()});  // [1, 18]
        for (std::size_t j = 0; j < shown.size(); ++j) x(0, j) = held[0][j];
        const mha::ModelTrace trace = mha::forward(c.model, x);
        for (std::size_t k = 0; k < 4; ++k) {
            const auto [l, h] = best[k];
            std::printf("%-9s: layer %zu head %zu, %.3f (uniform %.3f)\n", names[k], l, h,
                        score[l][h][k], score[NL][0][k]);
            if (k != 1 && k != 2) continue;  // two pictures: the couplet and the count
            const mha::Tensor4& w = trace.layers[l].attn.weights;  // [1, H, T, T]
            L.picture(std::string(names[k]) + " head: layer " + std::to_string(l) +
                          " head " + std::to_string(h), "24_" + std::string(names[k]).substr(0, 4),
                      lesson::grid_of(w, 0, h, "").value, "query", "key", {}, false,
                      {shown, shown});
        }

        L.section("4. Without the head: the loss where its pattern matters");
        L.say("without_head(m, l, h) zeroes the columns of w_o that read head h. The "
              "marks and line ends are where counting matters; the rest, where it does not.");
        const mha::LossSplit base = mha::split_losses(mha::model_predictions(c.model, held), v);
        std::vector<std::vector<mha::LossSplit>> cut(NL);
        for (std::size_t l = 0; l < NL; ++l)
            for (std::size_t h = 0; h < H; ++h)
                cut[l].push_back(mha::split_losses(
                    mha::model_predictions(mha::without_head(c.model, l, h), held), v));
        L.code("m.layers[l].self_attn.out_proj.weight.data[:, h * D:(h + 1) * D] = 0",
               "mha::model_predictions(mha::without_head(c.model, l, h), held), v));");
        std::printf("the whole model: marks and \\n %.3f, the rest %.3f nats\n", base.marks,
                    base.rest);
        std::printf("zeroed           marks +   rest +   (others, mean: marks +   rest +)\n");
        double mark_rise = 0, others_rise = 0;  // the last-mark head's, the others' mean
        for (std::size_t k = 0; k < 4; ++k) {
            const auto [l, h] = best[k];
            double others_marks = 0, others_rest = 0;
            for (std::size_t a = 0; a < NL; ++a)
                for (std::size_t b = 0; b < H; ++b)
                    if (a != l || b != h)
                        others_marks += cut[a][b].marks - base.marks,
                            others_rest += cut[a][b].rest - base.rest;
            others_marks /= double(NL * H - 1), others_rest /= double(NL * H - 1);
            const double dm = cut[l][h].marks - base.marks, dr = cut[l][h].rest - base.rest;
            std::printf("%-9s L%zu H%zu %8.3f %8.3f   %22.3f %8.3f\n", names[k], l, h, dm, dr,
                        others_marks, others_rest);
            if (k == 2) mark_rise = dm, others_rise = others_marks;
        }
        return L.claim("without the last-mark head the marks' loss rises by " +
                       fixed(mark_rise) + ", more than without another (" +
                       fixed(others_rise) + " on average)", mark_rise > others_rise);
    });
}
