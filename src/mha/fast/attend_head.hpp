/// @file attend_head.hpp
/// @brief One (sequence, head) pair of the engine's forward: scores, mask,
///        softmax and weights x V, a block of query rows at a time.
#pragma once

#include <cstddef>

#include "mha/fast/block_mask.hpp"
#include "mha/mask.hpp"

namespace mha::fast {

/// @addtogroup engine
/// @{

/// One (sequence, head) pair, read in place: head h of a `[T, E]` sequence
/// is the `T x D` block at column h*D, rows E apart; its keys and values
/// are those of its kv head g = h / (H / H_kv), at column g*D of `[T, H_kv*D]`.
struct Head {
    const float* q;  ///< `[Tq, D]`, rows E apart
    const float* k;  ///< `[Tk, D]`, rows H_kv*D apart
    const float* v;  ///< `[Tk, D]`, rows H_kv*D apart
    float* context;  ///< `[Tq, D]`, rows E apart: columns h*D.. of the merged context
    float* weights;  ///< `[Tq, Tk]`, contiguous (unused by attend_head_tiled())
    /// Room for K^T and V packed into panels (panel_floats()), or null when
    /// the products go to BLAS.
    float* panels;
    /// attend_head_tiled() only: `[Tq]`, each row's log-sum-exp, or null
    float* lse = nullptr;
};

/// HeadSizes::causal when the call is not causal.
inline constexpr std::size_t kNotCausal = static_cast<std::size_t>(-1);

/// The sizes every head of one call shares.
struct HeadSizes {
    std::size_t Tq;  ///< queries
    std::size_t Tk;  ///< keys
    std::size_t D;   ///< head_dim
    std::size_t E;   ///< embed_dim: the distance between rows of q and context
    std::size_t Ekv; ///< H_kv * D: the distance between rows of k and v
    float scale;     ///< 1 / sqrt(D)
    /// Causal without a mask tensor: query i sees keys 0 .. i + causal
    /// (0 for the articles' tril, L after L cached positions), the rest
    /// -inf; kNotCausal: no such limit.
    std::size_t causal = kNotCausal;
    /// Tanh soft-capping C (Gemma 2): each scaled score s becomes
    /// \f$C \tanh(s / C)\f$ before the bias and the mask; 0: none.
    float softcap = 0.0f;
};

/// How many leading key columns a block of query rows needs: past the last
/// key any of its rows sees, every weight is exactly 0 under the -inf fill.
/// @param mask `[B or 1, H or 1, Tq or 1, Tk]`
/// @param b    the sequence
/// @param h    the head
/// @param i0   the block's first query row
/// @param rows the block's rows
/// @param Tk   keys
/// @return     the columns, 0 when no row sees any key
std::size_t visible_columns(const Mask& mask, std::size_t b, std::size_t h, std::size_t i0,
                            std::size_t rows, std::size_t Tk);

/// Where the last NaN or Inf is. Skipped columns must not hide them: a
/// weight of 0 times NaN is NaN, with or without skipping.
/// @param x    the first row
/// @param rows rows
/// @param D    floats per row
/// @param ld   distance between rows
/// @return     one past the last row that holds a NaN or an Inf; 0 when all
///             are finite
std::size_t past_last_nonfinite(const float* x, std::size_t rows, std::size_t D,
                                std::size_t ld);

/// Whether any float of a block is NaN or Inf (past_last_nonfinite() > 0),
/// without finding where: one pass, no branch per row.
/// @param x    the first row
/// @param rows rows
/// @param D    floats per row
/// @param ld   distance between rows
/// @return     true when some float is NaN or Inf
bool any_nonfinite(const float* x, std::size_t rows, std::size_t D, std::size_t ld);

/// The soft-cap (when s.softcap > 0), the score bias, the mask and the
/// causal limit on one row of scores:
/// keys j0 .. j0 + cols - 1 of query @p i (the forward's and the tiled
/// backward's step between the product and the exponentials).
/// @param row        @p cols scores, changed in place
/// @param cols       keys in the row
/// @param b          the sequence
/// @param h          the head
/// @param i          the query
/// @param j0         the first key
/// @param s          the sizes (s.causal: the causal limit, or kNotCausal)
/// @param mask       nullptr, or `[B or 1, H or 1, Tq or 1, Tk]`, checked
/// @param fill       what masked scores become
/// @param score_bias nullptr, or `[B or 1, H or 1, Tq or 1, Tk]`, checked
void bias_and_mask(float* row, std::size_t cols, std::size_t b, std::size_t h, std::size_t i,
                   std::size_t j0, const HeadSizes& s, const Mask* mask, float fill,
                   const Tensor4* score_bias);

/// Query rows per block where masked keys are skipped (forward and backward).
/// @param Tk keys
/// @return   16 up to 512 keys, 64 past them
std::size_t skip_block_rows(std::size_t Tk);

/// Floats of Head::panels for one head: K^T `[D, Tk]` and V `[Tk, D]`, packed.
/// @param Tk keys
/// @param D  head_dim
/// @return   floats
std::size_t panel_floats(std::size_t Tk, std::size_t D);

/// Scores, bias, mask, softmax and weights x V for head @p h of sequence
/// @p b, one block of query rows at a time, so that a block's scores stay
/// in cache from the first product to the second. Under a mask with the
/// -inf fill, or a causal HeadSizes, a block stops both products at the
/// last key any of its rows may see (its weights past there are exactly 0
/// either way).
/// @param x    the head's blocks
/// @param b    the sequence, for the mask and the score bias
/// @param h    the head, for the mask and the score bias
/// @param s    the sizes
/// @param mask nullptr, or `[B or 1, H or 1, Tq or 1, Tk]`, checked
/// @param fill what masked scores become
/// @param score_bias nullptr, or `[B or 1, H or 1, Tq or 1, Tk]`, checked
void attend_head(const Head& x, std::size_t b, std::size_t h, const HeadSizes& s,
                 const Mask* mask, float fill, const Tensor4* score_bias);

/// The same head's context without its weights, in tiles: each block of
/// query rows walks the keys a block at a time with a running max and sum
/// per row, rescaling its accumulated weights x V by \f$e^{m_{old} - m_{new}}\f$
/// as the max grows (the online softmax, mha::tiled_attention()). At most a
/// `[64, 256]` tile of scores exists. The block mask @p tiles says which
/// 64 x 64 tiles to skip (empty, under the -inf fill, unless V holds a NaN
/// or an Inf at or past them) and where to apply the mask (partial); full
/// tiles are computed without it. The same context as attend_head() within
/// float rounding, with its policy for fully masked rows and NaN.
/// @param x    the head's blocks; x.weights is not used
/// @param b    the sequence, for the mask and the score bias
/// @param h    the head, for the mask and the score bias
/// @param s    the sizes
/// @param mask nullptr, or `[B or 1, H or 1, Tq or 1, Tk]`, checked
/// @param fill what masked scores become
/// @param score_bias nullptr, or `[B or 1, H or 1, Tq or 1, Tk]`, checked
/// @param tiles the block mask of @p mask and the causal limit of @p s,
///              with 64-row tiles (kTileRows) whose keys divide 256
/// @param first_block the first block of 64 query rows to compute (a share
///              of the head, for the workers to split it; each row's result
///              is the same whoever computes it)
/// @param end_block one past the last block to compute (past the last
///              block: to the end)
/// @return     the block-mask tiles computed for these rows of this head
std::size_t attend_head_tiled(const Head& x, std::size_t b, std::size_t h,
                              const HeadSizes& s, const Mask* mask, float fill,
                              const Tensor4* score_bias, const BlockMask& tiles,
                              std::size_t first_block = 0,
                              std::size_t end_block = static_cast<std::size_t>(-1));

/// @}

}  // namespace mha::fast
