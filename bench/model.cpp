// Part of mha_bench: `mha_bench --model`, a training step of the language
// model (src/mha/model/) against this machine's sgemm.
//
// The model is B 32, T 128, E 256, H 8, F 1024, L 4, V 4000 (about 5.2 M
// parameters). A step is train_step(): forward, cross-entropy, backward,
// clipping and Adam. Its FLOPs are 3x the forward's matrix products (the
// backward does two products for each of the forward's): per layer the four
// projections 8 N E^2, Q K^T and weights x V 4 N T E (every score, as the
// articles count), the feed-forward 4 N E F; then the head 2 N E V; N = B T.
// First each part on its own (median of N runs), then the whole step paired
// with an sgemm timed just before it, N times; the last line is
//   train step B32 T128 E256 L4: median 0.123 s, 1.31x roofline (sgemm 350.1 GFLOP/s)
//
// `mha_bench --model-long`: the induction task of lesson 21 (repeated_batch(),
// stretches of 2 to n tokens repeated) at n = 512, T = 2n + 1 = 1025, on a
// two-layer model (B 8, E 64, H 4, F 256, V 600), trained for 20 steps of
// Adam through the tiled backward (forward(..., keep_weights = false): each
// layer keeps its log-sum-exp, not its [B, H, T, T] weights), then 20 steps
// of a copy of the same model through the ordinary backward, each with its
// losses, its seconds per step and the process's peak resident memory.
#include <cstdio>
#include <vector>

#include "common.hpp"
#include "mha/fast/blas.hpp"
#include "mha/fast/dense.hpp"
#include "mha/fast/memory.hpp"
#include "mha/model/induction.hpp"
#include "mha/model/train.hpp"

namespace bench {

int run_model() {
    const std::size_t B = 32, T = 128, E = 256, H = 8, F = 1024, L = 4, V = 4000;
    const double N = double(B * T);
    const double layer = 8 * N * E * E + 4 * N * T * E + 4 * N * E * F;
    const double step_flops = 3 * (L * layer + 2 * N * E * V);
    mha::LanguageModel m = mha::make_language_model({V, T, E, H, F, L}, 1);
    mha::Rng rng(2);
    mha::TokenBatch batch{mha::Tokens::from_shape({B, T}), mha::Tokens::from_shape({B, T})};
    for (auto& id : batch.x) id = std::int32_t(rng.uniform(0.0f, float(V))) % int(V);
    for (auto& id : batch.y) id = std::int32_t(rng.uniform(0.0f, float(V))) % int(V);
    std::printf("training step of the language model: B %zu, T %zu, E %zu, H %zu, F %zu, "
                "L %zu, V %zu; %.1f GFLOP a step; median of %d runs\n", B, T, E, H, F, L, V,
                step_flops / 1e9, g_runs);
    double peak = sgemm_gflops();
    std::printf("  sgemm: %.1f GFLOP/s (2048^3, one run)\n", peak);

    mha::ModelTrace t;
    mha::CrossEntropy ce;
    mha::ModelGrads g;
    mha::Adam adam(1e-4f);
    const double fwd = median_seconds([&] { t = mha::forward(m, batch.x); });
    const double loss = median_seconds([&] { ce = mha::fast::cross_entropy(t.logits, batch.y); });
    const double bwd = median_seconds([&] { g = mha::backward(m, t, batch.x, ce.d_logits); });
    const double opt = median_seconds([&] { adam.step(mha::parameters(m, g)); });
    const double whole = fwd + loss + bwd + opt;
    auto part = [&](const char* what, double s) {
        std::printf("  %-14s %8.4f s  %5.1f%%\n", what, s, 100 * s / whole);
    };
    part("forward", fwd);
    part("cross-entropy", loss);
    part("backward", bwd);
    part("Adam", opt);

    std::vector<double> step_s, ratios, peaks;
    for (int r = 0; r < g_runs; ++r) {
        const double p = sgemm_gflops();
        const double s = median_seconds([&] { mha::train_step(m, adam, batch, t, 1.0); }, 1);
        peaks.push_back(p);
        step_s.push_back(s);
        ratios.push_back(s / (step_flops / (p * 1e9)));
    }
    std::printf("train step B%zu T%zu E%zu L%zu: median %.3f s, %.2fx roofline (sgemm %.1f "
                "GFLOP/s)\n", B, T, E, L, median(step_s), median(ratios), median(peaks));
    return 0;
}

int run_model_long() {
    const std::size_t B = 8, n = 512, T = 2 * n + 1, E = 64, H = 4, F = 256, L = 2, V = 600;
    const int steps = 20;
    const mha::LanguageModel start = mha::make_language_model({V, T, E, H, F, L}, 1);
    std::printf("the induction task at T %zu: B %zu, E %zu, H %zu, F %zu, L %zu, V %zu; %d "
                "steps of Adam (lr 3e-3)\n", T, B, E, H, F, L, V, steps);
    std::printf("the weights a layer would hold: [B, H, T, T] = %.0f MB\n",
                4.0 * B * H * T * T / 1e6);
    for (const bool keep_weights : {false, true}) {
        mha::fast::release_kept_memory();
        reset_peak_rss();
        mha::LanguageModel m = start;
        mha::Adam adam(3e-3f);
        mha::Rng data(2);  // the same batches both ways
        mha::ModelTrace t;
        std::printf("%s\n  loss:", keep_weights ? "ordinary backward (weights kept)"
                                                : "tiled backward (no weights kept)");
        std::vector<double> s;
        for (int step = 1; step <= steps; ++step) {
            const mha::TokenBatch batch = mha::repeated_batch(B, n, V, data, 2);  // [B, T]
            mha::StepReport r;
            s.push_back(seconds([&] {
                r = mha::train_step(m, adam, batch, t, 1.0, keep_weights);
            }));
            if (step % 4 == 1 || step == steps) std::printf(" %.3f", r.loss);
        }
        std::printf("\n  model-long T%zu %s: median %.3f s a step, peak RSS %.0f MB\n", T,
                    keep_weights ? "weights kept" : "no weights", median(s), peak_rss_mb());
    }
    return 0;
}

}  // namespace bench
