// Past the articles: the KV cache, and new positions through the stages.
//
// B = batch, T = new positions, L = cached, H = heads, H_kv = kv heads,
// D = head_dim, E = embed_dim.
#include "mha/kv_cache.hpp"

#include <xtensor/xbuilder.hpp>
#include <xtensor/xview.hpp>

#include "mha/attend.hpp"
#include "mha/heads.hpp"
#include "mha/scores.hpp"
#include "mha/softmax.hpp"

namespace mha {

std::size_t KVCache::bytes() const {
    return 2 * k.shape(0) * k.shape(1) * length * k.shape(3) * sizeof(float);
}

KVCache make_cache(const MultiHeadAttention& m, std::size_t batch, std::size_t capacity) {
    return make_cache(m.num_kv_heads(), m.head_dim(), batch, capacity);
}

KVCache make_cache(std::size_t num_kv_heads, std::size_t head_dim, std::size_t batch,
                   std::size_t capacity) {
    require_nonzero({batch, num_kv_heads, capacity, head_dim},
                    "make_cache [B, H_kv, capacity, D]");
    KVCache c;
    c.k = xt::zeros<float>({batch, num_kv_heads, capacity, head_dim});
    c.v = xt::zeros<float>({batch, num_kv_heads, capacity, head_dim});
    return c;
}

KVCache make_cache(const MultiHeadAttention& m, std::size_t batch, std::size_t capacity,
                   const Rope& rope) {
    check_rope(rope, m.head_dim());
    KVCache c = make_cache(m, batch, capacity);
    c.rope = rope;
    return c;
}

Mask cached_causal_mask(std::size_t t, std::size_t l) {
    require_nonzero({t}, "cached_causal_mask new positions T");
    Mask m({1, 1, t, l + t});
    for (std::size_t i = 0; i < t; ++i)
        for (std::size_t j = 0; j < l + t; ++j) m(0, 0, i, j) = j <= l + i;
    return m;
}

Tensor3 extend_stages(const MultiHeadAttention& m, const Tensor3& x, KVCache& cache) {
    check_cache(m, x, cache);
    const std::size_t L = cache.length, T = x.shape(1);
    const std::size_t H = m.num_heads(), H_kv = m.num_kv_heads();
    Tensor4 q = split_heads(linear(x, m.wq), H);           // [B, H, T, D]
    Tensor4 k = split_heads(linear(x, m.wk), H_kv);        // [B, H_kv, T, D]
    const Tensor4 v = split_heads(linear(x, m.wv), H_kv);  // [B, H_kv, T, D]
    if (cache.rope) {  // the new positions are L .. L+T-1: keys are cached turned
        q = apply_rope(q, *cache.rope, L);                 // [B, H, T, D]
        k = apply_rope(k, *cache.rope, L);                 // [B, H_kv, T, D]
    }
    // Append: the new positions are L .. L+T-1 of every sequence.
    xt::view(cache.k, xt::all(), xt::all(), xt::range(L, L + T)) = k;
    xt::view(cache.v, xt::all(), xt::all(), xt::range(L, L + T)) = v;
    cache.length = L + T;
    // Every position so far, the new ones included: [B, H_kv, L+T, D]
    const Tensor4 keys = xt::view(cache.k, xt::all(), xt::all(), xt::range(0, L + T));
    const Tensor4 values = xt::view(cache.v, xt::all(), xt::all(), xt::range(0, L + T));
    // [B, H, T, D] x [B, H_kv, D, L+T] -> [B, H, T, L+T], causal from L on
    const Tensor4 scores = apply_mask(scaled_scores(q, keys), cached_causal_mask(T, L));
    const Tensor3 context = merge_heads(attend(softmax(scores), values));  // [B, T, E]
    return linear(context, m.w_o);                                         // [B, T, E]
}

void check_cache(const MultiHeadAttention& m, const Tensor3& x, const KVCache& cache) {
    m.check_inputs(x, x, x);
    const std::size_t B = x.shape(0), T = x.shape(1);
    const std::size_t want[4] = {B, m.num_kv_heads(), cache.capacity(), m.head_dim()};
    for (std::size_t d = 0; d < 4; ++d) {
        if (cache.k.shape(d) != want[d] || cache.v.shape(d) != want[d]) {
            fail("KV cache: k " + shape_of(cache.k) + " and v " + shape_of(cache.v) +
                 " do not fit x " + shape_of(x) + ": make it with make_cache(m, " +
                 std::to_string(B) + ", capacity)");
        }
    }
    if (cache.length + T > cache.capacity()) {
        fail("KV cache full: " + std::to_string(cache.length) + " positions cached, " +
             std::to_string(T) + " more do not fit its capacity " +
             std::to_string(cache.capacity()));
    }
}

}  // namespace mha
