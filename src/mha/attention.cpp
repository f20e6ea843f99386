// Stage 7: the module. Its four layers, the checks, and the articles'
// forward composed of the stages 1-6, one call per line.
//
// B = batch, Tq / Tk = queries / keys, E = embed_dim, H = heads, D = E / H.
#include "mha/attention.hpp"

#include <cmath>
#include <utility>

#include <xtensor/xbuilder.hpp>

#include <xtensor/xview.hpp>

#include "mha/attend.hpp"
#include "mha/fast/forward.hpp"
#include "mha/fast/kv_cache.hpp"
#include "mha/heads.hpp"
#include "mha/scores.hpp"
#include "mha/softmax.hpp"

namespace mha {

MultiHeadAttention::MultiHeadAttention(std::size_t embed_dim, std::size_t num_heads,
                                       const Init& init)
    : MultiHeadAttention(embed_dim, num_heads, num_heads, init) {}

MultiHeadAttention::MultiHeadAttention(std::size_t embed_dim, std::size_t num_heads,
                                       std::size_t num_kv_heads, const Init& init)
    : embed_dim_(embed_dim),
      num_heads_(num_heads),
      head_dim_(head_dim_for(embed_dim, num_heads)),
      num_kv_heads_(num_kv_heads) {
    if (num_kv_heads == 0 || num_heads % num_kv_heads != 0) {
        std::string fits;
        for (std::size_t d : divisors(num_heads)) fits += (fits.empty() ? "" : ", ") + std::to_string(d);
        fail("num_kv_heads " + std::to_string(num_kv_heads) + " does not divide num_heads " +
             std::to_string(num_heads) + "; it must be one of " + fits);
    }
    const std::size_t kv = num_kv_heads * head_dim_;  // H_kv * D
    Rng rng(init.seed);
    if (init.kind == Init::Kind::torch_mha) {
        // One Xavier draw over the packed [3E, E] in_proj weight: rows
        // 0..E-1 are wq, E..2E-1 wk, 2E..3E-1 wv (grouped: E + 2 kv rows).
        const Tensor2 packed = xavier_uniform(embed_dim + 2 * kv, embed_dim, rng);
        wq.weight = xt::view(packed, xt::range(0, embed_dim));
        wk.weight = xt::view(packed, xt::range(embed_dim, embed_dim + kv));
        wv.weight = xt::view(packed, xt::range(embed_dim + kv, embed_dim + 2 * kv));
        // out_proj: nn.Linear's kaiming_uniform(a=sqrt(5)) = U(-1/sqrt(E), ..)
        const float a = 1.0f / std::sqrt(static_cast<float>(embed_dim));
        w_o.weight = Tensor2::from_shape({embed_dim, embed_dim});
        for (float& x : w_o.weight) x = rng.uniform(-a, a);
        wq.bias = xt::zeros<float>({embed_dim});
        wk.bias = xt::zeros<float>({kv});
        wv.bias = xt::zeros<float>({kv});
        w_o.bias = xt::zeros<float>({embed_dim});
        return;
    }
    wq = make_linear(embed_dim, embed_dim, init, rng);
    wk = make_linear(embed_dim, kv, init, rng);
    wv = make_linear(embed_dim, kv, init, rng);
    w_o = make_linear(embed_dim, embed_dim, init, rng);
}

void MultiHeadAttention::check_inputs(const Tensor3& query, const Tensor3& key,
                                      const Tensor3& value) const {
    const std::size_t E = embed_dim_;
    const std::string shapes = "query " + shape_of(query) + ", key " +
                               shape_of(key) + ", value " + shape_of(value);
    for (const Tensor3* t : {&query, &key, &value}) {
        require_nonzero({t->shape(0), t->shape(1), t->shape(2)},
                        "MultiHeadAttention input (" + shapes + ")");
    }
    if (query.shape(2) != E || key.shape(2) != E || value.shape(2) != E) {
        fail("MultiHeadAttention(embed_dim " + std::to_string(E) + "): " +
             shapes + " must all end in E = " + std::to_string(E));
    }
    if (key.shape(0) != query.shape(0) || value.shape(0) != query.shape(0)) {
        fail("MultiHeadAttention: " + shapes +
             " must have the same batch size B");
    }
    if (key.shape(1) != value.shape(1)) {
        fail("MultiHeadAttention: " + shapes +
             " : key and value must have the same length Tk");
    }
    const std::size_t kv = kv_dim();
    const std::pair<const Linear*, std::size_t> layers[] = {
        {&wq, E}, {&wk, kv}, {&wv, kv}, {&w_o, E}};  // and the out size each must have
    for (const auto& [l, out] : layers) {
        if (l->weight.shape(0) != out || l->weight.shape(1) != E || l->bias.shape(0) != out) {
            fail("MultiHeadAttention: a layer has weight " + shape_of(l->weight) +
                 " and bias " + shape_of(l->bias) + "; it must be [" + std::to_string(out) +
                 ", " + std::to_string(E) + "] with bias [" + std::to_string(out) + "]");
        }
    }
}

Stages MultiHeadAttention::forward_stages(const Tensor3& query, const Tensor3& key,
                                          const Tensor3& value, const Mask* mask,
                                          float fill, const Tensor4* score_bias) const {
    check_inputs(query, key, value);
    const std::size_t B = query.shape(0), Tq = query.shape(1), Tk = key.shape(1);
    // The tensors become the two mods: masks and biases take the variants' path
    Mods mods;
    mods.fill = fill;
    if (score_bias != nullptr) {
        check_score_bias(*score_bias, B, num_heads_, Tq, Tk);
        mods.score_mod = bias_mod_of(*score_bias);
    }
    if (mask != nullptr) {
        check_mask(*mask, B, num_heads_, Tq, Tk);
        mods.mask_mod = mask_mod_of(*mask);
    }
    return forward_stages(query, key, value, mods);
}

Stages MultiHeadAttention::forward_stages(const Tensor3& query, const Tensor3& key,
                                          const Tensor3& value, const Mods& mods) const {
    check_inputs(query, key, value);
    const std::size_t H = num_heads_, H_kv = num_kv_heads_;
    Stages s;
    s.q = split_heads(linear(query, wq), H);            // [B, H, Tq, D]    stages 1, 2
    s.k = split_heads(linear(key, wk), H_kv);           // [B, H_kv, Tk, D]
    s.v = split_heads(linear(value, wv), H_kv);         // [B, H_kv, Tk, D]
    if (mods.rope) {                                    // positions 0.. of each
        s.q = apply_rope(s.q, *mods.rope);              // [B, H, Tq, D]
        s.k = apply_rope(s.k, *mods.rope);              // [B, H_kv, Tk, D]
    }
    s.scores = scaled_scores(s.q, s.k);                 // [B, H, Tq, Tk]   stage 3
    if (mods.score_mod)                                 //                  stage 4
        s.scores = apply_score_mod(s.scores, mods.score_mod);
    if (mods.mask_mod) s.scores = apply_mask_mod(s.scores, mods.mask_mod, mods.fill);
    s.weights = softmax(s.scores);                      // [B, H, Tq, Tk]   stage 5
    s.context = merge_heads(attend(s.weights, s.v));    // [B, Tq, E]       stage 6
    s.output = linear(s.context, w_o);                  // [B, Tq, E]       stage 7
    return s;
}

// The fast path: the same arithmetic in the engine (src/mha/fast/).

AttentionOutput MultiHeadAttention::forward(const Tensor3& query, const Tensor3& key,
                                            const Tensor3& value, const Mask* mask,
                                            float fill, const Tensor4* score_bias) const {
    ForwardTrace t;
    fast::forward(*this, {query, key, value, mask, fill, score_bias}, t, false);
    return {std::move(t.output), std::move(t.weights)};
}

AttentionOutput MultiHeadAttention::forward(const Tensor3& query, const Tensor3& key,
                                            const Tensor3& value, Causal) const {
    ForwardTrace t;
    fast::forward(*this, {query, key, value, nullptr, kNegInf, nullptr, true, true}, t, false);
    return {std::move(t.output), std::move(t.weights)};
}

Tensor3 MultiHeadAttention::forward_no_weights(const Tensor3& query, const Tensor3& key,
                                               const Tensor3& value, Causal,
                                               float softcap) const {
    ForwardTrace t;
    fast::forward(*this, {query, key, value, nullptr, kNegInf, nullptr, false, true, softcap},
                  t, false);
    return std::move(t.output);
}

Tensor3 MultiHeadAttention::forward_no_weights(const Tensor3& query, const Tensor3& key,
                                               const Tensor3& value, const Mask* mask,
                                               float fill, const Tensor4* score_bias,
                                               float softcap) const {
    ForwardTrace t;
    fast::forward(*this, {query, key, value, mask, fill, score_bias, false, false, softcap}, t,
                  false);
    return std::move(t.output);
}

void MultiHeadAttention::forward_into(AttentionOutput& out, const Tensor3& query,
                                      const Tensor3& key, const Tensor3& value,
                                      const Mask* mask, float fill,
                                      const Tensor4* score_bias) const {
    ForwardTrace t;  // borrows out's memory for the call
    t.output = std::move(out.output);
    t.weights = std::move(out.weights);
    fast::forward(*this, {query, key, value, mask, fill, score_bias}, t, false);
    out.output = std::move(t.output);
    out.weights = std::move(t.weights);
}

ForwardTrace MultiHeadAttention::trace(const Tensor3& query, const Tensor3& key,
                                       const Tensor3& value, const Mask* mask,
                                       float fill, const Tensor4* score_bias) const {
    ForwardTrace t;
    fast::forward(*this, {query, key, value, mask, fill, score_bias}, t, true);
    return t;
}

ForwardTrace MultiHeadAttention::trace_no_weights(const Tensor3& query, const Tensor3& key,
                                                  const Tensor3& value, const Mask* mask,
                                                  float fill, const Tensor4* score_bias,
                                                  float softcap) const {
    ForwardTrace t;
    fast::forward(*this, {query, key, value, mask, fill, score_bias, false, false, softcap}, t,
                  true);
    return t;
}

ForwardTrace MultiHeadAttention::trace_no_weights(const Tensor3& query, const Tensor3& key,
                                                  const Tensor3& value, Causal,
                                                  float softcap) const {
    ForwardTrace t;
    fast::forward(*this, {query, key, value, nullptr, kNegInf, nullptr, false, true, softcap},
                  t, true);
    return t;
}

Tensor3 MultiHeadAttention::prefill(const Tensor3& prompt, KVCache& cache) const {
    return fast::extend(*this, prompt, cache);
}

Tensor3 MultiHeadAttention::decode(const Tensor3& x_t, KVCache& cache) const {
    if (x_t.shape(1) != 1) {
        fail("decode: x_t " + shape_of(x_t) + " must be one position per sequence, [B, 1, E]; "
             "prefill() takes more");
    }
    return fast::extend(*this, x_t, cache);
}

void MultiHeadAttention::trace_into(ForwardTrace& t, const Tensor3& query,
                                    const Tensor3& key, const Tensor3& value,
                                    const Mask* mask, float fill,
                                    const Tensor4* score_bias) const {
    fast::forward(*this, {query, key, value, mask, fill, score_bias}, t, true);
}

void MultiHeadAttention::trace_into(ForwardTrace& t, const Tensor3& query,
                                    const Tensor3& key, const Tensor3& value, Causal) const {
    fast::forward(*this, {query, key, value, nullptr, kNegInf, nullptr, true, true}, t, true);
}

}  // namespace mha
