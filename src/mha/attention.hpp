/// @file attention.hpp
/// @brief Stage 7: the whole MultiHeadAttention module.
///
/// B batch, Tq queries, Tk keys, E embed_dim, H heads, D = E / H;
/// H_kv key/value heads (grouped-query attention), H_kv dividing H.
#pragma once

#include <cstdint>
#include <optional>

#include "mha/init.hpp"
#include "mha/linear.hpp"
#include "mha/mask.hpp"
#include "mha/shape.hpp"
#include "mha/variants/mods.hpp"
#include "mha/variants/rope.hpp"

namespace mha {

struct KVCache;  // kv_cache.hpp

/// @defgroup attention Stage 7: the MultiHeadAttention module
/// @brief wq, wk, wv, split, scores, mask, softmax, weights x V, merge, w_o.
/// @{

/// What forward() returns.
struct AttentionOutput {
    Tensor3 output;   ///< `[B, Tq, E]`
    Tensor4 weights;  ///< `[B, H, Tq, Tk]`, one set per head, not averaged
};

/// What a variant changes in forward_stages(): RoPE on the split q and k
/// (\ref rope), then a score_mod, then a mask_mod on the scaled scores
/// (\ref mods). Empty members change nothing: `Mods{}` is the
/// articles' attention without a mask.
struct Mods {
    ScoreMod score_mod;        ///< empty, or the new score (ALiBi, soft-cap, a bias)
    MaskMod mask_mod;          ///< empty (every key), or true = may attend
    float fill = kNegInf;      ///< what hidden scores become
    std::optional<Rope> rope;  ///< none, or RoPE: query i at position i, key j at j
};

/// Every tensor of the articles' forward, stage by stage: what
/// MultiHeadAttention::forward_stages() returns.
struct Stages {
    Tensor4 q;        ///< `[B, H, Tq, D]`, wq(query) split into heads
    Tensor4 k;        ///< `[B, H_kv, Tk, D]` (H_kv = H without grouping)
    Tensor4 v;        ///< `[B, H_kv, Tk, D]`
    Tensor4 scores;   ///< `[B, H, Tq, Tk]`, scaled, biased and masked
    Tensor4 weights;  ///< `[B, H, Tq, Tk]`, the softmax of the scores
    Tensor3 context;  ///< `[B, Tq, E]`, weights x V with the heads merged
    Tensor3 output;   ///< `[B, Tq, E]`, w_o(context)
};

/// What the fast forward keeps when asked (trace()), with the heads side by
/// side in `[B, T, E]` as the engine computes them.
struct ForwardTrace {
    Tensor3 q;        ///< query projection `[B, Tq, E]` (heads side by side)
    Tensor3 k;        ///< key projection `[B, Tk, H_kv * D]`
    Tensor3 v;        ///< value projection `[B, Tk, H_kv * D]`
    Tensor4 weights;  ///< softmax weights `[B, H, Tq, Tk]`, or empty without weights
    Tensor3 context;  ///< weights x V, heads merged, before w_o `[B, Tq, E]`
    Tensor3 output;   ///< `[B, Tq, E]`
    /// Without weights (trace_no_weights()): the log-sum-exp of each query
    /// row's scores, \f$m + \log \ell\f$ `[B, H, Tq]`, from which the tiled
    /// backward rebuilds the weights a tile at a time; otherwise empty.
    Tensor3 lse;
};

/// Multi-head attention with the articles' four linear layers.
///
/// The layers are public, like an nn.Module's parameters, so that a test or
/// a lesson can read or replace them; forward() checks that they still fit.
class MultiHeadAttention {
public:
    /// @param embed_dim E (d_model), at least 1
    /// @param num_heads H, which must divide E
    /// @param init      weight scheme and seed; biases follow nn.Linear
    /// @throws std::invalid_argument when H does not divide E (the message
    ///         names the nearest H that do), or a size is 0.
    MultiHeadAttention(std::size_t embed_dim, std::size_t num_heads,
                       const Init& init = Init::xavier());

    /// Grouped-query attention: H query heads share @p num_kv_heads key/value
    /// heads, query head h reading kv head h / (H / H_kv). wk and wv are then
    /// `[H_kv * D, E]`: the cache of K and V is H / H_kv times smaller.
    /// H_kv = H is the articles' multi-head attention, H_kv = 1 multi-query
    /// attention.
    /// @param embed_dim    E (d_model), at least 1
    /// @param num_heads    H, which must divide E
    /// @param num_kv_heads H_kv, which must divide H
    /// @param init         weight scheme and seed; biases follow nn.Linear
    /// @throws std::invalid_argument when H_kv does not divide H (the message
    ///         lists the H_kv that do), or as the other constructor.
    MultiHeadAttention(std::size_t embed_dim, std::size_t num_heads,
                       std::size_t num_kv_heads, const Init& init = Init::xavier());

    /// Attention of @p query over @p key / @p value: the articles' forward,
    /// one stage call per line, every intermediate kept. Read this one; its
    /// code is in attention.cpp, the same file as the class.
    ///
    /// Self-attention is `forward_stages(X, X, X)`; cross-attention passes a
    /// different key/value sequence, and Tq may differ from Tk.
    /// A query row whose keys are all masked gets zero weights and so the
    /// output w_o.bias, when @p fill is -inf (see softmax_row()).
    /// @param query `[B, Tq, E]`
    /// @param key   `[B, Tk, E]`
    /// @param value `[B, Tk, E]`
    /// @param mask  nullptr, or `[B or 1, H or 1, Tq or 1, Tk]`, 0 = masked
    /// @param fill  what masked scores become: -inf (default), -1e10, ...
    /// @param score_bias nullptr, or `[B or 1, H or 1, Tq or 1, Tk]` added to
    ///              the scores before the mask: PyTorch's float `attn_mask`
    /// @return      every stage's tensor, output `[B, Tq, E]` last
    /// @throws std::invalid_argument naming the shapes when they do not fit.
    Stages forward_stages(const Tensor3& query, const Tensor3& key,
                          const Tensor3& value, const Mask* mask = nullptr,
                          float fill = kNegInf,
                          const Tensor4* score_bias = nullptr) const;

    /// forward_stages() with a variant: q and k turned by `mods.rope`, the
    /// scores through `mods.score_mod`, then `mods.mask_mod` (\ref mods). The overload
    /// above is this one with the mods reading its mask and bias tensors.
    /// @param query `[B, Tq, E]`
    /// @param key   `[B, Tk, E]`
    /// @param value `[B, Tk, E]`
    /// @param mods  RoPE, the score_mod, the mask_mod and the fill
    /// @return      every stage's tensor, output `[B, Tq, E]` last; q and k
    ///              as rotated
    /// @throws std::invalid_argument naming the shapes when they do not fit.
    Stages forward_stages(const Tensor3& query, const Tensor3& key,
                          const Tensor3& value, const Mods& mods) const;

    /// The same numbers as forward_stages() (within float rounding, 1e-5
    /// in the tests), fast: the engine in src/mha/fast/ (mha::fast) never
    /// makes the `[B, H, T, D]` copies, keeps a chunk of the batch in cache
    /// from the first layer to the last, skips what a causal mask hides and
    /// runs on every core. Arguments as for forward_stages().
    /// @param query `[B, Tq, E]`
    /// @param key   `[B, Tk, E]`
    /// @param value `[B, Tk, E]`
    /// @param mask  nullptr, or `[B or 1, H or 1, Tq or 1, Tk]`, 0 = masked
    /// @param fill  what masked scores become: -inf (default), -1e10, ...
    /// @param score_bias nullptr, or `[B or 1, H or 1, Tq or 1, Tk]`
    /// @return      output `[B, Tq, E]` and weights `[B, H, Tq, Tk]`
    /// @throws std::invalid_argument naming the shapes when they do not fit.
    AttentionOutput forward(const Tensor3& query, const Tensor3& key,
                            const Tensor3& value, const Mask* mask = nullptr,
                            float fill = kNegInf,
                            const Tensor4* score_bias = nullptr) const;

    /// forward() under the causal mask without the mask tensor:
    /// `forward(query, key, value, mha::causal)` gives what
    /// `forward(query, key, value, &causal_mask(Tq, Tk))` gives.
    /// @param query, key, value as for forward()
    /// @return output `[B, Tq, E]` and weights `[B, H, Tq, Tk]`
    AttentionOutput forward(const Tensor3& query, const Tensor3& key,
                            const Tensor3& value, Causal) const;

    /// forward() without the weights, as PyTorch's `need_weights=False`: the
    /// engine then walks the keys a tile at a time with the online softmax
    /// (tiled_attention() in online_softmax.hpp shows how), so the
    /// `[B, H, Tq, Tk]` weights never exist, and memory grows with T, not T^2.
    /// The same output as forward() within float rounding (1e-5 in the tests).
    /// @param query, key, value, mask, fill, score_bias as for forward()
    /// @param softcap C > 0: each scaled score s becomes \f$C \tanh(s / C)\f$
    ///              in the tiles, before the score bias and the mask, as
    ///              forward_stages() with Mods{softcap(C), ...}; 0: none
    /// @return      output `[B, Tq, E]`
    Tensor3 forward_no_weights(const Tensor3& query, const Tensor3& key,
                               const Tensor3& value, const Mask* mask = nullptr,
                               float fill = kNegInf, const Tensor4* score_bias = nullptr,
                               float softcap = 0.0f) const;

    /// forward_no_weights() under the causal mask, without the mask tensor:
    /// memory that grows with T only (mha_bench --long measures it).
    /// @param query, key, value as for forward()
    /// @param softcap C > 0: soft-capping, as in the overload above; 0: none
    /// @return output `[B, Tq, E]`
    Tensor3 forward_no_weights(const Tensor3& query, const Tensor3& key,
                               const Tensor3& value, Causal, float softcap = 0.0f) const;

    /// forward() into @p out, which keeps its memory when its shapes already
    /// fit: a loop over batches of one shape allocates nothing after the
    /// first call, as with PyTorch's `out=` arguments.
    /// @param out the output and weights to fill; any shapes on entry
    /// @param query, key, value, mask, fill, score_bias as for forward()
    void forward_into(AttentionOutput& out, const Tensor3& query,
                      const Tensor3& key, const Tensor3& value,
                      const Mask* mask = nullptr, float fill = kNegInf,
                      const Tensor4* score_bias = nullptr) const;

    /// forward(), keeping the projections and the context too.
    /// @param query, key, value, mask, fill, score_bias as for forward()
    /// @return the projections, weights, context and output
    ForwardTrace trace(const Tensor3& query, const Tensor3& key,
                       const Tensor3& value, const Mask* mask = nullptr,
                       float fill = kNegInf,
                       const Tensor4* score_bias = nullptr) const;

    /// trace() without the weights, as a training step at long T needs: the
    /// forward_no_weights() tiles, keeping the projections, the context and
    /// each row's log-sum-exp (ForwardTrace::lse) instead of the
    /// `[B, H, Tq, Tk]` weights. backward() and backward_self_attention()
    /// given this trace run the FlashAttention-2 backward
    /// (tiled_attention_backward() in tiled_backward.hpp shows how).
    /// @param query, key, value, mask, fill, score_bias as for forward()
    /// @param softcap C > 0: soft-capping, as forward_no_weights(); the
    ///                backward must be given the same C; 0: none
    /// @return the projections, context, output and lse; no weights
    ForwardTrace trace_no_weights(const Tensor3& query, const Tensor3& key,
                                  const Tensor3& value, const Mask* mask = nullptr,
                                  float fill = kNegInf, const Tensor4* score_bias = nullptr,
                                  float softcap = 0.0f) const;

    /// trace_no_weights() under the causal mask without the mask tensor:
    /// no `[T, T]` of anything, in the forward or, through
    /// backward_self_attention(..., mha::causal), in the backward.
    /// @param query, key, value as for forward(), with Tq = Tk
    /// @param softcap C > 0: soft-capping, as forward_no_weights(); 0: none
    /// @return the projections, context, output and lse; no weights
    ForwardTrace trace_no_weights(const Tensor3& query, const Tensor3& key,
                                  const Tensor3& value, Causal, float softcap = 0.0f) const;

    /// trace() into @p t, reusing its tensors' memory when their shapes
    /// already fit, as forward_into() does.
    /// @param t the tensors to fill; any shapes on entry
    /// @param query, key, value, mask, fill, score_bias as for forward()
    void trace_into(ForwardTrace& t, const Tensor3& query, const Tensor3& key,
                    const Tensor3& value, const Mask* mask = nullptr,
                    float fill = kNegInf,
                    const Tensor4* score_bias = nullptr) const;

    /// trace_into() under a causal mask without a mask tensor: query i sees
    /// keys 0..i (what a language model's every layer runs).
    /// @param t the tensors to fill; any shapes on entry
    /// @param query, key, value as for forward(), with Tq = Tk
    void trace_into(ForwardTrace& t, const Tensor3& query, const Tensor3& key,
                    const Tensor3& value, Causal) const;

    /// Self-attention of a prompt, causal, that also keeps its keys and
    /// values in @p cache for decode() to continue from (make_cache() in
    /// kv_cache.hpp). The output equals forward(prompt, prompt, prompt)
    /// under a causal mask, within float rounding; a cache already holding
    /// L positions makes the prompt positions L.. of each sequence.
    /// A cache made with RoPE (make_cache(m, B, capacity, rope)) turns the
    /// queries and keys to their positions and caches the keys turned.
    /// @param prompt `[B, T, E]`
    /// @param cache  K and V `[B, H_kv, capacity, D]` with room for T more
    /// @return       `[B, T, E]`
    /// @throws std::invalid_argument naming the shapes, or a full cache.
    Tensor3 prefill(const Tensor3& prompt, KVCache& cache) const;

    /// The next position of every sequence, attending to all the cached ones
    /// and itself: one position's projections and a dot product per cached
    /// key, not the prefix again. Causal by construction.
    /// @param x_t   `[B, 1, E]`
    /// @param cache as prefill() left it, with room for one more
    /// @return      `[B, 1, E]`, what forward() gives at that position
    /// @throws std::invalid_argument naming the shapes, or a full cache.
    Tensor3 decode(const Tensor3& x_t, KVCache& cache) const;

    /// @return E, the embedding size
    std::size_t embed_dim() const { return embed_dim_; }
    /// @return H, the number of heads
    std::size_t num_heads() const { return num_heads_; }
    /// @return D = E / H, the size of each head
    std::size_t head_dim() const { return head_dim_; }
    /// @return H_kv, the key/value heads (H without grouping)
    std::size_t num_kv_heads() const { return num_kv_heads_; }
    /// @return H_kv * D, the width of K and V (E without grouping)
    std::size_t kv_dim() const { return num_kv_heads_ * head_dim_; }

    /// Throws unless query/key/value (and the layers) fit this module.
    /// @param query `[B, Tq, E]`
    /// @param key   `[B, Tk, E]`
    /// @param value `[B, Tk, E]`
    void check_inputs(const Tensor3& query, const Tensor3& key,
                      const Tensor3& value) const;

    Linear wq;   ///< query projection, weight `[E, E]` (`w_q` in the articles)
    Linear wk;   ///< key projection, weight `[H_kv * D, E]`, `[E, E]` without grouping (`w_k`)
    Linear wv;   ///< value projection, weight `[H_kv * D, E]` (`w_v`)
    Linear w_o;  ///< output layer, `[E, E]` (`fc_out` / `w_combine`)

private:
    std::size_t embed_dim_, num_heads_, head_dim_, num_kv_heads_;
};

/// @}

}  // namespace mha
