/// @file blas.hpp
/// @brief The engine's door to BLAS: a row-major sgemm on raw blocks.
///
/// The engine's products go through here on processors without AVX2 (and
/// with MHA_PACKED=0); on the others they run in packed_gemm.hpp's kernels.
/// Heavy headers (xtensor-blas, cblas) stay inside blas.cpp.
#pragma once

#include <cstddef>

namespace mha {
struct Linear;
}

namespace mha::fast {

/// @addtogroup engine
/// @{

/// One row-major matrix block: `rows x cols` floats, rows `ld` apart.
struct Block {
    const float* data;  ///< first element
    std::size_t rows;   ///< number of rows
    std::size_t cols;   ///< number of columns
    std::size_t ld;     ///< distance between rows (>= cols)
};

/// C = alpha * op(A) op(B) + beta * C, row-major, through BLAS sgemm.
/// op(X) is X, or X^T when the matching flag is true. A large product is
/// split by rows of C over the workers (BLAS itself runs on one thread).
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

/// y = alpha * op(A) x + beta * y, row-major, through BLAS sgemv: one query
/// against a head's cached keys, or its weights against the cached values.
/// @param a     `[M, N]`
/// @param trans use A^T (then x is `[M]` and y `[N]`)
/// @param x     `[N]` (or `[M]`), contiguous
/// @param y     `[M]` (or `[N]`), contiguous
/// @param alpha scale of the product
/// @param beta  scale of what y held (0 overwrites it)
void gemv(Block a, bool trans, const float* x, float* y, float alpha = 1.0f,
          float beta = 0.0f);

/// `y = x W^T + b` on raw rows, through gemm(): the engine applies a layer
/// to one chunk of the batch at a time with it.
/// @param x     `[rows, in]`, contiguous
/// @param rows  how many rows
/// @param layer weight `[out, in]`, bias `[out]`, already checked
/// @param y     `[rows, out]`, contiguous, overwritten
void linear_rows(const float* x, std::size_t rows, const Linear& layer, float* y);

/// @}

}  // namespace mha::fast
