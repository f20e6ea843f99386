// Lesson 03: scaled dot-product scores.
//
// Adds: S = Q K^T / sqrt(D), one matrix product per (batch, head), written
// out with xtensor-blas; why the division by sqrt(D), and what the
// variances are under each article's init.
// Mirrors: the handwritten-course article's
// `score = q @ k.transpose(2, 3) / math.sqrt(n_d)`; the four-linear-layers
// article's `energy = torch.matmul(Q, K.permute(0, 1, 3, 2)) /
// (self.head_dim ** 0.5)`.
//
// B = batch, T = time, E = d_model, H = heads, D = head_dim = E / H.
#include <cmath>

#include <xtensor-blas/xlinalg.hpp>
#include <xtensor/xview.hpp>

#include "mha/attention.hpp"
#include "mha/heads.hpp"
#include "mha/scores.hpp"
#include "support/lesson.hpp"

namespace {

double var_of(const mha::Tensor4& t) {
    double sum = 0, sq = 0;
    for (float x : t) sum += x, sq += double(x) * x;
    const double n = double(t.size());
    return sq / n - (sum / n) * (sum / n);
}

}  // namespace

int main(int argc, char** argv) {
    lesson::Info info;
    info.name = "03_scores", info.summary = "scores = Q K^T / sqrt(D), per head";
    info.draws = true, info.dump_mb = 88.1;
    return lesson::run(argc, argv, info, [](lesson::Lesson& L) {
        const std::size_t B = L.opt.batch, T = L.opt.time, E = L.opt.d_model;
        const std::size_t H = L.opt.heads;
        using lesson::fixed;

        L.section("Earlier stages, by the core");
        mha::Rng rng(L.opt.seed);
        SHOWN(L, const mha::Tensor3 X = mha::randn(B, T, E, rng));  // [B, T, E]
        L.recap("X = randn(B, T, E)", "X", X, "B, T, E");
        const mha::MultiHeadAttention m(E, H, mha::Init::xavier(L.opt.seed));
        L.dump_layers(m);  // with --dump: the weights, for lessons/pytorch/
        const std::size_t D = m.head_dim();
        SHOWN(L, const mha::Tensor4 Q = mha::split_heads(mha::linear(X, m.wq), H));
        L.recap("q = split(w_q(X))", "q", Q, "B, H, T, D");
        SHOWN(L, const mha::Tensor4 K = mha::split_heads(mha::linear(X, m.wk), H));
        L.recap("k = split(w_k(X))", "k", K, "B, H, T, D");

        L.section("1. Q K^T, one product per (batch, head)");
        // xt::linalg::dot is numpy.dot, not a batched matmul, so we loop over
        // (b, h) and multiply the [T, D] blocks: [T, D] x [D, T] -> [T, T].
        mha::Tensor4 raw({B, H, T, T});  // [B, H, Tq, Tk]
        for (std::size_t b = 0; b < B; ++b)
            for (std::size_t h = 0; h < H; ++h) {
                const mha::Tensor2 q = xt::view(Q, b, h);  // [T, D]
                const mha::Tensor2 k = xt::view(K, b, h);  // [T, D]
                SHOWN(L, xt::view(raw, b, h) = xt::linalg::dot(q, xt::transpose(k)));
            }
        L.step("q @ k.transpose(2, 3)", "raw", raw, "B, H, Tq, Tk", "q @ k.transpose(2, 3)");

        L.section("2. Divide by sqrt(D)");
        SHOWN(L, const mha::Tensor4 S = raw / std::sqrt(static_cast<float>(D)));
        L.step("score = raw / sqrt(n_d)", "score", S, "B, H, Tq, Tk", "/ math.sqrt(n_d)");
        const double vq = var_of(Q), vk = var_of(K), vs = var_of(S);
        const double n = double(S.size());
        L.say("Why sqrt(D): a score sums D products q_d k_d, so its variance is about D "
              "var(q) var(k) = " + std::to_string(D) + " x " + fixed(vq) + " x " + fixed(vk) +
              " (q and k independent, mean 0):");
        L.relation("var(raw)", var_of(raw), "D var(q) var(k)", D * vq * vk, 0.15,
                   "That holds on average over many scores: these are " +
                       std::to_string(S.size()) + " scores of " + std::to_string(B * T) +
                       " tokens, and a sample variance of N numbers scatters by about "
                       "sqrt(2/N) = " + fixed(std::sqrt(2 / n), 2) + " alone; at the "
                       "default sizes the two agree within 15%.");
        L.figure("batch 0, head 0: Q K^T, then divided by sqrt(D) = " +
                     fixed(std::sqrt(double(D)), 2), "scores_scaling",
                 {lesson::grid_of(raw, 0, 0, "raw = Q K^T"),
                  lesson::grid_of(S, 0, 0, "score = raw / sqrt(D)")}, true);
        L.say("Dividing by sqrt(D) divides every variance by D: var(score) = var(raw) / " +
              std::to_string(D) + " = " + fixed(vs) + ", and on average var(q) var(k), "
              "whatever the head size.");

        L.section("3. These variances assume Xavier init");
        // The handwritten-course article never re-initialises: nn.Linear's own
        // U(-1/sqrt(E), 1/sqrt(E)) has var(w) = 1/(3E), a third of Xavier's.
        SHOWN(L, mha::MultiHeadAttention plain(E, H, mha::Init::torch_linear(L.opt.seed)));
        const mha::Tensor4 S2 = mha::scaled_scores(mha::split_heads(mha::linear(X, plain.wq), H),
                                                   mha::split_heads(mha::linear(X, plain.wk), H));
        L.code("self.w_q = nn.Linear(d_model, d_model)  # no re-init");
        L.say("With nn.Linear's own init (the handwritten-course article), var(w) = 1/(3E), "
              "so on average var(q) = var(k) = 1/3 and var(score) = 1/9:");
        L.relation("var(score)", var_of(S2), "1/9", 1.0 / 9, 0.2,
                   "Again an average: with " + std::to_string(S2.size()) + " scores it "
                   "scatters; at the default sizes it is within 20% of 1/9.");
        if (var_of(S2) < vs) {
            L.say("Its softmax starts flatter than the four-linear-layers article's, whose "
                  "Xavier scores have var(score) = " + fixed(vs) + ".");
        }
        L.say("Large scores make the softmax nearly one-hot, and its gradient nearly "
              "zero; lesson 13 measures this.");

        return L.check("mha::scaled_scores(Q, K)",
                       mha::max_abs_diff(S, mha::scaled_scores(Q, K)), 1e-5);
    });
}
