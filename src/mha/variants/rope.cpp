// Variants: RoPE, each pair of a head's coordinates turned by its position.
//
// B = batch, H = heads, T = positions, D = head_dim, p = pair 0 .. D/2 - 1.
#include "mha/variants/rope.hpp"

#include <cmath>
#include <string>

namespace mha {

void check_rope(const Rope& rope, std::size_t d) {
    if (d == 0 || d % 2 != 0) {
        fail("RoPE: head_dim D = " + std::to_string(d) +
             " is odd; RoPE turns pairs: D must be even");
    }
    if (!(rope.theta > 0.0)) {
        fail("RoPE: theta = " + std::to_string(rope.theta) + "; it must be above 0 (10000)");
    }
}

double rope_frequency(std::size_t p, std::size_t d, double theta) {
    return std::pow(theta, -2.0 * double(p) / double(d));
}

std::pair<std::size_t, std::size_t> rope_pair(std::size_t p, std::size_t d, RopeStyle style) {
    if (style == RopeStyle::interleaved) return {2 * p, 2 * p + 1};
    return {p, p + d / 2};  // rotate_half: the first half against the second
}

void rope_rotate(float* x, std::size_t d, std::size_t pos, const Rope& rope) {
    for (std::size_t p = 0; p < d / 2; ++p) {
        const double angle = double(pos) * rope_frequency(p, d, rope.theta);
        const double c = std::cos(angle), s = std::sin(angle);
        const auto [i, j] = rope_pair(p, d, rope.style);
        const double x1 = x[i], x2 = x[j];
        x[i] = float(x1 * c - x2 * s);
        x[j] = float(x1 * s + x2 * c);
    }
}

Tensor4 apply_rope(const Tensor4& x, const Rope& rope, std::size_t offset) {
    const std::size_t B = x.shape(0), H = x.shape(1), T = x.shape(2), D = x.shape(3);
    require_nonzero({B, H, T, D}, "apply_rope x [B, H, T, D]");
    check_rope(rope, D);
    Tensor4 out = x;  // [B, H, T, D]
    for (std::size_t b = 0; b < B; ++b)
        for (std::size_t h = 0; h < H; ++h)
            for (std::size_t t = 0; t < T; ++t) rope_rotate(&out(b, h, t, 0), D, offset + t, rope);
    return out;
}

Tensor4 apply_rope_backward(const Tensor4& d_rotated, const Rope& rope, std::size_t offset) {
    const std::size_t B = d_rotated.shape(0), H = d_rotated.shape(1);
    const std::size_t T = d_rotated.shape(2), D = d_rotated.shape(3);
    require_nonzero({B, H, T, D}, "apply_rope_backward d_rotated [B, H, T, D]");
    check_rope(rope, D);
    Tensor4 out = d_rotated;  // [B, H, T, D]
    for (std::size_t b = 0; b < B; ++b)
        for (std::size_t h = 0; h < H; ++h)
            for (std::size_t t = 0; t < T; ++t) {
                float* g = &out(b, h, t, 0);  // [D]
                for (std::size_t p = 0; p < D / 2; ++p) {
                    // R^T: the pair turned back, by minus the forward's angle
                    const double angle = double(offset + t) * rope_frequency(p, D, rope.theta);
                    const double c = std::cos(angle), s = std::sin(angle);
                    const auto [i, j] = rope_pair(p, D, rope.style);
                    const double g1 = g[i], g2 = g[j];
                    g[i] = float(g1 * c + g2 * s);
                    g[j] = float(-g1 * s + g2 * c);
                }
            }
    return out;
}

}  // namespace mha
