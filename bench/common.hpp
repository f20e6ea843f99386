// What the benchmarks share: medians, timing, the process's peak memory, the
// sgemm's speed.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include "mha/fast/blas.hpp"

namespace bench {

/// How many timed runs a median takes (--runs).
inline int g_runs = 7;

/// The middle value (the upper middle one of an even count).
inline double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

/// Seconds one call of @p f takes.
inline double seconds(const std::function<void()>& f) {
    const auto t0 = std::chrono::steady_clock::now();
    f();
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

/// Median seconds of @p runs calls of @p f, after one warm-up call.
inline double median_seconds(const std::function<void()>& f, int runs = g_runs) {
    f();
    std::vector<double> t;
    for (int r = 0; r < runs; ++r) t.push_back(seconds(f));
    return median(t);
}

/// Peak resident memory of this process so far, in MB (VmHWM).
inline double peak_rss_mb() {
    std::ifstream f("/proc/self/status");
    std::string line;
    while (std::getline(f, line))
        if (line.rfind("VmHWM:", 0) == 0) return std::atof(line.c_str() + 6) / 1024.0;
    return -1;
}

/// Resets VmHWM to the current resident size (Linux: "5" > clear_refs).
inline void reset_peak_rss() {
    std::ofstream f("/proc/self/clear_refs");
    f << "5";
}

/// Part of `mha_bench --decode`: decoding through the KV cache against
/// the memory bandwidth. @return the exit code
int run_decode();

/// Part of `mha_bench --long`: the forward without weights up to T = 16384,
/// its peak memory against the tensors that must exist, then the tiled
/// backward at T = 8192 and 16384.
/// @param backward_only only the backward (`mha_bench --long-backward`)
/// @return the exit code
int run_long(bool backward_only = false);

/// Part of `mha_bench --long`, alone with `--long-softcap`: soft-capping
/// C = 50 at T = 4096 through the tiles, forward and backward, against the
/// same calls uncapped.
/// @return the exit code
int run_long_softcap();

/// `mha_bench --model-long`: lesson 21's induction model trained at T = 1025
/// through the tiled backward, then through the ordinary one: losses, time
/// and peak memory. @return the exit code
int run_model_long();

/// `mha_bench --masks`: the teaching core's mask stage against its old
/// direct loop. @return the exit code
int run_masks();

/// `mha_bench --model`: a training step of the language model against the
/// sgemm roofline. @return the exit code
int run_model();

/// The articles' d_model and heads, where a benchmark fixes them.
constexpr std::size_t kE = 512, kH = 8;

/// GFLOP/s of one 2048^3 sgemm through the engine's gemm() (every core),
/// after a warm-up call: the speed the others are set against.
inline double sgemm_gflops() {
    constexpr std::size_t n = 2048;
    std::vector<float> a(n * n, 0.5f), b(n * n, 0.25f), c(n * n);  // freed: not in a peak
    const double s = median_seconds([&] {
        mha::fast::gemm({a.data(), n, n, n}, false, {b.data(), n, n, n}, false, c.data(), n);
    }, 1);
    return 2.0 * n * n * n / s / 1e9;
}

}  // namespace bench
