/// @file forward.hpp
/// @brief The engine's forward: what MultiHeadAttention::forward() runs.
#pragma once

#include "mha/attention.hpp"

/// The engine behind MultiHeadAttention::forward(): kernels, threads and
/// memory (docs/pages/engine.md). Nothing in the teaching core needs it to
/// be understood; the tests hold the two together.
namespace mha::fast {

/// @defgroup engine The engine (mha::fast)
/// @brief The fast forward behind MultiHeadAttention::forward(): chunks of
///        the batch in cache, packed kernels, causal skipping, threads.
/// @{

/// One forward call's arguments, as MultiHeadAttention::forward() takes them.
struct Call {
    const Tensor3& query;       ///< `[B, Tq, E]`
    const Tensor3& key;         ///< `[B, Tk, E]`
    const Tensor3& value;       ///< `[B, Tk, E]`
    const Mask* mask;           ///< nullptr, or `[B or 1, H or 1, Tq or 1, Tk]`
    float fill;                 ///< what masked scores become
    const Tensor4* score_bias;  ///< nullptr, or `[B or 1, H or 1, Tq or 1, Tk]`
    bool weights = true;        ///< false: the tiled path, no `[B, H, Tq, Tk]` weights
    bool causal = false;        ///< query i sees keys 0..i, with no mask tensor (mha::causal)
    /// Tanh soft-capping C: each scaled score s becomes C tanh(s / C) before
    /// the score bias and the mask (Gemma 2, C = 50); 0: none
    float softcap = 0.0f;
    /// nullptr, or RoPE on Q and K after the projections (query i turned to
    /// position i, key j to j, as Mods::rope); the trace keeps them turned,
    /// and backward() turns dQ and dK back (R^T) before the projections
    const Rope* rope = nullptr;
};

/// RoPE on the heads of a block of rows, in place: row r is position r % T
/// of its sequence, and each of its @p heads heads (D floats, side by side)
/// turns by that position's angles (rope_rotate()), or with @p back by
/// minus them, which is \f$R^T\f$: RoPE's backward. The angles' sines and
/// cosines are made once per call, in double.
/// @param x     the first row
/// @param rows  rows (B T)
/// @param T     positions per sequence
/// @param heads heads per row (H for Q, H_kv for K)
/// @param D     head_dim, even
/// @param ld    distance between rows
/// @param rope  the convention and the base
/// @param back  false: R x; true: R^T x
void rope_rows(float* x, std::size_t rows, std::size_t T, std::size_t heads, std::size_t D,
               std::size_t ld, const Rope& rope, bool back);

/// Throws unless @p softcap is 0 (none) or a finite number above 0.
/// @param softcap C, or 0
/// @param where   the function's name, for the message
void check_softcap(float softcap, const char* where);

/// The forward of @p m into @p t: its output always, its weights unless
/// the call says not (then they are left empty), and with
/// @p keep its projections and context too (otherwise those exist only a
/// chunk of the batch at a time, in a small buffer per worker, and t's are
/// left empty). t's tensors keep their memory when their shapes fit.
/// The same numbers as MultiHeadAttention::forward_stages(), within float
/// rounding; the same bits on every call with the same worker count.
/// @param m    the module
/// @param call the inputs, mask, fill and score bias
/// @param t    where the results go; any shapes on entry
/// @param keep keep q, k, v and the context in @p t
/// @throws std::invalid_argument naming the shapes when they do not fit.
void forward(const MultiHeadAttention& m, const Call& call, ForwardTrace& t, bool keep);

/// @}

}  // namespace mha::fast
