// The only file of the engine that includes xtensor-blas: it keeps the
// slow-to-compile BLAS headers out of everything else.
#include "mha/fast/blas.hpp"

#include <algorithm>

#include <xtensor-blas/xblas.hpp>

#include "mha/fast/parallel.hpp"
#include "mha/linear.hpp"

namespace mha::fast {

namespace {

// One sgemm on rows [m0, m1) of op(A) and C.
void gemm_rows(Block a, bool trans_a, Block b, bool trans_b, float* c,
               std::size_t ldc, float alpha, float beta, std::size_t m0,
               std::size_t m1) {
    using cxxblas::Transpose;
    using index = xt::blas_index_t;
    const std::size_t k = trans_a ? a.rows : a.cols;
    const std::size_t n = trans_b ? b.rows : b.cols;
    // Row i of op(A) is row i of A, or column i of A when transposed.
    const float* a0 = trans_a ? a.data + m0 : a.data + m0 * a.ld;
    cxxblas::gemm<index>(cxxblas::StorageOrder::RowMajor,
                         trans_a ? Transpose::Trans : Transpose::NoTrans,
                         trans_b ? Transpose::Trans : Transpose::NoTrans,
                         static_cast<index>(m1 - m0), static_cast<index>(n),
                         static_cast<index>(k), alpha, a0,
                         static_cast<index>(a.ld), b.data,
                         static_cast<index>(b.ld), beta, c + m0 * ldc,
                         static_cast<index>(ldc));
}

}  // namespace

void gemm(Block a, bool trans_a, Block b, bool trans_b, float* c,
          std::size_t ldc, float alpha, float beta) {
    const std::size_t m = trans_a ? a.cols : a.rows;
    const std::size_t k = trans_a ? a.rows : a.cols;
    const std::size_t n = trans_b ? b.rows : b.cols;
    // A small product runs here, in this thread; a large one is split by
    // 32-row blocks of C, which keep the split even.
    const bool large = double(m) * double(n) * double(k) >= 4.0e6 && m >= 64;
    if (!large) {
        gemm_rows(a, trans_a, b, trans_b, c, ldc, alpha, beta, 0, m);
        return;
    }
    const std::size_t blocks = m / 32;
    parallel_for(blocks, [&](std::size_t begin, std::size_t end) {
        const std::size_t m1 = end == blocks ? m : end * 32;
        gemm_rows(a, trans_a, b, trans_b, c, ldc, alpha, beta, begin * 32, m1);
    });
}

void gemv(Block a, bool trans, const float* x, float* y, float alpha, float beta) {
    using index = xt::blas_index_t;
    cxxblas::gemv<index>(cxxblas::StorageOrder::RowMajor,
                         trans ? cxxblas::Transpose::Trans : cxxblas::Transpose::NoTrans,
                         static_cast<index>(a.rows), static_cast<index>(a.cols), alpha, a.data,
                         static_cast<index>(a.ld), x, 1, beta, y, 1);
}

void linear_rows(const float* x, std::size_t rows, const Linear& layer, float* y) {
    const std::size_t in = layer.in_features(), out = layer.out_features();
    // Start every row of y at the bias, then add x W^T with beta = 1.
    for (std::size_t r = 0; r < rows; ++r)
        std::copy(layer.bias.begin(), layer.bias.end(), y + r * out);
    // [rows, in] x [out, in]^T -> [rows, out]
    gemm({x, rows, in, in}, false, {layer.weight.data(), out, in, in}, true, y,
         out, 1.0f, 1.0f);
}

}  // namespace mha::fast
