// Training, 2: the loss of a prediction over V tokens at every position.
//
// B batch, T positions, V vocabulary size.
#include "mha/model/loss.hpp"

#include <cmath>
#include <string>

namespace mha {

CrossEntropy cross_entropy(const Tensor3& logits, const Tokens& targets, double smoothing) {
    const std::size_t B = logits.shape(0), T = logits.shape(1), V = logits.shape(2);
    if (!(smoothing >= 0 && smoothing < 1))
        fail("cross_entropy: label smoothing " + std::to_string(smoothing) +
             " is outside [0, 1)");
    if (targets.shape(0) != B || targets.shape(1) != T) {
        fail("cross_entropy: targets " + shape_of(targets) + " must be [B, T] of logits " +
             shape_of(logits));
    }
    const double n = static_cast<double>(B * T);
    CrossEntropy ce{0.0, Tensor3::from_shape({B, T, V}), 0};  // d_logits [B, T, V]
    for (std::size_t b = 0; b < B; ++b)
        for (std::size_t t = 0; t < T; ++t) {
            const std::int32_t y = targets(b, t);
            if (y < 0 || static_cast<std::size_t>(y) >= V) {
                fail("cross_entropy: target " + std::to_string(y) + " at [" +
                     std::to_string(b) + ", " + std::to_string(t) +
                     "] is outside [0, " + std::to_string(V) + ")");
            }
            std::size_t best = 0;
            for (std::size_t j = 1; j < V; ++j)
                if (logits(b, t, j) > logits(b, t, best)) best = j;
            const double top = logits(b, t, best);
            double sum = 0;
            for (std::size_t j = 0; j < V; ++j) sum += std::exp(logits(b, t, j) - top);
            // -log softmax(z)_y = log sum_j e^(z_j - top) - (z_y - top)
            const double on_y = std::log(sum) - (logits(b, t, y) - top);
            if (smoothing > 0) {
                double mean = 0;  // of z_j - top; log sum - mean is the mean of -log p_j
                for (std::size_t j = 0; j < V; ++j) mean += (logits(b, t, j) - top) / double(V);
                ce.loss += ((1 - smoothing) * on_y + smoothing * (std::log(sum) - mean)) / n;
            } else {
                ce.loss += on_y / n;
            }
            for (std::size_t j = 0; j < V; ++j) {
                const double p = std::exp(logits(b, t, j) - top) / sum;
                const double target = (1 - smoothing) * (j == std::size_t(y)) + smoothing / V;
                ce.d_logits(b, t, j) = static_cast<float>((p - target) / n);
            }
            ce.correct += best == static_cast<std::size_t>(y);
        }
    return ce;
}

}  // namespace mha
