// Exercise 16: one decode step through the KV cache (lesson 16).
//
//   m        the module (H = m.num_heads(), D = m.head_dim())
//   x_t      [B, 1, E]   the next position of each sequence
//   cache    k, v [B, H, capacity, D]; positions 0 .. L-1 hold the keys and
//            values so far, L = cache.length
//   returns  [B, 1, E]   the attention output at position L
//
// Write: q, k, v of x_t (split into heads); k and v into the cache at
// position L; the scores of q against the L + 1 cached keys (no mask: they
// are all in the past or now); softmax, weights x values, merge, w_o; then
// cache.length = L + 1.
// PyTorch: k_cache[:, :, t:t+1] = k; ...; attention over k_cache[:, :, :t+1]
// Use the core's stages; xt::view(cache.k, xt::all(), xt::all(),
// xt::range(a, b)) is cache.k[:, :, a:b].
// Check:   scripts/check-exercise.sh 16
#include <xtensor/xview.hpp>

#include "exercises.hpp"
#include "mha/attend.hpp"
#include "mha/heads.hpp"
#include "mha/scores.hpp"
#include "mha/softmax.hpp"

namespace workbook {

Tensor3 decode_step(const mha::MultiHeadAttention& m, const Tensor3& x_t,
                    mha::KVCache& cache) {
    const std::size_t B = x_t.shape(0), E = m.embed_dim();
    Tensor3 y = xt::zeros<float>({B, std::size_t(1), E});  // [B, 1, E]
    // your code here
    (void)cache;
    return y;
}

}  // namespace workbook
