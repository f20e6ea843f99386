// Variants: the rolling KV cache, S sink slots and a ring of W.
//
// B = batch, T = new positions, H = heads, H_kv = kv heads, D = head_dim,
// E = embed_dim, S = sinks, W = window, n = filled slots.
#include "mha/variants/rolling_cache.hpp"

#include <algorithm>
#include <string>

#include <xtensor/xbuilder.hpp>
#include <xtensor/xview.hpp>

#include "mha/attend.hpp"
#include "mha/heads.hpp"
#include "mha/scores.hpp"
#include "mha/softmax.hpp"

namespace mha {

std::size_t RollingCache::length() const { return std::min(seen, capacity()); }

std::size_t RollingCache::bytes() const {
    return 2 * k.shape(0) * k.shape(1) * length() * k.shape(3) * sizeof(float);
}

std::size_t rolling_slot(std::size_t pos, std::size_t sinks, std::size_t window) {
    if (pos < sinks) return pos;                // a sink keeps its own slot
    return sinks + (pos - sinks) % window;      // the ring: over position pos - W
}

RollingCache make_rolling_cache(const MultiHeadAttention& m, std::size_t batch,
                                std::size_t sinks, std::size_t window,
                                const std::optional<Rope>& rope) {
    require_nonzero({batch, window}, "make_rolling_cache [B, W]");
    if (rope) check_rope(*rope, m.head_dim());
    RollingCache c;
    const std::size_t slots = sinks + window;
    c.k = xt::zeros<float>({batch, m.num_kv_heads(), slots, m.head_dim()});
    c.v = xt::zeros<float>({batch, m.num_kv_heads(), slots, m.head_dim()});
    c.sinks = sinks, c.window = window, c.rope = rope;
    c.position.assign(slots, 0);
    return c;
}

namespace {

void check_rolling(const MultiHeadAttention& m, const Tensor3& x, const RollingCache& c) {
    m.check_inputs(x, x, x);
    const std::size_t want[4] = {x.shape(0), m.num_kv_heads(), c.sinks + c.window,
                                 m.head_dim()};
    for (std::size_t d = 0; d < 4; ++d) {
        if (c.k.shape(d) != want[d] || c.v.shape(d) != want[d]) {
            fail("rolling cache: k " + shape_of(c.k) + " and v " + shape_of(c.v) +
                 " do not fit x " + shape_of(x) +
                 ": make it with make_rolling_cache(m, " + std::to_string(x.shape(0)) +
                 ", S, W)");
        }
    }
}

}  // namespace

Tensor3 decode_rolling(const MultiHeadAttention& m, const Tensor3& x, RollingCache& cache) {
    check_rolling(m, x, cache);
    const std::size_t B = x.shape(0), T = x.shape(1), E = m.embed_dim();
    const std::size_t H = m.num_heads(), H_kv = m.num_kv_heads();
    Tensor4 q_new = split_heads(linear(x, m.wq), H);     // [B, H, T, D]
    Tensor4 k_new = split_heads(linear(x, m.wk), H_kv);  // [B, H_kv, T, D]
    Tensor4 v_new = split_heads(linear(x, m.wv), H_kv);  // [B, H_kv, T, D]
    if (cache.rope) {  // turned by their positions seen .. seen+T-1, not by their slots
        q_new = apply_rope(q_new, *cache.rope, cache.seen);  // [B, H, T, D]
        k_new = apply_rope(k_new, *cache.rope, cache.seen);  // [B, H_kv, T, D]
    }
    // positions a .. b-1 of a [B, H, T, D] tensor (axis 2), as a view
    const auto at = [](Tensor4& t, std::size_t a, std::size_t b) {
        return xt::view(t, xt::all(), xt::all(), xt::range(a, b));
    };
    Tensor3 context = Tensor3::from_shape({B, T, E});  // [B, T, E]
    for (std::size_t i = 0; i < T; ++i) {
        // 1. Position p goes to its slot, over the one that fell out of the window.
        const std::size_t p = cache.seen;
        const std::size_t slot = rolling_slot(p, cache.sinks, cache.window);
        at(cache.k, slot, slot + 1) = at(k_new, i, i + 1);  // [B, H_kv, 1, D]
        at(cache.v, slot, slot + 1) = at(v_new, i, i + 1);
        cache.position[slot] = p;
        cache.seen = p + 1;
        // 2. Its query against every filled slot: the sinks and the last W
        //    positions, exactly what sinks_window(S, W) lets p see, so no mask.
        const std::size_t n = cache.length();
        const Tensor4 keys = at(cache.k, 0, n);    // [B, H_kv, n, D]
        const Tensor4 values = at(cache.v, 0, n);  // [B, H_kv, n, D]
        const Tensor4 q = at(q_new, i, i + 1);     // [B, H, 1, D]
        // [B, H, 1, D] x [B, H_kv, D, n] -> [B, H, 1, n]; the order of the
        // slots does not matter to a softmax and a weighted sum
        const Tensor4 weights = softmax(scaled_scores(q, keys));  // [B, H, 1, n]
        xt::view(context, xt::all(), xt::range(i, i + 1)) =
            merge_heads(attend(weights, values));                 // [B, 1, E]
    }
    return linear(context, m.w_o);  // [B, T, E]
}

}  // namespace mha
