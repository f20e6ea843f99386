// Lesson 04: the causal mask and the padding mask.
//
// Adds: `torch.tril` as a 0/1 grid, and `masked_fill(mask == 0, -inf)`,
// written out with xtensor; a padding mask from sequence lengths.
// Mirrors: the handwritten-course article's
// `mask = torch.tril(torch.ones(time, time, dtype=bool))` and
// `score = score.masked_fill(mask == 0, float("-inf"))`; the four-linear-
// layers article's `energy.masked_fill(mask == 0, -1e10)`.
//
// B = batch, T = time, E = d_model, H = heads, D = head_dim = E / H.
#include <algorithm>
#include <array>
#include <cmath>
#include <vector>

#include <xtensor/xbuilder.hpp>
#include <xtensor/xmanipulation.hpp>
#include <xtensor/xoperation.hpp>

#include "mha/attention.hpp"
#include "mha/heads.hpp"
#include "mha/mask.hpp"
#include "mha/scores.hpp"
#include "support/lesson.hpp"

int main(int argc, char** argv) {
    const lesson::Info info{"04_mask", "causal tril mask, masked_fill, padding", true};
    return lesson::run(argc, argv, info, [](lesson::Lesson& L) {
        const std::size_t B = L.opt.batch, T = L.opt.time, E = L.opt.d_model;
        const std::size_t H = L.opt.heads;

        L.section("Earlier stages, by the core");
        mha::Rng rng(L.opt.seed);
        const mha::Tensor3 X = mha::randn(B, T, E, rng);  // [B, T, E]
        const mha::MultiHeadAttention m(E, H, mha::Init::xavier(L.opt.seed));
        const mha::Tensor4 Q = mha::split_heads(mha::linear(X, m.wq), H);
        const mha::Tensor4 K = mha::split_heads(mha::linear(X, m.wk), H);
        const mha::Tensor4 S = mha::scaled_scores(Q, K);  // [B, H, T, T]
        L.step("score = q k^T / sqrt(n_d)", "score", S, "", "mha::scaled_scores(Q, K)");

        L.section("1. The causal mask: torch.tril");
        // Query i may look at keys 0..i only: the lower triangle, diagonal
        // included. 1 = may attend, 0 = masked (the articles' polarity).
        const xt::xtensor<bool, 2> tril = xt::tril(xt::ones<bool>({T, T}));
        L.step("mask = tril(ones(T, T))", "mask", tril,
               "mask = torch.tril(torch.ones(time, time, dtype=bool))",
               "xt::xtensor<bool, 2> tril = xt::tril(xt::ones<bool>({T, T}));");
        std::vector<std::vector<float>> grid(T, std::vector<float>(T));
        for (std::size_t i = 0; i < T; ++i)
            for (std::size_t j = 0; j < T; ++j) grid[i][j] = tril(i, j);
        L.picture("causal mask, 1 = may attend", "causal_mask", grid,
                  "query i", "key j");

        L.section("2. masked_fill(mask == 0, -inf)");
        // The [T, T] mask broadcasts over batch and heads, as in PyTorch.
        const float fill = -INFINITY;
        const std::array<std::size_t, 4> one_one_tt{1, 1, T, T};
        const mha::Tensor4 masked =
            xt::where(xt::reshape_view(tril, one_one_tt), S, fill);
        L.step("score.masked_fill(mask==0, -inf)", "score", masked,
               "score = score.masked_fill(mask == 0, float(\"-inf\"))",
               "xt::where(xt::reshape_view(tril, one_one_tt), S, fill)");
        L.say("Why -inf: exp(-inf) = 0, so after the softmax a masked key gets "
              "weight exactly 0. The four-linear-layers article fills -1e10 "
              "instead: exp(-1e10 - max) is 0 in float too, and a row with "
              "every key masked then gets uniform weights rather than NaN.");

        L.section("3. A padding mask from lengths");
        // Sequence b is real for its first lengths[b] tokens; the rest is
        // padding that no query should attend to.
        std::vector<std::size_t> lengths(B);
        for (std::size_t b = 0; b < B; ++b) lengths[b] = T - b % T;  // T, T-1, ...
        lengths[0] = std::max<std::size_t>(1, std::min<std::size_t>(T, 20) * 3 / 4);
        const mha::Mask pad = mha::padding_mask(lengths, T);  // [B, 1, 1, T]
        L.step("pad = lengths[b] > j", "pad", pad,
               "key_padding_mask (True = ignore) is its negation",
               "mha::Mask pad = mha::padding_mask(lengths, T);");
        const mha::Mask both = mha::combine_masks(mha::causal_mask(T, T), pad);
        L.step("both = tril & pad", "both", both, "",
               "mha::combine_masks(mha::causal_mask(T, T), pad)",
               lesson::Show::shape_only);
        const std::size_t show = 0;  // the first sequence
        std::vector<std::vector<float>> pgrid(T, std::vector<float>(T));
        for (std::size_t i = 0; i < T; ++i)
            for (std::size_t j = 0; j < T; ++j) pgrid[i][j] = both(show, 0, i, j);
        L.picture("causal + padding, sequence " + std::to_string(show) +
                      " (length " + std::to_string(lengths[show]) + ")",
                  "causal_padding_mask", pgrid, "query i", "key j");

        const mha::Tensor4 core = mha::apply_mask(S, mha::causal_mask(T, T));
        return L.check("mha::apply_mask(S, causal)",
                       mha::max_abs_diff(masked, core), 0.0);
    });
}
