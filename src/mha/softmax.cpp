// Stage 5: a row at a time, with no broadcasting temporaries.
#include "mha/softmax.hpp"

#define MHA_LANES 4
#include "mha/softmax_kernel.hpp"

namespace mha {

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

Tensor4 softmax(const Tensor4& scores) {
    const std::size_t Tk = scores.shape(3);
    require_nonzero({scores.shape(0), scores.shape(1), scores.shape(2), Tk},
                    "softmax scores [B, H, Tq, Tk]");
    Tensor4 w = scores;  // [B, H, Tq, Tk]
    for (std::size_t r = 0; r < w.size() / Tk; ++r)
        softmax_row(w.data() + r * Tk, Tk);
    return w;
}

}  // namespace mha
