// Lesson 05: softmax over the key axis.
//
// Adds: a numerically stable softmax over the last axis, written out with
// xtensor; the row sums (each 1) against the column sums (not 1).
// Mirrors: the handwritten-course article's `self.softmax = nn.Softmax(dim=-1)`
// and its note that the softmax runs down the columns ("对矩阵的竖排做"); the
// four-linear-layers article's `attention = torch.softmax(energy, dim=-1)`.
//
// B = batch, T = time, E = d_model, H = heads, D = head_dim = E / H.
#include <cmath>
#include <vector>

#include <xtensor/xmath.hpp>
#include <xtensor/xreducer.hpp>
#include <xtensor/xsort.hpp>
#include <xtensor/xview.hpp>

#include "mha/attention.hpp"
#include "mha/heads.hpp"
#include "mha/mask.hpp"
#include "mha/scores.hpp"
#include "mha/softmax.hpp"
#include "support/lesson.hpp"

int main(int argc, char** argv) {
    lesson::Info info;
    info.name = "05_softmax", info.summary = "weights = softmax(score, dim=-1)";
    info.draws = true, info.dump_mb = 54.8;
    return lesson::run(argc, argv, info, [](lesson::Lesson& L) {
        const std::size_t B = L.opt.batch, T = L.opt.time, E = L.opt.d_model;
        const std::size_t H = L.opt.heads;
        using lesson::fixed;

        L.section("Earlier stages, by the core");
        mha::Rng rng(L.opt.seed);
        SHOWN(L, const mha::Tensor3 X = mha::randn(B, T, E, rng));  // [B, T, E]
        L.recap("X = randn(B, T, E)", "X", X, "B, T, E");
        const mha::MultiHeadAttention m(E, H, mha::Init::xavier(L.opt.seed));
        const mha::Tensor4 Q = mha::split_heads(mha::linear(X, m.wq), H);
        const mha::Tensor4 K = mha::split_heads(mha::linear(X, m.wk), H);
        const mha::Mask causal = mha::causal_mask(T, T);
        SHOWN(L, const mha::Tensor4 S = mha::apply_mask(mha::scaled_scores(Q, K), causal));
        L.recap("score, causal-masked", "score", S, "B, H, Tq, Tk");
        L.dump_layers(m);  // with --dump: the weights, for lessons/pytorch/

        L.section("1. Stable softmax over the last axis, written out");
        // exp(s - max) / sum: subtracting each row's max changes nothing
        // mathematically and keeps exp() from overflowing.
        // The reducers are evaluated into containers first: in xtensor 0.24.3
        // a lazy keep_dims reducer inside a broadcast gives wrong numbers.
        SHOWN(L, const mha::Tensor4 row_max = xt::amax(S, {3}, xt::keep_dims));  // [B,H,T,1]
        L.step("m = score.amax(-1, keepdim=True)", "m", row_max, "B, H, Tq, 1",
               "score.amax(dim=-1, keepdim=True)");
        const mha::Tensor4 e = xt::exp(S - row_max);                  // [B,H,T,T]
        const mha::Tensor4 sum = xt::sum(e, {3}, xt::keep_dims);      // [B,H,T,1]
        SHOWN(L, const mha::Tensor4 W = e / sum);                     // [B,H,T,T]
        L.step("weights = softmax(score, -1)", "weights", W, "B, H, Tq, Tk",
               "self.softmax = nn.Softmax(dim=-1); self.softmax(score)");

        L.section("2. Rows sum to 1, columns do not");
        // One picture: batch 0, head 0. Row i is query i's weights over keys.
        const std::size_t n = std::min<std::size_t>(T, 8);
        std::string rows = "row sums    (query i):", cols = "column sums (key j)  :";
        for (std::size_t i = 0; i < n; ++i) {
            double r = 0, c = 0;
            for (std::size_t j = 0; j < T; ++j) r += W(0, 0, i, j), c += W(0, 0, j, i);
            rows += " " + fixed(r, 2);
            cols += " " + fixed(c, 2);
        }
        std::printf("%s%s\n%s%s\n", rows.c_str(), n < T ? " ..." : "",
                    cols.c_str(), n < T ? " ..." : "");
        L.say("dim=-1 normalises each row: every query's weights over the keys "
              "sum to 1. The handwritten-course article's note says the softmax "
              "runs down the columns; the code it shows (dim=-1) runs along the "
              "rows, and that is right. Down the columns, key 0 would be shared "
              "out among queries, and under the causal mask the column sums "
              "above show how far from 1 that is. Lesson 11 shows it running.");

        L.section("3. One head's weights as a picture");
        std::vector<std::vector<float>> grid(T, std::vector<float>(T));
        std::vector<std::vector<bool>> masked(T, std::vector<bool>(T));
        for (std::size_t i = 0; i < T; ++i)
            for (std::size_t j = 0; j < T; ++j)
                grid[i][j] = W(0, 0, i, j), masked[i][j] = !causal(0, 0, i, j);
        L.picture("weights[0, 0], batch 0, head 0", "attention_weights",
                  grid, "query i", "key j", masked);
        L.figure("weights of batch 0, every head", "attention_weights_heads",
                 lesson::head_grids(W, 0, &causal), false, "query", "key", {}, 4);
        L.explore("causal weights = softmax(score)", "weights", {{"weights", &W}}, &causal);

        return L.check("mha::softmax(S)",
                       mha::max_abs_diff(W, mha::softmax(S)), 1e-6);
    });
}
