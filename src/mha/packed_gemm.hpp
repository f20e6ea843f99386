// The per-head products with the right-hand side packed once per head.
// Private to the core (attention.cpp uses it; the tests and the benchmark
// look inside). The kernels are AVX2 + FMA (packed_gemm_avx2.cpp), built on
// x86-64 only and run only when the processor has both; elsewhere the
// forward sends these products to BLAS, as before.
//
// Why: each (sequence, head) multiplies one block of query rows after
// another by the same K^T and the same V. BLAS packs its right-hand side
// again on every call, and zeroes C before adding into it: at T = 2048,
// unmasked, a quarter of the forward's time went to sgemm's copy and beta
// routines. Here K^T and V are packed once per head, into panels of 16
// columns, and every block of queries reads them from there.
#pragma once

#include <cstddef>

namespace mha {

// True when this build has the kernels and the processor runs them.
bool packed_products_available();
// True when the forward uses them: available, and not turned off.
bool packed_products_on();
// Turns them off (false) or back on: the tests and the benchmark compare
// both paths in one process. Takes effect at the next forward call.
void set_packed_products(bool on);

// Columns per panel: two AVX vectors of 8 floats.
constexpr std::size_t kPanelWidth = 16;

// Floats that pack_panels() writes for a [k, n] right-hand side: n rounded
// up to whole panels, times k.
inline std::size_t packed_floats(std::size_t k, std::size_t n) {
    return (n + kPanelWidth - 1) / kPanelWidth * kPanelWidth * k;
}

// Packs B = [k, n] into panels: panel p holds columns 16p..16p+15 of B,
// row after row (16 floats per row of B, zeros past column n). B is read
// from src with rows ld apart, or, when trans, B = src^T with src [n, k]
// (this is how K^T is packed from K).
void pack_panels(const float* src, std::size_t ld, bool trans, std::size_t k,
                 std::size_t n, float* dst);

// C[m, n] = alpha * A[m, k] * B, with A row-major (rows lda apart), C
// rows ldc apart, and B the first k rows and n columns of a right-hand
// side that pack_panels() packed with packed_k rows (k <= packed_k).
// C is overwritten; nothing is read from it first. k >= 1.
void packed_gemm(const float* a, std::size_t lda, std::size_t m, std::size_t k,
                 const float* packed, std::size_t packed_k, std::size_t n, float* c,
                 std::size_t ldc, float alpha);

}  // namespace mha
