// The engine's attention through a KV cache.
//
// B = batch, T = new positions, L = cached, H = heads, H_kv = kv heads,
// D = head_dim, E = embed_dim, Ekv = H_kv * D.
#include "mha/fast/kv_cache.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>

#include "mha/fast/attend_head.hpp"
#include "mha/fast/blas.hpp"
#include "mha/fast/memory.hpp"
#include "mha/fast/packed_gemm.hpp"
#include "mha/fast/parallel.hpp"
#include "mha/fast/projections.hpp"
#include "mha/fast/softmax.hpp"

namespace mha::fast {

namespace {

// Below this many rows the layers go to BLAS: packing four weights (4 MiB
// at E = 512) would cost more than a few rows of products.
constexpr std::size_t kPackRows = 64;

// One new position of the G query heads that share a kv head, over its n
// cached keys: scores, softmax, weights x V, reading K and V once for all
// G (a step is bound by reading the cache). q and context are [G, D], the
// heads side by side; k and v [n, D], rows D apart; w has room for G n.
void decode_group(const float* q, const float* k, const float* v, std::size_t n,
                  std::size_t G, std::size_t D, float scale, float* w, float* context) {
    if (G == 1) {  // one head: two matrix-vector products
        gemv({k, n, D, D}, false, q, w, scale);  // [n, D] x [D] -> [n]
        softmax_row(w, n);
        gemv({v, n, D, D}, true, w, context);    // [n, D]^T x [n] -> [D]
        return;
    }
    gemm({q, G, D, D}, false, {k, n, D, D}, true, w, n, scale);  // [G, D] x [D, n]
    for (std::size_t r = 0; r < G; ++r) softmax_row(w + r * n, n);
    gemm({w, G, n, n}, false, {v, n, D, D}, false, context, D);  // [G, n] x [n, D]
}

}  // namespace

Tensor3 extend(const MultiHeadAttention& m, const Tensor3& x, KVCache& cache) {
    check_cache(m, x, cache);
    const std::size_t B = x.shape(0), T = x.shape(1), L = cache.length, S = L + T;
    const std::size_t E = m.embed_dim(), H = m.num_heads(), D = m.head_dim();
    const std::size_t Ekv = m.kv_dim(), group = H / m.num_kv_heads();
    const std::size_t rows = B * T;
    keep_freed_memory();
    // 1) Q, K, V of the new positions: [rows, E], [rows, Ekv], [rows, Ekv]
    Buffer work(rows * (2 * E + 2 * Ekv));
    float* const q = work.data();
    float* const k = q + rows * E;
    float* const v = k + rows * Ekv;
    float* const context = v + rows * Ekv;  // [rows, E], the heads merged
    const Projections layers(m.wq, m.wk, m.wv, m.w_o, packed_products_on() && rows >= kPackRows);
    float* const qkv[3] = {q, k, v};
    layers.run(x.data(), rows, 0, 3, qkv);
    // 1b) RoPE: row (b, t) is position L + t; each head turned in place
    if (cache.rope) {
        for (std::size_t r = 0; r < rows; ++r) {
            const std::size_t pos = L + r % T;
            for (std::size_t h = 0; h < H; ++h) rope_rotate(q + r * E + h * D, D, pos, *cache.rope);
            for (std::size_t g = 0; g < m.num_kv_heads(); ++g)
                rope_rotate(k + r * Ekv + g * D, D, pos, *cache.rope);
        }
    }
    // 2) append K and V: position L + t of sequence b, kv head g
    for (std::size_t b = 0; b < B; ++b)
        for (std::size_t g = 0; g < m.num_kv_heads(); ++g)
            for (std::size_t t = 0; t < T; ++t) {
                const std::size_t from = (b * T + t) * Ekv + g * D;
                std::memcpy(&cache.k(b, g, L + t, 0), k + from, D * sizeof(float));
                std::memcpy(&cache.v(b, g, L + t, 0), v + from, D * sizeof(float));
            }
    cache.length = S;
    // 3) every (sequence, head): the new queries over all S positions
    const float scale = 1.0f / std::sqrt(static_cast<float>(D));
    const bool packed = packed_products_on();
    std::atomic<std::size_t> next_pair{0};
    if (T == 1) {  // decode: per (sequence, kv head), its group of query heads
        const std::size_t pairs = B * m.num_kv_heads();
        parallel_for(std::min(pairs, worker_count()), [&](std::size_t, std::size_t) {
            Buffer w(group * S);  // this worker's weights, [group, S]
            for (std::size_t bg; (bg = next_pair++) < pairs;) {
                const std::size_t b = bg / m.num_kv_heads(), g = bg % m.num_kv_heads();
                const std::size_t h0 = g * group;  // the group's first query head
                decode_group(q + b * E + h0 * D, &cache.k(b, g, 0, 0), &cache.v(b, g, 0, 0), S,
                             group, D, scale, w.data(), context + b * E + h0 * D);
            }
        });
    } else {  // a prompt: per (sequence, head), in tiles (no [T, S] weights)
        const BlockMask tiles = causal_block_mask(T, S, L);
        parallel_for(std::min(B * H, worker_count()), [&](std::size_t, std::size_t) {
            Buffer panels(packed ? panel_floats(S, D) : 0);
            for (std::size_t bh; (bh = next_pair++) < B * H;) {
                const std::size_t b = bh / H, h = bh % H, g = h / group;
                const float* kc = &cache.k(b, g, 0, 0);  // [cap, D], rows D apart
                const float* vc = &cache.v(b, g, 0, 0);
                const float* qh = q + b * T * E + h * D;  // [T, D], rows E apart
                float* ch = context + b * T * E + h * D;
                const Head head{qh, kc, vc, ch, nullptr, packed ? panels.data() : nullptr, nullptr};
                // causal: new position t sees the L cached ones and 0..t of its own
                attend_head_tiled(head, b, h, {T, S, D, E, D, scale, L}, nullptr, kNegInf,
                                  nullptr, tiles);
            }
        });
    }
    // 4) the output layer
    Tensor3 out = Tensor3::from_shape({B, T, E});
    float* const o = out.data();
    layers.run(context, rows, 3, 1, &o);
    return out;
}

}  // namespace mha::fast
