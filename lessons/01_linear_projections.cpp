// Lesson 01: the linear projections wq, wk, wv.
//
// Adds: a linear layer y = x W^T + b, written out with xtensor, on weights
// that start from Xavier init.
// Mirrors: the handwritten-course article's `X = torch.randn(128, 64, 512)`
// and `q, k, v = self.w_q(q), self.w_k(k), self.w_v(v)`; the four-linear-
// layers article's `self.wq = nn.Linear(embed_dim, embed_dim)` and
// `nn.init.xavier_uniform_(self.wq.weight)`.
//
// B = batch, T = time, E = d_model (embed_dim).
#include <array>
#include <cmath>

#include <xtensor-blas/xlinalg.hpp>
#include <xtensor/xmanipulation.hpp>
#include <xtensor/xsort.hpp>

#include "mha/attention.hpp"
#include "support/lesson.hpp"

int main(int argc, char** argv) {
    const lesson::Info info{"01_linear_projections",
                            "Q, K, V = wq(X), wk(X), wv(X)"};
    return lesson::run(argc, argv, info, [](lesson::Lesson& L) {
        const std::size_t B = L.opt.batch, T = L.opt.time, E = L.opt.d_model;
        const std::size_t H = L.opt.heads;
        const std::uint64_t seed = L.opt.seed;

        L.section("0. The input X and the layers");
        mha::Rng rng(seed);
        const mha::Tensor3 X = mha::randn(B, T, E, rng);  // [B, T, E]
        L.step("X = randn(B, T, E)", "X", X, "X = torch.randn(128, 64, 512)",
               "mha::Tensor3 X = mha::randn(B, T, E, rng);");
        // The module owns wq, wk, wv and w_o; this lesson uses wq, wk, wv.
        const mha::MultiHeadAttention m(E, H, mha::Init::xavier(seed));
        L.step("wq.weight", "wq.weight", m.wq.weight,
               "self.wq = nn.Linear(embed_dim, embed_dim)",
               "mha::MultiHeadAttention m(E, H, mha::Init::xavier(seed));",
               lesson::Show::shape_only);
        L.step("wq.bias", "wq.bias", m.wq.bias, "(nn.Linear's own bias)",
               "m.wq.bias", lesson::Show::shape_only);

        const double bound = std::sqrt(6.0 / (E + E));
        const double biggest = xt::amax(xt::abs(m.wq.weight))();
        L.say("Xavier uniform draws every weight from U(-a, a) with a = "
              "sqrt(6 / (fan_in + fan_out)) = " + std::to_string(bound) +
              " here; the largest |weight| drawn is " + std::to_string(biggest) +
              ". It keeps the variance of Q about the variance of X. The "
              "weight is [out, in], as nn.Linear stores it, so y = x W^T + b.");
        L.say("torch.nn.MultiheadAttention initialises differently: one Xavier "
              "draw over wq, wk, wv stacked as [3E, E], so a = sqrt(6 / (4E)) = " +
              lesson::fixed(std::sqrt(6.0 / (4 * E)), 6) + ", sqrt(2) narrower, and "
              "zero biases. mha::Init::torch(seed) does that; the articles' "
              "per-matrix Xavier is mha::Init::xavier(seed).");

        L.section("1. Q = X W^T + b, written out");
        // Every token is a row: view X as [B*T, E] and do one matrix product.
        const std::array<std::size_t, 2> rows_shape{B * T, E};
        const mha::Tensor2 rows = xt::reshape_view(X, rows_shape);  // [B*T, E]
        L.step("rows = X.view(B*T, E)", "rows", rows, "x.view(-1, embed_dim)",
               "mha::Tensor2 rows = xt::reshape_view(X, rows_shape);",
               lesson::Show::shape_only);
        // [B*T, E] x [E, E] -> [B*T, E], then + b broadcast over the rows
        const mha::Tensor2 Y =
            xt::linalg::dot(rows, xt::transpose(m.wq.weight)) + m.wq.bias;
        const std::array<std::size_t, 3> back{B, T, E};
        const mha::Tensor3 Q = xt::reshape_view(Y, back);  // [B, T, E]
        L.step("Q = w_q(X)", "Q", Q, "Q = self.wq(query)",
               "xt::linalg::dot(rows, xt::transpose(m.wq.weight)) + m.wq.bias");

        L.section("2. K and V: the same layer shape, other weights");
        const mha::Tensor3 K = mha::linear(X, m.wk);  // [B, T, E]
        L.recap("K = w_k(X)", "K", K, "mha::Tensor3 K = mha::linear(X, m.wk);");
        const mha::Tensor3 V = mha::linear(X, m.wv);  // [B, T, E]
        L.recap("V = w_v(X)", "V", V, "mha::Tensor3 V = mha::linear(X, m.wv);");
        L.say("Self-attention feeds the same X to all three layers, as "
              "attention(X, X, X) does; each layer learns its own view of it.");

        return L.check("mha::linear(X, m.wq)",
                       mha::max_abs_diff(Q, mha::linear(X, m.wq)), 1e-5);
    });
}
