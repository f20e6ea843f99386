// Exercise 01: a linear layer, y = x W^T + b (lesson 01: wq, wk, wv).
//
//   x       [B, T, in]    B T rows of `in` numbers
//   layer   weight [out, in], bias [out]   (PyTorch's nn.Linear layout)
//   returns [B, T, out]   y[b, t, o] = sum_i x[b, t, i] weight(o, i) + bias(o)
//
// PyTorch: q = self.w_q(q)
// Write it with loops (or xtensor), without calling mha::linear.
// Check:   scripts/check-exercise.sh 01
#include "exercises.hpp"

namespace workbook {

Tensor3 linear(const Tensor3& x, const mha::Linear& layer) {
    const std::size_t B = x.shape(0), T = x.shape(1);
    const std::size_t out = layer.out_features();
    Tensor3 y = xt::zeros<float>({B, T, out});  // [B, T, out]
    // your code here
    return y;
}

}  // namespace workbook
