// mha_bench --decode: one new position per sequence through the KV cache,
// at cache lengths 256 … 4096 and B = 1, 8, against the memory bandwidth.
//
// A step must read the whole cache of its sequences, K and V,
// 2 B H_kv (L + 1) D floats, and the four layers' weights once,
// 4 (E^2 + E) floats; at the bandwidth of a large copy (bytes read plus
// bytes written, on every worker), measured in this run, that takes the
// "bandwidth bound". "1.31x bandwidth bound" means the step took 1.31 times
// as long. Then B = 8, T = 4096 with H_kv = 8, 2, 1 key/value heads (a cache
// H / H_kv times smaller, lesson 17). The closing line pairs each decode timing at T = 4096, B = 1
// with a copy timed just before it, and gives the medians.
#include <cstdio>
#include <cstring>
#include <vector>

#include "common.hpp"
#include "mha/fast/parallel.hpp"
#include "mha/kv_cache.hpp"

namespace bench {

namespace {

constexpr std::size_t kCopyBytes = std::size_t{256} << 20;  // far past the 32 MiB L3

// GB/s of one copy of 256 MiB split over the workers, counting the bytes
// read and the bytes written, as STREAM's copy does.
struct Copy {
    std::vector<char> from = std::vector<char>(kCopyBytes, 1), to = std::vector<char>(kCopyBytes, 2);
    double gbps() {
        const std::size_t parts = mha::fast::worker_count();
        const double s = seconds([&] {
            mha::fast::parallel_for(parts, [&](std::size_t begin, std::size_t end) {
                const std::size_t a = begin * kCopyBytes / parts, b = end * kCopyBytes / parts;
                std::memcpy(to.data() + a, from.data() + a, b - a);
            });
        });
        return 2.0 * kCopyBytes / s / 1e9;
    }
};

// A module and a cache holding L positions of random K and V (what a
// prefill would leave; the step's cost does not depend on the numbers).
struct Decoder {
    const mha::MultiHeadAttention& m;
    std::size_t B, L;
    mha::KVCache cache;
    mha::Tensor3 x_t;  // [B, 1, E]
    Decoder(const mha::MultiHeadAttention& module, std::size_t b, std::size_t l)
        : m(module), B(b), L(l), cache(mha::make_cache(module, b, l + 1)) {
        mha::Rng rng(7);
        for (float& x : cache.k) x = rng.normal();
        for (float& x : cache.v) x = rng.normal();
        x_t = mha::randn(B, 1, kE, rng);
    }
    void step() {
        cache.length = L;  // the same step each time: position L again
        m.decode(x_t, cache);
    }
    // What a step must read: the cache up to position L, the four layers.
    double bytes() const {
        const double cache_floats = 2.0 * B * m.num_kv_heads() * (L + 1) * m.head_dim();
        return 4.0 * (cache_floats + 4.0 * (kE * kE + kE));
    }
};

}  // namespace

int run_decode() {
    const mha::MultiHeadAttention m(kE, kH, mha::Init::xavier(0));
    Copy copy;
    copy.gbps();  // warm-up: the pages touched, the workers started
    std::vector<double> bw;
    for (int r = 0; r < 5; ++r) bw.push_back(copy.gbps());
    const double bandwidth = median(bw);
    std::printf("decode through the KV cache: E %zu, H %zu (H_kv %zu), one new position per "
                "sequence\ncopy bandwidth %.1f GB/s (256 MiB over %zu workers, bytes read + "
                "written, median of 5)\n", kE, kH, m.num_kv_heads(), bandwidth,
                mha::fast::worker_count());
    std::printf("  %2s %5s %9s %9s %10s %11s %9s\n", "B", "T", "cache MB", "reads MB",
                "ms/step", "us/token", "x bound");
    const int steps = 5 * g_runs;
    for (std::size_t B : {1, 8}) {
        for (std::size_t T = 256; T <= 4096; T *= 2) {
            Decoder d(m, B, T);
            const double s = median_seconds([&] { d.step(); }, steps);
            const double bound = d.bytes() / (bandwidth * 1e9);
            std::printf("  %2zu %5zu %9.1f %9.1f %10.3f %11.1f %8.2fx\n", B, T,
                        2.0 * B * kH * (T + 1) * (kE / kH) * 4 / 1e6, d.bytes() / 1e6, s * 1e3,
                        s / B * 1e6, s / bound);
        }
    }
    // Grouped-query attention: H_kv kv heads, a cache H / H_kv times smaller
    std::printf("grouped K/V heads at B 8, T 4096 (lesson 17):\n  %4s %9s %9s %10s %9s\n",
                "H_kv", "cache MB", "reads MB", "ms/step", "x bound");
    for (std::size_t H_kv : {8, 2, 1}) {
        const mha::MultiHeadAttention g(kE, kH, H_kv, mha::Init::xavier(0));
        Decoder d(g, 8, 4096);
        const double s = median_seconds([&] { d.step(); }, steps);
        const double cache_mb = double(d.cache.k.size() + d.cache.v.size()) * 4 / 1e6;
        std::printf("  %4zu %9.1f %9.1f %10.3f %8.2fx\n", H_kv, cache_mb, d.bytes() / 1e6,
                    s * 1e3, s / (d.bytes() / (bandwidth * 1e9)));
    }
    // The closing figure: each decode timing beside a copy timed just before.
    Decoder d(m, 1, 4096);
    std::vector<double> step_s, ratios, bws;
    for (int r = 0; r < g_runs; ++r) {
        const double g = copy.gbps();
        const double s = median_seconds([&] { d.step(); }, 15);
        step_s.push_back(s);
        bws.push_back(g);
        ratios.push_back(s / (d.bytes() / (g * 1e9)));
    }
    std::printf("\ndecode T4096 B1 h8: median %.3f ms/token, %.2fx bandwidth bound (%.1f GB/s)\n",
                median(step_s) * 1e3, median(ratios), median(bws));
    return 0;
}

}  // namespace bench
