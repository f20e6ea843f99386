// mha_bench --long: long sequences without weights, B = 1, E = 512, H = 8,
// causal, T = 1024 … 16384, through forward_no_weights(x, x, x, mha::causal)
// (the engine's tiles, and no [T, T] of anything: scores, weights or mask).
//
// For each T: the median seconds, the GFLOP/s of the causal count
// 8 T E^2 + 2 E T (T + 1) (the four layers, and Q K^T and weights x V over
// the keys each query sees), the time against the roofline (that count at
// the speed of a 2048^3 sgemm timed just before each run, the median of
// the pairs' ratios; 1.25x roofline is 0.8 of the sgemm's speed), the
// cost's growth from T = 1024 over that count's growth (timed in turns
// with T = 1024), and the process's peak
// resident memory against the tensors that must exist: the input, Q, K, V,
// the context and the output, [T, E] each, and the parameters. The peak is
// the whole process's (its code and libraries too), after the memory that
// the smaller T left for reuse has been handed back. Last, a sliding window
// W = 1024 at T = 16384: its time against its computed tiles' FLOPs at the
// causal run's speed (the block mask's skipping at work). Then soft-capping
// C = 50 at T = 4096 through the tiles, forward and backward, against the
// same calls uncapped (softcap_line()).
//
// Then a training step's backward without weights at T = 8192 and 16384:
// trace_no_weights(x, x, x, mha::causal) (the forward, keeping each row's
// log-sum-exp L) and backward_self_attention(..., mha::causal), the
// FlashAttention-2 tiles. Its FLOPs: the layers' backward, 16 T E^2 (dW and
// dX of w_o, dW of wq, wk, wv and dX of the three), and per head 10 D per
// (query, key it sees): S recomputed, dV, dP, dQ, dK, 2 D each, so
// 5 E T (T + 1) in all. Each run is paired with a 2048^3 sgemm timed just
// before it (the roofline: FLOPs / its GFLOP/s), the median of the pairs'
// ratios printed. The tensors that must exist: x, Q, K, V, O (the context),
// the output, dL/d output, dQ, dK, dV and dX, [T, E] each, L [H, T], and the
// parameters with their gradients. The forward of each run (trace_no_weights()
// again, timed on its own) is printed beside the backward: a training step's
// two halves, for bench/torch_bench.py to set beside PyTorch's.
#include <algorithm>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "common.hpp"
#include "mha/attention.hpp"
#include "mha/fast/block_mask.hpp"
#include "mha/backward.hpp"
#include "mha/fast/blas.hpp"
#include "mha/fast/memory.hpp"

namespace bench {

namespace {

double causal_flops(double T) { return 8 * T * kE * kE + 2 * kE * T * (T + 1); }

// The FLOPs of a forward that computes @p tiles tiles of 64 x 64 scores per
// head: the four layers, and Q K^T and weights x V over every computed
// tile's elements (2 D each, H heads: 2 E per product).
double tile_flops(double T, double tiles) { return 8 * T * kE * kE + 4 * kE * tiles * 64 * 64; }

// A sliding window W = 1024 at T = 16384, through its mask tensor: its
// time against what its computed tiles' FLOPs cost at the speed of the full
// causal run at T = 16384 (its own tiles counted the same way), the two
// timed in turns, the ratio the median of each turn's. The block mask's
// scan of the [T, T] bools is part of every call, and timed alone too.
void window_line(const mha::MultiHeadAttention& m) {
    constexpr std::size_t T = 16384, W = 1024;
    mha::Rng rng(5);
    const mha::Tensor3 x = mha::randn(1, T, kE, rng);
    // [1, 1, T, T]: 268 MB of bools, made once, outside the timing
    mha::Mask mask({1, 1, T, T});
    const mha::MaskMod window = mha::sliding_window(W);
    for (std::size_t i = 0; i < T; ++i)
        for (std::size_t j = 0; j < T; ++j) mask(0, 0, i, j) = window(0, 0, i, j);
    const double causal_tiles = double(mha::fast::causal_block_mask(T, T, 0).computed());
    const mha::fast::BlockMask bm = mha::fast::block_mask(mask, T, T);
    const double scan_s = median_seconds([&] { mha::fast::block_mask(mask, T, T); });
    auto causal = [&] { m.forward_no_weights(x, x, x, mha::causal); };
    auto windowed = [&] { m.forward_no_weights(x, x, x, &mask); };
    windowed();  // warm-up
    // seconds per FLOP of the causal run's tiles, times the window's FLOPs
    const double flops_ratio = tile_flops(T, double(bm.computed())) / tile_flops(T, causal_tiles);
    std::vector<double> s, c, ratio;
    for (int r = 0; r < g_runs; ++r) {
        c.push_back(seconds(causal));
        s.push_back(seconds(windowed));
        ratio.push_back(s.back() / (c.back() * flops_ratio));
    }
    std::printf("  window W%zu: %zu of %zu tiles computed (causal: %.0f), block mask scan "
                "%.4f s;\n  in turns with the causal run (median %.3f s): at its speed the "
                "window's tiles\n  would take %.4f s\n", W, bm.computed(), bm.total(),
                causal_tiles, scan_s, median(c), median(c) * flops_ratio);
    std::printf("window W%zu T%zu: median %.3f s, %.2fx its tiles' FLOPs\n", W, T, median(s),
                median(ratio));
}

// Soft-capping C = 50 (Gemma 2's) at T = 4096 through the tiles: the
// forward (forward_no_weights(..., mha::causal, C)) and the backward from a
// capped trace_no_weights(), each timed in turns with the same call without
// the cap, the ratio the median of each turn's: the price of a tanh per
// computed score (once in the forward; once in the backward, which keeps
// its derivative per tile).
void softcap_line(const mha::MultiHeadAttention& m) {
    constexpr std::size_t T = 4096;
    constexpr float C = 50.0f;
    mha::Rng rng(6);
    const mha::Tensor3 x = mha::randn(1, T, kE, rng), dy = mha::randn(1, T, kE, rng);
    const mha::ForwardTrace plain = m.trace_no_weights(x, x, x, mha::causal);
    const mha::ForwardTrace capped = m.trace_no_weights(x, x, x, mha::causal, C);
    auto forward = [&](float c) { m.forward_no_weights(x, x, x, mha::causal, c); };
    auto backward = [&](const mha::ForwardTrace& t, float c) {
        const mha::AttentionGrads g = mha::backward_self_attention(m, t, x, dy, mha::causal, c);
    };
    forward(C);  // warm-up
    backward(capped, C);
    std::vector<double> f, f_ratio, b, b_ratio;
    for (int r = 0; r < g_runs; ++r) {
        const double f0 = seconds([&] { forward(0.0f); });
        f.push_back(seconds([&] { forward(C); }));
        f_ratio.push_back(f.back() / f0);
        const double b0 = seconds([&] { backward(plain, 0.0f); });
        b.push_back(seconds([&] { backward(capped, C); }));
        b_ratio.push_back(b.back() / b0);
    }
    std::printf("softcap C50 T%zu B1 h8 causal: forward median %.3f s, %.2fx uncapped; "
                "backward median %.3f s, %.2fx uncapped\n", T, median(f), median(f_ratio),
                median(b), median(b_ratio));
}

// The tiled backward's count, its recomputed scores included.
double backward_flops(double T) { return 16 * T * kE * kE + 5 * kE * T * (T + 1); }

// The backward without weights at T = 8192 and 16384 (the comment above).
void run_long_backward(const mha::MultiHeadAttention& m, mha::Rng& rng, double params_mb) {
    const int runs = std::min(g_runs, 3);  // seconds each at T = 16384
    std::printf("\nbackward without weights, B 1, E %zu, H %zu, causal: trace_no_weights() "
                "then\nbackward_self_attention(); median of %d runs, each after a 2048^3 "
                "sgemm\n", kE, kH, runs);
    std::printf("  %5s %8s %9s %10s %9s %12s %9s\n", "T", "GFLOP", "s", "GFLOP/s", "roofline",
                "peak RSS MB", "x tensors");
    std::vector<std::string> lines;
    for (std::size_t T : {8192, 16384}) {
        mha::fast::release_kept_memory();
        const mha::Tensor3 x = mha::randn(1, T, kE, rng), dy = mha::randn(1, T, kE, rng);
        reset_peak_rss();
        std::optional<mha::ForwardTrace> t;  // one at a time: the old one goes first
        auto forward = [&] {
            t.reset();
            t.emplace(m.trace_no_weights(x, x, x, mha::causal));
        };
        auto call = [&] {  // the gradients go at the end of each call
            const mha::AttentionGrads g = mha::backward_self_attention(m, *t, x, dy, mha::causal);
        };
        forward();
        call();  // warm-up
        std::vector<double> s, ratio, f;
        const double flops = backward_flops(T);
        for (int r = 0; r < runs; ++r) {
            const double peak = sgemm_gflops();
            f.push_back(seconds(forward));
            s.push_back(seconds(call));
            ratio.push_back(s.back() / (flops / (peak * 1e9)));
        }
        const double rss = peak_rss_mb();
        // x, Q, K, V, O, output, dy, dQ, dK, dV, dX: [T, E] each; L [H, T]
        const double must_mb = (11.0 * T * kE + kH * T) * 4 / 1e6 + 2 * params_mb;
        std::printf("  %5zu %8.1f %9.3f %10.1f %8.2fx %12.0f %8.2fx\n", T, flops / 1e9,
                    median(s), flops / median(s) / 1e9, median(ratio), rss, rss / must_mb);
        char line[200];
        std::snprintf(line, sizeof line,
                      "backward no-weights T%zu B1 h8 causal: median %.3f s, %.2fx roofline, "
                      "peak RSS %.0f MB, %.2fx the tensors that must exist", T, median(s),
                      median(ratio), rss, rss / must_mb);
        lines.push_back(line);
        std::snprintf(line, sizeof line,
                      "training step no-weights T%zu B1 h8 causal: median forward %.3f s + "
                      "backward %.3f s", T, median(f), median(s));
        lines.push_back(line);
    }
    std::printf("\n");
    for (const std::string& l : lines) std::printf("%s\n", l.c_str());
}

}  // namespace

int run_long_softcap() {
    const mha::MultiHeadAttention m(kE, kH, mha::Init::xavier(0));
    softcap_line(m);
    return 0;
}

int run_long(bool backward_only) {
    const mha::MultiHeadAttention m(kE, kH, mha::Init::xavier(0));
    const double params_mb = 4.0 * (kE * kE + kE) * 4 / 1e6;
    mha::Rng rng(4);
    if (backward_only) {
        run_long_backward(m, rng, params_mb);
        return 0;
    }
    const mha::Tensor3 base = mha::randn(1, 1024, kE, rng);
    auto at_base = [&] { m.forward_no_weights(base, base, base, mha::causal); };
    std::printf("without weights, B 1, E %zu, H %zu, causal: forward_no_weights(); median of "
                "%d runs,\neach after a 2048^3 sgemm (the roofline) and timed in turns with T = 1024;\n"
                "peak RSS is the process's\n", kE,
                kH, g_runs);
    std::printf("  %5s %8s %9s %10s %9s %8s %12s %9s\n", "T", "GFLOP", "s", "GFLOP/s",
                "roofline", "growth", "peak RSS MB", "x tensors");
    std::vector<std::string> lines;
    for (std::size_t T = 1024; T <= 16384; T *= 2) {
        mha::fast::release_kept_memory();  // what the smaller T left
        const mha::Tensor3 x = mha::randn(1, T, kE, rng);
        reset_peak_rss();
        // mha::causal: the mask's [T, T] bools (268 MB at T = 16384) never exist
        auto call = [&] { m.forward_no_weights(x, x, x, mha::causal); };
        call();  // warm-up
        const double flops = causal_flops(T);
        std::vector<double> s, growth, roof;
        for (int r = 0; r < g_runs; ++r) {
            const double peak = sgemm_gflops();
            const double b = seconds(at_base);
            const double t = seconds(call);
            s.push_back(t);
            growth.push_back(t / b);
            roof.push_back(t / (flops / (peak * 1e9)));
        }
        const double rss = peak_rss_mb();
        // input, Q, K, V, context, output: [T, E] floats each; the parameters
        const double must_mb = 6.0 * T * kE * 4 / 1e6 + params_mb;
        const double g = median(growth) / (flops / causal_flops(1024));
        const double sec = median(s), ratio = median(roof);
        std::printf("  %5zu %8.1f %9.4f %10.1f %8.2fx %7.2fx %12.0f %8.2fx\n", T, flops / 1e9,
                    sec, flops / sec / 1e9, ratio, g, rss, rss / must_mb);
        if (T != 4096 && T != 16384) continue;
        char line[240];
        std::snprintf(line, sizeof line,
                      "no-weights T%zu B1 h8 causal: median %.3f s, %.2fx roofline (%.2f of the "
                      "sgemm's speed), peak RSS %.0f MB, %.2fx the tensors that must exist", T,
                      sec, ratio, 1.0 / ratio, rss, rss / must_mb);
        lines.push_back(line);
    }
    std::printf("\n");
    for (const std::string& l : lines) std::printf("%s\n", l.c_str());
    window_line(m);
    softcap_line(m);
    run_long_backward(m, rng, params_mb);
    return 0;
}

}  // namespace bench
