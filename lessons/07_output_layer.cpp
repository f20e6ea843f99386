// Lesson 07: the output layer, and the whole module.
//
// Adds: the output layer w_o (fc_out / w_combine in the articles), written
// out; then the whole module: forward_stages(), the stages one call per
// line, and forward(), the same arithmetic in the fast engine; all three
// must give the same numbers.
// Mirrors: the handwritten-course article's `output = self.w_combine(score)`,
// `attention = multi_head_attention(d_model, n_head)`,
// `output = attention(X, X, X)` and `print(output, output.shape)`; the
// four-linear-layers article's `x = self.fc_out(x)`.
//
// B = batch, T = time, E = d_model, H = heads, D = head_dim = E / H.
#include <array>

#include <xtensor-blas/xlinalg.hpp>
#include <xtensor/xmanipulation.hpp>

#include "mha/attend.hpp"
#include "mha/attention.hpp"
#include "mha/heads.hpp"
#include "mha/mask.hpp"
#include "mha/scores.hpp"
#include "mha/softmax.hpp"
#include "support/lesson.hpp"

int main(int argc, char** argv) {
    const lesson::Info info{"07_output_layer", "output = w_combine(x); the whole module"};
    return lesson::run(argc, argv, info, [](lesson::Lesson& L) {
        const std::size_t B = L.opt.batch, T = L.opt.time, E = L.opt.d_model;
        const std::size_t H = L.opt.heads;

        L.section("Earlier stages, by the core");
        mha::Rng rng(L.opt.seed);
        const mha::Tensor3 X = mha::randn(B, T, E, rng);  // [B, T, E]
        L.recap("X = randn(B, T, E)", "X", X, "mha::randn(B, T, E, rng)");
        const mha::MultiHeadAttention m(E, H, mha::Init::xavier(L.opt.seed));
        const mha::Mask causal = mha::causal_mask(T, T);  // [1, 1, T, T]
        const mha::Tensor4 Q = mha::split_heads(mha::linear(X, m.wq), H);
        L.recap("q = split(w_q(X))", "q", Q, "mha::split_heads(mha::linear(X, m.wq), H)");
        const mha::Tensor4 K = mha::split_heads(mha::linear(X, m.wk), H);
        L.recap("k = split(w_k(X))", "k", K, "mha::split_heads(mha::linear(X, m.wk), H)");
        const mha::Tensor4 V = mha::split_heads(mha::linear(X, m.wv), H);
        L.recap("v = split(w_v(X))", "v", V, "mha::split_heads(mha::linear(X, m.wv), H)");
        const mha::Tensor4 S = mha::apply_mask(mha::scaled_scores(Q, K), causal);
        L.recap("score = mask(q k^T / sqrt(D))", "score", S,
                "mha::apply_mask(mha::scaled_scores(Q, K), causal)");
        const mha::Tensor4 W = mha::softmax(S);
        L.recap("weights = softmax(score)", "weights", W, "mha::softmax(S)");
        const mha::Tensor3 x = mha::merge_heads(mha::attend(W, V));
        L.step("x = merge(weights @ v)", "x", x, "", "mha::merge_heads(mha::attend(W, V))");

        L.section("1. The output layer w_o, written out");
        // Each head saw only D of the E numbers; w_o mixes the H heads'
        // results into one E-vector per token: y = x W_o^T + b_o.
        const std::array<std::size_t, 2> rows_shape{B * T, E};
        const mha::Tensor2 rows = xt::reshape_view(x, rows_shape);  // [B*T, E]
        const mha::Tensor2 Y =
            xt::linalg::dot(rows, xt::transpose(m.w_o.weight)) + m.w_o.bias;
        const std::array<std::size_t, 3> bte{B, T, E};
        const mha::Tensor3 out = xt::reshape_view(Y, bte);  // [B, T, E]
        L.step("output = w_combine(x)", "output", out,
               "output = self.w_combine(score)  # fc_out in the other article",
               "xt::linalg::dot(rows, xt::transpose(m.w_o.weight)) + m.w_o.bias");

        L.section("2. The whole module in one call");
        // forward_stages() is the articles' forward: the calls above, one per
        // line, in src/mha/attention.cpp.
        const mha::Stages stages = m.forward_stages(X, X, X, &causal);
        L.step("output = attention(X, X, X)", "output", stages.output,
               "output = attention(X, X, X)",
               "mha::Stages stages = m.forward_stages(X, X, X, &causal);",
               lesson::Show::shape_only);
        int rc = L.check("stages.output, the core's stages",
                         mha::max_abs_diff(out, stages.output), 1e-6);

        L.section("3. The same module, fast");
        const mha::AttentionOutput fast = m.forward(X, X, X, &causal);
        L.step("(the fast path)", "output", fast.output, "",
               "mha::AttentionOutput fast = m.forward(X, X, X, &causal);",
               lesson::Show::shape_only);
        L.say("The fast path lives in src/mha/fast/: the same sums, no head "
              "copies, every core busy.");
        const double d_out = mha::max_abs_diff(fast.output, stages.output);
        const double d_w = mha::max_abs_diff(fast.weights, stages.weights);
        rc |= L.claim("fast.output = stages.output within 1e-5 (max |diff| = " +
                          lesson::fixed(d_out, 7) + ")", d_out <= 1e-5);
        rc |= L.claim("fast.weights = stages.weights within 1e-6 (max |diff| = " +
                          lesson::fixed(d_w, 7) + ")", d_w <= 1e-6);
        std::printf("print(output.shape)  ->  torch.Size(%s)\n",
                    mha::shape_of(out).c_str());
        return rc;
    });
}
