// Stage 5: the stable softmax, one row of scores at a time.
//
// B = batch, H = heads, Tq / Tk = queries / keys.
#include "mha/softmax.hpp"

#include <algorithm>
#include <cmath>

namespace mha {

void softmax_row(float* row, std::size_t n) {
    float max = -INFINITY;
    bool nan = false;
    for (std::size_t j = 0; j < n; ++j) {
        max = std::max(max, row[j]);
        nan = nan || std::isnan(row[j]);
    }
    if (nan || max == -INFINITY) {
        // A NaN spoils its row rather than hide; a row whose keys are all
        // masked attends to nothing (the policy in softmax.hpp).
        std::fill(row, row + n, nan ? NAN : 0.0f);
        return;
    }
    // Subtracting the max changes nothing mathematically; it keeps exp()
    // from overflowing (exp(89) is already inf in float).
    float sum = 0.0f;
    for (std::size_t j = 0; j < n; ++j) {
        row[j] = std::exp(row[j] - max);
        sum += row[j];
    }
    for (std::size_t j = 0; j < n; ++j) row[j] /= sum;
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
