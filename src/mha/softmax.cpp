// Stage 5: a row at a time, with no broadcasting temporaries.
#include "mha/softmax.hpp"

#include <algorithm>
#include <cmath>

namespace mha {

void softmax_row(float* row, std::size_t n) {
    float max = row[0];
    for (std::size_t j = 1; j < n; ++j) max = std::max(max, row[j]);
    if (max == -INFINITY) {  // every key masked: attend to nothing
        std::fill(row, row + n, 0.0f);
        return;
    }
    // Subtracting the max changes nothing mathematically; it keeps exp()
    // from overflowing (exp(89) is already inf in float).
    float sum = 0.0f;
    for (std::size_t j = 0; j < n; ++j) {
        row[j] = std::exp(row[j] - max);
        sum += row[j];
    }
    const float inv = 1.0f / sum;
    for (std::size_t j = 0; j < n; ++j) row[j] *= inv;
}

Tensor4 softmax(const Tensor4& scores) {
    const std::size_t Tk = scores.shape(3);
    require_nonzero({scores.shape(0), scores.shape(1), scores.shape(2), Tk},
                    "softmax scores [B, H, Tq, Tk]");
    Tensor4 w = scores;  // [B, H, Tq, Tk]
    for (std::size_t r = 0; r < w.size() / Tk; ++r)
        softmax_row(w.data() + r * Tk, Tk);
    return w;
}

}  // namespace mha
