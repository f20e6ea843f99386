// Exercise 04: the causal mask, and masking the scores (lesson 04). Two
// functions; the check runs causal_mask's cases first.
//
// causal_mask(tq, tk)
//   returns [1, 1, Tq, Tk]   keep(i, j) = 1 when query i may attend to key j,
//                            that is j <= i (from the top left, whatever Tk is)
// PyTorch: mask = torch.tril(torch.ones(t, t))
//
// apply_mask(scores, mask, fill)
//   scores  [B, H, Tq, Tk]
//   mask    [B or 1, H or 1, Tq or 1, Tk]   1 = may attend; an axis of size 1
//                                           is shared by every b, h or i
//   returns [B, H, Tq, Tk]   the scores, with `fill` (-inf, or -1e9) where mask is 0
// PyTorch: score.masked_fill(mask == 0, float("-inf"))
// Check:   scripts/check-exercise.sh 04
#include "exercises.hpp"

namespace workbook {

Mask causal_mask(std::size_t tq, std::size_t tk) {
    const std::size_t one = 1;
    Mask keep = xt::zeros<bool>({one, one, tq, tk});  // [1, 1, Tq, Tk]
    // your code here
    return keep;
}

Tensor4 apply_mask(const Tensor4& scores, const Mask& mask, float fill) {
    Tensor4 out = xt::zeros<float>(scores.shape());  // [B, H, Tq, Tk]
    // your code here (mask.shape(0) == 1 means: every b reads mask(0, ...))
    (void)mask;
    (void)fill;
    return out;
}

}  // namespace workbook
