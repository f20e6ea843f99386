// Stage 2: heads. A row of D numbers is contiguous both in [B, T, E] (at
// column h*D) and in [B, H, T, D], so the permute is a copy of D-long rows.
#include "mha/heads.hpp"

#include <algorithm>

namespace mha {

std::size_t head_dim_for(std::size_t embed_dim, std::size_t num_heads) {
    require_nonzero({embed_dim, num_heads}, "[embed_dim, num_heads]");
    if (embed_dim % num_heads != 0) {
        // The nearest head counts that fit, one below and one above.
        std::size_t below = num_heads, above = num_heads;
        while (embed_dim % below != 0) --below;
        while (above < embed_dim && embed_dim % above != 0) ++above;
        const std::string fits = above <= embed_dim && embed_dim % above == 0
                                     ? std::to_string(below) + " or " + std::to_string(above)
                                     : std::to_string(below);
        fail("embed_dim " + std::to_string(embed_dim) + " is not divisible by num_heads " +
             std::to_string(num_heads) + "; try " + fits);
    }
    return embed_dim / num_heads;
}

Tensor4 split_heads(const Tensor3& x, std::size_t num_heads) {
    const std::size_t B = x.shape(0), T = x.shape(1), E = x.shape(2);
    require_nonzero({B, T, E}, "split_heads input x [B, T, E]");
    const std::size_t H = num_heads, D = head_dim_for(E, H);
    Tensor4 out({B, H, T, D});  // [B, H, T, D]
    for (std::size_t b = 0; b < B; ++b)
        for (std::size_t t = 0; t < T; ++t)
            for (std::size_t h = 0; h < H; ++h) {
                const float* src = &x(b, t, h * D);  // x[b, t, h*D : h*D+D]
                std::copy(src, src + D, &out(b, h, t, 0));
            }
    return out;
}

Tensor3 merge_heads(const Tensor4& x) {
    const std::size_t B = x.shape(0), H = x.shape(1);
    const std::size_t T = x.shape(2), D = x.shape(3);
    require_nonzero({B, H, T, D}, "merge_heads input x [B, H, T, D]");
    Tensor3 out({B, T, H * D});  // [B, T, E]
    for (std::size_t b = 0; b < B; ++b)
        for (std::size_t h = 0; h < H; ++h)
            for (std::size_t t = 0; t < T; ++t) {
                const float* src = &x(b, h, t, 0);  // x[b, h, t, :]
                std::copy(src, src + D, &out(b, t, h * D));
            }
    return out;
}

}  // namespace mha
