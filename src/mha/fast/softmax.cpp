// The engine's softmax: the 4-lane build of softmax_kernel.hpp, and the
// choice of the 8-lane one on processors that have AVX2 + FMA.
#include "mha/fast/softmax.hpp"

#define MHA_LANES 4
#include "mha/fast/softmax_kernel.hpp"

namespace mha::fast {

#if defined(MHA_AVX2_KERNEL)
void softmax_row_avx2(float* row, std::size_t n);  // softmax_avx2.cpp
#endif

void softmax_row(float* row, std::size_t n) {
#if defined(MHA_AVX2_KERNEL)
    // 8 lanes instead of 4: about three times faster on long rows here.
    static const bool avx2 =
        __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    if (avx2) {
        softmax_row_avx2(row, n);
        return;
    }
#endif
    softmax_row_kernel(row, n);
}

}  // namespace mha::fast
