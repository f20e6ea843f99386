// The per-head products on packed panels, for processors with AVX2 and FMA.
// This file alone is compiled with -mavx2 -mfma (see src/CMakeLists.txt);
// attention.cpp calls it only after asking the processor.
#include "mha/packed_gemm.hpp"

#include <immintrin.h>

#include <algorithm>

namespace mha {

namespace {

// Terms of the sum per pass (columns of A, rows of B): a tile's 6 rows of A
// (6 KiB) and a panel's 256 rows (16 KiB) stay in the L1 cache together.
constexpr std::size_t kDepth = 256;

// One tile of C: MR rows x one panel (16 columns), over kc terms of the sum.
// 2*MR accumulators of 8 floats stay in registers (12 of the 16 for MR = 6);
// each step loads one row of the panel and broadcasts one element of each
// of the MR rows of A. add: C += alpha * sum (a later stretch of k);
// otherwise C = alpha * sum. Only the first ncols columns are written.
template <int MR>
void tile(const float* a, std::size_t lda, const float* panel, std::size_t kc,
          float* c, std::size_t ldc, std::size_t ncols, float alpha, bool add) {
    // Every loop over r is unrolled, so that acc lives in registers only
    // (a loop left rolled makes GCC 12 keep acc in memory, storing it on
    // every step: 30 instead of 88 GFLOP/s on one core here).
    __m256 acc[MR][2];
#pragma GCC unroll 6
    for (int r = 0; r < MR; ++r) acc[r][0] = acc[r][1] = _mm256_setzero_ps();
    for (std::size_t t = 0; t < kc; ++t) {
        const __m256 b0 = _mm256_loadu_ps(panel + t * kPanelWidth);
        const __m256 b1 = _mm256_loadu_ps(panel + t * kPanelWidth + 8);
#pragma GCC unroll 6
        for (int r = 0; r < MR; ++r) {
            const __m256 x = _mm256_broadcast_ss(a + r * lda + t);
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
            for (std::size_t j = 0; j < ncols; ++j) row[j] = add ? row[j] + part[j] : part[j];
        }
    }
}

// MR rows of C, panel after panel: C is written along its rows, a few
// streams at a time (panel-major order would start a new cache line in
// every row of C at once, which the prefetcher cannot follow).
template <int MR>
void row_tiles(const float* a, std::size_t lda, const float* packed,
               std::size_t packed_k, std::size_t kc, std::size_t n, float* c,
               std::size_t ldc, float alpha, bool add) {
    for (std::size_t j0 = 0; j0 < n; j0 += kPanelWidth)
        tile<MR>(a, lda, packed + j0 * packed_k, kc, c + j0, ldc,
                 std::min(kPanelWidth, n - j0), alpha, add);
}

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
                std::copy(s + j0, s + j0 + width, d);
                std::fill(d + width, d + kPanelWidth, 0.0f);
            }
        }
        return;
    }
    // B = src^T: column j of B is row j of src, read along its length.
    for (std::size_t j0 = 0; j0 < n; j0 += kPanelWidth) {
        float* panel = dst + j0 * k;
        const std::size_t width = std::min(kPanelWidth, n - j0);
        for (std::size_t j = 0; j < kPanelWidth; ++j) {
            if (j < width) {
                const float* s = src + (j0 + j) * ld;
                for (std::size_t t = 0; t < k; ++t) panel[t * kPanelWidth + j] = s[t];
            } else {  // padding past column n
                for (std::size_t t = 0; t < k; ++t) panel[t * kPanelWidth + j] = 0.0f;
            }
        }
    }
}

void packed_gemm(const float* a, std::size_t lda, std::size_t m, std::size_t k,
                 const float* packed, std::size_t packed_k, std::size_t n, float* c,
                 std::size_t ldc, float alpha) {
    for (std::size_t t0 = 0; t0 < k; t0 += kDepth) {
        const std::size_t kc = std::min(kDepth, k - t0);
        const float* b = packed + t0 * kPanelWidth;
        const bool add = t0 > 0;
        std::size_t i = 0;
        for (; i + 6 <= m; i += 6)
            row_tiles<6>(a + i * lda + t0, lda, b, packed_k, kc, n, c + i * ldc, ldc,
                         alpha, add);
        const float* ar = a + i * lda + t0;
        float* cr = c + i * ldc;
        switch (m - i) {
            case 5: row_tiles<5>(ar, lda, b, packed_k, kc, n, cr, ldc, alpha, add); break;
            case 4: row_tiles<4>(ar, lda, b, packed_k, kc, n, cr, ldc, alpha, add); break;
            case 3: row_tiles<3>(ar, lda, b, packed_k, kc, n, cr, ldc, alpha, add); break;
            case 2: row_tiles<2>(ar, lda, b, packed_k, kc, n, cr, ldc, alpha, add); break;
            case 1: row_tiles<1>(ar, lda, b, packed_k, kc, n, cr, ldc, alpha, add); break;
            default: break;
        }
    }
}

}  // namespace mha
