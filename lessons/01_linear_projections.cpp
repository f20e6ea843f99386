// Lesson 01: the linear projections wq, wk, wv.
//
// Adds: a linear layer y = x W^T + b, written out with xtensor, on weights
// that start from Xavier init, and what Xavier does to the variance.
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

namespace {

template <class T>
double var_of(const T& t) {
    double sum = 0, sq = 0;
    for (float x : t) sum += x, sq += double(x) * x;
    const double n = double(t.size());
    return sq / n - (sum / n) * (sum / n);
}

}  // namespace

int main(int argc, char** argv) {
    lesson::Info info;
    info.name = "01_linear_projections", info.summary = "Q, K, V = wq(X), wk(X), wv(X)";
    info.dump_mb = 88.1;
    return lesson::run(argc, argv, info, [](lesson::Lesson& L) {
        const std::size_t B = L.opt.batch, T = L.opt.time, E = L.opt.d_model;
        const std::size_t H = L.opt.heads;
        const std::uint64_t seed = L.opt.seed;
        using lesson::fixed;

        L.section("0. The input X");
        mha::Rng rng(seed);
        SHOWN(L, const mha::Tensor3 X = mha::randn(B, T, E, rng));  // [B, T, E]
        const std::string sizes = std::to_string(B) + ", " + std::to_string(T) + ", " +
                                  std::to_string(E);
        L.step("X = randn(B, T, E)", "X", X, "B, T, E", "X = torch.randn(" + sizes + ")");

        L.section("1. The layer wq, from Xavier init");
        // The module owns wq, wk, wv and w_o; this lesson uses wq, wk, wv.
        SHOWN(L, const mha::MultiHeadAttention m(E, H, mha::Init::xavier(seed)));
        L.step("wq.weight", "wq.weight", m.wq.weight, "E, E",
               "self.wq = nn.Linear(embed_dim, embed_dim)");
        SHOWN(L, const mha::Tensor1& bias = m.wq.bias);  // [E]
        L.step("wq.bias", "wq.bias", bias, "E", "(nn.Linear's own bias)");
        L.dump_layers(m);  // with --dump: the weights, for lessons/pytorch/

        const double bound = std::sqrt(6.0 / (E + E));
        const double biggest = xt::amax(xt::abs(m.wq.weight))();
        L.say("Xavier uniform draws every weight from U(-a, a) with a = sqrt(6 / (fan_in "
              "+ fan_out)) = " + fixed(bound, 6) + " here; the largest |weight| drawn is " +
              fixed(biggest, 6) + ". The weight is [out, in], as nn.Linear stores it, so "
              "y = x W^T + b.");
        L.say("torch.nn.MultiheadAttention draws one Xavier over wq, wk, wv stacked as "
              "[3E, E], so a = sqrt(6 / (4E)) = " + fixed(std::sqrt(6.0 / (4 * E)), 6) +
              ", sqrt(2) narrower, with zero biases: mha::Init::torch(seed).");

        L.section("2. Q = X W^T + b, written out");
        // Every token is a row: view X as [B*T, E] and do one matrix product.
        const std::array<std::size_t, 2> rows_shape{B * T, E};
        SHOWN(L, const mha::Tensor2 rows = xt::reshape_view(X, rows_shape));  // [B*T, E]
        L.step("rows = X.view(B*T, E)", "rows", rows, "B*T, E", "x.view(-1, embed_dim)");
        // [B*T, E] x [E, E] -> [B*T, E], then + b broadcast over the rows
        const mha::Tensor2& W = m.wq.weight;  // [E, E]: out x in, as nn.Linear keeps it
        SHOWN(L, const mha::Tensor2 Y = xt::linalg::dot(rows, xt::transpose(W)) + m.wq.bias);
        const std::array<std::size_t, 3> back{B, T, E};
        const mha::Tensor3 Q = xt::reshape_view(Y, back);  // [B, T, E]
        L.step("Q = w_q(X)", "Q", Q, "B, T, E", "Q = self.wq(query)");

        L.section("3. What Xavier keeps: the variance");
        // Each of the E numbers of a row of Q sums E products x_i w_i. With
        // var(w) = a^2 / 3 = 1 / E, the sum has about the variance of x.
        L.say("Each number of Q sums E products x_i w_i; Xavier's var(w) = a^2 / 3 = "
              "1 / E, so var(Q) = E var(w) var(X) = var(X) on average:");
        const double n = double(Q.size());
        L.relation("var(Q)", var_of(Q), "var(X)", var_of(X), 0.1,
                   "That is an average over weights and data: with " +
                       std::to_string(Q.size()) + " numbers a sample variance scatters "
                       "by about sqrt(2/N) = " + fixed(std::sqrt(2 / n), 2) +
                       " alone. At the default sizes the two agree within 10%.");
        L.say("So the scores of lesson 03 start at a size the softmax can use.");

        L.section("4. K and V: the same layer shape, other weights");
        SHOWN(L, const mha::Tensor3 K = mha::linear(X, m.wk));  // [B, T, E]
        L.step("K = w_k(X)", "K", K, "B, T, E", "K = self.wk(key)");
        SHOWN(L, const mha::Tensor3 V = mha::linear(X, m.wv));  // [B, T, E]
        L.step("V = w_v(X)", "V", V, "B, T, E", "V = self.wv(value)");
        L.say("Self-attention feeds the same X to all three layers, as attention(X, X, X) "
              "does; each layer learns its own view of it.");

        return L.check("mha::linear(X, m.wq)", mha::max_abs_diff(Q, mha::linear(X, m.wq)),
                       1e-5);
    });
}
