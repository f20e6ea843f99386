// Stage 5: a row at a time, with no broadcasting temporaries.
#include "mha/softmax.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>

namespace mha {

namespace {

// e^x for x <= 0, which is all the softmax needs after subtracting the max,
// written without branches so that the compiler runs 4 of them at once
// (this file is compiled with -fno-trapping-math for that). Split
// x = k ln2 + r with |r| <= ln2 / 2; then e^x = 2^k e^r, with e^r from its
// Taylor series up to r^7 (truncation error under 2e-8, below float's
// 6e-8). ln2 is split in two (Cody-Waite) so that k ln2 is exact enough.
// Below -87, e^x is under float's smallest normal number: it is 0 here, and
// so is e^-inf, which keeps masked keys at exactly 0. NaN stays NaN.
inline float exp_nonpositive(float x) {
    const float xc = x >= -87.0f ? x : -87.0f;  // NaN too: k stays in range
    const int k = static_cast<int>(xc * 1.44269504f - 0.5f);  // round, x <= 0
    const float kf = static_cast<float>(k);
    const float r = (xc - kf * 0.693359375f) + kf * 2.12194440e-4f;
    float p = 1.0f / 5040;
    p = p * r + 1.0f / 720;
    p = p * r + 1.0f / 120;
    p = p * r + 1.0f / 24;
    p = p * r + 1.0f / 6;
    p = p * r + 0.5f;
    p = p * r + 1.0f;
    p = p * r + 1.0f;
    const std::uint32_t bits = static_cast<std::uint32_t>(k + 127) << 23;  // 2^k
    float two_k;
    std::memcpy(&two_k, &bits, sizeof two_k);
    const float y = p * two_k;
    return x < -87.0f ? 0.0f : (x == x ? y : x);  // NaN in, NaN out
}

// The max and the sum run in 8 independent lanes, so that the compiler can
// keep them in vector registers instead of one long chain of dependent ops.
constexpr std::size_t kLanes = 8;

inline float row_max(const float* row, std::size_t n) {
    float lane[kLanes];
    std::fill(lane, lane + kLanes, -INFINITY);
    std::size_t j = 0;
    for (; j + kLanes <= n; j += kLanes)
        for (std::size_t l = 0; l < kLanes; ++l)
            lane[l] = lane[l] > row[j + l] ? lane[l] : row[j + l];
    float max = -INFINITY;
    for (; j < n; ++j) max = max > row[j] ? max : row[j];
    for (float m : lane) max = max > m ? max : m;
    return max;  // may miss a NaN: softmax_row() deals with that
}

// row[j] = e^(row[j] - max), and the sum of them.
inline float exp_and_sum(float* row, std::size_t n, float max) {
    float lane[kLanes] = {};
    std::size_t j = 0;
    for (; j + kLanes <= n; j += kLanes)
        for (std::size_t l = 0; l < kLanes; ++l) {
            row[j + l] = exp_nonpositive(row[j + l] - max);
            lane[l] += row[j + l];
        }
    float sum = 0.0f;
    for (; j < n; ++j) {
        row[j] = exp_nonpositive(row[j] - max);
        sum += row[j];
    }
    for (float s : lane) sum += s;
    return sum;
}

}  // namespace

void softmax_row(float* row, std::size_t n) {
    const float max = row_max(row, n);
    if (max == -INFINITY) {
        // Every key masked: attend to nothing. Unless a NaN hid from the
        // max: then the row is NaN, as it would be through exp() below.
        const bool nan = std::any_of(row, row + n, [](float x) { return x != x; });
        std::fill(row, row + n, nan ? NAN : 0.0f);
        return;
    }
    // Subtracting the max changes nothing mathematically; it keeps exp()
    // from overflowing (exp(89) is already inf in float).
    const float inv = 1.0f / exp_and_sum(row, n, max);
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
