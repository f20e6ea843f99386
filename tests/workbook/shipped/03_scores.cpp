// Exercise 03: the scaled scores, Q K^T / sqrt(D) (lesson 03).
//
//   q       [B, H, Tq, D]    one row per query
//   k       [B, H, Tk, D]    one row per key
//   returns [B, H, Tq, Tk]   s[b, h, i, j] = sum_d q[b, h, i, d] k[b, h, j, d] / sqrt(D)
//
// PyTorch: q @ k.transpose(2, 3) / math.sqrt(n_d)
// Tq and Tk may differ (cross-attention); D is the head's size, q.shape(3).
// Check:   scripts/check-exercise.sh 03
#include "exercises.hpp"

namespace workbook {

Tensor4 scaled_scores(const Tensor4& q, const Tensor4& k) {
    const std::size_t B = q.shape(0), H = q.shape(1), Tq = q.shape(2);
    const std::size_t Tk = k.shape(2);
    Tensor4 scores = xt::zeros<float>({B, H, Tq, Tk});  // [B, H, Tq, Tk]
    // your code here
    return scores;
}

}  // namespace workbook
