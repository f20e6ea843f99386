// Lesson 15: what attention costs, counted and measured.
//
// Adds: the forward's FLOPs, the four-linear-layers article's count_flops against
// the full count, both against a measured run; and its remark that "view+permute is
// faster for small matrices, einops for large ones". einops' rearrange is itself
// view + permute; what is timed is heads multiplied in place through that strided
// view against heads copied into contiguous blocks first.
// Mirrors: `def count_flops(batch_size, seq_len, embed_dim, num_heads)` and
// the einops remark (小矩阵：view+permute 更快 / 大矩阵：einops 更优).
// B = batch, T = time, E = d_model, H = heads, D = head_dim.
#include <algorithm>
#include <array>
#include <vector>

#include <xtensor/xmanipulation.hpp>
#include <xtensor/xview.hpp>

#include "mha/attention.hpp"
#include "mha/fast/blas.hpp"
#include "mha/heads.hpp"
#include "support/lesson.hpp"

namespace {
// The article's count_flops, line for line.
double article_count(double B, double T, double E, double H) {
    double total = 2 * B * T * E * E * 3;        // Q, K, V
    total += 2 * B * H * T * T * (E / H);        // attention: Q K^T only
    total += 2 * B * T * E * E;                  // the output layer
    return total;
}

// All six products: Q K^T and weights x V each cost 2 B H T^2 D.
double full_count(double B, double T, double E, double H) {
    return article_count(B, T, E, H) + 2 * B * H * T * T * (E / H);
}
}  // namespace

int main(int argc, char** argv) {
    lesson::Info info;
    info.name = "15_cost";
    info.summary = "FLOPs counted and measured; views against copies";
    return lesson::run(argc, argv, info, [](lesson::Lesson& L) {
        const std::size_t B = L.opt.batch, T = L.opt.time, E = L.opt.d_model;
        const std::size_t H = L.opt.heads, D = E / H;
        using lesson::fixed;
        int rc = 0;
        mha::Rng rng(L.opt.seed);
        const mha::Tensor3 X = mha::randn(B, T, E, rng);
        const mha::MultiHeadAttention m(E, H, mha::Init::xavier(L.opt.seed));
        const mha::Mask causal = mha::causal_mask(T, T);

        L.section("1. Counting FLOPs");
        SHOWN(L, const double art = article_count(B, T, E, H), full = full_count(B, T, E, H));
        L.code("count_flops(batch_size, seq_len, embed_dim, num_heads)");
        std::printf("article's count_flops: %.4g GFLOP\nfull count:            %.4g "
                    "GFLOP (+%.1f%%: the weights x V product it leaves out)\n",
                    art / 1e9, full / 1e9, 100 * (full - art) / art);
        // A causal mask needs only the scores on and below the diagonal,
        // T (T + 1) / 2 of the T^2 per head: the least any forward can do.
        const double triangle = 8.0 * B * T * E * E + 2.0 * B * H * D * T * (T + 1);
        std::printf("causal count:          %.4g GFLOP (the same, with only the scores "
                    "a query may see)\n", triangle / 1e9);
        const double t = lesson::median_seconds([&] { m.forward(X, X, X, &causal); });
        if (t < 1e-3 || full < 1e6) {  // a few thousand FLOPs: overhead, on any machine
            L.say("The forward takes " + fixed(t * 1e6, 0) + " microseconds here: too short to "
                  "give a rate, as the call's own overhead and the clock's resolution are "
                  "much of it. Run at the default sizes for GFLOP/s.");
        } else {
            std::printf("measured forward: %.4f s -> %.1f GFLOP/s by the full count, %.1f by "
                        "the causal count\n", t, full / t / 1e9, triangle / t / 1e9);
            L.say("forward() skips the keys a whole block of queries (16 of them up to 512 keys, "
                  "else 64) may not see, so it does between the two counts; the full count is "
                  "what the articles' code computes, and what bench/mha_bench and its roofline "
                  "use.");
        }
        L.say("The term the article leaves out, 2 B H T^2 D = 2 B T^2 E, grows as T^2 while the "
              "projections grow as T: at T = " + std::to_string(T) + " it is " +
              fixed(100 * (full - art) / art, 1) + "% of the work; at T = 4E = " +
              std::to_string(4 * E) + " it equals the four projections together.");
        rc |= L.claim("full count = article's count + 2 B H T^2 D",
                      full - art == 2.0 * B * H * T * T * D);

        L.section("2. Views against copies");
        L.say("The article: view + permute is faster for small matrices, einops for large "
              "ones. But einops' rearrange(q, 'b t (h d) -> b h t d', h=H) calls reshape and "
              "permute: it is view + permute and returns a view, no copy (einops does not run "
              "here). What can differ is the product after it: each head read in place, a [T, D] "
              "block with rows E apart, or the heads copied into contiguous [B, H, T, D] first "
              "(.contiguous()). Q K^T both ways, 9 runs each, alternating; a verdict needs their "
              "middle runs (3rd to 7th fastest) apart.");
        std::printf("%6s %5s  %-26s %-26s %s\n", "T", "B", "view ms: median (3rd-7th)",
                    "copy+mul ms", "copy/view");
        auto spread = [](const std::vector<double>& t) {  // 9 sorted runs
            return fixed(t[4], 2) + " (" + fixed(t[2], 2) + "-" + fixed(t[6], 2) + ")";
        };
        bool same = true;
        std::size_t sizes = 0, view_wins = 0, copy_wins = 0;
        const std::size_t t0 = std::max<std::size_t>(16, T / 4), t1 = std::max<std::size_t>(T * 4, 16);
        // One draw of rows for every size: B T / 8 rows (1024 at the articles' sizes), or more.
        mha::Rng r(1);
        const std::size_t rows = std::max(B * T / 8, t1);
        const mha::Tensor3 q_rows = mha::randn(1, rows, E, r), k_rows = mha::randn(1, rows, E, r);
        for (std::size_t tt = t0; tt <= t1; tt *= 2) {
            const std::size_t bb = std::max<std::size_t>(1, rows / tt);
            const std::array<std::size_t, 3> bte{bb, tt, E};  // the first bb tt rows
            const mha::Tensor3 q = xt::reshape_view(xt::view(q_rows, 0, xt::range(0, bb * tt)), bte);
            const mha::Tensor3 k = xt::reshape_view(xt::view(k_rows, 0, xt::range(0, bb * tt)), bte);
            mha::Tensor4 s_view({bb, H, tt, tt}), s_copy({bb, H, tt, tt});
            auto in_place = [&] {
                for (std::size_t b = 0; b < bb; ++b)
                    for (std::size_t h = 0; h < H; ++h)
                        mha::fast::gemm({q.data() + b * tt * E + h * D, tt, D, E}, false,
                                  {k.data() + b * tt * E + h * D, tt, D, E}, true,
                                  &s_view(b, h, 0, 0), tt);
            };
            auto copied = [&] {
                const mha::Tensor4 qh = mha::split_heads(q, H), kh = mha::split_heads(k, H);
                for (std::size_t b = 0; b < bb; ++b)
                    for (std::size_t h = 0; h < H; ++h)
                        mha::fast::gemm({&qh(b, h, 0, 0), tt, D, D}, false,
                                  {&kh(b, h, 0, 0), tt, D, D}, true, &s_copy(b, h, 0, 0), tt);
            };
            std::vector<double> tv, tc;  // milliseconds, after one warm-up run of each
            in_place(), copied();
            for (int run = 0; run < 9; ++run) tv.push_back(lesson::milliseconds(in_place)),
                                           tc.push_back(lesson::milliseconds(copied));
            std::sort(tv.begin(), tv.end()), std::sort(tc.begin(), tc.end());
            same = same && mha::max_abs_diff(s_view, s_copy) == 0.0;
            const bool timed = std::min(tv[4], tc[4]) >= 0.1 && 2.0 * bb * tt * tt * E >= 1e6;
            const bool view_won = timed && tv[6] < tc[2], copy_won = timed && tc[6] < tv[2];
            std::printf("%6zu %5zu  %-26s %-26s %s\n", tt, bb, spread(tv).c_str(),
                        spread(tc).c_str(), !timed ? "too short to time" : (fixed(tc[4] / tv[4], 2)
                        + (view_won ? "x view faster" : copy_won ? "x copy faster" : "x within noise")).c_str());
            sizes += timed, view_wins += view_won, copy_wins += copy_won;
        }
        if (sizes == 0)
            L.say("At these sizes every product takes microseconds, too few to time. Run at the "
                  "default sizes for the verdict.");
        else
            L.say("Of the " + std::to_string(sizes) + " sizes timed, the view was faster at " +
                  std::to_string(view_wins) + ", the copy at " + std::to_string(copy_wins) +
                  "; at " + std::to_string(sizes - view_wins - copy_wins) + " the difference "
                  "was within the noise. The copy is one pass over the same rows at every T; "
                  "BLAS packs its operands into its own blocks either way, so a strided view "
                  "costs it little. With AVX2 the core's forward() reads Q in place and packs "
                  "K^T and V once per head (src/mha/fast/packed_gemm.hpp).");
        rc |= L.claim("both ways give identical scores", same);
        return rc;
    });
}
