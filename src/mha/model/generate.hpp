/// @file generate.hpp
/// @brief The block, 5: a LanguageModel writes text, a token at a time,
///        through every layer's KV cache; temperature and top-k sampling.
///
/// B batch, P prompt tokens, L positions already read, T_max the longest
/// sequence, V vocabulary, E embed_dim, H heads, H_kv key/value heads,
/// D head_dim.
#pragma once
#include <cstdint>
#include <optional>
#include <vector>

#include "mha/kv_cache.hpp"
#include "mha/model/language_model.hpp"

namespace mha {

/// @defgroup generate Generating: decoding through the KV cache, sampling
/// @brief What `model.generate()` does in nanoGPT, with a cache: the prompt
///        is read once (prefill), then each new token costs one position
///        through every layer (decode), and the next token is drawn from the
///        last position's logits (greedy, temperature, top-k).
/// @{

/// Every layer's keys and values of the positions a LanguageModel has read:
/// one KVCache per block, each with room for T_max positions.
struct ModelCache {
    std::vector<KVCache> layers;  ///< one per block, K and V `[B, H_kv, T_max, D]`
    /// @return L, the positions read so far (the same in every layer)
    std::size_t length() const { return layers.empty() ? 0 : layers[0].length; }
};

/// An empty cache for @p batch sequences of up to T_max positions.
/// @param m     the model
/// @param batch B, at least 1
/// @return      L = 0, every layer's K and V `[B, H_kv, T_max, D]`
ModelCache make_cache(const LanguageModel& m, std::size_t batch);

/// Reads @p prompt as positions L .. L+P-1 of every sequence: the token and
/// position embeddings, then per block `x + attn(norm1(x))` with attention
/// through MultiHeadAttention::prefill() (keys and values appended to the
/// layer's cache), `x + ff(norm2(x))` on these positions only, then norm
/// and head. The logits are forward()'s at those positions for the whole
/// sequence so far, within float rounding.
/// @param m      the model
/// @param prompt `[B, P]`, P at least 1, each id in [0, V)
/// @param cache  from make_cache(m, B), with room for P more positions
/// @return       logits `[B, P, V]`; row P-1 predicts the next token
/// @throws std::invalid_argument when L + P > T_max, the batch does not fit
///         the cache, or an id is out of range.
Tensor3 prefill(const LanguageModel& m, const Tokens& prompt, ModelCache& cache);

/// One more token per sequence, at position L: prefill() of one position,
/// with attention through MultiHeadAttention::decode() (one query against
/// the L cached keys and its own).
/// @param m     the model
/// @param token `[B, 1]`, each id in [0, V)
/// @param cache as prefill() or decode() left it, L < T_max
/// @return      logits `[B, 1, V]`, forward()'s last position for the
///              L + 1 tokens so far
/// @throws std::invalid_argument when the cache is full (L = T_max), the
///         shape is not `[B, 1]`, or the id is out of range.
Tensor3 decode(const LanguageModel& m, const Tokens& token, ModelCache& cache);

/// How the next token is drawn from a position's logits z `[V]`, as
/// nanoGPT's generate(): keep the k largest logits, then draw from
/// \f$\mathrm{softmax}(z / \tau)\f$. \f$\tau \to 0\f$ puts all the weight on
/// the largest logit, so \f$\tau = 0\f$ means greedy: the arg-max, no draw.
struct Sampling {
    float temperature = 1.0f;          ///< \f$\tau\f$, at least 0; 0 is greedy
    std::optional<std::size_t> top_k;  ///< k, at least 1 (more than V: all); none: all V
};

/// Throws unless @p s is a valid Sampling: what generate() checks first.
/// @param s the temperature and top-k
/// @throws std::invalid_argument for a negative or non-finite temperature or k = 0.
void check_sampling(const Sampling& s);

/// One token drawn from one position's logits. Greedy takes the first
/// largest, as `torch.argmax`. Top-k keeps every logit at least the k-th
/// largest (ties at the k-th are kept, as nanoGPT's `logits < v[:, [-1]]`).
/// The softmax subtracts the largest kept logit first, in double.
/// @param logits `[V]`, no NaN and not all -inf
/// @param s      the temperature and top-k
/// @param rng    one uniform number per draw (none when greedy)
/// @return       the token, in [0, V)
/// @throws std::invalid_argument for a bad @p s or a NaN logit.
std::int32_t sample_token(const Tensor1& logits, const Sampling& s, Rng& rng);

/// sample_token() from the last position of every sequence, sequence 0
/// first.
/// @param logits `[B, T, V]`
/// @param s      the temperature and top-k
/// @param rng    the generator to draw from
/// @return       the next tokens `[B, 1]`, what decode() takes
Tokens sample_next(const Tensor3& logits, const Sampling& s, Rng& rng);

/// Continues every prompt by @p new_tokens tokens: prefill() the prompt,
/// then sample a token, decode() it, sample the next, ... Each new token
/// sits at the next position, so the whole sequence stays within T_max and
/// the model can read it again with forward().
/// @param m          the model
/// @param prompt     `[B, P]`, P at least 1, each id in [0, V)
/// @param new_tokens n, with P + n at most T_max
/// @param s          the temperature and top-k
/// @param rng        the generator to draw from (greedy draws nothing)
/// @return           `[B, P + n]`: the prompt, then the new tokens
/// @throws std::invalid_argument for P = 0, P + n > T_max or a bad @p s
///         before any work, and for an id out of range before any layer.
Tokens generate(const LanguageModel& m, const Tokens& prompt, std::size_t new_tokens,
                const Sampling& s, Rng& rng);

/// @}

}  // namespace mha
