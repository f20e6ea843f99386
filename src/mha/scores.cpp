// Stage 3: one matrix product per (batch, head) on contiguous [T, D] blocks.
//
// B = batch, H = heads, H_kv = key heads, Tq / Tk = queries / keys,
// D = head_dim.
#include "mha/scores.hpp"

#include <cmath>

#include <xtensor-blas/xlinalg.hpp>
#include <xtensor/xview.hpp>

namespace mha {

Tensor4 scaled_scores(const Tensor4& q, const Tensor4& k) {
    const std::size_t B = q.shape(0), H = q.shape(1);
    const std::size_t Tq = q.shape(2), D = q.shape(3), Tk = k.shape(2);
    require_nonzero({B, H, Tq, D}, "scaled_scores query q [B, H, Tq, D]");
    require_nonzero({k.shape(0), k.shape(1), Tk, k.shape(3)},
                    "scaled_scores key k [B, H, Tk, D]");
    const std::size_t H_kv = k.shape(1);
    if (k.shape(0) != B || H_kv == 0 || H % H_kv != 0 || k.shape(3) != D) {
        fail("scaled_scores: q " + shape_of(q) + " and k " + shape_of(k) +
             " must agree on B and D, and k's heads divide q's ([B, H, Tq, D], "
             "[B, H_kv, Tk, D])");
    }
    const std::size_t group = H / H_kv;  // query heads per key head
    // Divided by sqrt(D) so that the scores keep about unit variance
    // whatever the head size (lesson 13 measures it).
    const float scale = 1.0f / std::sqrt(static_cast<float>(D));
    Tensor4 s({B, H, Tq, Tk});  // [B, H, Tq, Tk]
    for (std::size_t b = 0; b < B; ++b)
        for (std::size_t h = 0; h < H; ++h) {
            const Tensor2 qh = xt::view(q, b, h);  // [Tq, D]
            const Tensor2 kh = xt::view(k, b, h / group);  // [Tk, D], its kv head
            // [Tq, D] x [D, Tk] -> [Tq, Tk]
            xt::view(s, b, h) = xt::linalg::dot(qh, xt::transpose(kh)) * scale;
        }
    return s;
}

}  // namespace mha
