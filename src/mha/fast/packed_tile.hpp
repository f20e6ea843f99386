/// @file packed_tile.hpp
/// @brief The AVX-512 tile that the packed kernels use on processors that
///        have it (packed_gemm_avx512.cpp); the engine's own, not for callers.
#pragma once

#include <cstddef>

#include "mha/fast/packed_gemm.hpp"

namespace mha::fast {

/// @addtogroup engine
/// @{

/// Where a tile finds A's row r, term t.
enum class ALayout {
    rows,         ///< in place, `a[r * lda + t]`
    micro_panel,  ///< packed by pack_six_rows(), `a[t * 6 + r]` (6 rows)
    columns,      ///< in place in a transposed A, `a[t * lda + r]`
};

/// Element (r, t) of A as @p L lays it out.
/// @param a   A
/// @param lda distance between rows (or columns) of A
/// @param r   row of the tile
/// @param t   term of the sum
/// @return    where that element is
template <ALayout L>
inline const float* a_at(const float* a, std::size_t lda, std::size_t r, std::size_t t) {
    return L == ALayout::rows ? a + r * lda + t : L == ALayout::columns ? a + t * lda + r
                                                                        : a + t * 6 + r;
}

/// Whether the packed kernels run their 32-column AVX-512 tile.
/// @return true on x86-64 builds, on a processor with AVX-512F, unless
///         set_wide_tiles(false) or MHA_AVX512=0 turned it off
bool wide_tiles_on();

/// Turns the AVX-512 tile off (the kernels then use the AVX2 tile only, as
/// on a processor without AVX-512) or back on; the tests run both.
/// @param on use the AVX-512 tile when the processor has it
void set_wide_tiles(bool on);

/// C = alpha A B (+ C when @p add) (+ bias) for @p rows rows of C and two
/// adjacent panels of B: columns 0-15 from @p panel, 16 to @p ncols - 1
/// from @p panel + @p panel_stride (17 <= ncols <= 32; nothing past ncols
/// is read or written).
/// @param rows         rows of C, 1-6 (6 for a micro-panel)
/// @param layout       where A's elements are
/// @param a            A
/// @param lda          distance between rows of A (unused when packed)
/// @param panel        the first panel's row 0 of this stretch
/// @param panel_stride floats from one panel to the next
/// @param kc           terms of the sum
/// @param c            C, rows @p ldc apart
/// @param ldc          distance between rows of C
/// @param ncols        columns of C, 17-32
/// @param alpha        scale of the product
/// @param add          add to what C holds
/// @param bias         nullptr, or `[ncols]` added to each row
void wide_tile(std::size_t rows, ALayout layout, const float* a, std::size_t lda,
               const float* panel, std::size_t panel_stride, std::size_t kc, float* c,
               std::size_t ldc, std::size_t ncols, float alpha, bool add, const float* bias);

/// @}

}  // namespace mha::fast
