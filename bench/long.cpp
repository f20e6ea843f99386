// mha_bench --long: long sequences without weights, B = 1, E = 512, H = 8,
// causal, T = 1024 … 16384, through forward_no_weights(x, x, x, mha::causal)
// (the engine's tiles, and no [T, T] of anything: scores, weights or mask).
//
// For each T: the median seconds, the GFLOP/s of the causal count
// 8 T E^2 + 2 E T (T + 1) (the four layers, and Q K^T and weights x V over
// the keys each query sees), the cost's growth from T = 1024 over that
// count's growth (timed in turns with T = 1024), and the process's peak
// resident memory against the tensors that must exist: the input, Q, K, V,
// the context and the output, [T, E] each, and the parameters. The peak is
// the whole process's (its code and libraries too), after the memory that
// the smaller T left for reuse has been handed back.
#include <cstdio>
#include <vector>

#include "common.hpp"
#include "mha/attention.hpp"
#include "mha/fast/memory.hpp"

namespace bench {

namespace {

constexpr std::size_t kE = 512, kH = 8;

double causal_flops(double T) { return 8 * T * kE * kE + 2 * kE * T * (T + 1); }

}  // namespace

int run_long() {
    const mha::MultiHeadAttention m(kE, kH, mha::Init::xavier(0));
    const double params_mb = 4.0 * (kE * kE + kE) * 4 / 1e6;
    mha::Rng rng(4);
    const mha::Tensor3 base = mha::randn(1, 1024, kE, rng);
    auto at_base = [&] { m.forward_no_weights(base, base, base, mha::causal); };
    std::printf("without weights, B 1, E %zu, H %zu, causal: forward_no_weights(); median of "
                "%d runs,\neach timed in turns with T = 1024; peak RSS is the process's\n", kE,
                kH, g_runs);
    std::printf("  %5s %8s %9s %10s %8s %12s %9s\n", "T", "GFLOP", "s", "GFLOP/s", "growth",
                "peak RSS MB", "x tensors");
    double last_s = 0, last_rss = 0, last_ratio = 0;
    for (std::size_t T = 1024; T <= 16384; T *= 2) {
        mha::fast::release_kept_memory();  // what the smaller T left
        const mha::Tensor3 x = mha::randn(1, T, kE, rng);
        reset_peak_rss();
        // mha::causal: the mask's [T, T] bools (268 MB at T = 16384) never exist
        auto call = [&] { m.forward_no_weights(x, x, x, mha::causal); };
        call();  // warm-up
        std::vector<double> s, growth;
        for (int r = 0; r < g_runs; ++r) {
            const double b = seconds(at_base);
            const double t = seconds(call);
            s.push_back(t);
            growth.push_back(t / b);
        }
        const double rss = peak_rss_mb();
        // input, Q, K, V, context, output: [T, E] floats each; the parameters
        const double must_mb = 6.0 * T * kE * 4 / 1e6 + params_mb;
        const double flops = causal_flops(T);
        const double g = median(growth) / (flops / causal_flops(1024));
        last_s = median(s), last_rss = rss, last_ratio = rss / must_mb;
        std::printf("  %5zu %8.1f %9.4f %10.1f %7.2fx %12.0f %8.2fx\n", T, flops / 1e9, last_s,
                    flops / last_s / 1e9, g, rss, last_ratio);
    }
    std::printf("\nno-weights T16384 B1 h8 causal: median %.3f s, peak RSS %.0f MB, %.2fx the "
                "tensors that must exist\n", last_s, last_rss, last_ratio);
    return 0;
}

}  // namespace bench
