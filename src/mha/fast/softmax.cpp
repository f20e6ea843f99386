// The engine's softmax: the 4-lane build of softmax_kernel.hpp, and the
// choice of the 8-lane one on processors that have AVX2 + FMA.
#include "mha/fast/softmax.hpp"

#define MHA_LANES 4
#include "mha/fast/softmax_kernel.hpp"

namespace mha::fast {

#if defined(MHA_AVX2_KERNEL)
void softmax_row_avx2(float* row, std::size_t n);  // softmax_avx2.cpp
float exp_sum_avx2(float* row, std::size_t n, float max);
float row_max_avx2(const float* row, std::size_t n, float init);
void softmax_grad_row_avx2(const float* p, float* ds, const unsigned char* keep, std::size_t c,
                           std::size_t n);
void soft_cap_avx2(float* row, std::size_t n, float cap, float* d);

namespace {
// 8 lanes instead of 4: about three times faster on long rows here. Asked
// at the first call, not at start-up, when the processor is known.
bool avx2() {
    static const bool yes = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    return yes;
}
}  // namespace
#endif

void softmax_row(float* row, std::size_t n) {
#if defined(MHA_AVX2_KERNEL)
    if (avx2()) return softmax_row_avx2(row, n);
#endif
    softmax_row_kernel(row, n);
}

float exp_sum(float* row, std::size_t n, float max) {
#if defined(MHA_AVX2_KERNEL)
    if (avx2()) return exp_sum_avx2(row, n, max);
#endif
    return exp_sum_kernel(row, n, max);
}

float row_max(const float* row, std::size_t n, float init) {
#if defined(MHA_AVX2_KERNEL)
    if (avx2()) return row_max_avx2(row, n, init);
#endif
    return row_max_kernel(row, n, init);
}

void softmax_grad_row(const float* p, float* ds, const unsigned char* keep, std::size_t c,
                      std::size_t n) {
#if defined(MHA_AVX2_KERNEL)
    if (avx2()) return softmax_grad_row_avx2(p, ds, keep, c, n);
#endif
    softmax_grad_row_kernel(p, ds, keep, c, n);
}

void soft_cap_row(float* row, std::size_t n, float cap, float* derivative) {
#if defined(MHA_AVX2_KERNEL)
    if (avx2()) return soft_cap_avx2(row, n, cap, derivative);
#endif
    soft_cap_kernel(row, n, cap, derivative);
}

}  // namespace mha::fast
