// Lesson 06: weights times V, and merging the heads back.
//
// Adds: weights @ V per (batch, head), then permute back, contiguous and
// view, written out with xtensor.
// Mirrors: the handwritten-course article's `score = self.softmax(score) @ v`
// and `score.permute(0, 2, 1, 3).contiguous().view(batch, time, dimension)`;
// the four-linear-layers article's `x = torch.matmul(attention, V)`,
// `x.permute(0, 2, 1, 3).contiguous()` and `x.view(batch_size, -1,
// self.embed_dim)`.
//
// B = batch, T = time, E = d_model, H = heads, D = head_dim = E / H.
#include <array>

#include <xtensor-blas/xlinalg.hpp>
#include <xtensor/xmanipulation.hpp>
#include <xtensor/xview.hpp>

#include "mha/attend.hpp"
#include "mha/attention.hpp"
#include "mha/heads.hpp"
#include "mha/mask.hpp"
#include "mha/scores.hpp"
#include "mha/softmax.hpp"
#include "support/blocks.hpp"
#include "support/lesson.hpp"

int main(int argc, char** argv) {
    lesson::Info info;
    info.name = "06_attend_merge", info.summary = "x = weights @ v, then merge the heads";
    info.draws = true, info.dump_mb = 104.9;
    return lesson::run(argc, argv, info, [](lesson::Lesson& L) {
        const std::size_t B = L.opt.batch, T = L.opt.time, E = L.opt.d_model;
        const std::size_t H = L.opt.heads;

        L.section("Earlier stages, by the core");
        mha::Rng rng(L.opt.seed);
        SHOWN(L, const mha::Tensor3 X = mha::randn(B, T, E, rng));  // [B, T, E]
        L.recap("X = randn(B, T, E)", "X", X, "B, T, E");
        const mha::MultiHeadAttention m(E, H, mha::Init::xavier(L.opt.seed));
        const std::size_t D = m.head_dim();
        const mha::Tensor4 Q = mha::split_heads(mha::linear(X, m.wq), H);
        const mha::Tensor4 K = mha::split_heads(mha::linear(X, m.wk), H);
        L.dump_layers(m);  // with --dump: the weights, for lessons/pytorch/
        SHOWN(L, const mha::Tensor4 V = mha::split_heads(mha::linear(X, m.wv), H));
        L.recap("v = split(w_v(X))", "v", V, "B, H, Tk, D");
        const mha::Mask causal = mha::causal_mask(T, T);
        const mha::Tensor4 S = mha::apply_mask(mha::scaled_scores(Q, K), causal);
        SHOWN(L, const mha::Tensor4 W = mha::softmax(S));  // [B, H, T, T]
        L.recap("weights = softmax(masked score)", "weights", W, "B, H, Tq, Tk");

        L.section("1. weights @ v, one product per (batch, head)");
        // Each query's output is its weighted average of the values:
        // [T, T] x [T, D] -> [T, D] for every (b, h).
        mha::Tensor4 A({B, H, T, D});  // [B, H, T, D]
        for (std::size_t b = 0; b < B; ++b)
            for (std::size_t h = 0; h < H; ++h) {
                const mha::Tensor2 w = xt::view(W, b, h);  // [T, T]
                const mha::Tensor2 v = xt::view(V, b, h);  // [T, D]
                SHOWN(L, xt::view(A, b, h) = xt::linalg::dot(w, v));
            }
        L.step("x = weights @ v", "x", A, "B, H, Tq, D",
               "score = self.softmax(score) @ v");

        L.section("2. permute back, contiguous");
        // Undo lesson 02 in reverse order: time before heads again...
        SHOWN(L, const mha::Tensor4 P = xt::transpose(A, {0, 2, 1, 3}));  // [B,T,H,D]
        L.step("x.permute(0, 2, 1, 3)", "x", P, "B, Tq, H, D",
               "score.permute(0, 2, 1, 3)");
        L.say("In PyTorch permute only changes strides, so .contiguous() must copy "
              "before .view() may glue H and D together. In C++, assigning the "
              "transposed view to the Tensor4 P was that copy.");

        L.section("3. view: the H heads of D numbers back into E");
        // ...then glue the H heads of D numbers back into E numbers.
        const std::array<std::size_t, 3> bte{B, T, E};
        SHOWN(L, const mha::Tensor3 merged = xt::reshape_view(P, bte));  // [B,T,E]
        L.step("x.contiguous().view(B, T, E)", "x", merged, "B, Tq, E",
               ".contiguous().view(batch, time, dimension)");
        L.blocks("the heads' columns placed back side by side", "merge_heads",
                 {{"", lesson::head_blocks(A, "x")},
                  {"permute(0, 2, 1, 3), contiguous, view(B, T, E)",
                   {lesson::by_head(merged, H, "x[0]  [T, E]")}}});

        const mha::Tensor3 core = mha::merge_heads(mha::attend(W, V));
        return L.check("mha::merge_heads(mha::attend(W, V))",
                       mha::max_abs_diff(merged, core), 1e-6);
    });
}
