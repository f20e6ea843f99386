// Lesson 04: the causal mask and the padding mask.
//
// Adds: `torch.tril` as a 0/1 grid, and `masked_fill(mask == 0, -inf)`,
// written out with xtensor; a padding mask from sequence lengths; and the
// four conventions a mask is written in, converted into one another.
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

#include <xtensor/xadapt.hpp>
#include <xtensor/xbuilder.hpp>
#include <xtensor/xmanipulation.hpp>
#include <xtensor/xoperation.hpp>

#include "mha/attention.hpp"
#include "mha/heads.hpp"
#include "mha/mask.hpp"
#include "mha/scores.hpp"
#include "support/lesson.hpp"

int main(int argc, char** argv) {
    lesson::Info info;
    info.name = "04_mask", info.summary = "causal tril mask, masked_fill, padding";
    info.draws = true, info.dump_mb = 34.1;
    return lesson::run(argc, argv, info, [](lesson::Lesson& L) {
        const std::size_t B = L.opt.batch, T = L.opt.time, E = L.opt.d_model;
        const std::size_t H = L.opt.heads;

        L.section("Earlier stages, by the core");
        mha::Rng rng(L.opt.seed);
        const mha::Tensor3 X = mha::randn(B, T, E, rng);  // [B, T, E]
        const mha::MultiHeadAttention m(E, H, mha::Init::xavier(L.opt.seed));
        const mha::Tensor4 Q = mha::split_heads(mha::linear(X, m.wq), H);
        const mha::Tensor4 K = mha::split_heads(mha::linear(X, m.wk), H);
        SHOWN(L, const mha::Tensor4 S = mha::scaled_scores(Q, K));  // [B, H, T, T]
        L.recap("score = q k^T / sqrt(n_d)", "score", S, "B, H, Tq, Tk");

        L.section("1. The causal mask: torch.tril");
        // Query i may look at keys 0..i only: the lower triangle, diagonal
        // included. 1 = may attend, 0 = masked (the articles' polarity).
        SHOWN(L, const xt::xtensor<bool, 2> tril = xt::tril(xt::ones<bool>({T, T})));
        L.step("mask = tril(ones(T, T))", "mask", tril, "Tq, Tk",
               "mask = torch.tril(torch.ones(time, time, dtype=bool))");
        std::vector<std::vector<float>> grid(T, std::vector<float>(T));
        for (std::size_t i = 0; i < T; ++i)
            for (std::size_t j = 0; j < T; ++j) grid[i][j] = tril(i, j);
        L.mask_picture("causal mask, 1 = may attend", "causal_mask", grid,
                       "query i", "key j");

        L.section("2. masked_fill(mask == 0, -inf)");
        // The [T, T] mask broadcasts over batch and heads, as in PyTorch.
        const float fill = -INFINITY;
        const std::array<std::size_t, 4> one_one_tt{1, 1, T, T};
        const auto tril4 = xt::reshape_view(tril, one_one_tt);  // [1, 1, T, T], no copy
        SHOWN(L, const mha::Tensor4 masked = xt::where(tril4, S, fill));
        L.step("score.masked_fill(mask==0, -inf)", "score", masked, "B, H, Tq, Tk",
               "score = score.masked_fill(mask == 0, float(\"-inf\"))");
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
        L.dump("lengths", mha::Tensor1(xt::adapt(lengths)));  // for lessons/pytorch/
        SHOWN(L, const mha::Mask pad = mha::padding_mask(lengths, T));  // [B, 1, 1, T]
        L.step("pad = lengths[b] > j", "pad", pad, "B, 1, 1, Tk",
               "key_padding_mask (True = ignore) is its negation");
        SHOWN(L, const mha::Mask both = mha::combine_masks(mha::causal_mask(T, T), pad));
        L.step("both = tril & pad", "both", both, "B, 1, Tq, Tk", "");
        const std::size_t show = 0;  // the first sequence
        std::vector<std::vector<float>> pgrid(T, std::vector<float>(T));
        for (std::size_t i = 0; i < T; ++i)
            for (std::size_t j = 0; j < T; ++j) pgrid[i][j] = both(show, 0, i, j);
        L.mask_picture("causal + padding, sequence " + std::to_string(show) +
                           " (length " + std::to_string(lengths[show]) + ")",
                       "causal_padding_mask", pgrid, "query i", "key j");

        L.section("4. Four ways to write the same mask");
        // The same padding, 2 sequences of 5 keys, the second with 3 real
        // ones, in each convention a student meets; the core converts.
        const mha::Mask keep = mha::padding_mask({5, 3}, 5);   // [2, 1, 1, 5]
        SHOWN(L, const mha::Mask torch_bool = mha::to_torch_bool(keep));  // True = may not
        L.code("key_padding_mask = ~keep  # True = ignore");
        SHOWN(L, const mha::Tensor4 additive = mha::to_additive(keep));  // 0 or -inf
        L.code("attn_mask = torch.zeros(5).masked_fill(~keep, float(\"-inf\"))");
        const std::vector<std::size_t> lengths2 = mha::to_lengths(keep);
        auto row = [](const char* what, auto cell) {
            std::string s = what;
            for (std::size_t b = 0; b < 2; ++b) {
                s += "   seq " + std::to_string(b) + ":";
                for (std::size_t j = 0; j < 5; ++j) s += cell(b, j);
            }
            std::printf("  %s\n", s.c_str());
        };
        row("keep, 1 = may attend (articles)  ", [&](std::size_t b, std::size_t j) {
            return std::string(keep(b, 0, 0, j) ? " 1" : " 0"); });
        row("PyTorch bool, True = may not     ", [&](std::size_t b, std::size_t j) {
            return std::string(torch_bool(b, 0, 0, j) ? " T" : " F"); });
        row("additive, added to the scores    ", [&](std::size_t b, std::size_t j) {
            return std::string(additive(b, 0, 0, j) == 0.0f ? " 0" : " -inf"); });
        std::printf("  %-33s   seq 0: %zu           seq 1: %zu\n", "valid lengths",
                    lengths2[0], lengths2[1]);
        // Read with the wrong polarity, a mask attends to exactly the keys it
        // should not: here, the padding.
        mha::Rng small_rng(1);
        const mha::MultiHeadAttention small(8, 2, mha::Init::xavier(1));
        const mha::Tensor3 x = mha::randn(2, 5, 8, small_rng);
        const mha::Tensor4 right = small.forward_stages(x, x, x, &keep).weights;
        const mha::Tensor4 flipped = small.forward_stages(x, x, x, &torch_bool).weights;
        std::string r = "  sequence 1, query 0: right  ", f = "  PyTorch's mask as a keep:   ";
        for (std::size_t j = 0; j < 5; ++j) {
            r += " " + lesson::fixed(right(1, 0, 0, j), 3);
            f += " " + lesson::fixed(flipped(1, 0, 0, j), 3);
        }
        std::printf("%s\n%s\n", r.c_str(), f.c_str());
        int rc = L.claim("each convention converts back to the same keep-mask",
                         mha::max_abs_diff(mha::from_torch_bool(torch_bool), keep) == 0 &&
                             mha::max_abs_diff(mha::from_additive(additive), keep) == 0 &&
                             mha::max_abs_diff(mha::padding_mask(lengths2, 5), keep) == 0);
        rc |= L.claim("a flipped polarity attends to the padding instead",
                      flipped(1, 0, 0, 0) == 0.0f && flipped(1, 0, 0, 4) > 0.0f);

        const mha::Tensor4 core = mha::apply_mask(S, mha::causal_mask(T, T));
        return rc | L.check("mha::apply_mask(S, causal)", mha::max_abs_diff(masked, core), 0.0);
    });
}
