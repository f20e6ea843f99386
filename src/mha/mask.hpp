/// @file mask.hpp
/// @brief Stage 4: causal and padding masks, and `masked_fill`.
#pragma once

#include <limits>
#include <vector>

#include "mha/shape.hpp"

namespace mha {

/// @defgroup mask Stage 4: masks
/// @brief 1 = may attend, 0 = masked (filled), as in both articles.
///
/// A Mask is rank 4, `[B or 1, H or 1, Tq or 1, Tk]`: a size of 1 broadcasts
/// over that axis, as PyTorch broadcasts.
/// @{

/// The fill of the handwritten-course article: `float("-inf")`.
inline constexpr float kNegInf = -std::numeric_limits<float>::infinity();

/// `torch.tril(torch.ones(Tq, Tk, dtype=bool))`: query i may see key j when
/// j <= i.
/// @param tq queries, at least 1
/// @param tk keys, at least 1
/// @return   `[1, 1, Tq, Tk]`
Mask causal_mask(std::size_t tq, std::size_t tk);

/// The causal mask without its `[Tq, Tk]` bools: what causal_mask(Tq, Tk)
/// says, worked out where it is used, as PyTorch 2's `is_causal=True`.
/// forward() and forward_no_weights() take it in place of a mask: at
/// T = 16384 the bools alone would be 268 MB.
struct Causal {};
/// The one value of Causal: `m.forward(x, x, x, mha::causal)`.
inline constexpr Causal causal{};

/// Padding mask from per-sequence lengths: in sequence b, key j is real
/// when j < lengths[b]; the rest is padding.
/// @param lengths `[B]`, each in 0..tk (0 masks every key of that sequence)
/// @param tk      keys, at least 1
/// @return        `[B, 1, 1, Tk]`
Mask padding_mask(const std::vector<std::size_t>& lengths, std::size_t tk);

/// @name The four ways masks are written
/// Learners meet four conventions for the same mask. The core's is the
/// articles' keep-mask, 1 = may attend; these convert the other three to it
/// and back. A flipped polarity attends to exactly the keys it should not.
/// @{

/// PyTorch's bool `attn_mask` / `key_padding_mask`, True = may NOT attend,
/// as a keep-mask: the negation.
/// @param masked_out `[B or 1, H or 1, Tq or 1, Tk]`, true = masked
/// @return           the keep-mask, 1 = may attend
Mask from_torch_bool(const Mask& masked_out);

/// A keep-mask as PyTorch's bool mask, True = may NOT attend.
/// @param keep `[B or 1, H or 1, Tq or 1, Tk]`, 1 = may attend
/// @return     the same shape, true = masked
Mask to_torch_bool(const Mask& keep);

/// A keep-mask as an additive float mask: 0 where a key may be seen, -inf
/// where not, to be added to the scores (PyTorch's float `attn_mask`).
/// @param keep `[B or 1, H or 1, Tq or 1, Tk]`
/// @return     the same shape, 0 or -inf
Tensor4 to_additive(const Mask& keep);

/// An additive float mask as a keep-mask: -inf is masked, any finite
/// value (0, or a bias) may be attended.
/// @param additive `[B or 1, H or 1, Tq or 1, Tk]`
/// @return         the keep-mask
Mask from_additive(const Tensor4& additive);

/// A padding keep-mask `[B, 1, 1, Tk]` back to the valid lengths that
/// padding_mask() makes it from.
/// @param keep `[B, 1, 1, Tk]`, each row some ones then zeros
/// @return     `[B]`, the count of leading ones per sequence
/// @throws std::invalid_argument for another shape, or a row that is not
///         ones then zeros (it is no padding mask).
std::vector<std::size_t> to_lengths(const Mask& keep);

/// @}

/// Both masks at once (logical and), broadcast like PyTorch.
/// @param a `[B or 1, H or 1, Tq or 1, Tk]`
/// @param b `[B or 1, H or 1, Tq or 1, Tk]`
/// @return  the broadcast shape of the two
Mask combine_masks(const Mask& a, const Mask& b);

/// Throws unless @p mask broadcasts to `[B, H, Tq, Tk]`.
/// @param mask `[B or 1, H or 1, Tq or 1, Tk]`
/// @param b, h, tq, tk the sizes of the scores it must fit
void check_mask(const Mask& mask, std::size_t b, std::size_t h,
                std::size_t tq, std::size_t tk);

/// `scores.masked_fill(mask == 0, fill)`: a new tensor where every masked
/// score is @p fill and the rest are copied. It is apply_mask_mod() (\ref
/// mods) with the mod reading @p mask: every variant's mask takes the
/// same path.
/// @param scores `[B, H, Tq, Tk]`
/// @param mask   `[B or 1, H or 1, Tq or 1, Tk]`
/// @param fill   -inf (the default) or a large negative such as -1e10
/// @return       `[B, H, Tq, Tk]`
/// @warning with -inf, a row whose keys are all masked has no finite score;
///          see softmax_row() for the core's policy, and \ref lesson12.
Tensor4 apply_mask(const Tensor4& scores, const Mask& mask,
                   float fill = kNegInf);

/// `scores + bias`, PyTorch's float `attn_mask`: an additive mask, 0 where a
/// key may be seen and -inf (or a large negative) where it may not, or any
/// other bias on the scores. It is apply_score_mod() (\ref mods) with
/// the mod adding @p bias.
/// @param scores `[B, H, Tq, Tk]`
/// @param bias   `[B or 1, H or 1, Tq or 1, Tk]`
/// @return       `[B, H, Tq, Tk]`
Tensor4 add_score_bias(const Tensor4& scores, const Tensor4& bias);

/// Throws unless an additive score bias broadcasts to `[B, H, Tq, Tk]`.
/// @param bias `[B or 1, H or 1, Tq or 1, Tk]`
/// @param b, h, tq, tk the sizes of the scores it must fit
void check_score_bias(const Tensor4& bias, std::size_t b, std::size_t h,
                      std::size_t tq, std::size_t tk);

/// Row (b, h, i) of a rank-4 tensor broadcast like a mask: a pointer to its
/// Tk entries. Works for a Mask and for a float score bias.
/// @param t `[B or 1, H or 1, Tq or 1, Tk]`, already checked
/// @param b, h, i batch, head and query of the row wanted
/// @return a pointer to Tk contiguous entries
template <class Tensor>
const typename Tensor::value_type* broadcast_row(const Tensor& t, std::size_t b,
                                                 std::size_t h, std::size_t i) {
    return &t(t.shape(0) == 1 ? 0 : b, t.shape(1) == 1 ? 0 : h,
              t.shape(2) == 1 ? 0 : i, 0);
}

/// Row (b, h, i) of a mask, broadcast: a pointer to Tk flags.
/// @param mask `[B or 1, H or 1, Tq or 1, Tk]`, already checked
/// @param b, h, i batch, head and query of the row wanted
/// @return a pointer to Tk flags, 1 = may attend
inline const bool* mask_row(const Mask& mask, std::size_t b, std::size_t h,
                            std::size_t i) {
    return broadcast_row(mask, b, h, i);
}

/// @}

}  // namespace mha
