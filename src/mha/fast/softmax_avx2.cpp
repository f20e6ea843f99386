// The softmax kernel for processors with AVX2 and FMA: 8 floats at a time.
// This file alone is compiled with -mavx2 -mfma (see src/CMakeLists.txt);
// softmax_row() calls it only after asking the processor.
#define MHA_LANES 8
#include "mha/fast/softmax_kernel.hpp"

namespace mha::fast {

void softmax_row_avx2(float* row, std::size_t n) { softmax_row_kernel(row, n); }

float exp_sum_avx2(float* row, std::size_t n, float max) { return exp_sum_kernel(row, n, max); }

float row_max_avx2(const float* row, std::size_t n, float init) {
    return row_max_kernel(row, n, init);
}

void softmax_grad_row_avx2(const float* p, float* ds, const unsigned char* keep, std::size_t c,
                           std::size_t n) {
    softmax_grad_row_kernel(p, ds, keep, c, n);
}

void soft_cap_avx2(float* row, std::size_t n, float cap, float* d) {
    soft_cap_kernel(row, n, cap, d);
}

}  // namespace mha::fast
