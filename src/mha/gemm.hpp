/// @file gemm.hpp
/// @brief The one door to BLAS: a row-major sgemm on raw blocks.
///
/// Every BLAS product of the core goes through here, each one a single call
/// on a contiguous block with a leading dimension (on AVX2 processors the
/// forward's per-head products run in packed_gemm.hpp's kernels instead).
/// Heavy headers (xtensor-blas, cblas) stay inside gemm.cpp.
#pragma once

#include <cstddef>

namespace mha {

/// @addtogroup shapes
/// @{

/// One row-major matrix block: `rows x cols` floats, rows `ld` apart.
struct Block {
    const float* data;  ///< first element
    std::size_t rows;   ///< number of rows
    std::size_t cols;   ///< number of columns
    std::size_t ld;     ///< distance between rows (>= cols)
};

/// C = alpha * op(A) op(B) + beta * C, row-major, through BLAS sgemm.
/// op(X) is X, or X^T when the matching flag is true.
/// @param a       `[M, K]` (or `[K, M]` when @p trans_a)
/// @param trans_a use A^T
/// @param b       `[K, N]` (or `[N, K]` when @p trans_b)
/// @param trans_b use B^T
/// @param c       `[M, N]`, rows @p ldc apart
/// @param ldc     distance between rows of C
/// @param alpha   scale of the product
/// @param beta    scale of what C held (0 overwrites it)
void gemm(Block a, bool trans_a, Block b, bool trans_b, float* c,
          std::size_t ldc, float alpha = 1.0f, float beta = 0.0f);

/// @}

}  // namespace mha
