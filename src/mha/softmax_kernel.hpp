// The softmax of one row, written once with GCC/Clang vector types of
// MHA_LANES floats and compiled twice: 4 lanes in softmax.cpp (SSE2, every
// x86-64) and 8 in softmax_avx2.cpp (AVX2 + FMA), which softmax_row() picks
// at run time when the processor has it. Private to the core: each of the
// two files defines MHA_LANES and includes this once.
//
// Everything here has internal linkage (an unnamed namespace), so that the
// AVX2 build of a helper can never be linked in place of the plain one.
#ifndef MHA_LANES
#error "define MHA_LANES (floats per vector) before including softmax_kernel.hpp"
#endif

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>

namespace mha {
namespace {

constexpr int W = MHA_LANES;
typedef float F __attribute__((vector_size(W * sizeof(float))));
typedef std::int32_t I __attribute__((vector_size(W * sizeof(float))));

inline F splat(float x) { return F{} + x; }
inline F load(const float* p) {
    F v;
    std::memcpy(&v, p, sizeof v);
    return v;
}
inline void store(float* p, F v) { std::memcpy(p, &v, sizeof v); }

// e^x for x <= 0, which is all the softmax needs after subtracting the
// max, in W lanes at once. Split x = k ln2 + r with |r| <= ln2 / 2; then
// e^x = 2^k e^r, with e^r from its Taylor series up to r^7 (truncation
// error under 2e-8, below float's 6e-8). ln2 is split in two (Cody-Waite)
// so that k ln2 is exact enough. Below -87, e^x is under float's
// smallest normal number: it is 0 here, and so is e^-inf, which keeps
// masked keys at exactly 0. NaN stays NaN.
inline F exp_nonpositive(F x) {
    const F xc = x >= -87.0f ? x : splat(-87.0f);  // NaN too: k in range
    const I k = __builtin_convertvector(xc * 1.44269504f - 0.5f, I);  // round
    const F kf = __builtin_convertvector(k, F);
    const F r = (xc - kf * 0.693359375f) + kf * 2.12194440e-4f;
    F p = r * (1.0f / 5040) + 1.0f / 720;
    p = p * r + 1.0f / 120;
    p = p * r + 1.0f / 24;
    p = p * r + 1.0f / 6;
    p = p * r + 0.5f;
    p = p * r + 1.0f;
    p = p * r + 1.0f;
    const I bits = (k + 127) << 23;  // 2^k, as float bits; k >= -126
    F two_k;
    std::memcpy(&two_k, &bits, sizeof two_k);
    const F y = x < -87.0f ? F{} : p * two_k;
    return x == x ? y : x;  // NaN in, NaN out
}

// Two vectors per step, so that two independent chains keep the core busy.
void softmax_row_kernel(float* row, std::size_t n) {
    constexpr std::size_t step = 2 * W;
    std::size_t j = 0;
    F m0 = splat(-INFINITY), m1 = m0;
    for (; j + step <= n; j += step) {
        const F a = load(row + j), b = load(row + j + W);
        m0 = m0 > a ? m0 : a;
        m1 = m1 > b ? m1 : b;
    }
    float max = -INFINITY;  // may miss a NaN: then exp() below finds it
    for (; j < n; ++j) max = max > row[j] ? max : row[j];
    for (int l = 0; l < W; ++l) {
        max = max > m0[l] ? max : m0[l];
        max = max > m1[l] ? max : m1[l];
    }
    if (max == -INFINITY) {
        // Every key masked: attend to nothing. Unless a NaN hid from the
        // max: then the row is NaN, as it would be through exp().
        bool nan = false;
        for (std::size_t i = 0; i < n; ++i) nan = nan || row[i] != row[i];
        for (std::size_t i = 0; i < n; ++i) row[i] = nan ? NAN : 0.0f;
        return;
    }
    // Subtracting the max changes nothing mathematically; it keeps exp()
    // from overflowing (exp(89) is already inf in float).
    F s0 = F{}, s1 = F{};
    for (j = 0; j + step <= n; j += step) {
        const F a = exp_nonpositive(load(row + j) - max);
        const F b = exp_nonpositive(load(row + j + W) - max);
        store(row + j, a);
        store(row + j + W, b);
        s0 += a;
        s1 += b;
    }
    float sum = 0.0f;
    for (; j < n; ++j) {  // the last few, one lane used
        row[j] = exp_nonpositive(splat(row[j] - max))[0];
        sum += row[j];
    }
    for (int l = 0; l < W; ++l) sum += s0[l] + s1[l];
    const float inv = 1.0f / sum;
    for (j = 0; j < n; ++j) row[j] *= inv;
}

}  // namespace
}  // namespace mha
