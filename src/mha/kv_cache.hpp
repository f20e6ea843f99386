/// @file kv_cache.hpp
/// @brief Past the articles: decoding a position at a time with a cache of K and V.
///
/// B batch, T new positions, L positions cached before them, H heads, H_kv
/// key/value heads, D head_dim, E embed_dim.
#pragma once

#include "mha/attention.hpp"

namespace mha {

/// @defgroup kv_cache Past the articles: the KV cache
/// @brief prefill() a prompt, then decode() one position at a time. A
///        decoder's attention is causal, so the keys and values of earlier
///        positions never change: kept, a new token costs one position's
///        projections and one dot product per cached key, not the whole
///        prefix again.
/// @{

/// The keys and values of the positions a module has seen so far, per
/// sequence and kv head: positions 0 .. length-1 of `[capacity, D]` are
/// filled. Allocated once for @p capacity positions and written in place,
/// as a static cache is (no reallocation while decoding).
///
/// With RoPE (\ref rope) the keys are cached turned: a key's angle depends
/// only on its own position, so it is turned once, when it arrives, and a
/// new query at position L is turned by L before it meets them.
struct KVCache {
    Tensor4 k;                 ///< `[B, H_kv, capacity, D]`, turned when RoPE is on
    Tensor4 v;                 ///< `[B, H_kv, capacity, D]`
    std::size_t length = 0;    ///< L, the positions cached
    std::optional<Rope> rope;  ///< none, or the RoPE of the queries and keys

    /// @return B, the sequences
    std::size_t batch() const { return k.shape(0); }
    /// @return how many positions fit
    std::size_t capacity() const { return k.shape(2); }
    /// @return the bytes of K and V held for the cached positions:
    ///         2 B H_kv L D 4 (float)
    std::size_t bytes() const;
};

/// An empty cache for @p batch sequences of up to @p capacity positions.
/// @param m        the module: the cache holds its H_kv heads of D
/// @param batch    B, at least 1
/// @param capacity the most positions it will hold, at least 1
/// @return         length 0, K and V `[B, H_kv, capacity, D]`
KVCache make_cache(const MultiHeadAttention& m, std::size_t batch, std::size_t capacity);

/// The same from the sizes alone, for a model that is not made here (a
/// large one whose cache is only counted).
/// @param num_kv_heads H_kv, at least 1
/// @param head_dim     D, at least 1
/// @param batch        B, at least 1
/// @param capacity     the most positions it will hold, at least 1
/// @return             length 0, K and V `[B, H_kv, capacity, D]`
KVCache make_cache(std::size_t num_kv_heads, std::size_t head_dim, std::size_t batch,
                   std::size_t capacity);

/// An empty cache whose positions are turned by @p rope: prefill() and
/// decode() through it equal the causal forward with RoPE
/// (`forward_stages(x, x, x, Mods{{}, causal_mod(), kNegInf, rope})`).
/// @param m        the module: the cache holds its H_kv heads of D
/// @param batch    B, at least 1
/// @param capacity the most positions it will hold, at least 1
/// @param rope     the convention and the base
/// @return         length 0, K and V `[B, H_kv, capacity, D]`
/// @throws std::invalid_argument when D is odd or theta is not above 0.
KVCache make_cache(const MultiHeadAttention& m, std::size_t batch, std::size_t capacity,
                   const Rope& rope);

/// `causal_mask` for T new positions after L cached ones: new position i
/// (position L + i of its sequence) may see keys 0 .. L + i.
/// @param t new positions, at least 1
/// @param l positions cached before them
/// @return  `[1, 1, T, L + T]`
Mask cached_causal_mask(std::size_t t, std::size_t l);

/// Throws unless @p x fits the module and @p cache has room for its T
/// positions.
/// @param m     the module
/// @param x     `[B, T, E]`
/// @param cache K and V `[B, H_kv, capacity, D]`, length L
/// @throws std::invalid_argument naming the shapes, or "KV cache full" with
///         the positions cached and the capacity.
void check_cache(const MultiHeadAttention& m, const Tensor3& x, const KVCache& cache);

/// The next T positions of every sequence through the stages, written out:
/// their Q, K and V (stages 1, 2), Q and K turned to positions L.. when the
/// cache has RoPE; K and V appended to the cache; the
/// scores of the new queries against every cached key and themselves
/// (stage 3), causal (stage 4), softmax, weights x V, merge and w_o. The
/// outputs are what forward() gives at those positions for the whole
/// prefix under a causal mask.
/// @param m     the module
/// @param x     `[B, T, E]`, the new positions
/// @param cache a cache from make_cache(m, B, ...), with room for T more
/// @return      `[B, T, E]`
/// @throws std::invalid_argument when x does not fit the module or the
///         cache, or the cache is full.
Tensor3 extend_stages(const MultiHeadAttention& m, const Tensor3& x, KVCache& cache);

/// @}

}  // namespace mha
