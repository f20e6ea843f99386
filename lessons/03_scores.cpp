// Lesson 03: scaled dot-product scores.
//
// Adds: S = Q K^T / sqrt(D), one matrix product per (batch, head), written
// out with xtensor-blas; and why the division by sqrt(D).
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
    for (float x : t) {
        sum += x;
        sq += double(x) * x;
    }
    const double n = double(t.size());
    return sq / n - (sum / n) * (sum / n);
}

}  // namespace

int main(int argc, char** argv) {
    const lesson::Info info{"03_scores", "scores = Q K^T / sqrt(D), per head"};
    return lesson::run(argc, argv, info, [](lesson::Lesson& L) {
        const std::size_t B = L.opt.batch, T = L.opt.time, E = L.opt.d_model;
        const std::size_t H = L.opt.heads;

        L.section("Earlier stages, by the core");
        mha::Rng rng(L.opt.seed);
        const mha::Tensor3 X = mha::randn(B, T, E, rng);  // [B, T, E]
        const mha::MultiHeadAttention m(E, H, mha::Init::xavier(L.opt.seed));
        const std::size_t D = m.head_dim();
        const mha::Tensor4 Q = mha::split_heads(mha::linear(X, m.wq), H);
        L.step("q = split(w_q(X))", "q", Q, "", "mha::split_heads(mha::linear(X, m.wq), H)");
        const mha::Tensor4 K = mha::split_heads(mha::linear(X, m.wk), H);
        L.step("k = split(w_k(X))", "k", K, "", "mha::split_heads(mha::linear(X, m.wk), H)");

        L.section("1. Q K^T, one product per (batch, head)");
        // xt::linalg::dot is numpy.dot, not a batched matmul, so we loop over
        // (b, h) and multiply the [T, D] blocks: [T, D] x [D, T] -> [T, T].
        mha::Tensor4 raw({B, H, T, T});  // [B, H, Tq, Tk]
        for (std::size_t b = 0; b < B; ++b)
            for (std::size_t h = 0; h < H; ++h) {
                const mha::Tensor2 q = xt::view(Q, b, h);  // [T, D]
                const mha::Tensor2 k = xt::view(K, b, h);  // [T, D]
                xt::view(raw, b, h) = xt::linalg::dot(q, xt::transpose(k));
            }
        L.step("q @ k.transpose(2, 3)", "raw", raw, "q @ k.transpose(2, 3)",
               "xt::view(raw, b, h) = xt::linalg::dot(q, xt::transpose(k));");
        if (T == D) {
            L.say("The two 64s of q, [B, H, T, D], differ: the product keeps T and "
                  "sums over D, so raw is [B, H, Tq, Tk]. Try --time 10.");
        }

        L.section("2. Divide by sqrt(D)");
        const mha::Tensor4 S = raw / std::sqrt(static_cast<float>(D));
        L.step("score = raw / sqrt(n_d)", "score", S, "/ math.sqrt(n_d)",
               "mha::Tensor4 S = raw / std::sqrt(static_cast<float>(D));");
        using lesson::fixed;
        L.say("Why sqrt(D): var(q) = " + fixed(var_of(Q)) + " and var(k) = " +
              fixed(var_of(K)) + ". A dot product adds D = " + std::to_string(D) +
              " such products, so var(raw) = " + fixed(var_of(raw)) +
              ", about D times var(q) var(k); var(score) = " + fixed(var_of(S)) +
              " is back near var(q) var(k) = " + fixed(var_of(Q) * var_of(K)) + ".");
        L.say("Large scores make the softmax of lesson 05 nearly one-hot, and "
              "its gradient nearly zero. The pitfall lessons measure this.");

        return L.check("mha::scaled_scores(Q, K)",
                       mha::max_abs_diff(S, mha::scaled_scores(Q, K)), 1e-5);
    });
}
