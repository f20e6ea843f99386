/// @file rope.hpp
/// @brief Variants: rotary position embedding (RoPE), a stage between the
///        projections and the scores.
///
/// B batch, H heads (or H_kv), T positions, D head_dim (even); p indexes
/// the D / 2 pairs of a head.
#pragma once

#include <utility>

#include "mha/shape.hpp"

namespace mha {

/// @defgroup rope Variants: rotary positions (RoPE)
/// @brief Each pair of a head's coordinates turns by an angle proportional
///        to the position: \f$\theta_p = \mathrm{pos} \cdot
///        \mathrm{theta}^{-2p/D}\f$. Rotating q at position i and k at j
///        makes their dot product depend on i - j only (Su et al., RoFormer;
///        Llama, Qwen, Mistral).
/// @{

/// Which coordinates make a pair: the two conventions met in code.
enum class RopeStyle {
    interleaved,  ///< pair p is (2p, 2p + 1): the paper, llama2.c, Meta's Llama
    half,         ///< pair p is (p, p + D/2), "rotate_half": Hugging Face's Llama
};

/// RoPE's settings.
struct Rope {
    RopeStyle style = RopeStyle::interleaved;  ///< how coordinates pair up
    double theta = 10000.0;                    ///< the base: 10000, Llama 3 500000
};

/// Pair p's frequency, \f$\mathrm{theta}^{-2p/D}\f$ radians per position.
/// @param p     the pair, 0 .. D/2 - 1
/// @param d     D, the head size
/// @param theta the base, above 0
/// @return      the frequency
double rope_frequency(std::size_t p, std::size_t d, double theta);

/// The two coordinates pair p turns: (2p, 2p + 1) interleaved, (p, p + D/2)
/// in the rotate-half convention.
/// @param p     the pair, 0 .. D/2 - 1
/// @param d     D, the head size
/// @param style the convention
/// @return      the indices (first, second) within the head
std::pair<std::size_t, std::size_t> rope_pair(std::size_t p, std::size_t d, RopeStyle style);

/// One head's vector at position @p pos, turned in place: each pair
/// \f$(x_1, x_2) \to (x_1 \cos\theta_p - x_2 \sin\theta_p,\;
/// x_1 \sin\theta_p + x_2 \cos\theta_p)\f$ with \f$\theta_p = \mathrm{pos}
/// \cdot\f$ rope_frequency(). The angle and its sine and cosine are
/// computed in double, so that positions in the thousands keep their
/// digits.
/// @param x    `[D]`, D contiguous floats
/// @param d    D, even
/// @param pos  the position
/// @param rope the convention and the base
void rope_rotate(float* x, std::size_t d, std::size_t pos, const Rope& rope);

/// RoPE on queries or keys split into heads: position t of each sequence
/// is turned by the angle of position @p offset + t.
/// @param x      `[B, H, T, D]` (queries) or `[B, H_kv, T, D]` (keys)
/// @param rope   the convention and the base
/// @param offset the position of t = 0 (the positions cached before, when
///               decoding)
/// @return       `[B, H, T, D]`, rotated
/// @throws std::invalid_argument when D is odd or theta is not above 0.
Tensor4 apply_rope(const Tensor4& x, const Rope& rope, std::size_t offset = 0);

/// RoPE's backward: the gradient through y = R x is \f$R^T dy\f$, and R
/// is a rotation (orthogonal), so \f$R^T\f$ turns each pair back by the
/// same angle: what the gradients of rotated queries and keys go through
/// on their way to the projections.
/// @param d_rotated dL/d(rotated) `[B, H, T, D]` (or `[B, H_kv, T, D]`)
/// @param rope      the convention and the base the forward used
/// @param offset    the position of t = 0, as apply_rope()
/// @return          dL/d(before RoPE) `[B, H, T, D]`
/// @throws std::invalid_argument when D is odd or theta is not above 0.
Tensor4 apply_rope_backward(const Tensor4& d_rotated, const Rope& rope,
                            std::size_t offset = 0);

/// Throws unless @p rope can turn heads of size @p d (D even, theta above 0).
/// @param rope the settings
/// @param d    D, the head size
void check_rope(const Rope& rope, std::size_t d);

/// @}

}  // namespace mha
