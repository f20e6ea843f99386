// The engine's position-wise stages: every row on its own, rows over the cores.
//
// B batch, T positions, E embed_dim, F hidden, V vocabulary.
#include "mha/fast/dense.hpp"

#include <algorithm>
#include <cmath>
#include <mutex>
#include <string>
#include <vector>

#include "mha/fast/blas.hpp"
#include "mha/fast/parallel.hpp"
#include "mha/fast/softmax.hpp"

namespace mha::fast {

namespace {

// A loop built twice, for AVX2 and for plain x86-64, the processor
// choosing at load time. No FMA in either (AVX-512 would add it): the same bits.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define MHA_WIDE_LOOP __attribute__((target_clones("avx2", "default")))
#else
#define MHA_WIDE_LOOP
#endif

// Φ(h) and e^(-h^2/2) for n values of h: the normal's CDF through
// erf(u) = 1 - q(t) e^(-u^2), u = |h| / sqrt 2, t = 1 / (1 + p u) (A&S
// 7.1.26); for h < 0, Φ = q e^(-u^2) / 2 directly, with no 1 - (1 - ...).
MHA_WIDE_LOOP void normal_cdf(const float* h, std::size_t n, float* cdf, float* gauss) {
    for (std::size_t i = 0; i < n; ++i) gauss[i] = -0.5f * h[i] * h[i];
    exp_sum(gauss, n, 0.0f);  // the engine's e^x, in place: e^(-h^2/2)
    for (std::size_t i = 0; i < n; ++i) {
        const float u = std::fabs(h[i]) * float(M_SQRT1_2);
        const float t = 1.0f / (1.0f + 0.3275911f * u);
        const float q = t * (0.254829592f + t * (-0.284496736f + t * (1.421413741f +
                        t * (-1.453152027f + t * 1.061405429f))));
        const float tail = 0.5f * q * gauss[i];  // Φ(-|h|)
        cdf[i] = h[i] < 0 ? tail : 1.0f - tail;
    }
}

constexpr std::size_t kChunk = 1024;  // values per scratch pass, in cache
// Rows whose sums run side by side: each sum keeps its order (the same bits), and
// four chains of adds hide the latency that one chain waits on.
constexpr std::size_t kSide = 4;

}  // namespace

Tensor3 linear(const Tensor3& x, const Linear& layer) {
    if (x.shape(2) != layer.in_features() || layer.bias.shape(0) != layer.out_features())
        return mha::linear(x, layer);  // it names the shapes that do not fit
    const std::size_t rows = x.shape(0) * x.shape(1), out = layer.out_features();
    Tensor3 y = Tensor3::from_shape({x.shape(0), x.shape(1), out});
    linear_rows(x.data(), rows, layer, y.data());  // one gemm over the cores
    return y;
}

Tensor3 linear_backward(const Tensor3& x, const Tensor3& dy, const Linear& l, LinearGrad& g) {
    const std::size_t rows = x.shape(0) * x.shape(1), in = l.in_features(), out = l.out_features();
    if (x.shape(0) != dy.shape(0) || x.shape(1) != dy.shape(1) || x.shape(2) != in ||
        dy.shape(2) != out)
        return mha::linear_backward(x, dy, l, g);  // it names the shapes
    g.weight = Tensor2::from_shape({out, in});
    gemm({dy.data(), rows, out, out}, true, {x.data(), rows, in, in}, false, g.weight.data(), in);
    g.bias = xt::zeros<float>({out});
    for (std::size_t r = 0; r < rows; ++r)
        for (std::size_t o = 0; o < out; ++o) g.bias(o) += dy.data()[r * out + o];
    Tensor3 dx = Tensor3::from_shape({x.shape(0), x.shape(1), in});
    gemm({dy.data(), rows, out, out}, false, {l.weight.data(), out, in, in}, false, dx.data(), in);
    return dx;
}

Tensor3 layer_norm(const Tensor3& x, const LayerNorm& n, NormTrace* keep) {
    if (x.shape(2) != n.dim() || n.bias.shape(0) != n.dim() || n.dim() == 0)
        return mha::layer_norm(x, n, keep);  // it names the shapes
    const std::size_t rows = x.shape(0) * x.shape(1), E = n.dim();
    Tensor3 y = Tensor3::from_shape(x.shape());
    NormTrace local;
    NormTrace& t = keep ? *keep : local;
    t.x_hat.resize(x.shape());
    t.rstd.resize({x.shape(0), x.shape(1)});
    parallel_for(rows, [&](std::size_t r0, std::size_t r1) {
        for (std::size_t r = r0; r < r1; r += kSide) {
            const float* row[kSide];  // past r1, the last row again: its results are dropped
            for (std::size_t k = 0; k < kSide; ++k) row[k] = x.data() + std::min(r + k, r1 - 1) * E;
            double mean[kSide] = {}, var[kSide] = {};
            for (std::size_t c = 0; c < E; ++c)
                for (std::size_t k = 0; k < kSide; ++k) mean[k] += row[k][c];
            for (std::size_t k = 0; k < kSide; ++k) mean[k] /= double(E);
            for (std::size_t c = 0; c < E; ++c)
                for (std::size_t k = 0; k < kSide; ++k)
                    var[k] += (row[k][c] - mean[k]) * (row[k][c] - mean[k]);
            for (std::size_t k = 0; k < kSide && r + k < r1; ++k) {
                const float rstd = float(1.0 / std::sqrt(var[k] / double(E) + n.eps));
                const float mu = float(mean[k]);
                float* x_hat = t.x_hat.data() + (r + k) * E;
                float* out = y.data() + (r + k) * E;
                for (std::size_t c = 0; c < E; ++c) {
                    x_hat[c] = (row[k][c] - mu) * rstd;
                    out[c] = x_hat[c] * n.weight(c) + n.bias(c);
                }
                t.rstd.data()[r + k] = rstd;
            }
        }
    });
    return y;
}

Tensor3 layer_norm_backward(const NormTrace& t, const Tensor3& dy, const LayerNorm& n,
                            NormGrad& g) {
    if (dy.shape() != t.x_hat.shape() || dy.shape(2) != n.dim())
        return mha::layer_norm_backward(t, dy, n, g);  // it names the shapes
    const std::size_t rows = dy.shape(0) * dy.shape(1), E = n.dim();
    Tensor3 dx = Tensor3::from_shape(dy.shape());
    g.weight = xt::zeros<float>({E});
    g.bias = xt::zeros<float>({E});
    std::mutex sum;
    parallel_for(rows, [&](std::size_t r0, std::size_t r1) {
        std::vector<float> dw(E, 0.0f), db(E, 0.0f);  // this worker's part of the sums
        for (std::size_t r = r0; r < r1; r += kSide) {
            const float* x_hat[kSide];
            const float* d[kSide];  // past r1, the last row again: its results are dropped
            for (std::size_t k = 0; k < kSide; ++k) {
                x_hat[k] = t.x_hat.data() + std::min(r + k, r1 - 1) * E;
                d[k] = dy.data() + std::min(r + k, r1 - 1) * E;
            }
            float mean_g[kSide] = {}, mean_gx[kSide] = {};
            for (std::size_t c = 0; c < E; ++c)
                for (std::size_t k = 0; k < kSide; ++k) {
                    const float gc = d[k][c] * n.weight(c);
                    mean_g[k] += gc;
                    mean_gx[k] += gc * x_hat[k][c];
                }
            for (std::size_t k = 0; k < kSide && r + k < r1; ++k) {
                for (std::size_t c = 0; c < E; ++c) {  // rows in order, as one at a time
                    dw[c] += d[k][c] * x_hat[k][c];
                    db[c] += d[k][c];
                }
                const float mg = mean_g[k] / float(E), mgx = mean_gx[k] / float(E);
                const float rstd = t.rstd.data()[r + k];
                float* out = dx.data() + (r + k) * E;
                for (std::size_t c = 0; c < E; ++c)
                    out[c] = rstd * (d[k][c] * n.weight(c) - mg - x_hat[k][c] * mgx);
            }
        }
        const std::lock_guard<std::mutex> lock(sum);
        for (std::size_t c = 0; c < E; ++c) g.weight(c) += dw[c], g.bias(c) += db[c];
    });
    return dx;
}

Tensor3 feed_forward(const Tensor3& x, const FeedForward& f, FeedForwardTrace* keep) {
    if (f.linear1.out_features() != f.linear2.in_features() ||
        f.linear2.out_features() != f.linear1.in_features())
        return mha::feed_forward(x, f, keep);  // it names the shapes
    FeedForwardTrace local;
    FeedForwardTrace& t = keep ? *keep : local;
    t.h = fast::linear(x, f.linear1);           // [B, T, F]
    t.a = Tensor3::from_shape(t.h.shape());  // gelu(h) = h Φ(h)
    parallel_for((t.h.size() + kChunk - 1) / kChunk, [&](std::size_t c0, std::size_t c1) {
        float cdf[kChunk], gauss[kChunk];
        for (std::size_t c = c0; c < c1; ++c) {
            const std::size_t i0 = c * kChunk, n = std::min(kChunk, t.h.size() - i0);
            const float* h = t.h.data() + i0;
            normal_cdf(h, n, cdf, gauss);
            for (std::size_t i = 0; i < n; ++i) t.a.data()[i0 + i] = h[i] * cdf[i];
        }
    });
    return fast::linear(t.a, f.linear2);  // [B, T, E]
}

Tensor3 feed_forward_backward(const Tensor3& x, const FeedForwardTrace& t, const Tensor3& dy,
                              const FeedForward& f, FeedForwardGrads& g) {
    Tensor3 dh = fast::linear_backward(t.a, dy, f.linear2, g.linear2);  // dL/da [B, T, F]
    parallel_for((dh.size() + kChunk - 1) / kChunk, [&](std::size_t c0, std::size_t c1) {
        float cdf[kChunk], gauss[kChunk];
        const float density = float(0.5 * M_2_SQRTPI * M_SQRT1_2);  // 1 / sqrt(2 pi)
        for (std::size_t c = c0; c < c1; ++c) {
            const std::size_t i0 = c * kChunk, n = std::min(kChunk, dh.size() - i0);
            const float* h = t.h.data() + i0;
            normal_cdf(h, n, cdf, gauss);
            for (std::size_t i = 0; i < n; ++i)  // gelu'(h) = Φ(h) + h φ(h)
                dh.data()[i0 + i] *= cdf[i] + h[i] * density * gauss[i];
        }
    });
    return fast::linear_backward(x, dh, f.linear1, g.linear1);  // [B, T, E]
}

CrossEntropy cross_entropy(const Tensor3& logits, const Tokens& targets, double smoothing) {
    const std::size_t B = logits.shape(0), T = logits.shape(1), V = logits.shape(2);
    const bool smooth_ok = smoothing >= 0 && smoothing < 1;
    if (targets.shape(0) != B || targets.shape(1) != T || V == 0 || !smooth_ok)
        return mha::cross_entropy(logits, targets, smoothing);  // it names the shapes
    for (std::int32_t y : targets)
        if (y < 0 || std::size_t(y) >= V) return mha::cross_entropy(logits, targets, smoothing);
    const std::size_t rows = B * T;
    CrossEntropy ce{0.0, Tensor3::from_shape({B, T, V}), 0};
    std::vector<double> loss(rows);
    std::vector<unsigned char> right(rows);
    parallel_for(rows, [&](std::size_t r0, std::size_t r1) {
        for (std::size_t r = r0; r < r1; ++r) {
            const float* z = logits.data() + r * V;
            float* d = ce.d_logits.data() + r * V;
            const std::size_t y = std::size_t(targets.data()[r]);
            std::size_t best = 0;
            for (std::size_t j = 1; j < V; ++j)
                if (z[j] > z[best]) best = j;
            std::copy(z, z + V, d);
            const float sum = exp_sum(d, V, z[best]);  // d = e^(z - top)
            loss[r] = std::log(double(sum)) - (double(z[y]) - z[best]);
            const float scale = 1.0f / (sum * float(rows));  // p / N
            for (std::size_t j = 0; j < V; ++j) d[j] *= scale;
            if (smoothing > 0) {  // the target: 1 - eps on y, eps / V on every token
                double mean = 0;  // of z_j - top
                for (std::size_t j = 0; j < V; ++j) mean += (double(z[j]) - z[best]) / double(V);
                loss[r] = (1 - smoothing) * loss[r] + smoothing * (std::log(double(sum)) - mean);
                const float spread = float(smoothing / double(V * rows));
                for (std::size_t j = 0; j < V; ++j) d[j] -= spread;
                d[y] -= float((1 - smoothing) / double(rows));
            } else {
                d[y] -= 1.0f / float(rows);
            }
            right[r] = best == y;
        }
    });
    for (std::size_t r = 0; r < rows; ++r) ce.loss += loss[r] / double(rows), ce.correct += right[r];
    return ce;
}

}  // namespace mha::fast

#undef MHA_WIDE_LOOP  // this file's alone, also in a unity batch
