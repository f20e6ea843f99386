// mha_bench: how fast the core is, against this machine's own limit.
//
//   mha_bench [--article | --decode | --long | --long-backward | --long-softcap |
//              --model | --model-long | --masks] [--runs N]
//
// --model (model.cpp): a training step of the language model of
// src/mha/model/ against the sgemm roofline; --model-long, lesson 21's
// induction model trained at T = 1025 through the tiled backward (no
// weights held) and through the ordinary one, with the memory of each.
// --decode (decode.cpp): decoding through the KV cache against the memory
// bandwidth. --long (long.cpp): the forward without weights up to
// T = 16384, its peak memory against the tensors that must exist, then the
// tiled backward at T = 8192 and 16384 (--long-backward: only that;
// --long-softcap: only its soft-capping line, C = 50 at T = 4096).
// --masks (masks.cpp): the teaching core's mask stage against its old loop.
// Without either:
// 1. The sgemm peak: one large single-precision gemm (2048^3), measured
//    here, in this run, through the BLAS (its kernels named: an environment
//    that forces OpenBLAS's core type can halve it, and flatter every ratio
//    below). The roofline time of any work is FLOPs / peak. The
//    closing line pairs each forward with an sgemm timed just before it, and
//    gives the medians of the times, the peaks and the pairwise ratios.
// 2. The articles' shape, B = 128, T = 64, E = 512, H = 8, causal: every
//    stage of the core on its own, then the whole forward: forward() (fresh
//    output memory each call), forward_into() and trace_into() (memory kept
//    from call to call), and the cost of the fresh memory alone. Median
//    seconds of N runs (default 7) after a warm-up, GFLOP/s, and
//    time / roofline time. Then forward(), forward_into() and forward_into()
//    with every product in BLAS, each paired with an sgemm, N times.
// 3. T = 64 .. 2048 with B*T = 8192 fixed: does the cost grow as the FLOPs?
//    forward() and forward_into() causal, forward_into() unmasked (packed
//    kernels, then BLAS), and the fresh memory forward() needs; each T
//    timed in turns with T = 64.
// 4. The plain-loop oracle at a small size, for contrast.
// The peak resident memory of the forward at the articles' shape is printed
// after part 2. With --article only parts 1 and 2 run; the last line is
//   forward 128x64x512 h8 causal: median ... s, ... GFLOP/s, ...x roofline (sgemm ... GFLOP/s)
//
// FLOPs count 2*m*n*k per matrix product: 4 projections (8*B*T*E^2), Q K^T
// and weights x V (2*B*H*T^2*D each), every score, as the articles' code
// computes them. The core skips the key columns a whole block of queries
// (16 rows up to 512 keys, else 64) may not see (a causal mask's upper
// right), so a causal forward does less than the formula; the T table also
// times it unmasked.
#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <fstream>
#include <functional>
#include <new>
#include <string>
#include <vector>

#include <dlfcn.h>
#include <sys/mman.h>

#include "common.hpp"
#include "mha/attend.hpp"
#include "mha/attention.hpp"
#include "mha/backward.hpp"
#include "mha/fast/blas.hpp"
#include "mha/heads.hpp"
#include "mha/fast/memory.hpp"
#include "mha/fast/packed_gemm.hpp"
#include "mha/reference.hpp"
#include "mha/scores.hpp"
#include "mha/softmax.hpp"

namespace {

using bench::g_runs;
using bench::median;
using bench::median_seconds;
using bench::peak_rss_mb;
using bench::reset_peak_rss;

double projection_flops(double B, double T, double E) { return 2 * B * T * E * E; }
double product_flops(double B, double T, double E) { return 2 * B * T * T * E; }  // H*D = E
double forward_flops(double B, double T, double E) {
    return 4 * projection_flops(B, T, E) + 2 * product_flops(B, T, E);
}

// An output [B, T, E] and weights [B, H, T, T] in fresh memory, every page
// touched. The pages come straight from the kernel (mmap), not from
// malloc: once a block of some size has been freed, glibc raises its
// threshold for mapping and serves blocks up to that size from its heap
// again, so a plain xt::xtensor here came back in 2 ms instead of 20 for
// 33.6 MB, memory that was not fresh.
void touch_fresh(const std::array<std::size_t, 3>& output,
                 const std::array<std::size_t, 4>& weights) {
    const std::size_t floats = output[0] * output[1] * output[2] +
                               weights[0] * weights[1] * weights[2] * weights[3];
    void* p = mmap(nullptr, floats * sizeof(float), PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) throw std::bad_alloc();
    std::fill_n(static_cast<float*>(p), floats, 1.0f);
    munmap(p, floats * sizeof(float));
}

// GFLOP/s of one 2048^3 sgemm: the best this machine's BLAS does.
struct Sgemm {
    static constexpr std::size_t n = 2048;
    std::vector<float> a = std::vector<float>(n * n, 0.5f);
    std::vector<float> b = std::vector<float>(n * n, 0.25f);
    std::vector<float> c = std::vector<float>(n * n);
    double gflops(int runs) {
        const double s = median_seconds([&] {
            mha::fast::gemm({a.data(), n, n, n}, false, {b.data(), n, n, n}, false,
                      c.data(), n);
        }, runs);
        return 2.0 * n * n * n / s / 1e9;
    }
};

// Which kernels the BLAS runs, where it says (OpenBLAS picks them by
// processor, or as OPENBLAS_CORETYPE tells it): the roofline is their sgemm.
std::string blas_kernels() {
    using CoreName = char* (*)();
    auto name = reinterpret_cast<CoreName>(dlsym(RTLD_DEFAULT, "openblas_get_corename"));
    std::string what = name ? std::string("OpenBLAS, ") + name() + " kernels" : "BLAS";
    if (const char* forced = std::getenv("OPENBLAS_CORETYPE"))
        what += std::string(" as OPENBLAS_CORETYPE=") + forced + " says";
    return what;
}

// Calls f with the forward's products (the layers and the per-head ones)
// in BLAS instead of the packed kernels (mha/fast/packed_gemm.hpp), then puts
// the setting back.
void with_blas(const std::function<void()>& f) {
    const bool was = mha::fast::packed_products_on();
    mha::fast::set_packed_products(false);
    f();
    mha::fast::set_packed_products(was);
}

void row(const char* what, double seconds, double flops, double peak) {
    if (flops > 0) {
        std::printf("  %-28s %9.5f s %7.1f GFLOP/s %6.2fx roofline\n", what, seconds,
                    flops / seconds / 1e9, seconds / (flops / (peak * 1e9)));
    } else {
        std::printf("  %-28s %9.5f s   (moves data, no FLOPs)\n", what, seconds);
    }
}

}  // namespace

int main(int argc, char** argv) {
    bool article_only = false, decode = false, long_t = false, model = false, masks = false;
    bool long_backward = false, model_long = false, long_softcap = false;
    for (int i = 1; i < argc; ++i) {
        if (std::strcmp(argv[i], "--article") == 0) {
            article_only = true;
        } else if (std::strcmp(argv[i], "--decode") == 0) {
            decode = true;
        } else if (std::strcmp(argv[i], "--long") == 0) {
            long_t = true;
        } else if (std::strcmp(argv[i], "--long-backward") == 0) {
            long_backward = true;
        } else if (std::strcmp(argv[i], "--long-softcap") == 0) {
            long_softcap = true;
        } else if (std::strcmp(argv[i], "--model-long") == 0) {
            model_long = true;
        } else if (std::strcmp(argv[i], "--model") == 0) {
            model = true;
        } else if (std::strcmp(argv[i], "--masks") == 0) {
            masks = true;
        } else if (std::strcmp(argv[i], "--runs") == 0 && i + 1 < argc) {
            g_runs = std::atoi(argv[++i]);
            if (g_runs < 5 || g_runs > 1000) {
                std::fprintf(stderr, "mha_bench: --runs must be 5..1000\n");
                return 2;
            }
        } else {
            std::fprintf(stderr, "mha_bench: unknown argument '%s' (usage: mha_bench "
                                 "[--article | --decode | --long | --long-backward | "
                                 "--long-softcap | --model | --model-long | --masks] "
                                 "[--runs N])\n",
                         argv[i]);
            return 2;
        }
    }
    if (article_only + decode + long_t + long_backward + long_softcap + model + model_long +
            masks > 1) {
        std::fprintf(stderr, "mha_bench: --article, --decode, --long, --long-backward, "
                             "--long-softcap, --model, --model-long and --masks go one at a "
                             "time\n");
        return 2;
    }
    try {
        if (decode) return bench::run_decode();
        if (long_t) return bench::run_long();
        if (long_backward) return bench::run_long(true);
        if (long_softcap) return bench::run_long_softcap();
        if (model) return bench::run_model();
        if (model_long) return bench::run_model_long();
        if (masks) return bench::run_masks();
        std::printf("sgemm peak: ");
        std::fflush(stdout);
        double peak = 0;
        {
            Sgemm g;
            peak = g.gflops(5);
        }
        std::printf("%.1f GFLOP/s (2048 x 2048 x 2048, median of 5; %s)\n", peak,
                    blas_kernels().c_str());

        const std::size_t B = 128, T = 64, E = 512, H = 8;
        mha::Rng rng(1);
        const mha::Tensor3 x = mha::randn(B, T, E, rng);
        const mha::MultiHeadAttention m(E, H, mha::Init::xavier(0));
        const mha::Mask causal = mha::causal_mask(T, T);
        std::printf("\nthe articles' shape: B %zu, T %zu, E %zu, H %zu, causal; "
                    "median of %d runs\n", B, T, E, H, g_runs);
        if (!article_only) {
            mha::Tensor3 q3, k3;
            mha::Tensor4 q, k, v, s, w, a;
            row("linear (one of four)", median_seconds([&] { q3 = mha::linear(x, m.wq); }),
                projection_flops(B, T, E), peak);
            k3 = mha::linear(x, m.wk);
            row("split_heads", median_seconds([&] { q = mha::split_heads(q3, H); }), 0, peak);
            k = mha::split_heads(k3, H);
            v = mha::split_heads(mha::linear(x, m.wv), H);
            row("scaled_scores", median_seconds([&] { s = mha::scaled_scores(q, k); }),
                product_flops(B, T, E), peak);
            row("apply_mask", median_seconds([&] { w = mha::apply_mask(s, causal); }), 0, peak);
            row("softmax", median_seconds([&] { w = mha::softmax(w); }), 0, peak);
            row("attend", median_seconds([&] { a = mha::attend(w, v); }),
                product_flops(B, T, E), peak);
            row("merge_heads", median_seconds([&] { q3 = mha::merge_heads(a); }), 0, peak);
        }
        // Each result is dropped at once, so that the peak memory is the
        // forward's own: input, weights and what forward() allocates.
        // A slow spell of the machine during the first peak measurement
        // would flatter every ratio below it: measure again, keep the larger.
        {
            Sgemm g;
            const double again = g.gflops(5);
            std::printf("  sgemm peak, measured again: %.1f GFLOP/s; the larger is used "
                        "from here\n", again);
            peak = std::max(peak, again);
        }
        const double flops = forward_flops(B, T, E);
        // Hand back the memory the stage timings left for reuse, so that the
        // figure below is the forward's own (with the input and the weights).
        mha::fast::release_kept_memory();
        reset_peak_rss();
        row("forward()", median_seconds([&] { m.forward(x, x, x, &causal); }), flops, peak);
        std::printf("  peak resident memory of the process during forward(): %.0f MB\n",
                    peak_rss_mb());
        // The same work into memory kept from call to call: what a loop over
        // batches of one shape costs once memory is no longer fresh.
        mha::AttentionOutput out;
        row("forward_into, output reused",
            median_seconds([&] { m.forward_into(out, x, x, x, &causal); }), flops, peak);
        mha::ForwardTrace work;
        row("trace_into, buffers reused",
            median_seconds([&] { m.trace_into(work, x, x, x, &causal); }), flops, peak);
        work = {};
        // What forward()'s output and weights would cost in fresh memory, each
        // new page faulted in and cleared.
        const double fresh_mb = (B * T * E + B * H * T * T) * 4.0 / 1e6;
        row("fresh memory, first touch",
            median_seconds([&] { touch_fresh({B, T, E}, {B, H, T, T}); }), 0, peak);
        std::printf("  (%.1f MB: the output and the weights)\n", fresh_mb);
        // The machine is shared and its speed drifts: for the closing figure,
        // time an sgemm and a forward side by side, g_runs times, and take
        // the median of each and of their ratio. forward_into is timed in
        // the same turns, and again with every product in BLAS instead of
        // the packed kernels (mha/fast/packed_gemm.hpp), when those
        // are on (this processor has them, and MHA_PACKED is not 0).
        const bool packed = mha::fast::packed_products_on();
        std::vector<double> fwd_s, peaks, ratios, reuse_s, reuse_ratios, blas_s, blas_ratios;
        {
            Sgemm g;
            mha::AttentionOutput out_blas;
            for (int r = 0; r < g_runs; ++r) {
                const double p = g.gflops(1);
                const double roof = flops / (p * 1e9);  // roofline seconds
                const double s = median_seconds([&] { m.forward(x, x, x, &causal); }, 1);
                const double s2 =
                    median_seconds([&] { m.forward_into(out, x, x, x, &causal); }, 1);
                fwd_s.push_back(s);
                peaks.push_back(p);
                ratios.push_back(s / roof);
                reuse_s.push_back(s2);
                reuse_ratios.push_back(s2 / roof);
                if (packed) {
                    double s3 = 0;
                    with_blas([&] {
                        s3 = median_seconds(
                            [&] { m.forward_into(out_blas, x, x, x, &causal); }, 1);
                    });
                    blas_s.push_back(s3);
                    blas_ratios.push_back(s3 / roof);
                }
            }
        }
        const double fwd = median(fwd_s), pair_peak = median(peaks);
        const double roofline = median(ratios);
        std::printf("\npaired with an sgemm each time, median of %d:\n", g_runs);
        auto paired = [&](const char* what, const std::vector<double>& sec,
                          const std::vector<double>& roof) {
            std::printf("  %-28s %.3f s, %.1f GFLOP/s, %.2fx roofline\n", what, median(sec),
                        flops / median(sec) / 1e9, median(roof));
        };
        paired("forward_into, output reused:", reuse_s, reuse_ratios);
        if (packed) paired("forward_into, all in BLAS:", blas_s, blas_ratios);

        // The backward from a kept trace, as a training step runs it (self-
        // attention: one dL/dX, as PyTorch's x.grad), each paired with an
        // sgemm; then trace + backward, a whole training step.
        const mha::Tensor3 d_out = mha::randn(B, T, E, rng);
        std::vector<double> bwd_s, bwd_ratios, bwd_peaks, step_s;
        {
            Sgemm g;
            mha::ForwardTrace tr = m.trace(x, x, x, &causal);
            mha::backward_self_attention(m, tr, x, d_out, &causal);  // warm-up
            for (int r = 0; r < g_runs; ++r) {
                const double p = g.gflops(1);
                const double s = median_seconds(
                    [&] { mha::backward_self_attention(m, tr, x, d_out, &causal); }, 1);
                bwd_s.push_back(s);
                bwd_peaks.push_back(p);
                bwd_ratios.push_back(s / (2 * flops / (p * 1e9)));
                step_s.push_back(median_seconds([&] {
                    const mha::ForwardTrace t2 = m.trace(x, x, x, &causal);
                    mha::backward_self_attention(m, t2, x, d_out, &causal);
                }, 1));
            }
        }
        const double bwd = median(bwd_s);
        std::printf("  %-28s %.3f s, %.1f GFLOP/s, %.2fx roofline (FLOPs: 2x the forward's)\n",
                    "backward, self-attention:", bwd, 2 * flops / bwd / 1e9, median(bwd_ratios));
        std::printf("  %-28s %.3f s\n", "training step, trace+backward:", median(step_s));
        // Peak memory of one training step, against what must exist: the
        // input, the weights, the trace the backward reads (Q, K, V, the
        // weights, the context, the output), dL/d output, and the gradients
        // (the four layers' and one dL/dX).
        out = {};  // the forward's output above is no part of a training step
        mha::fast::release_kept_memory();
        reset_peak_rss();
        const double before_mb = peak_rss_mb();
        {
            const mha::ForwardTrace t2 = m.trace(x, x, x, &causal);
            mha::backward_self_attention(m, t2, x, d_out, &causal);
        }
        const double params_mb = (4 * E * E + 4 * E) * 4.0 / 1e6;
        const double bte_mb = B * T * E * 4.0 / 1e6, bhtt_mb = B * H * T * T * 4.0 / 1e6;
        const double must_mb = 2 * params_mb + 8 * bte_mb + bhtt_mb;  // x q k v ctx out dy dx
        std::printf("  peak resident memory of the process during a training step: %.0f MB "
                    "(%.0f MB before it),\n  %.2fx the %.0f MB that must exist (input, weights, "
                    "trace, dL/d output, gradients)\n", peak_rss_mb(), before_mb,
                    peak_rss_mb() / must_mb, must_mb);

        if (!article_only) {
            // Each column: seconds, then (time / time at T = 64) divided by
            // (FLOPs / FLOPs at T = 64): 1.00 means the cost grows exactly as
            // the formula. A causal forward skips masked blocks, so it may
            // grow less; unmasked, every score is computed, with the products
            // in the packed kernels and then in BLAS, which packs K^T and V
            // again for every block of 64 queries. The last column
            // times the output and [B, H, T, T] weights in fresh memory
            // (537 MB at T = 2048): what forward() would pay each call if the
            // engine did not keep freed memory (mha/fast/memory.hpp).
            std::printf("\nT from 64 to 2048, B*T = 8192: time against the FLOPs formula\n"
                        "(each column: median seconds of 5, then its growth from T = 64, "
                        "timed in turns, over the FLOPs' growth)\n");
            std::printf("  %5s %4s %7s %9s  %-17s %-17s %-17s %-17s %s\n", "T", "B",
                        "GFLOP", "FLOPs/64", "forward() causal", "forward_into",
                        "forward_into", "forward_into", "fresh memory");
            std::printf("  %5s %4s %7s %9s  %-17s %-17s %-17s %-17s %s\n", "", "", "", "",
                        "", "causal", "no mask", "no mask, BLAS", "(output, weights)");
            // Each T is timed in turns with T = 64, five times, and its
            // growth is the median of those pairwise ratios: a drift of the
            // machine's speed hits both sides of each ratio alike.
            struct Size {
                std::size_t t, b;
                mha::Tensor3 x;
                mha::Mask causal;
                mha::AttentionOutput out;
                double time(int k) {  // one timed call of column k
                    const auto t0 = std::chrono::steady_clock::now();
                    if (k == 0) m_->forward(x, x, x, &causal);
                    if (k == 1) m_->forward_into(out, x, x, x, &causal);
                    if (k == 2) m_->forward_into(out, x, x, x);
                    if (k == 3) with_blas([&] { m_->forward_into(out, x, x, x); });
                    if (k == 4) touch_fresh(out.output.shape(), out.weights.shape());
                    const auto t1 = std::chrono::steady_clock::now();
                    return std::chrono::duration<double>(t1 - t0).count();
                }
                const mha::MultiHeadAttention* m_;
            };
            auto make = [&](std::size_t t) {
                mha::Rng r(2);
                Size z{t, 8192 / t, mha::randn(8192 / t, t, E, r), mha::causal_mask(t, t),
                       {}, &m};
                for (int k = 0; k < 5; ++k) z.time(k);  // warm-up, and out's memory
                return z;
            };
            Size base = make(64);
            const double f64 = forward_flops(base.b, 64, E);
            for (std::size_t t = 64; t <= 2048; t *= 2) {
                Size z = t == 64 ? Size{} : make(t);
                Size& cur = t == 64 ? base : z;
                std::vector<double> sec[5], growth[5];
                for (int run = 0; run < 5; ++run) {
                    for (int k = 0; k < 5; ++k) {
                        const double at64 = base.time(k);
                        const double here = t == 64 ? at64 : cur.time(k);
                        sec[k].push_back(here);
                        growth[k].push_back(here / at64);
                    }
                }
                const double f = forward_flops(cur.b, t, E);
                std::printf("  %5zu %4zu %7.2f %8.2fx", t, cur.b, f / 1e9, f / f64);
                for (int k = 0; k < 4; ++k)
                    std::printf("  %7.4f s %5.2fx ", median(sec[k]),
                                median(growth[k]) / (f / f64));
                std::printf("  %7.4f s\n", median(sec[4]));
            }

            std::printf("\nthe plain-loop oracle, B 4, T 32, E 64, H 4:\n");
            mha::Rng r(3);
            const mha::MultiHeadAttention small(64, 4, mha::Init::xavier(0));
            const mha::Tensor3 xs = mha::randn(4, 32, 64, r);
            const double f_small = forward_flops(4, 32, 64);
            const double t_ref = median_seconds([&] { mha::reference_forward(small, xs, xs, xs); });
            const double t_fast = median_seconds([&] { small.forward(xs, xs, xs); });
            row("reference_forward", t_ref, f_small, peak);
            row("forward()", t_fast, f_small, peak);
        }
        std::printf("\nforward %zux%zux%zu h%zu causal: median %.3f s, %.1f GFLOP/s, "
                    "%.2fx roofline (sgemm %.1f GFLOP/s)\n",
                    B, T, E, H, fwd, flops / fwd / 1e9, roofline, pair_peak);
        std::printf("backward %zux%zux%zu h%zu causal: median %.3f s, %.1f GFLOP/s, "
                    "%.2fx roofline (sgemm %.1f GFLOP/s)\n",
                    B, T, E, H, bwd, 2 * flops / bwd / 1e9, median(bwd_ratios),
                    median(bwd_peaks));
    } catch (const std::exception& e) {
        std::fprintf(stderr, "mha_bench: %s\n", e.what());
        return 1;
    }
    return 0;
}
