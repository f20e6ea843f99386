// The softmax of one row and its gradient, written once with GCC/Clang
// vector types of MHA_LANES floats and compiled twice: 4 lanes in
// softmax.cpp (SSE2, every x86-64) and 8 in softmax_avx2.cpp (AVX2 + FMA),
// which softmax_row() and softmax_grad_row() pick at run time when the
// processor has it. Private to the engine: each of the two files defines
// MHA_LANES and includes this once. The plain softmax it must agree with is
// mha::softmax_row() (src/mha/softmax.cpp).
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

namespace mha::fast {
namespace {

constexpr int W = MHA_LANES;
typedef float F __attribute__((vector_size(W * sizeof(float))));
typedef std::uint32_t U __attribute__((vector_size(W * sizeof(float))));

inline F splat(float x) { return F{} + x; }
inline F load(const float* p) {
    F v;
    std::memcpy(&v, p, sizeof v);
    return v;
}
inline void store(float* p, F v) { std::memcpy(p, &v, sizeof v); }

// Folds the W lanes of v into one with op, in halves: a tree log2(W) steps
// deep rather than a chain of W - 1, which short rows (a causal mask's)
// would wait on.
template <class Op>
inline float fold(F v, Op op) {
    float a[W];
    std::memcpy(a, &v, sizeof a);
    for (int w = W / 2; w >= 1; w /= 2)
        for (int l = 0; l < w; ++l) a[l] = op(a[l], a[l + w]);
    return a[0];
}
// The larger of a and b, lane by lane for vectors; b when either is NaN.
template <class T>
inline T max2(T a, T b) { return a > b ? a : b; }

// e^x for x <= 0, which is all the softmax needs after subtracting the
// max, in W lanes at once. Split x = k ln2 + r with k a whole number and
// |r| <= ln2 / 2; then e^x = 2^k e^r. ln2 is split in two (Cody-Waite) so
// that k ln2 is exact enough. e^r comes from a degree-6 polynomial fitted
// for the smallest worst relative error on that range (scripts/fit_exp.py:
// 4e-9, far below float's 6e-8). Whole, e^x is within 1e-7 relative down
// to -87.3 (tests/fast/test_softmax_kernel.cpp).
//
// No branch and one select, since this runs once per score:
// - Rounding: adding 1.5 * 2^23 pushes the fraction out of a float, so
//   the sum is rounded to a whole number, and its low mantissa bits hold
//   it. The shifter carries + 127 too, so those bits are k + 127: the
//   exponent field of 2^k, ready to be shifted into place.
// - Underflow: x is clamped at -88 (a max, which lets NaN through). From
//   -87.7 down, k = -127, the exponent field is 0 and 2^k is exactly 0, so
//   e^x is exactly 0 there (its true value is under 1e-38) and for e^-inf,
//   which keeps masked keys at exactly 0. Just above, down to -87.3, the
//   result is a subnormal number, and right.
// - NaN stays NaN: r is NaN, whatever bits 2^k gets.
inline F exp_nonpositive(F x) {
    const F xc = max2(splat(-88.0f), x);  // a NaN x passes through
    const F shifter = splat(12582912.0f + 127.0f);  // 1.5 * 2^23 + 127
    const F k_bits = xc * 1.44269504f + shifter;    // x / ln2, rounded
    const F k = k_bits - shifter;
    const F r = (xc - k * 0.693359375f) + k * 2.12194440e-4f;
    // 1 + r + r^2 (c2 + c3 r + c4 r^2 + c5 r^3 + c6 r^4), in pairs
    // (Estrin), so that each vector waits on a shorter chain than Horner's.
    const F r2 = r * r;
    const F c23 = r * 0.16666521f + 0.49999994f;
    const F c45 = r * 0.00836871f + 0.04166839f;
    const F q = (r2 * 0.00138146f + c45) * r2 + c23;
    const F p = (q * r2 + r) + 1.0f;  // adds the 1 last: one rounding
    U bits;
    std::memcpy(&bits, &k_bits, sizeof bits);
    bits <<= 23;  // k + 127 into the exponent field; the rest falls off
    F two_k;
    std::memcpy(&two_k, &bits, sizeof two_k);
    return p * two_k;
}

// row[j] = e^{row[j] - max} for a finite max at least every score, and
// their sum; the step the softmax and the tiled attention share.
float exp_sum_kernel(float* row, std::size_t n, float max) {
    // One vector per step: the exp's own work keeps the core busy, and the
    // constants and the sum then all fit in registers (with two vectors
    // per step, the sums went to the stack and each step waited on them).
    F s = F{};
    std::size_t j = 0;
    for (; j + W <= n; j += W) {
        const F e = exp_nonpositive(load(row + j) - max);
        store(row + j, e);
        s += e;
    }
    float sum = fold(s, [](float a, float b) { return a + b; });
    for (; j < n; ++j) {  // the last few, one lane used
        row[j] = exp_nonpositive(splat(row[j] - max))[0];
        sum += row[j];
    }
    return sum;
}

// The largest of init and row[0 .. n-1], NaN scores passed over (as
// std::max(m, x) does); four vectors per step: four independent chains of
// compares, where one scalar chain waits on each compare in turn.
float row_max_kernel(const float* row, std::size_t n, float init) {
    // b when b > a, else a: a NaN b never wins, and a starts as no NaN
    auto keep_larger = [](auto a, auto b) { return b > a ? b : a; };
    F m[4] = {splat(init), splat(init), splat(init), splat(init)};
    std::size_t j = 0;
    for (; j + 4 * W <= n; j += 4 * W)
        for (int c = 0; c < 4; ++c) m[c] = keep_larger(m[c], load(row + j + c * W));
    for (; j + W <= n; j += W) m[0] = keep_larger(m[0], load(row + j));
    float max = fold(keep_larger(keep_larger(m[0], m[1]), keep_larger(m[2], m[3])),
                     max2<float>);
    for (; j < n; ++j) max = keep_larger(max, row[j]);
    return max;
}

void softmax_row_kernel(float* row, std::size_t n) {
    // The max, two vectors per step: two independent chains of compares.
    std::size_t j = 0;
    F m0 = splat(-INFINITY), m1 = m0;
    for (; j + 2 * W <= n; j += 2 * W) {
        const F a = load(row + j), b = load(row + j + W);
        m0 = max2(m0, a);
        m1 = max2(m1, b);
    }
    // May miss a NaN: then exp() below finds it.
    float max = fold(max2(m0, m1), max2<float>);
    for (; j < n; ++j) max = max2(max, row[j]);
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
    const float inv = 1.0f / exp_sum_kernel(row, n, max);
    for (j = 0; j < n; ++j) row[j] *= inv;
}

// The softmax's gradient over one row's first c weights p, in place on ds
// (dL/d weights in, dL/d scores out): ds_j = p_j (ds_j - sum_k p_k ds_k),
// 0 where keep (bools read as bytes, or nullptr: no mask) says masked and
// from column c to n (keys the row does not see).
void softmax_grad_row_kernel(const float* p, float* ds, const unsigned char* keep,
                             std::size_t c, std::size_t n) {
    F part = F{};  // the dot in W running sums
    std::size_t j = 0;
    for (; j + W <= c; j += W) part += load(p + j) * load(ds + j);
    float dot = 0.0f;
    for (; j < c; ++j) dot += p[j] * ds[j];
    dot += fold(part, [](float a, float b) { return a + b; });
    j = 0;
    if (keep == nullptr) {
        for (; j + W <= c; j += W) store(ds + j, load(p + j) * (load(ds + j) - dot));
        for (; j < c; ++j) ds[j] = p[j] * (ds[j] - dot);
    } else {
        typedef std::uint8_t Bytes __attribute__((vector_size(W)));
        for (; j + W <= c; j += W) {
            Bytes k;
            std::memcpy(&k, keep + j, sizeof k);
            const U kept = U(__builtin_convertvector(k, U) != 0);  // all ones where kept
            const F g = load(p + j) * (load(ds + j) - dot);
            U bits;
            std::memcpy(&bits, &g, sizeof bits);
            bits &= kept;
            F out;
            std::memcpy(&out, &bits, sizeof out);
            store(ds + j, out);
        }
        for (; j < c; ++j) ds[j] = keep[j] != 0 ? p[j] * (ds[j] - dot) : 0.0f;
    }
    for (j = c; j < n; ++j) ds[j] = 0.0f;
}

// tanh(y) in W lanes: for |y| >= 0.125, sign(y) (1 - e) / (1 + e) with
// e = e^{-2|y|} from exp_nonpositive() (its argument is never above 0,
// and e = 0 past |y| = 44, where tanh is 1 in float); below, where 1 - e
// would lose digits, tanh's series y - y^3/3 + 2y^5/15 - 17y^7/315 (its
// next term, 62 y^9/2835, is under 3e-10 of y there). Within 5e-7 of tanh
// in double (tests/fast/test_softmax_kernel.cpp); NaN stays NaN.
inline F tanh_lanes(F y) {
    const F a = max2(y, -y);  // |y|; NaN passes through
    const F e = exp_nonpositive(-2.0f * a);
    const F big = (1.0f - e) / (1.0f + e);
    const F y2 = y * y;
    const F series = y * (((y2 * -0.053968254f + 0.13333334f) * y2 - 0.33333334f) * y2 + 1.0f);
    return a < 0.125f ? series : (y < 0.0f ? -big : big);
}

// Soft-capping: row[j] = cap tanh(row[j] / cap), and when d is not null
// d[j] = 1 - tanh^2(row[j] / cap), the cap's derivative, for the backward.
void soft_cap_kernel(float* row, std::size_t n, float cap, float* d) {
    const float inv = 1.0f / cap;
    std::size_t j = 0;
    for (; j + W <= n; j += W) {
        const F t = tanh_lanes(load(row + j) * inv);
        store(row + j, t * cap);
        if (d != nullptr) store(d + j, 1.0f - t * t);
    }
    for (; j < n; ++j) {  // the last few, one lane used
        const float t = tanh_lanes(splat(row[j] * inv))[0];
        row[j] = t * cap;
        if (d != nullptr) d[j] = 1.0f - t * t;
    }
}

}  // namespace
}  // namespace mha::fast
