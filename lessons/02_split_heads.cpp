// Lesson 02: split the embedding into heads.
//
// Adds: `view` + `permute(0, 2, 1, 3)`, written out with xtensor: the E
// numbers of each token become H heads of D = E / H numbers.
// Mirrors: the handwritten-course article's `n_d = self.d_model // self.n_head`
// and `q = q.view(batch, time, self.n_head, n_d).permute(0, 2, 1, 3)`; the
// four-linear-layers article's `Q.view(batch_size, -1, self.num_heads,
// self.head_dim).permute(0, 2, 1, 3)`.
//
// B = batch, T = time, E = d_model, H = heads, D = head_dim = E / H.
#include <array>

#include <xtensor/xmanipulation.hpp>

#include "mha/attention.hpp"
#include "mha/heads.hpp"
#include "support/blocks.hpp"
#include "support/lesson.hpp"

int main(int argc, char** argv) {
    lesson::Info info;
    info.name = "02_split_heads";
    info.summary = "[B, T, E] -> view [B, T, H, D] -> permute [B, H, T, D]";
    info.draws = true, info.dump_mb = 104.9;
    return lesson::run(argc, argv, info, [](lesson::Lesson& L) {
        const std::size_t B = L.opt.batch, T = L.opt.time, E = L.opt.d_model;
        const std::size_t H = L.opt.heads;

        L.section("Earlier stages, by the core");
        mha::Rng rng(L.opt.seed);
        SHOWN(L, const mha::Tensor3 X = mha::randn(B, T, E, rng));  // [B, T, E]
        L.recap("X = randn(B, T, E)", "X", X, "B, T, E");
        const mha::MultiHeadAttention m(E, H, mha::Init::xavier(L.opt.seed));
        L.dump_layers(m);  // with --dump: the weights, for lessons/pytorch/
        SHOWN(L, const mha::Tensor3 Q = mha::linear(X, m.wq));  // [B, T, E]
        L.step("Q = w_q(X)", "Q", Q, "B, T, E", "");

        L.section("1. n_d = d_model / n_head");
        // The core refuses an H that does not divide E (see the pitfalls).
        SHOWN(L, const std::size_t D = mha::head_dim_for(E, H));
        L.say("n_d = " + std::to_string(E) + " / " + std::to_string(H) + " = " +
              std::to_string(D) + " numbers per head.");
        L.code("n_d = self.d_model // self.n_head");

        L.section("2. view: split the last axis E into H x D");
        // A view only re-reads the same memory: head h is columns h*D..h*D+D-1.
        const std::array<std::size_t, 4> bthd{B, T, H, D};
        SHOWN(L, const auto viewed = xt::reshape_view(Q, bthd));  // [B, T, H, D], no copy
        L.step("q.view(B, T, H, D)", "q", viewed, "B, T, H, D",
               "q = q.view(batch, time, self.n_head, n_d)");

        L.section("3. permute(0, 2, 1, 3): heads before time");
        // Attention works on the last two axes, [T, D], once per (batch, head),
        // so the head axis must come before time. Assigning the permuted view
        // to a container makes the copy that .contiguous() would make.
        SHOWN(L, const mha::Tensor4 Qh = xt::transpose(viewed, {0, 2, 1, 3}));
        L.step("q.permute(0, 2, 1, 3)", "q", Qh, "B, H, T, D", ".permute(0, 2, 1, 3)");
        L.blocks("Q's columns go to the heads", "split_heads",
                 {{"", {lesson::by_head(Q, H, "Q[0]  [T, E]")}},
                  {"view(B, T, H, D), permute(0, 2, 1, 3): head h is q[0, h]  [T, D]",
                   lesson::head_blocks(Qh, "q")}});

        L.section("4. The same for K and V, by the core");
        SHOWN(L, const mha::Tensor4 Kh = mha::split_heads(mha::linear(X, m.wk), H));
        L.recap("k = split(w_k(X))", "k", Kh, "B, H, T, D");
        SHOWN(L, const mha::Tensor4 Vh = mha::split_heads(mha::linear(X, m.wv), H));
        L.recap("v = split(w_v(X))", "v", Vh, "B, H, T, D");

        return L.check("mha::split_heads(Q, H)",
                       mha::max_abs_diff(Qh, mha::split_heads(Q, H)), 0.0);
    });
}
