// Exercise 07: the whole forward, stage by stage (lesson 07).
//
//   m       the module: m.wq, m.wk, m.wv, m.w_o (mha::Linear), m.num_heads()
//   query   [B, Tq, E]     key, value [B, Tk, E]   (self-attention: all three X)
//   mask    [B or 1, H or 1, Tq or 1, Tk], 1 = may attend; nullptr: no mask
//   returns [B, Tq, E]     the output, w_o(context)
//
// PyTorch: q, k, v = self.w_q(q), self.w_k(k), self.w_v(v); ...;
//          output = self.w_combine(score)
// Call the core's stages (mha::linear, mha::split_heads, mha::scaled_scores,
// mha::apply_mask, mha::softmax, mha::attend, mha::merge_heads), in order;
// not m.forward() or m.forward_stages(), which are the answer.
// Check:   scripts/check-exercise.sh 07
#include "exercises.hpp"
#include "mha/attend.hpp"
#include "mha/heads.hpp"
#include "mha/mask.hpp"
#include "mha/scores.hpp"
#include "mha/softmax.hpp"

namespace workbook {

Tensor3 forward(const mha::MultiHeadAttention& m, const Tensor3& query,
                const Tensor3& key, const Tensor3& value, const Mask* mask) {
    const std::size_t B = query.shape(0), Tq = query.shape(1), E = m.embed_dim();
    Tensor3 output = xt::zeros<float>({B, Tq, E});  // [B, Tq, E]
    // your code here
    (void)key;
    (void)value;
    (void)mask;
    return output;
}

}  // namespace workbook
