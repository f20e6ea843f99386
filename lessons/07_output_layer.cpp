// Lesson 07: the output layer, and the whole module.
//
// Adds: the output layer w_o (fc_out / w_combine in the articles), written
// out on what forward_stages() computed, the module's stages one call per
// line; then forward(), the same arithmetic in the fast engine, held to it.
// Last, cross-attention, with Tq != Tk.
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
#include "support/blocks.hpp"
#include "support/lesson.hpp"

int main(int argc, char** argv) {
    lesson::Info info;
    info.name = "07_output_layer";
    info.summary = "output = w_combine(x); the whole module";
    info.draws = true, info.dump_mb = 111.9;
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
        const mha::Mask causal = mha::causal_mask(T, T);  // [1, 1, T, T]
        // forward_stages() is the articles' forward, the stages of lessons
        // 01-06 one call per line (src/mha/attention.cpp), every tensor kept.
        SHOWN(L, const mha::Stages stages = m.forward_stages(X, X, X, &causal));
        L.recap("v = split(w_v(X))", "v", stages.v, "B, H, T, D");
        SHOWN(L, const mha::Tensor4& weights = stages.weights);  // [B, H, Tq, Tk]
        L.recap("weights = softmax(mask(q k^T / sqrt(D)))", "weights", weights,
                "B, H, Tq, Tk");
        SHOWN(L, const mha::Tensor3& x = stages.context);  // merge(weights @ v)
        L.recap("x = merge(weights @ v)", "x", x, "B, T, E");

        L.section("1. The output layer w_o, written out");
        // Each head saw only D of the E numbers; w_o mixes the H heads'
        // results into one E-vector per token: y = x W_o^T + b_o.
        const std::array<std::size_t, 2> rows_shape{B * T, E};
        const mha::Tensor2 rows = xt::reshape_view(x, rows_shape);  // [B*T, E]
        const auto Wt = xt::transpose(m.w_o.weight);  // [E, E], a view
        SHOWN(L, const mha::Tensor2 Y = xt::linalg::dot(rows, Wt) + m.w_o.bias);
        const std::array<std::size_t, 3> bte{B, T, E};
        const mha::Tensor3 out = xt::reshape_view(Y, bte);  // [B, T, E]
        L.step("output = w_combine(x)", "output", out, "B, T, E",
               "output = self.w_combine(score)  # fc_out in the other article");
        L.blocks("w_o mixes the heads' columns", "output_layer",
                 {{"", {lesson::by_head(x, H, "x[0]  [T, E]")}},
                  {"output = x W_o^T + b_o: every output column reads every head",
                   {lesson::weight_by_head(m.w_o.weight, H, "W_o^T  [E, E]"),
                    lesson::mixed(out, H, "output[0]  [T, E]")}}});

        L.say("That is the module's last stage: forward_stages(X, X, X) is the whole "
              "module, the article's attention(X, X, X).");
        int rc = L.check("stages.output, the core's last stage",
                         mha::max_abs_diff(out, stages.output), 1e-6);

        L.section("2. The same module, fast");
        SHOWN(L, const mha::AttentionOutput fast = m.forward(X, X, X, &causal));
        L.step("(the fast path)", "fast.output", fast.output, "B, T, E", "");
        L.say("The fast path lives in src/mha/fast/: the same sums, no head copies, every "
              "core busy.");
        const double d_out = mha::max_abs_diff(fast.output, stages.output);
        const double d_w = mha::max_abs_diff(fast.weights, stages.weights);
        rc |= L.claim("fast.output = stages.output within 1e-5 (max |diff| = " +
                          fixed(d_out, 7) + ")", d_out <= 1e-5);
        rc |= L.claim("fast.weights = stages.weights within 1e-6 (max |diff| = " +
                          fixed(d_w, 7) + ")", d_w <= 1e-6);

        L.section("3. Cross-attention: 10 queries over 6 keys");
        // Queries from one sequence, keys and values from another (an
        // encoder's output, say): Tq and Tk differ.
        L.let("Tq", 10), L.let("Tk", 6);
        mha::Rng other(L.opt.seed + 1);
        const mha::Tensor3 dec = mha::randn(B, 10, E, other);  // [B, Tq, E]
        const mha::Tensor3 enc = mha::randn(B, 6, E, other);   // [B, Tk, E]
        std::vector<std::size_t> lengths(B, 6);
        lengths[0] = 4;  // the first sequence's memory: 4 real keys, 2 of padding
        const mha::Mask pad = mha::padding_mask(lengths, 6);  // [B, 1, 1, Tk]
        L.dump("dec", dec), L.dump("enc", enc), L.dump("cross.pad", pad);  // for lessons/pytorch/
        SHOWN(L, const mha::AttentionOutput cross = m.forward(dec, enc, enc, &pad));
        L.step("attention(dec, enc, enc)", "cross.weights", cross.weights, "B, H, Tq, Tk",
               "out, w = mha(dec, enc, enc, key_padding_mask=~keep)");
        L.say("No causal mask here: query i and key j come from different sequences, so "
              "'later' means nothing between them. What applies is the keys' padding, "
              "[B, 1, 1, Tk], the same for every query.");
        double on_padding = 0;
        for (std::size_t h = 0; h < H; ++h)
            for (std::size_t i = 0; i < 10; ++i)
                on_padding += cross.weights(0, h, i, 4) + cross.weights(0, h, i, 5);
        rc |= L.claim("sequence 0 puts weight " + fixed(on_padding, 1) + " on its padding",
                      on_padding == 0.0);

        L.section("4. Cross-attention's output: a row per query");
        SHOWN(L, const mha::Tensor3& y = cross.output);  // [B, Tq, E]
        L.step("(its output)", "cross.output", y, "B, Tq, E", "");
        const mha::Stages cross_stages = m.forward_stages(dec, enc, enc, &pad);
        const double d_cross = mha::max_abs_diff(cross.output, cross_stages.output);
        rc |= L.claim("and forward equals forward_stages here too (max |diff| = " +
                          fixed(d_cross, 7) + ")", d_cross <= 1e-5);
        std::printf("print(output.shape)  ->  torch.Size(%s)\n", mha::shape_of(out).c_str());
        return rc;
    });
}
