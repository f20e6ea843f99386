// Stage 3: one gemm per (b, h) on contiguous [T, D] blocks.
#include "mha/scores.hpp"

#include <cmath>

#include "mha/gemm.hpp"

namespace mha {

Tensor4 scaled_scores(const Tensor4& q, const Tensor4& k) {
    const std::size_t B = q.shape(0), H = q.shape(1);
    const std::size_t Tq = q.shape(2), D = q.shape(3), Tk = k.shape(2);
    require_nonzero({B, H, Tq, D}, "scaled_scores query q [B, H, Tq, D]");
    require_nonzero({k.shape(0), k.shape(1), Tk, k.shape(3)},
                    "scaled_scores key k [B, H, Tk, D]");
    if (k.shape(0) != B || k.shape(1) != H || k.shape(3) != D) {
        fail("scaled_scores: q " + shape_of(q) + " and k " + shape_of(k) +
             " must agree on B, H and D ([B, H, Tq, D] and [B, H, Tk, D])");
    }
    Tensor4 s({B, H, Tq, Tk});  // [B, H, Tq, Tk]
    const float scale = 1.0f / std::sqrt(static_cast<float>(D));
    for (std::size_t b = 0; b < B; ++b)
        for (std::size_t h = 0; h < H; ++h) {
            // [Tq, D] x [Tk, D]^T -> [Tq, Tk], scaled inside the gemm
            gemm({&q(b, h, 0, 0), Tq, D, D}, false,
                 {&k(b, h, 0, 0), Tk, D, D}, true, &s(b, h, 0, 0), Tk,
                 scale);
        }
    return s;
}

}  // namespace mha
