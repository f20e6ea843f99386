// Lesson 17 (past the articles): grouped-query and multi-query attention.
//
// Adds: H query heads that share H_kv key/value heads. wk and wv shrink to
// [H_kv*D, E]; query head h reads kv head h / (H / H_kv). H_kv = H is the
// articles' module, H_kv = 1 multi-query attention; between them, grouped
// (Llama 2 70B, Mistral). What shrinks is the KV cache of lesson 16.
// Mirrors: current models' code, k = k_proj(x).view(B, T, H_kv, D).transpose(1, 2),
// then k.repeat_interleave(H // H_kv, dim=1) before the articles' Q K^T.
//
// B = batch, T = time, E = d_model, H = heads, D = E / H, H_kv = key/value heads.
#include <cstdio>
#include <string>
#include <vector>

#include <xtensor/xview.hpp>

#include "mha/heads.hpp"
#include "mha/kv_cache.hpp"
#include "mha/scores.hpp"
#include "support/lesson.hpp"

int main(int argc, char** argv) {
    lesson::Info info;
    info.name = "17_grouped_query";
    info.summary = "H query heads sharing H_kv key/value heads";
    info.draws = true, info.dump_mb = 85.5;
    return lesson::run(argc, argv, info, [](lesson::Lesson& L) {
        const std::size_t B = L.opt.batch, T = L.opt.time, E = L.opt.d_model, H = L.opt.heads;
        const std::size_t D = E / H;
        using lesson::fixed;
        auto sci = [](double x) {
            char text[16];
            std::snprintf(text, sizeof text, "%.1e", x);
            return std::string(text);
        };
        mha::Rng rng(L.opt.seed);
        const mha::Tensor3 X = mha::randn(B, T, E, rng);  // [B, T, E]

        L.section("1. Fewer key/value heads");
        const std::size_t H_kv = H % 2 == 0 ? H / 2 : H;  // two query heads per kv head
        const std::size_t group = H / H_kv;
        L.let("H_kv", H_kv);
        SHOWN(L, const mha::MultiHeadAttention gqa(E, H, H_kv,
                                                   mha::Init::xavier(L.opt.seed)));
        L.step("k_proj.weight", "wk", gqa.wk.weight, "H_kv*D, E",
               "k_proj = nn.Linear(E, H_kv * D)");
        SHOWN(L, const mha::Tensor4 k = mha::split_heads(mha::linear(X, gqa.wk), H_kv));
        L.step("k = split(wk(X)), H_kv heads", "k", k, "B, H_kv, T, D",
               "k = k_proj(x).view(B, T, H_kv, D).transpose(1, 2)");

        L.section("2. v has H_kv heads too, q all H");
        SHOWN(L, const mha::Tensor4 v = mha::split_heads(mha::linear(X, gqa.wv), H_kv));
        L.step("v = split(wv(X)), H_kv heads", "v", v, "B, H_kv, T, D",
               "v = v_proj(x).view(B, T, H_kv, D).transpose(1, 2)");
        SHOWN(L, const mha::Tensor4 q = mha::split_heads(mha::linear(X, gqa.wq), H));
        L.step("q = split(wq(X))", "q", q, "B, H, T, D",
               "q = q_proj(x).view(B, T, H, D).transpose(1, 2)");

        L.section("3. Meeting the query heads: a copy, or an index");
        // PyTorch copies each kv head to the H / H_kv query heads that read it
        mha::Tensor4 k_rep = mha::Tensor4::from_shape({B, H, T, D});
        for (std::size_t h = 0; h < H; ++h) {
            SHOWN(L, xt::view(k_rep, xt::all(), h) = xt::view(k, xt::all(), h / group));
        }
        L.step("k.repeat_interleave(H / H_kv, dim=1)", "k_rep", k_rep, "B, H, T, D",
               "k = k.repeat_interleave(H // H_kv, dim=1)");
        std::printf("  query head h :");
        for (std::size_t h = 0; h < H; ++h) std::printf(" %2zu", h);
        std::printf("\n  kv head h / %zu:", group);
        for (std::size_t h = 0; h < H; ++h) std::printf(" %2zu", h / group);
        std::printf("\n");
        const mha::Tensor4 by_copy = mha::scaled_scores(q, k_rep);  // [B, H, T, T]
        // by_index reads kv head h / group in place: k[:, h / group]
        SHOWN(L, const mha::Tensor4 by_index = mha::scaled_scores(q, k));
        L.step("scores, each head h against kv head h / (H / H_kv)", "scores", by_index,
               "B, H, T, T", "q @ k.transpose(2, 3) / math.sqrt(D)");
        const double copy_diff = mha::max_abs_diff(by_copy, by_index);
        L.figure("batch 0: each query head's scores, against the kv head it shares",
                 "gqa_shared_heads", lesson::head_grids(by_index, 0, nullptr, group), true);
        L.say("The core never makes k_rep: scaled_scores() and attend() read kv head h / " +
              std::to_string(group) + " in place. Scores by the copy against by the index: "
              "max |diff| = " + sci(copy_diff) + ".");

        L.section("4. Copied K/V weights: grouped attention is the articles' module");
        // An MHA whose wk, wv repeat each kv head's rows over its group
        mha::MultiHeadAttention full(E, H, mha::Init::xavier(L.opt.seed));
        full.wq = gqa.wq, full.w_o = gqa.w_o;
        auto rows = [D](std::size_t head) { return xt::range(head * D, head * D + D); };
        for (std::size_t h = 0; h < H; ++h) {  // head h's rows from its kv head's
            SHOWN(L, xt::view(full.wk.weight, rows(h)) =
                         xt::view(gqa.wk.weight, rows(h / group)));
            xt::view(full.wv.weight, rows(h)) = xt::view(gqa.wv.weight, rows(h / group));
            xt::view(full.wk.bias, rows(h)) = xt::view(gqa.wk.bias, rows(h / group));
            xt::view(full.wv.bias, rows(h)) = xt::view(gqa.wv.bias, rows(h / group));
        }
        L.step("wk with each kv head's rows repeated", "full.wk", full.wk.weight, "E, E",
               "k_proj.weight.view(H_kv, D, E)"
               ".repeat_interleave(H // H_kv, dim=0).view(E, E)");
        const mha::Mask causal = mha::causal_mask(T, T);
        SHOWN(L, const mha::Tensor3 y_gqa = gqa.forward(X, X, X, &causal).output);
        const mha::Tensor3 y_full = full.forward(X, X, X, &causal).output;  // [B, T, E]
        const double same = mha::max_abs_diff(y_gqa, y_full);
        // 0 where each sum adds its terms in one order whatever wk's width (the
        // engine's kernels); a BLAS may order a narrower product's sums otherwise.
        const std::string how = same == 0.0 ? "exactly" : "to rounding";
        L.step("gqa(X) against full(X)", "y_gqa", y_gqa, "B, T, E", "");
        L.say("max |diff| = " + sci(same) + ": the same numbers " + how + ", with H_kv = " +
              std::to_string(H_kv) + " key/value heads instead of H = " + std::to_string(H) +
              ". Grouping is a constraint on wk and wv, not another formula.");

        L.section("5. H_kv = H, H/2, 1: what changes, what does not");
        std::printf("%6s %18s %16s %12s %18s\n", "H_kv", "k shape", "output shape", "wk params",
                    "cache bytes/token");
        std::vector<std::size_t> kvs = {H};
        if (H % 2 == 0 && H / 2 > 1) kvs.push_back(H / 2);
        if (H > 1) kvs.push_back(1);
        double ratio = 0;
        for (std::size_t g : kvs) {
            const mha::MultiHeadAttention m(E, H, g, mha::Init::xavier(L.opt.seed));
            SHOWN(L, mha::KVCache c = mha::make_cache(m, B, T));
            const mha::Tensor3 y = m.prefill(X, c);  // the causal forward, K and V kept
            const double per_token = double(c.bytes()) / (B * T);  // K and V, all kv heads
            if (g == H) ratio = per_token;
            if (g == kvs.back()) ratio /= per_token;
            std::printf("%6zu %18s %16s %12zu %18.0f\n", g,
                        mha::shape_str(std::vector<std::size_t>{B, g, T, D}).c_str(),
                        mha::shape_of(y).c_str(), m.wk.weight.size(), per_token);
        }
        L.code("k_cache = torch.zeros(B, H_kv, T, D)  # and v_cache");
        L.say("Q, the scores, the weights and the output keep their shapes; K, V, wk, wv "
              "and the cache shrink by H / H_kv. Per token a cache holds 2 H_kv D floats "
              "(K and V) per layer.");
        const double big = 2.0 * 80 * 8 * 128 * 2;  // Llama 2 70B: 80 layers, 8 kv heads
        std::printf("Llama 2 70B: 80 layers x 2 x H_kv 8 x D 128 x 2 bytes (float16) = %.0f "
                    "bytes/token\n  (with H_kv = H = 64 it would be %.0f: 8 times more)\n",
                    big, big * 8);

        int rc = L.claim("scores by repeat_interleave equal scores by index (max |diff| = " +
                             sci(copy_diff) + ")", copy_diff == 0.0);
        rc |= L.claim("GQA with copied K/V weights equals MHA " + how + " (max |diff| = " +
                          sci(same) + ")", same < 1e-5);
        rc |= L.claim("the cache of H_kv = " + std::to_string(kvs.back()) + " is " +
                          fixed(ratio, 0) + " = H / H_kv times smaller",
                      ratio == double(H) / kvs.back());
        return rc;
    });
}
