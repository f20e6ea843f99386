// Variants: multi-head latent attention, the explicit form and the absorbed one.
//
// B = batch, Tq = queries, Tk = keys, L = cached, E = embed_dim, H = heads,
// D = head_dim, d_c = latent, d_R = RoPE key, in_q = d_cq (or E).
#include "mha/variants/mla.hpp"

#include <array>
#include <cmath>

#include <xtensor-blas/xblas.hpp>
#include <xtensor-blas/xlinalg.hpp>
#include <xtensor/xadapt.hpp>
#include <xtensor/xbroadcast.hpp>
#include <xtensor/xbuilder.hpp>
#include <xtensor/xview.hpp>

#include "mha/attend.hpp"
#include "mha/heads.hpp"
#include "mha/scores.hpp"
#include "mha/softmax.hpp"

namespace mha {

namespace {

void check_config(const MlaConfig& c) {
    require_nonzero({c.embed_dim, c.num_heads, c.head_dim, c.latent_dim, c.rope_dim},
                    "MLA config [E, H, D, d_c, d_R]");
    check_rope(c.rope, c.rope_dim);  // d_R even: RoPE turns pairs
}

// The input of the query up-projections: c^Q = W^DQ x, or x itself.
Tensor3 query_input(const MultiHeadLatentAttention& m, const Tensor3& x) {
    if (m.config.query_latent_dim == 0) return x;  // [B, Tq, E]
    return linear_no_bias(x, m.w_dq);               // [B, Tq, d_cq]
}

// q^R: each head's RoPE part, turned to positions offset ..
Tensor4 rope_queries(const MultiHeadLatentAttention& m, const Tensor3& c_q,
                     std::size_t offset) {
    const Tensor4 q_r = split_heads(linear_no_bias(c_q, m.w_qr), m.config.num_heads);
    return apply_rope(q_r, m.config.rope, offset);  // [B, H, Tq, d_R]
}

// torch.cat([a, b], dim=-1)
Tensor4 concat_last(const Tensor4& a, const Tensor4& b) {
    return xt::concatenate(xt::xtuple(a, b), 3);  // [.., Da + Db]
}

// The explicit form over keys 0 .. Tk-1 (kv), queries at positions offset ..
Tensor3 attend_explicit(const MultiHeadLatentAttention& m, const Tensor3& x,
                        std::size_t offset, const MlaLatent& kv, const Mask* mask) {
    const std::size_t B = x.shape(0), H = m.config.num_heads;
    const std::size_t Tk = kv.c_kv.shape(2), d_R = m.config.rope_dim;
    const Tensor3 c_q = query_input(m, x);                            // [B, Tq, in_q]
    const Tensor4 q_c = split_heads(linear_no_bias(c_q, m.w_uq), H);  // [B, H, Tq, D]
    const Tensor4 q_r = rope_queries(m, c_q, offset);                 // [B, H, Tq, d_R]
    // K and V of every head, rebuilt from the latent
    const Tensor3 c = xt::view(kv.c_kv, xt::all(), 0);                // [B, Tk, d_c]
    const Tensor4 k_c = split_heads(linear_no_bias(c, m.w_uk), H);    // [B, H, Tk, D]
    const Tensor4 v = split_heads(linear_no_bias(c, m.w_uv), H);      // [B, H, Tk, D]
    // k^R is one head: each query head gets the same copy (DeepSeek's expand)
    const std::array<std::size_t, 4> all_heads{B, H, Tk, d_R};
    const Tensor4 k_r = xt::broadcast(kv.k_r, all_heads);             // [B, H, Tk, d_R]
    const Tensor4 q = concat_last(q_c, q_r);                          // [B, H, Tq, D + d_R]
    const Tensor4 k = concat_last(k_c, k_r);                          // [B, H, Tk, D + d_R]
    // [B,H,Tq,D+d_R] x [B,H,D+d_R,Tk] -> [B,H,Tq,Tk], divided by sqrt(D + d_R)
    Tensor4 scores = scaled_scores(q, k);
    if (mask) scores = apply_mask(scores, *mask);
    const Tensor3 context = merge_heads(attend(softmax(scores), v));  // [B, Tq, H*D]
    return linear_no_bias(context, m.w_o);                            // [B, Tq, E]
}

// The absorbed form: the same numbers, computed against the latent itself.
Tensor3 attend_absorbed(const MultiHeadLatentAttention& m, const MlaAbsorbed& a,
                        const Tensor3& x, std::size_t offset, const MlaLatent& kv,
                        const Mask* mask) {
    const std::size_t H = m.config.num_heads, D = m.config.head_dim;
    const std::size_t d_c = m.config.latent_dim, d_R = m.config.rope_dim;
    const Tensor3 c_q = query_input(m, x);                                 // [B, Tq, in_q]
    const Tensor4 q_lat = split_heads(linear_no_bias(c_q, a.w_q_lat), H);  // [B, H, Tq, d_c]
    const Tensor4 q_r = rope_queries(m, c_q, offset);                      // [B, H, Tq, d_R]
    // One key head read by all H query heads: multi-query attention whose
    // key is [c^KV; k^R], d_c + d_R wide, straight from the cache.
    const Tensor4 q = concat_last(q_lat, q_r);           // [B, H, Tq, d_c + d_R]
    const Tensor4 key = concat_last(kv.c_kv, kv.k_r);    // [B, 1, Tk, d_c + d_R]
    // scaled_scores divides by sqrt(d_c + d_R); the layer's scale is 1/sqrt(D + d_R)
    const float rescale = std::sqrt(float(d_c + d_R) / float(D + d_R));
    Tensor4 scores = scaled_scores(q, key) * rescale;    // [B, H, Tq, Tk]
    if (mask) scores = apply_mask(scores, *mask);
    // The latent is the one value head too: W^UV waits in w_o_lat.
    const Tensor4 ctx_lat = attend(softmax(scores), kv.c_kv);  // [B, H, Tq, d_c]
    return linear_no_bias(merge_heads(ctx_lat), a.w_o_lat);     // [B, Tq, E]
}

void check_mla_cache(const MultiHeadLatentAttention& m, const Tensor3& x,
                     const MlaCache& cache) {
    const std::size_t B = x.shape(0), T = x.shape(1);
    const std::size_t want_c[4] = {B, 1, cache.capacity(), m.config.latent_dim};
    const std::size_t want_r[4] = {B, 1, cache.capacity(), m.config.rope_dim};
    for (std::size_t d = 0; d < 4; ++d) {
        if (cache.c_kv.shape(d) != want_c[d] || cache.k_r.shape(d) != want_r[d]) {
            fail("MLA cache: c_kv " + shape_of(cache.c_kv) + " and k_r " +
                 shape_of(cache.k_r) + " do not fit x " + shape_of(x) +
                 ": make it with make_mla_cache(m.config, " + std::to_string(B) +
                 ", capacity)");
        }
    }
    if (cache.length + T > cache.capacity()) {
        fail("MLA cache full: " + std::to_string(cache.length) + " positions cached, " +
             std::to_string(T) + " more do not fit its capacity " +
             std::to_string(cache.capacity()));
    }
}

// Appends x's latent at positions L .. L+T-1; returns every position cached.
MlaLatent append(const MultiHeadLatentAttention& m, const Tensor3& x, MlaCache& cache) {
    check_mla_cache(m, x, cache);
    const std::size_t L = cache.length, T = x.shape(1);
    const MlaLatent fresh = mla_latent(m, x, L);  // [B, 1, T, d_c], [B, 1, T, d_R]
    xt::view(cache.c_kv, xt::all(), xt::all(), xt::range(L, L + T)) = fresh.c_kv;
    xt::view(cache.k_r, xt::all(), xt::all(), xt::range(L, L + T)) = fresh.k_r;
    cache.length = L + T;
    MlaLatent seen;
    seen.c_kv = xt::view(cache.c_kv, xt::all(), xt::all(), xt::range(0, L + T));
    seen.k_r = xt::view(cache.k_r, xt::all(), xt::all(), xt::range(0, L + T));
    return seen;  // [B, 1, L+T, d_c], [B, 1, L+T, d_R]
}

}  // namespace

MlaConfig deepseek_v2_config() {
    MlaConfig c;
    c.embed_dim = 5120, c.num_heads = 128, c.head_dim = 128;
    c.latent_dim = 512, c.rope_dim = 64, c.query_latent_dim = 1536;
    return c;
}

MultiHeadLatentAttention make_mla(const MlaConfig& config, std::uint64_t seed) {
    check_config(config);
    const std::size_t E = config.embed_dim, HD = config.num_heads * config.head_dim;
    const std::size_t d_c = config.latent_dim, d_R = config.rope_dim;
    const std::size_t in_q = config.query_latent_dim ? config.query_latent_dim : E;
    Rng rng(seed);
    MultiHeadLatentAttention m;
    m.config = config;
    if (config.query_latent_dim) m.w_dq = xavier_uniform(in_q, E, rng);
    m.w_uq = xavier_uniform(HD, in_q, rng);
    m.w_qr = xavier_uniform(config.num_heads * d_R, in_q, rng);
    m.w_dkv = xavier_uniform(d_c, E, rng);
    m.w_uk = xavier_uniform(HD, d_c, rng);
    m.w_uv = xavier_uniform(HD, d_c, rng);
    m.w_kr = xavier_uniform(d_R, E, rng);
    m.w_o = xavier_uniform(E, HD, rng);
    return m;
}

Tensor3 linear_no_bias(const Tensor3& x, const Tensor2& w) {
    const std::size_t B = x.shape(0), T = x.shape(1), in = x.shape(2), out = w.shape(0);
    require_nonzero({B, T, in}, "linear_no_bias input x [B, T, in]");
    require_nonzero({out, w.shape(1)}, "linear_no_bias weight [out, in]");
    if (in != w.shape(1)) {
        fail("linear_no_bias: x " + shape_of(x) + " has last size " + std::to_string(in) +
             " but the weight " + shape_of(w) + " expects " + std::to_string(w.shape(1)));
    }
    // The tokens as rows, [B*T, in], as x.view(-1, in)
    const std::array<std::size_t, 2> rows_shape{B * T, in}, y_shape{B * T, out};
    const auto rows = xt::adapt(x.data(), B * T * in, xt::no_ownership(), rows_shape);
    Tensor3 y = Tensor3::from_shape({B, T, out});  // [B, T, out]
    auto y_rows = xt::adapt(y.data(), B * T * out, xt::no_ownership(), y_shape);
    xt::blas::gemm(rows, w, y_rows, false, true);  // [B*T, in] x [in, out]
    return y;
}

MlaLatent mla_latent(const MultiHeadLatentAttention& m, const Tensor3& x,
                     std::size_t offset) {
    MlaLatent kv;
    kv.c_kv = split_heads(linear_no_bias(x, m.w_dkv), 1);  // [B, 1, T, d_c]
    const Tensor4 k_r = split_heads(linear_no_bias(x, m.w_kr), 1);  // [B, 1, T, d_R]
    kv.k_r = apply_rope(k_r, m.config.rope, offset);  // turned once, as it is cached
    return kv;
}

MlaAbsorbed mla_absorb(const MultiHeadLatentAttention& m) {
    const std::size_t H = m.config.num_heads, D = m.config.head_dim;
    const std::size_t d_c = m.config.latent_dim, E = m.config.embed_dim;
    MlaAbsorbed a;
    a.w_q_lat = Tensor2::from_shape({H * d_c, m.w_uq.shape(1)});  // [H*d_c, in_q]
    a.w_o_lat = Tensor2::from_shape({E, H * d_c});                // [E, H*d_c]
    for (std::size_t h = 0; h < H; ++h) {
        auto head = xt::range(h * D, h * D + D), lat = xt::range(h * d_c, h * d_c + d_c);
        const Tensor2 uk_t = xt::transpose(xt::view(m.w_uk, head, xt::all()));  // [d_c, D]
        const Tensor2 uq = xt::view(m.w_uq, head, xt::all());                   // [D, in_q]
        const Tensor2 o = xt::view(m.w_o, xt::all(), head);                     // [E, D]
        const Tensor2 uv = xt::view(m.w_uv, head, xt::all());                   // [D, d_c]
        // q^C . (W^UK c) = (W^UK^T q^C) . c: [d_c, D] x [D, in_q] -> [d_c, in_q]
        xt::view(a.w_q_lat, lat, xt::all()) = xt::linalg::dot(uk_t, uq);
        // W^O_h (W^UV_h c) = (W^O_h W^UV_h) c: [E, D] x [D, d_c] -> [E, d_c]
        xt::view(a.w_o_lat, xt::all(), lat) = xt::linalg::dot(o, uv);
    }
    return a;
}

Tensor3 mla_forward(const MultiHeadLatentAttention& m, const Tensor3& x, const Mask* mask) {
    return attend_explicit(m, x, 0, mla_latent(m, x), mask);
}

Tensor3 mla_forward(const MultiHeadLatentAttention& m, const MlaAbsorbed& a,
                    const Tensor3& x, const Mask* mask) {
    return attend_absorbed(m, a, x, 0, mla_latent(m, x), mask);
}

std::size_t MlaCache::allocated_bytes() const {
    return (c_kv.size() + k_r.size()) * sizeof(float);
}

MlaCache make_mla_cache(const MlaConfig& config, std::size_t batch, std::size_t capacity) {
    check_config(config);
    require_nonzero({batch, capacity}, "make_mla_cache [B, capacity]");
    MlaCache c;
    c.c_kv = xt::zeros<float>({batch, std::size_t{1}, capacity, config.latent_dim});
    c.k_r = xt::zeros<float>({batch, std::size_t{1}, capacity, config.rope_dim});
    return c;
}

Tensor3 mla_extend(const MultiHeadLatentAttention& m, const Tensor3& x, MlaCache& cache) {
    const std::size_t L = cache.length, T = x.shape(1);
    const MlaLatent seen = append(m, x, cache);
    const Mask causal = cached_causal_mask(T, L);  // new position i sees 0 .. L + i
    return attend_explicit(m, x, L, seen, &causal);
}

Tensor3 mla_extend(const MultiHeadLatentAttention& m, const MlaAbsorbed& a,
                   const Tensor3& x, MlaCache& cache) {
    const std::size_t L = cache.length, T = x.shape(1);
    const MlaLatent seen = append(m, x, cache);
    const Mask causal = cached_causal_mask(T, L);
    return attend_absorbed(m, a, x, L, seen, &causal);
}

std::vector<CacheRow> cache_per_token(const MlaConfig& config, std::size_t n_kv,
                                      std::size_t batch, std::size_t capacity) {
    const std::size_t H = config.num_heads, D = config.head_dim;
    if (n_kv == 0 || H % n_kv != 0) {
        fail("cache_per_token: n_kv = " + std::to_string(n_kv) + " must divide n_h = " +
             std::to_string(H));
    }
    // floats per token: the containers' bytes over their B * capacity slots
    auto per_token = [&](std::size_t bytes) { return bytes / (sizeof(float) * batch * capacity); };
    auto kv = [&](std::size_t heads) {
        const KVCache c = make_cache(heads, D, batch, capacity);  // K, V [B, heads, cap, D]
        return per_token((c.k.size() + c.v.size()) * sizeof(float));
    };
    const std::size_t mla = per_token(make_mla_cache(config, batch, capacity).allocated_bytes());
    return {{"MHA", "2 n_h d_h", 2 * H * D, kv(H)},
            {"GQA n_kv " + std::to_string(n_kv), "2 n_kv d_h", 2 * n_kv * D, kv(n_kv)},
            {"MQA", "2 d_h", 2 * D, kv(1)},
            {"MLA", "d_c + d_R", config.latent_dim + config.rope_dim, mla}};
}

}  // namespace mha
