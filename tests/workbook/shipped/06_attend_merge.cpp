// Exercise 06: weights times values, then the heads merged back (lesson 06).
// Two functions; the check runs attend's cases first.
//
// attend(weights, v)
//   weights [B, H, Tq, Tk]   v [B, H, Tk, D]
//   returns [B, H, Tq, D]    out[b, h, i, :] = sum_j weights[b, h, i, j] v[b, h, j, :]
// PyTorch: score @ v
//
// merge_heads(x)
//   x       [B, H, T, D]
//   returns [B, T, E]        E = H x D; out[b, t, h*D + d] = x[b, h, t, d]
// PyTorch: score.permute(0, 2, 1, 3).contiguous().view(batch, time, dimension)
// Check:   scripts/check-exercise.sh 06
#include "exercises.hpp"

namespace workbook {

Tensor4 attend(const Tensor4& weights, const Tensor4& v) {
    const std::size_t B = weights.shape(0), H = weights.shape(1), Tq = weights.shape(2);
    const std::size_t D = v.shape(3);
    Tensor4 out = xt::zeros<float>({B, H, Tq, D});  // [B, H, Tq, D]
    // your code here
    return out;
}

Tensor3 merge_heads(const Tensor4& x) {
    const std::size_t B = x.shape(0), H = x.shape(1), T = x.shape(2), D = x.shape(3);
    Tensor3 out = xt::zeros<float>({B, T, H * D});  // [B, T, E]
    // your code here
    return out;
}

}  // namespace workbook
