// Exercise 05: the softmax over the keys (lesson 05).
//
//   scores  [B, H, Tq, Tk]   scaled, maybe masked with -inf
//   returns [B, H, Tq, Tk]   each query's row (fixed b, h, i) positive, summing to 1:
//            w[i][j] = exp(s[i][j] - m) / sum_k exp(s[i][k] - m),  m = max_k s[i][k]
//
// PyTorch: nn.Softmax(dim=-1)(score)
// Subtracting m changes nothing mathematically and keeps exp from
// overflowing. A row whose scores are all -inf (every key masked) gets zeros.
// Check:   scripts/check-exercise.sh 05
#include "exercises.hpp"

namespace workbook {

Tensor4 softmax(const Tensor4& scores) {
    Tensor4 weights = xt::zeros<float>(scores.shape());  // [B, H, Tq, Tk]
    // your code here
    return weights;
}

}  // namespace workbook
