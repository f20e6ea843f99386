// mha_bench: times MultiHeadAttention::forward at the articles' shape.
//
// Usage: mha_bench [--runs N]   (default 7 runs after one warm-up)
// B = 128, T = 64, E = 512, H = 8, causal; prints the median seconds and the
// GFLOP/s, counting 2*m*n*k per product (4 projections, QK^T and weights V).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <vector>

#include "mha/attention.hpp"

namespace {

double forward_flops(double B, double T, double E, double H) {
    const double D = E / H;
    return 4 * 2 * B * T * E * E      // wq, wk, wv, w_o
           + 2 * 2 * B * H * T * T * D;  // Q K^T and weights x V
}

}  // namespace

int main(int argc, char** argv) {
    int runs = 7;
    for (int i = 1; i < argc; ++i) {
        if (std::strcmp(argv[i], "--runs") == 0 && i + 1 < argc) {
            runs = std::atoi(argv[++i]);
        } else {
            std::fprintf(stderr, "mha_bench: unknown argument '%s' "
                                 "(usage: mha_bench [--runs N])\n", argv[i]);
            return 2;
        }
    }
    if (runs < 1 || runs > 1000) {
        std::fprintf(stderr, "mha_bench: --runs must be 1..1000\n");
        return 2;
    }
    try {
        const std::size_t B = 128, T = 64, E = 512, H = 8;
        mha::Rng rng(1);
        const mha::Tensor3 x = mha::randn(B, T, E, rng);
        const mha::MultiHeadAttention m(E, H, mha::Init::xavier(0));
        const mha::Mask causal = mha::causal_mask(T, T);
        m.forward(x, x, x, &causal);  // warm-up
        std::vector<double> secs;
        for (int r = 0; r < runs; ++r) {
            const auto t0 = std::chrono::steady_clock::now();
            m.forward(x, x, x, &causal);
            const auto t1 = std::chrono::steady_clock::now();
            secs.push_back(std::chrono::duration<double>(t1 - t0).count());
        }
        std::sort(secs.begin(), secs.end());
        const double median = secs[secs.size() / 2];
        const double gflop = forward_flops(B, T, E, H) / 1e9;
        std::printf("forward %zux%zux%zu h%zu causal: median %.4f s over %d "
                    "runs, %.1f GFLOP/s\n",
                    B, T, E, H, median, runs, gflop / median);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "mha_bench: %s\n", e.what());
        return 1;
    }
    return 0;
}
