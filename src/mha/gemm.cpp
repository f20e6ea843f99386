// The only translation unit that includes xtensor-blas: it keeps the
// slow-to-compile BLAS headers out of everything else.
#include "mha/gemm.hpp"

#include <xtensor-blas/xblas.hpp>

namespace mha {

void gemm(Block a, bool trans_a, Block b, bool trans_b, float* c,
          std::size_t ldc, float alpha, float beta) {
    using cxxblas::Transpose;
    using index = xt::blas_index_t;
    const std::size_t m = trans_a ? a.cols : a.rows;
    const std::size_t k = trans_a ? a.rows : a.cols;
    const std::size_t n = trans_b ? b.rows : b.cols;
    cxxblas::gemm<index>(cxxblas::StorageOrder::RowMajor,
                         trans_a ? Transpose::Trans : Transpose::NoTrans,
                         trans_b ? Transpose::Trans : Transpose::NoTrans,
                         static_cast<index>(m), static_cast<index>(n),
                         static_cast<index>(k), alpha, a.data,
                         static_cast<index>(a.ld), b.data,
                         static_cast<index>(b.ld), beta, c,
                         static_cast<index>(ldc));
}

}  // namespace mha
