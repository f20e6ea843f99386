/// @file rolling_cache.hpp
/// @brief Variants: decoding under a sliding window with sinks, in a cache
///        of S + W positions that never grows.
///
/// B batch, T new positions, H heads, H_kv key/value heads, D head_dim,
/// E embed_dim; S sink positions, W the window.
#pragma once

#include <optional>
#include <vector>

#include "mha/attention.hpp"

namespace mha {

/// @defgroup rolling_cache Variants: the rolling KV cache
/// @brief Under sinks_window(S, W) position t sees keys 0 .. S-1 and
///        t-W+1 .. t, never more than S + W of them: a decoder keeps those
///        and overwrites the rest (Mistral's rolling buffer cache,
///        StreamingLLM's sinks). The cache's memory is fixed however long
///        the sequence; the KV cache of \ref kv_cache grows with it.
/// @{

/// The keys and values a sinks-and-window decoder still needs. Slots
/// 0 .. S-1 hold positions 0 .. S-1 for good (the sinks); slots S .. S+W-1
/// are a ring: position p >= S goes to slot S + (p - S) mod W, over the
/// position W before it, which no later query may see.
///
/// Every filled slot is visible to the next query, so decoding needs no
/// mask. With RoPE each key is cached turned by its own position (not its
/// slot): the slots may be out of order, the angles stay right.
struct RollingCache {
    Tensor4 k;                          ///< `[B, H_kv, S + W, D]`, turned with RoPE
    Tensor4 v;                          ///< `[B, H_kv, S + W, D]`
    std::size_t sinks = 0;              ///< S, the first positions kept for good
    std::size_t window = 1;             ///< W, the last positions kept
    std::size_t seen = 0;               ///< positions decoded: the next one's index
    std::vector<std::size_t> position;  ///< `[S + W]`: the position each slot holds
    std::optional<Rope> rope;           ///< none, or the RoPE of the queries and keys

    /// @return S + W, the slots: all the cache will ever hold
    std::size_t capacity() const { return k.shape(2); }
    /// @return the filled slots, min(seen, S + W): always slots 0 .. length-1
    std::size_t length() const;
    /// @return the bytes of K and V in the filled slots: 2 B H_kv length D 4
    std::size_t bytes() const;
};

/// The slot that position @p pos goes to: itself for a sink, else its
/// place in the ring of W.
/// @param pos    the position in its sequence
/// @param sinks  S
/// @param window W, at least 1
/// @return       pos when pos < S, else S + (pos - S) mod W
std::size_t rolling_slot(std::size_t pos, std::size_t sinks, std::size_t window);

/// An empty rolling cache for @p batch sequences.
/// @param m      the module: the cache holds its H_kv heads of D
/// @param batch  B, at least 1
/// @param sinks  S, the first positions every query sees (0: the window alone)
/// @param window W, the positions up to and including the query, at least 1
/// @param rope   none, or RoPE on the queries and keys (D even)
/// @return       seen 0, K and V `[B, H_kv, S + W, D]`
/// @throws std::invalid_argument when B or W is 0, or RoPE cannot turn D.
RollingCache make_rolling_cache(const MultiHeadAttention& m, std::size_t batch,
                                std::size_t sinks, std::size_t window,
                                const std::optional<Rope>& rope = std::nullopt);

/// The next T positions of every sequence through the stages, one position
/// after another: its q, k, v (q and k turned by its position when RoPE is
/// on); k and v written to its slot; then its query against every filled
/// slot, softmax, weights x V, merge and w_o. The outputs are what
/// `forward_stages(x, x, x, Mods{{}, sinks_window(S, W), kNegInf, rope})`
/// gives at those positions for the whole sequence.
/// @param m     the module
/// @param x     `[B, T, E]`, the positions seen .. seen+T-1
/// @param cache from make_rolling_cache(m, B, S, W), as the last call left it
/// @return      `[B, T, E]`
/// @throws std::invalid_argument when x does not fit the module or the cache.
Tensor3 decode_rolling(const MultiHeadAttention& m, const Tensor3& x,
                       RollingCache& cache);

/// @}

}  // namespace mha
