// Training, 2: the loss of a prediction over V tokens at every position.
//
// B batch, T positions, V vocabulary size.
#include "mha/model/loss.hpp"

#include <cmath>
#include <string>

namespace mha {

CrossEntropy cross_entropy(const Tensor3& logits, const Tokens& targets) {
    const std::size_t B = logits.shape(0), T = logits.shape(1), V = logits.shape(2);
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
            ce.loss += (std::log(sum) - (logits(b, t, y) - top)) / n;
            for (std::size_t j = 0; j < V; ++j) {
                const double p = std::exp(logits(b, t, j) - top) / sum;
                ce.d_logits(b, t, j) = static_cast<float>((p - (j == std::size_t(y))) / n);
            }
            ce.correct += best == static_cast<std::size_t>(y);
        }
    return ce;
}

}  // namespace mha
