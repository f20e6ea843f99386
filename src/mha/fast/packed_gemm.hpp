/// @file packed_gemm.hpp
/// @brief The engine's products, with the right-hand side packed once:
/// per head for the attention, per call for the four layers; and
/// packed_product(), gemm() on these kernels, for the backward.
///
/// The kernels are AVX2 + FMA (packed_gemm_avx2.cpp), with a 32-column
/// AVX-512 tile (packed_gemm_avx512.cpp) where the processor has it, built
/// on x86-64 only and run only when the processor has AVX2 and FMA;
/// elsewhere the engine sends these products to BLAS through gemm().
///
/// Why: each (sequence, head) multiplies one block of query rows after
/// another by the same K^T and the same V, and BLAS would pack its
/// right-hand side again on every call. Here K^T and V are packed once per
/// head, into panels of 16 columns, and every block of queries reads them
/// from there; each layer's weight is packed once per forward, the bias is
/// added as each tile is stored, and Q, K and V of self-attention share one
/// packing of the input's rows (packed_linear()). docs/pages/engine.md.
#pragma once

#include <cstddef>

#include "mha/fast/blas.hpp"

namespace mha::fast {

/// @addtogroup engine
/// @{

/// Whether this build has the packed kernels and the processor runs them.
/// @return true on x86-64 builds, on a processor with AVX2 and FMA
bool packed_products_available();

/// Whether the engine (forward and backward) uses the packed kernels.
/// @return packed_products_available(), unless set_packed_products(false)
///         or the environment variable MHA_PACKED=0 turned them off
bool packed_products_on();

/// Turns the packed kernels off (false: the forward uses BLAS) or back on.
/// The tests and the benchmark compare both paths in one process; it takes
/// effect at the next forward call. At start they are on, unless the
/// environment says MHA_PACKED=0 (ctest runs the oracle cases so, to check
/// the BLAS path that machines without AVX2 take).
/// @param on use the packed kernels when they are available
void set_packed_products(bool on);

/// Columns per panel: two AVX vectors of 8 floats.
constexpr std::size_t kPanelWidth = 16;

/// Room that pack_panels() needs for a `[k, n]` right-hand side.
/// @param k rows of B
/// @param n columns of B
/// @return  floats: n rounded up to whole panels, times k
inline std::size_t packed_floats(std::size_t k, std::size_t n) {
    return (n + kPanelWidth - 1) / kPanelWidth * kPanelWidth * k;
}

/// Packs B = `[k, n]` into panels: panel p holds columns 16p … 16p+15 of
/// B, row after row (16 floats per row of B, zeros past column n).
/// @param src   B with rows @p ld apart, or, when @p trans, `[n, k]` with
///              B = src^T (this is how K^T is packed from K)
/// @param ld    distance between rows of @p src
/// @param trans read B as the transpose of @p src
/// @param k     rows of B
/// @param n     columns of B
/// @param dst   packed_floats(k, n) floats
void pack_panels(const float* src, std::size_t ld, bool trans, std::size_t k,
                 std::size_t n, float* dst);

/// C = alpha A B, with B the first @p k rows and @p n columns of a
/// right-hand side that pack_panels() packed. C is overwritten (nothing is
/// read from it first), or, with @p add, C += alpha A B.
/// @param a        A `[m, k]`, rows @p lda apart
/// @param lda      distance between rows of A
/// @param m        rows of A and C
/// @param k        terms of each sum, 1 … @p packed_k
/// @param packed   what pack_panels() wrote for `[packed_k, N]`, N >= n
/// @param packed_k rows of the packed right-hand side
/// @param n        columns of C
/// @param c        C `[m, n]`, rows @p ldc apart
/// @param ldc      distance between rows of C
/// @param alpha    scale of the product
/// @param add      add the product to C instead of overwriting it
void packed_gemm(const float* a, std::size_t lda, std::size_t m, std::size_t k,
                 const float* packed, std::size_t packed_k, std::size_t n, float* c,
                 std::size_t ldc, float alpha, bool add = false);

/// C = alpha op(A) B, or C += alpha op(A) B, with B packed as for
/// packed_gemm() and A read in place, by rows or, transposed, by columns
/// (the tiled backward's P^T dO and dS^T Q, with no copy of P^T or dS^T).
/// @param a        A `[m, k]` with rows @p lda apart, or when @p trans_a
///                 A^T `[k, m]` with rows @p lda apart
/// @param lda      distance between rows of what @p a points at
/// @param trans_a  read A as the transpose of what @p a points at
/// @param m        rows of C
/// @param k        terms of each sum, 1 … @p packed_k
/// @param packed   what pack_panels() wrote for `[packed_k, N]`, N >= n
/// @param packed_k rows of the packed right-hand side
/// @param n        columns of C
/// @param c        C `[m, n]`, rows @p ldc apart
/// @param ldc      distance between rows of C
/// @param alpha    scale of the product
/// @param add      add to what C holds (false: overwrite it, unread)
void packed_gemm_add(const float* a, std::size_t lda, bool trans_a, std::size_t m,
                     std::size_t k, const float* packed, std::size_t packed_k, std::size_t n,
                     float* c, std::size_t ldc, float alpha, bool add);

/// One linear layer for packed_linear(): its weight W `[n, k]` packed as
/// B = W^T (pack_panels() with trans), its bias, and where its rows go.
struct LinearPanels {
    const float* packed;  ///< packed_floats(k, n) floats
    const float* bias;    ///< `[n]`, or nullptr: no bias
    float* c;             ///< C `[m, n]`, rows `ldc` apart
    std::size_t n;        ///< the layer's output size
    std::size_t ldc;      ///< distance between rows of C
};

/// C = A W^T + bias for each of @p count layers that read the same A: each
/// block of A's rows is packed once and meets every layer's weight (Q, K
/// and V of self-attention read one input; under grouped-query attention K
/// and V are narrower than Q). C is overwritten.
/// @param a      A `[m, k]`, rows @p lda apart
/// @param lda    distance between rows of A
/// @param m      rows of A and of each C
/// @param k      the layers' input size
/// @param layers @p count layers, each `k -> its n`
/// @param count  how many
void packed_linear(const float* a, std::size_t lda, std::size_t m, std::size_t k,
                   const LinearPanels* layers, std::size_t count);

/// C = alpha op(A) op(B) + beta C on the packed kernels: what gemm() does
/// through BLAS, with the same arguments (the backward's large products).
/// In a large product op(B) is packed once, 2048 terms (a slab) at a time,
/// each worker packing a share of its panels; then each worker takes the
/// next block of 48 rows of C that nobody has taken (fewer rows when C has
/// few, so that the shares come out even) and adds the slab's sum into it.
/// Every element of C adds its terms in the same order, whatever the number
/// of workers or who took what. With beta 0, C is not read.
/// @param a       `[M, K]` (or `[K, M]` when @p trans_a)
/// @param trans_a use A^T
/// @param b       `[K, N]` (or `[N, K]` when @p trans_b)
/// @param trans_b use B^T
/// @param c       `[M, N]`, rows @p ldc apart
/// @param ldc     distance between rows of C
/// @param alpha   scale of the product
/// @param beta    scale of what C held
void packed_product(Block a, bool trans_a, Block b, bool trans_b, float* c, std::size_t ldc,
                    float alpha = 1.0f, float beta = 0.0f);

/// @}

}  // namespace mha::fast
