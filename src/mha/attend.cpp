// Stage 6: one gemm per (b, h).
#include "mha/attend.hpp"

#include "mha/gemm.hpp"

namespace mha {

Tensor4 attend(const Tensor4& weights, const Tensor4& v) {
    const std::size_t B = weights.shape(0), H = weights.shape(1);
    const std::size_t Tq = weights.shape(2), Tk = weights.shape(3);
    const std::size_t D = v.shape(3);
    require_nonzero({B, H, Tq, Tk}, "attend weights [B, H, Tq, Tk]");
    require_nonzero({v.shape(0), v.shape(1), v.shape(2), D},
                    "attend values v [B, H, Tk, D]");
    if (v.shape(0) != B || v.shape(1) != H || v.shape(2) != Tk) {
        fail("attend: weights " + shape_of(weights) + " and v " + shape_of(v) +
             " must agree on B, H and Tk ([B, H, Tq, Tk] and [B, H, Tk, D])");
    }
    Tensor4 out({B, H, Tq, D});  // [B, H, Tq, D]
    for (std::size_t b = 0; b < B; ++b)
        for (std::size_t h = 0; h < H; ++h) {
            // [Tq, Tk] x [Tk, D] -> [Tq, D]
            gemm({&weights(b, h, 0, 0), Tq, Tk, Tk}, false,
                 {&v(b, h, 0, 0), Tk, D, D}, false, &out(b, h, 0, 0), D);
        }
    return out;
}

}  // namespace mha
