/// @file kv_cache.hpp
/// @brief The engine's attention through a KV cache: what prefill() and
///        decode() run.
#pragma once

#include "mha/kv_cache.hpp"

namespace mha::fast {

/// @addtogroup engine
/// @{

/// The next T positions of every sequence through @p cache: the same
/// numbers as mha::extend_stages() within float rounding. For one new
/// position (decoding) the query heads of each kv head read its cached keys
/// and values once, in place, with BLAS, no packing, as the step is bound
/// by memory, not by arithmetic; for a prompt the heads go through
/// attend_head_tiled(), causal with the limit offset by the positions
/// cached, so no `[T, L + T]` weights or mask exist. The pairs of sequence
/// and (kv) head are spread over the cores. With RoPE in the cache, the new
/// rows' queries and keys are turned to positions L.. before the keys are
/// stored.
/// @param m     the module
/// @param x     `[B, T, E]`
/// @param cache K and V `[B, H_kv, capacity, D]` with room for T more
/// @return      `[B, T, E]`
/// @throws std::invalid_argument as check_cache().
Tensor3 extend(const MultiHeadAttention& m, const Tensor3& x, KVCache& cache);

/// @}

}  // namespace mha::fast
