// Exercise 02: split the heads (lesson 02).
//
//   x       [B, T, E]      E = H x D: head h owns columns h*D .. h*D + D-1
//   returns [B, H, T, D]   out[b, h, t, d] = x[b, t, h*D + d]
//
// PyTorch: q.view(batch, time, self.n_head, n_d).permute(0, 2, 1, 3)
// The view makes [B, T, H, D]; the permute moves H before T.
// Check:   scripts/check-exercise.sh 02
#include "exercises.hpp"

namespace workbook {

Tensor4 split_heads(const Tensor3& x, std::size_t num_heads) {
    const std::size_t B = x.shape(0), T = x.shape(1), E = x.shape(2);
    const std::size_t H = num_heads, D = E / H;
    Tensor4 out = xt::zeros<float>({B, H, T, D});  // [B, H, T, D]
    // your code here
    return out;
}

}  // namespace workbook
