// The packed kernels' wide tile, for processors with AVX-512: 6 rows of C
// by two adjacent panels (32 columns). This file alone is compiled with
// -mavx512f (see src/CMakeLists.txt); packed_gemm_avx2.cpp calls it only
// after asking the processor.
//
// Why: on the AVX2 tile, 6 broadcasts and 2 loads feed 12 FMAs of 8 lanes;
// here the same 8 loads feed 12 FMAs of 16 lanes. On this machine's cores
// (which run a 16-lane FMA as two 8-lane halves) the AVX2 tile reached 80%
// of the FMA peak with its data in L1, this one 97%.
#include "mha/fast/packed_tile.hpp"

#include <immintrin.h>

namespace mha::fast {

namespace {

template <int MR, ALayout L>
void wide(const float* a, std::size_t lda, const float* panel, std::size_t panel_stride,
          std::size_t kc, float* c, std::size_t ldc, std::size_t ncols, float alpha, bool add,
          const float* bias) {
    for (int r = 0; r < MR; ++r) {  // C's lines, asked for now, needed after kc steps
        _mm_prefetch(reinterpret_cast<const char*>(c + r * ldc), _MM_HINT_T0);
        _mm_prefetch(reinterpret_cast<const char*>(c + r * ldc + ncols - 1), _MM_HINT_T0);
    }
    const float* second = panel + panel_stride;
    __m512 acc[MR][2];
#pragma GCC unroll 6
    for (int r = 0; r < MR; ++r) acc[r][0] = acc[r][1] = _mm512_setzero_ps();
    for (std::size_t t = 0; t < kc; ++t) {
        const __m512 b0 = _mm512_loadu_ps(panel + t * kPanelWidth);
        const __m512 b1 = _mm512_loadu_ps(second + t * kPanelWidth);
#pragma GCC unroll 6
        for (int r = 0; r < MR; ++r) {
            const __m512 x = _mm512_set1_ps(*a_at<L>(a, lda, r, t));
            acc[r][0] = _mm512_fmadd_ps(x, b0, acc[r][0]);
            acc[r][1] = _mm512_fmadd_ps(x, b1, acc[r][1]);
        }
    }
    const __m512 s = _mm512_set1_ps(alpha);
    // Lanes of the 32 columns that exist: a partial second panel is stored
    // through a mask, so nothing past column ncols is read or written.
    const __mmask16 keep1 = ncols >= 32 ? 0xFFFF : static_cast<__mmask16>((1u << (ncols - 16)) - 1);
#pragma GCC unroll 6
    for (int r = 0; r < MR; ++r) {
        float* row = c + r * ldc;
        __m512 lo = _mm512_mul_ps(acc[r][0], s);
        __m512 hi = _mm512_mul_ps(acc[r][1], s);
        if (bias != nullptr) {
            lo = _mm512_add_ps(lo, _mm512_loadu_ps(bias));
            hi = _mm512_add_ps(hi, _mm512_maskz_loadu_ps(keep1, bias + 16));
        }
        if (add) {
            lo = _mm512_add_ps(lo, _mm512_loadu_ps(row));
            hi = _mm512_add_ps(hi, _mm512_maskz_loadu_ps(keep1, row + 16));
        }
        _mm512_storeu_ps(row, lo);
        _mm512_mask_storeu_ps(row + 16, keep1, hi);
    }
}

}  // namespace

template <ALayout L>
void wide_rows(std::size_t rows, const float* a, std::size_t lda, const float* panel,
               std::size_t panel_stride, std::size_t kc, float* c, std::size_t ldc,
               std::size_t ncols, float alpha, bool add, const float* bias) {
    switch (rows) {
        case 6: wide<6, L>(a, lda, panel, panel_stride, kc, c, ldc, ncols, alpha, add, bias); break;
        case 5: wide<5, L>(a, lda, panel, panel_stride, kc, c, ldc, ncols, alpha, add, bias); break;
        case 4: wide<4, L>(a, lda, panel, panel_stride, kc, c, ldc, ncols, alpha, add, bias); break;
        case 3: wide<3, L>(a, lda, panel, panel_stride, kc, c, ldc, ncols, alpha, add, bias); break;
        case 2: wide<2, L>(a, lda, panel, panel_stride, kc, c, ldc, ncols, alpha, add, bias); break;
        case 1: wide<1, L>(a, lda, panel, panel_stride, kc, c, ldc, ncols, alpha, add, bias); break;
        default: break;
    }
}

void wide_tile(std::size_t rows, ALayout layout, const float* a, std::size_t lda,
               const float* panel, std::size_t panel_stride, std::size_t kc, float* c,
               std::size_t ldc, std::size_t ncols, float alpha, bool add, const float* bias) {
    switch (layout) {
        case ALayout::micro_panel:
            wide<6, ALayout::micro_panel>(a, lda, panel, panel_stride, kc, c, ldc, ncols, alpha,
                                          add, bias);
            break;
        case ALayout::rows:
            wide_rows<ALayout::rows>(rows, a, lda, panel, panel_stride, kc, c, ldc, ncols, alpha,
                                     add, bias);
            break;
        case ALayout::columns:
            wide_rows<ALayout::columns>(rows, a, lda, panel, panel_stride, kc, c, ldc, ncols,
                                        alpha, add, bias);
            break;
    }
}

}  // namespace mha::fast
