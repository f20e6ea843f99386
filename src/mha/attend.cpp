// Stage 6: one matrix product per (batch, head).
//
// B = batch, H = heads, H_kv = value heads, Tq / Tk = queries / keys,
// D = head_dim.
#include "mha/attend.hpp"

#include <xtensor-blas/xlinalg.hpp>
#include <xtensor/xview.hpp>

namespace mha {

Tensor4 attend(const Tensor4& weights, const Tensor4& v) {
    const std::size_t B = weights.shape(0), H = weights.shape(1);
    const std::size_t Tq = weights.shape(2), Tk = weights.shape(3);
    const std::size_t D = v.shape(3);
    require_nonzero({B, H, Tq, Tk}, "attend weights [B, H, Tq, Tk]");
    require_nonzero({v.shape(0), v.shape(1), v.shape(2), D},
                    "attend values v [B, H, Tk, D]");
    const std::size_t H_kv = v.shape(1);
    if (v.shape(0) != B || H_kv == 0 || H % H_kv != 0 || v.shape(2) != Tk) {
        fail("attend: weights " + shape_of(weights) + " and v " + shape_of(v) +
             " must agree on B and Tk, and v's heads divide the weights' ([B, H, Tq, "
             "Tk], [B, H_kv, Tk, D])");
    }
    const std::size_t group = H / H_kv;  // query heads per value head
    Tensor4 out({B, H, Tq, D});  // [B, H, Tq, D]
    for (std::size_t b = 0; b < B; ++b)
        for (std::size_t h = 0; h < H; ++h) {
            const Tensor2 w = xt::view(weights, b, h);  // [Tq, Tk]
            const Tensor2 vh = xt::view(v, b, h / group);  // [Tk, D], its kv head
            // [Tq, Tk] x [Tk, D] -> [Tq, D]: each query's weighted average
            xt::view(out, b, h) = xt::linalg::dot(w, vh);
        }
    return out;
}

}  // namespace mha
