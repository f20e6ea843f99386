// The per-head products on packed panels, for processors with AVX2 and FMA.
// This file alone is compiled with -mavx2 -mfma (see src/CMakeLists.txt);
// the forward calls it only after asking the processor.
#include "mha/fast/packed_gemm.hpp"

#include <immintrin.h>

#include <algorithm>
#include <atomic>
#include <thread>
#include <type_traits>
#include <vector>

#include "mha/fast/memory.hpp"
#include "mha/fast/packed_tile.hpp"
#include "mha/fast/parallel.hpp"

namespace mha::fast {

namespace {

// Terms of the sum per pass (columns of A, rows of B): a tile's 6 rows of A
// (6 KiB) and a panel's 256 rows (16 KiB) stay in the L1 cache together.
constexpr std::size_t kDepth = 256;

// One tile of C: MR rows x one panel (16 columns), over kc terms of the sum.
// 2*MR accumulators of 8 floats stay in registers (12 of the 16 for MR = 6);
// each step loads one row of the panel and broadcasts one element of each
// of the MR rows of A. add: C += alpha * sum (a later stretch of k);
// otherwise C = alpha * sum. Only the first ncols columns are written.
// A is read where L says (a_at()): in place, by rows or by columns, or
// from a micro-panel that pack_six_rows() wrote. bias, when given, is added as
// the tile is stored (a linear layer's first stretch of k).
template <int MR, ALayout L = ALayout::rows>
void tile(const float* a, std::size_t lda, const float* panel, std::size_t kc,
          float* c, std::size_t ldc, std::size_t ncols, float alpha, bool add,
          const float* bias = nullptr) {
    // The tile's rows of C, asked for now and needed only after kc steps:
    // when C is not in cache (a linear layer's output), its lines arrive
    // during the sum instead of stalling the stores at the end.
    for (int r = 0; r < MR; ++r) {
        _mm_prefetch(reinterpret_cast<const char*>(c + r * ldc), _MM_HINT_T0);
        _mm_prefetch(reinterpret_cast<const char*>(c + r * ldc + ncols - 1), _MM_HINT_T0);
    }
    // Every loop over r is unrolled, so that acc lives in registers only
    // (left rolled, GCC 12 keeps acc in memory and stores it every step).
    __m256 acc[MR][2];
#pragma GCC unroll 6
    for (int r = 0; r < MR; ++r) acc[r][0] = acc[r][1] = _mm256_setzero_ps();
    for (std::size_t t = 0; t < kc; ++t) {
        const __m256 b0 = _mm256_loadu_ps(panel + t * kPanelWidth);
        const __m256 b1 = _mm256_loadu_ps(panel + t * kPanelWidth + 8);
#pragma GCC unroll 6
        for (int r = 0; r < MR; ++r) {
            const __m256 x =
                _mm256_broadcast_ss(a_at<L>(a, lda, r, t));
            acc[r][0] = _mm256_fmadd_ps(x, b0, acc[r][0]);
            acc[r][1] = _mm256_fmadd_ps(x, b1, acc[r][1]);
        }
    }
    const __m256 s = _mm256_set1_ps(alpha);
#pragma GCC unroll 6
    for (int r = 0; r < MR; ++r) {
        float* row = c + r * ldc;
        __m256 lo = _mm256_mul_ps(acc[r][0], s);
        __m256 hi = _mm256_mul_ps(acc[r][1], s);
        if (ncols == kPanelWidth) {
            if (bias != nullptr) {
                lo = _mm256_add_ps(lo, _mm256_loadu_ps(bias));
                hi = _mm256_add_ps(hi, _mm256_loadu_ps(bias + 8));
            }
            if (add) {
                lo = _mm256_add_ps(lo, _mm256_loadu_ps(row));
                hi = _mm256_add_ps(hi, _mm256_loadu_ps(row + 8));
            }
            _mm256_storeu_ps(row, lo);
            _mm256_storeu_ps(row + 8, hi);
        } else {  // the last, partial panel
            float part[kPanelWidth];
            _mm256_storeu_ps(part, lo);
            _mm256_storeu_ps(part + 8, hi);
            for (std::size_t j = 0; j < ncols; ++j) {
                if (bias != nullptr) part[j] += bias[j];
                row[j] = add ? row[j] + part[j] : part[j];
            }
        }
    }
}

// One tile of MR rows at a column block: 32 columns through the AVX-512
// tile when it is on and two panels are left, else one panel of 16.
// left: the columns of C from here on. Returns how many it covered.
template <int MR, ALayout L = ALayout::rows>
std::size_t tile_at(const float* a, std::size_t lda, const float* panel,
                    std::size_t packed_k, std::size_t kc, float* c, std::size_t ldc,
                    std::size_t left, float alpha, bool add, const float* bias, bool wide) {
    if (wide && left > kPanelWidth) {
        const std::size_t ncols = std::min(2 * kPanelWidth, left);
        wide_tile(MR, L, a, lda, panel, kPanelWidth * packed_k, kc, c, ldc, ncols, alpha,
                  add, bias);
        return ncols;
    }
    const std::size_t ncols = std::min(kPanelWidth, left);
    tile<MR, L>(a, lda, panel, kc, c, ldc, ncols, alpha, add, bias);
    return ncols;
}

// tile_at<MR> for 1-6 rows of A read in place (the rows left under whole
// 6-row tiles, or a transposed A): MR is known only at run time here.
template <ALayout L = ALayout::rows>
std::size_t rest_tile_at(std::size_t rows, const float* a, std::size_t lda, const float* panel,
                         std::size_t packed_k, std::size_t kc, float* c, std::size_t ldc,
                         std::size_t left, float alpha, bool add, const float* bias, bool wide) {
    auto at = [&](auto mr) {
        return tile_at<decltype(mr)::value, L>(a, lda, panel, packed_k, kc, c, ldc, left, alpha,
                                               add, bias, wide);
    };
    switch (rows) {
        case 6: return at(std::integral_constant<int, 6>{});
        case 5: return at(std::integral_constant<int, 5>{});
        case 4: return at(std::integral_constant<int, 4>{});
        case 3: return at(std::integral_constant<int, 3>{});
        case 2: return at(std::integral_constant<int, 2>{});
        case 1: return at(std::integral_constant<int, 1>{});
        default: return left;  // no rows: nothing to do for any column
    }
}

// MR rows of C, panel after panel: C is written along its rows, a few
// streams at a time (panel-major order would start a new cache line in
// every row of C at once, which the prefetcher cannot follow).
template <int MR>
void row_tiles(const float* a, std::size_t lda, const float* packed,
               std::size_t packed_k, std::size_t kc, std::size_t n, float* c,
               std::size_t ldc, float alpha, bool add, bool wide) {
    for (std::size_t j0 = 0; j0 < n;)
        j0 += tile_at<MR>(a, lda, packed + j0 * packed_k, packed_k, kc, c + j0, ldc, n - j0,
                          alpha, add, nullptr, wide);
}

// Eight vectors of 8 floats, as the rows of an 8 x 8 block, transposed in
// registers: r[i] becomes what was column i. Pairs of rows interleaved,
// then quads, then the 128-bit halves swapped across.
[[gnu::always_inline]] inline void transpose8(__m256 r[8]) {
    const __m256 p0 = _mm256_unpacklo_ps(r[0], r[1]), p1 = _mm256_unpackhi_ps(r[0], r[1]);
    const __m256 p2 = _mm256_unpacklo_ps(r[2], r[3]), p3 = _mm256_unpackhi_ps(r[2], r[3]);
    const __m256 p4 = _mm256_unpacklo_ps(r[4], r[5]), p5 = _mm256_unpackhi_ps(r[4], r[5]);
    const __m256 p6 = _mm256_unpacklo_ps(r[6], r[7]), p7 = _mm256_unpackhi_ps(r[6], r[7]);
    const __m256 q0 = _mm256_shuffle_ps(p0, p2, 0x44), q1 = _mm256_shuffle_ps(p0, p2, 0xEE);
    const __m256 q2 = _mm256_shuffle_ps(p1, p3, 0x44), q3 = _mm256_shuffle_ps(p1, p3, 0xEE);
    const __m256 q4 = _mm256_shuffle_ps(p4, p6, 0x44), q5 = _mm256_shuffle_ps(p4, p6, 0xEE);
    const __m256 q6 = _mm256_shuffle_ps(p5, p7, 0x44), q7 = _mm256_shuffle_ps(p5, p7, 0xEE);
    r[0] = _mm256_permute2f128_ps(q0, q4, 0x20);
    r[1] = _mm256_permute2f128_ps(q1, q5, 0x20);
    r[2] = _mm256_permute2f128_ps(q2, q6, 0x20);
    r[3] = _mm256_permute2f128_ps(q3, q7, 0x20);
    r[4] = _mm256_permute2f128_ps(q0, q4, 0x31);
    r[5] = _mm256_permute2f128_ps(q1, q5, 0x31);
    r[6] = _mm256_permute2f128_ps(q2, q6, 0x31);
    r[7] = _mm256_permute2f128_ps(q3, q7, 0x31);
}

// Six rows of A, terms 0 .. kc-1, into a micro-panel: the six rows' term t
// are the six floats at 6 t. Eight terms at a time, as an 8 x 8 transpose
// whose last two rows are zero; each store of 8 floats runs 2 past its 6,
// and the next store (or the buffer's spare 8 floats at the end) takes them.
void pack_six_rows(const float* a, std::size_t lda, std::size_t kc, float* d) {
    std::size_t t = 0;
    for (; t + 8 <= kc; t += 8) {
        __m256 r[8];
        for (std::size_t i = 0; i < 6; ++i) r[i] = _mm256_loadu_ps(a + i * lda + t);
        r[6] = r[7] = _mm256_setzero_ps();
        transpose8(r);
        for (std::size_t i = 0; i < 8; ++i) _mm256_storeu_ps(d + (t + i) * 6, r[i]);
    }
    for (; t < kc; ++t)
        for (std::size_t r = 0; r < 6; ++r) d[t * 6 + r] = a[r * lda + t];
}

// A linear layer goes through its rows 48 at a time. The block of A, packed
// (48 rows x 512 terms, 96 KiB), stays in L2 while each panel of the
// weight (512 terms x 16 columns, 32 KiB) meets all 48 rows; the block's C
// (96 KiB per layer) is written once, with no second stretch of k to add
// into it while E <= 512.
constexpr std::size_t kLinearRows = 48;
constexpr std::size_t kLinearDepth = 512;

// packed_product() blocks as a linear layer does: 48 rows x 512 terms of
// A (96 KiB) in L2, C added into once per 512 terms. (In 256-term
// stretches, whose 32-column blocks of B fit L1, the backward took
// 1.03-1.04x the time here.)
constexpr std::size_t kProductDepth = 512;
constexpr std::size_t kProductRows = 48;
// A large product packs op(B) this many terms at a time (a slab, 4 MiB
// at 512 columns), once, shared by its workers (see packed_product()).
constexpr std::size_t kSlab = 2048;
// Floats of one worker's block of A: + pack_six_rows()' overrun.
constexpr std::size_t kBlockFloats = kProductRows * kProductDepth + 8;

// Rows i0 .. i0+rows-1 of A, terms t0 .. t0+kc-1, into micro-panels of 6
// rows as pack_six_rows() writes them (row i's term t at
// d[(i / 6) 6 kc + 6 t + i % 6]), zeros past the last row.
void pack_rows(Block a, std::size_t i0, std::size_t rows, std::size_t t0, std::size_t kc,
               float* d) {
    const std::size_t padded = (rows + 5) / 6 * 6;
    for (std::size_t i = 0; i < padded; i += 6) {
        float* panel = d + i * kc;
        if (i + 6 <= rows) {
            pack_six_rows(a.data + (i0 + i) * a.ld + t0, a.ld, kc, panel);
            continue;
        }
        for (std::size_t t = 0; t < kc; ++t)
            for (std::size_t r = 0; r < 6; ++r)
                panel[t * 6 + r] = i + r < rows ? a.data[(i0 + i + r) * a.ld + t0 + t] : 0.0f;
    }
}

// One packed_product(): its operands and the work of one worker.
struct Product {
    Block a;
    bool trans_a;
    Block b;
    bool trans_b;
    std::size_t n;  // columns of C
    bool wide;

    // Floats of the panels that pack() writes for `terms` terms, 512 to a
    // stretch (each stretch as long as a whole one).
    std::size_t panels_for(std::size_t terms) const {
        return (terms + kProductDepth - 1) / kProductDepth * packed_floats(kProductDepth, n);
    }

    // op(B)'s rows k0 .. k1-1 (the terms), 512 at a time, into panels at
    // dst for multiply() to read: the share `part` of `parts` of its panels.
    void pack(std::size_t k0, std::size_t k1, std::size_t part, std::size_t parts,
              float* dst) const {
        const std::size_t k = k1 - k0, per_stretch = packed_floats(kProductDepth, n);
        const std::size_t count = (n + kPanelWidth - 1) / kPanelWidth;
        const std::size_t j0 = count * part / parts * kPanelWidth;
        const std::size_t j1 = std::min(n, count * (part + 1) / parts * kPanelWidth);
        for (std::size_t t0 = 0; j0 < j1 && t0 < k; t0 += kProductDepth) {
            const std::size_t kc = std::min(kProductDepth, k - t0), t = k0 + t0;
            pack_panels(trans_b ? b.data + j0 * b.ld + t : b.data + t * b.ld + j0, b.ld,
                        trans_b, kc, j1 - j0, dst + t0 / kProductDepth * per_stretch + j0 * kc);
        }
    }

    // Rows i0 .. i1-1 of C (+)= alpha op(A) op(B) over terms k0 .. k1-1,
    // which pack() put in `packed`; C rows ldc apart; the first stretch
    // adds to C when add_first. Each block of rows goes into `block`
    // (kBlockFloats) and meets the panels 512 terms at a time.
    void multiply(std::size_t i0, std::size_t i1, std::size_t k0, std::size_t k1,
                  const float* packed, float* block, float* c, std::size_t ldc, float alpha,
                  bool add_first) const {
        const std::size_t k = k1 - k0, per_stretch = packed_floats(kProductDepth, n);
        for (std::size_t r0 = i0; r0 < i1; r0 += kProductRows) {
            const std::size_t rows = std::min(kProductRows, i1 - r0);
            for (std::size_t t0 = 0; t0 < k; t0 += kProductDepth) {
                const std::size_t kc = std::min(kProductDepth, k - t0);
                const bool add = t0 > 0 || add_first;
                // A into micro-panels; A^T's rows (the terms) copied as they
                // are, next to each other: read by columns, from one block
                const std::size_t vectors = (rows + 7) / 8 * 8;  // whole vectors of 8 floats
                if (trans_a && r0 + vectors <= a.cols) {  // no call per term
                    for (std::size_t t = 0; t < kc; ++t) {
                        const float* from = a.data + (k0 + t0 + t) * a.ld + r0;
                        float* to = block + t * kProductRows;
                        for (std::size_t v = 0; v < vectors; v += 8)
                            _mm256_storeu_ps(to + v, _mm256_loadu_ps(from + v));
                    }
                } else if (trans_a) {
                    for (std::size_t t = 0; t < kc; ++t)
                        std::copy_n(a.data + (k0 + t0 + t) * a.ld + r0, rows,
                                    block + t * kProductRows);
                } else {
                    pack_rows(a, r0, rows, k0 + t0, kc, block);
                }
                const float* stretch = packed + t0 / kProductDepth * per_stretch;
                for (std::size_t j0 = 0, step = 0; j0 < n; j0 += step) {
                    for (std::size_t i = 0; i < rows; i += 6) {
                        const std::size_t mr = std::min<std::size_t>(6, rows - i);
                        float* ci = c + (r0 + i) * ldc + j0;
                        step = trans_a ? rest_tile_at<ALayout::columns>(
                                             mr, block + i, kProductRows, stretch + j0 * kc, kc,
                                             kc, ci, ldc, n - j0, alpha, add, nullptr, wide)
                                       : tile_rows(mr, block + i * kc, stretch + j0 * kc, kc,
                                                   ci, ldc, n - j0, alpha, add);
                    }
                }
            }
        }
    }

    // One tile from a micro-panel; the last 1-5 rows of C go through a
    // whole tile in scratch, then only they are written.
    std::size_t tile_rows(std::size_t rows, const float* ap, const float* panel,
                          std::size_t kc, float* c, std::size_t ldc, std::size_t left,
                          float alpha, bool add) const {
        constexpr ALayout L = ALayout::micro_panel;
        if (rows == 6)
            return tile_at<6, L>(ap, 0, panel, kc, kc, c, ldc, left, alpha, add, nullptr, wide);
        constexpr std::size_t w = 2 * kPanelWidth;
        float part[6 * w];
        const std::size_t cols =
            tile_at<6, L>(ap, 0, panel, kc, kc, part, w, left, alpha, false, nullptr, wide);
        for (std::size_t r = 0; r < rows; ++r)
            for (std::size_t j = 0; j < cols; ++j)
                c[r * ldc + j] = add ? c[r * ldc + j] + part[r * w + j] : part[r * w + j];
        return cols;
    }
};

// The workers of one large packed_product() wait here for each other
// between slabs. It spins, as a slab takes milliseconds and a sleep and a
// wake-up would cost tens of microseconds; after a while it yields, in case
// another process has the core the others need.
class Barrier {
public:
    explicit Barrier(std::size_t count) : count_(count) {}
    void wait() {
        const std::size_t round = round_.load(std::memory_order_acquire);
        if (arrived_.fetch_add(1, std::memory_order_acq_rel) + 1 == count_) {
            arrived_.store(0, std::memory_order_relaxed);
            round_.store(round + 1, std::memory_order_release);
            return;
        }
        for (int spins = 0; round_.load(std::memory_order_acquire) == round; ++spins) {
            if (spins < 4096) {
                _mm_pause();
            } else {
                std::this_thread::yield();
            }
        }
    }

private:
    const std::size_t count_;
    std::atomic<std::size_t> arrived_{0}, round_{0};
};

}  // namespace

void pack_panels(const float* src, std::size_t ld, bool trans, std::size_t k,
                 std::size_t n, float* dst) {
    // Panel p (columns 16p..16p+15 of B) starts at dst + 16 k p; row t of
    // the panel is the 16 floats at 16 t from there.
    if (!trans) {  // row t of B is row t of src: copy it 16 floats at a time
        for (std::size_t t = 0; t < k; ++t) {
            const float* s = src + t * ld;
            for (std::size_t j0 = 0; j0 < n; j0 += kPanelWidth) {
                float* d = dst + j0 * k + t * kPanelWidth;
                const std::size_t width = std::min(kPanelWidth, n - j0);
                if (width == kPanelWidth) {  // two vectors, no call to memmove
                    _mm256_storeu_ps(d, _mm256_loadu_ps(s + j0));
                    _mm256_storeu_ps(d + 8, _mm256_loadu_ps(s + j0 + 8));
                } else {
                    std::copy(s + j0, s + j0 + width, d);
                    std::fill(d + width, d + kPanelWidth, 0.0f);
                }
            }
        }
        return;
    }
    // B = src^T: column j of B is row j of src. A whole panel's 16 rows of
    // src go 8 terms at a time through two 8 x 8 transposes (its columns
    // 0-7 and 8-15); the last terms, and a partial last panel, one by one.
    for (std::size_t j0 = 0; j0 < n; j0 += kPanelWidth) {
        float* panel = dst + j0 * k;
        const float* s = src + j0 * ld;
        const std::size_t width = std::min(kPanelWidth, n - j0);
        std::size_t t = 0;
        if (width == kPanelWidth) {
            for (; t + 8 <= k; t += 8) {
                for (std::size_t half = 0; half < kPanelWidth; half += 8) {
                    __m256 r[8];
                    for (std::size_t i = 0; i < 8; ++i)
                        r[i] = _mm256_loadu_ps(s + (half + i) * ld + t);
                    transpose8(r);
                    for (std::size_t i = 0; i < 8; ++i)
                        _mm256_storeu_ps(panel + (t + i) * kPanelWidth + half, r[i]);
                }
            }
        }
        for (; t < k; ++t) {
            for (std::size_t j = 0; j < kPanelWidth; ++j)  // zeros past column n
                panel[t * kPanelWidth + j] = j < width ? s[j * ld + t] : 0.0f;
        }
    }
}

void packed_gemm(const float* a, std::size_t lda, std::size_t m, std::size_t k,
                 const float* packed, std::size_t packed_k, std::size_t n, float* c,
                 std::size_t ldc, float alpha, bool add_to_c) {
    const bool wide = wide_tiles_on();
    for (std::size_t t0 = 0; t0 < k; t0 += kDepth) {
        const std::size_t kc = std::min(kDepth, k - t0);
        const float* b = packed + t0 * kPanelWidth;
        const bool add = add_to_c || t0 > 0;
        std::size_t i = 0;
        for (; i + 6 <= m; i += 6)
            row_tiles<6>(a + i * lda + t0, lda, b, packed_k, kc, n, c + i * ldc, ldc,
                         alpha, add, wide);
        for (std::size_t j0 = 0; i < m && j0 < n;)
            j0 += rest_tile_at(m - i, a + i * lda + t0, lda, b + j0 * packed_k, packed_k, kc,
                               c + i * ldc + j0, ldc, n - j0, alpha, add, nullptr, wide);
    }
}

namespace {

// packed_gemm_add() with A where L says: C (+)= alpha A B, 6 rows of C at a
// time along their columns, 256 terms a stretch.
template <ALayout L>
void gemm_laid_out(const float* a, std::size_t lda, std::size_t m, std::size_t k,
                   const float* packed, std::size_t packed_k, std::size_t n, float* c,
                   std::size_t ldc, float alpha, bool add) {
    const bool wide = wide_tiles_on();
    for (std::size_t t0 = 0; t0 < k; t0 += kDepth) {
        const std::size_t kc = std::min(kDepth, k - t0);
        const float* b = packed + t0 * kPanelWidth;
        const float* at = L == ALayout::rows ? a + t0 : a + t0 * lda;  // term t0
        const bool to_c = add || t0 > 0;
        for (std::size_t i = 0; i < m; i += 6) {
            const std::size_t mr = std::min<std::size_t>(6, m - i);
            const float* ai = L == ALayout::rows ? at + i * lda : at + i;
            for (std::size_t j0 = 0; j0 < n;)
                j0 += mr == 6 ? tile_at<6, L>(ai, lda, b + j0 * packed_k, packed_k, kc,
                                              c + i * ldc + j0, ldc, n - j0, alpha, to_c,
                                              nullptr, wide)
                              : rest_tile_at<L>(mr, ai, lda, b + j0 * packed_k, packed_k, kc,
                                                c + i * ldc + j0, ldc, n - j0, alpha, to_c,
                                                nullptr, wide);
        }
    }
}

}  // namespace

void packed_gemm_add(const float* a, std::size_t lda, bool trans_a, std::size_t m,
                     std::size_t k, const float* packed, std::size_t packed_k, std::size_t n,
                     float* c, std::size_t ldc, float alpha, bool add) {
    if (trans_a)
        gemm_laid_out<ALayout::columns>(a, lda, m, k, packed, packed_k, n, c, ldc, alpha, add);
    else
        gemm_laid_out<ALayout::rows>(a, lda, m, k, packed, packed_k, n, c, ldc, alpha, add);
}

void packed_linear(const float* a, std::size_t lda, std::size_t m, std::size_t k,
                   const LinearPanels* layers, std::size_t count) {
    const bool wide = wide_tiles_on();
    // Each thread's, kept from call to call, on a cache line.
    thread_local Buffer block;
    block.resize(kLinearRows * kLinearDepth + 8);  // + the stores' overrun
    for (std::size_t i0 = 0; i0 < m; i0 += kLinearRows) {
        const std::size_t rows = std::min(kLinearRows, m - i0);
        for (std::size_t t0 = 0; t0 < k; t0 += kLinearDepth) {
            const std::size_t kc = std::min(kLinearDepth, k - t0);
            const bool add = t0 > 0;  // later stretches add to C, the first has the bias
            const std::size_t full = rows / 6 * 6;  // the rest, 0-5 rows, read in place
            const float* ai = a + i0 * lda + t0;
            for (std::size_t i = 0; i < full; i += 6)
                pack_six_rows(ai + i * lda, lda, kc, block.data() + i * kc);
            for (std::size_t l = 0; l < count; ++l) {  // every layer on this block
                const std::size_t n = layers[l].n, ldc = layers[l].ldc;
                float* ci = layers[l].c + i0 * ldc;
                for (std::size_t j0 = 0, step = 0; j0 < n; j0 += step) {
                    const float* panel = layers[l].packed + j0 * k + t0 * kPanelWidth;
                    const float* bias =
                        add || layers[l].bias == nullptr ? nullptr : layers[l].bias + j0;
                    for (std::size_t i = 0; i < full; i += 6)
                        step = tile_at<6, ALayout::micro_panel>(
                            block.data() + i * kc, 0, panel, k, kc, ci + i * ldc + j0, ldc,
                            n - j0, 1.0f, add, bias, wide);
                    if (rows > full)
                        step = rest_tile_at(rows - full, ai + full * lda, lda, panel, k, kc,
                                            ci + full * ldc + j0, ldc, n - j0, 1.0f, add, bias,
                                            wide);
                }
            }
        }
    }
}

void packed_product(Block a, bool trans_a, Block b, bool trans_b, float* c, std::size_t ldc,
                    float alpha, float beta) {
    const std::size_t m = trans_a ? a.cols : a.rows, k = trans_a ? a.rows : a.cols;
    const std::size_t n = trans_b ? b.rows : b.cols;
    if (m == 0 || n == 0) return;
    const Product p{a, trans_a, b, trans_b, n, wide_tiles_on()};
    // C = beta C first, unless beta is 0 (C is then not read, as in BLAS)
    // or 1; from there on every stretch of k adds into C.
    if (beta != 0.0f && beta != 1.0f) {
        for (std::size_t i = 0; i < m; ++i)
            for (std::size_t j = 0; j < n; ++j) c[i * ldc + j] *= beta;
    }
    if (k == 0) {
        if (beta == 0.0f)
            for (std::size_t i = 0; i < m; ++i) std::fill(c + i * ldc, c + i * ldc + n, 0.0f);
        return;
    }
    const bool large = double(m) * double(n) * double(k) >= 4.0e6 && m >= 64;
    if (!large) {  // on this thread, its scratch kept from call to call
        thread_local Buffer panels, block;
        panels.resize(p.panels_for(k));
        block.resize(kBlockFloats);
        p.pack(0, k, 0, 1, panels.data());
        p.multiply(0, m, 0, k, panels.data(), block.data(), c, ldc, alpha, beta != 0.0f);
        return;
    }
    // A large product: op(B) packed a slab of terms at a time, once, each
    // worker packing its share of the panels; then each worker takes the
    // next block of rows of C that nobody has taken and adds the slab's sum
    // into it. Every element of C adds its stretches of 512 terms in order,
    // whoever computes them: its bits do not depend on the number of
    // workers. Two slabs' panels: while some still multiply by slab s,
    // others pack s + 1; the barrier after packing holds everyone until all
    // have finished the slab before (whose panels the next packing reuses).
    // Blocks of 48 rows; when C has few rows (a weight's gradient), of fewer
    // (a multiple of 6), so that the workers' shares of a slab are even.
    const std::size_t cores = worker_count();
    std::size_t block_rows = kProductRows;
    if ((m + kProductRows - 1) / kProductRows < 8 * cores) {
        const std::size_t share = (m + kProductRows * cores - 1) / (kProductRows * cores);
        block_rows = std::max<std::size_t>(6, m / (6 * cores * share) * 6);
    }
    const std::size_t blocks = (m + block_rows - 1) / block_rows;
    const std::size_t slab = k >= 2 * kSlab ? kSlab : k, slabs = (k + slab - 1) / slab;
    const std::size_t per_slab = p.panels_for(slab);
    const std::size_t workers = std::min(blocks, cores);
    Buffer panels(std::min<std::size_t>(slabs, 2) * per_slab), scratch(workers * kBlockFloats);
    std::vector<std::atomic<std::size_t>> next(slabs);
    for (auto& n_s : next) n_s.store(0, std::memory_order_relaxed);
    Barrier barrier(workers);
    parallel_for(workers, [&](std::size_t w, std::size_t w_end) {
        // one worker with every part when parallel_for runs nested
        const bool alone = w_end - w > 1 || workers == 1;
        const std::size_t part = alone ? 0 : w, parts = alone ? 1 : workers;
        float* block = scratch.data() + w * kBlockFloats;
        for (std::size_t s = 0; s < slabs; ++s) {
            const std::size_t k0 = s * slab, k1 = std::min(k, k0 + slab);
            float* packed = panels.data() + s % 2 * per_slab;
            p.pack(k0, k1, part, parts, packed);
            if (!alone) barrier.wait();
            for (std::size_t i; (i = next[s]++) < blocks;)
                p.multiply(i * block_rows, std::min(m, (i + 1) * block_rows), k0, k1, packed,
                           block, c, ldc, alpha, s > 0 || beta != 0.0f);
        }
    });
}

}  // namespace mha::fast
