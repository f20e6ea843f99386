// Exercise 19: the softmax's backward (lesson 19's training runs on it).
//
//   weights    P = softmax(S) [B, H, Tq, Tk], each row summing to 1
//   d_weights  dL/dP          [B, H, Tq, Tk]
//   returns    dL/dS          [B, H, Tq, Tk], row by row:
//              dS[i][j] = P[i][j] (dP[i][j] - sum_k P[i][k] dP[i][k])
//
// Why the sum: raising one score raises its weight and, since the row sums
// to 1, lowers every other weight of the row. A masked key has P = 0, so
// its gradient is 0 too.
// PyTorch: autograd does it; by hand, ds = p * (dp - (p * dp).sum(-1, keepdim=True))
// Check:   scripts/check-exercise.sh 19
#include "exercises.hpp"

namespace workbook {

Tensor4 softmax_backward(const Tensor4& weights, const Tensor4& d_weights) {
    Tensor4 d_scores = xt::zeros<float>(weights.shape());  // [B, H, Tq, Tk]
    // your code here
    (void)d_weights;
    return d_scores;
}

}  // namespace workbook
