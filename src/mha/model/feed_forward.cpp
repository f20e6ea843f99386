// The block, 2: Linear, GELU, Linear at every position.
//
// B batch, T positions, E embed_dim, F hidden.
#include "mha/model/feed_forward.hpp"

#include <cmath>

namespace mha {

float gelu(float h) { return 0.5f * h * (1.0f + std::erf(h * float(M_SQRT1_2))); }

float gelu_grad(float h) {
    const float cdf = 0.5f * (1.0f + std::erf(h * float(M_SQRT1_2)));
    const float pdf = float(0.5 * M_2_SQRTPI * M_SQRT1_2) * std::exp(-0.5f * h * h);
    return cdf + h * pdf;
}

FeedForward make_feed_forward(std::size_t embed_dim, std::size_t hidden, Rng& rng) {
    require_nonzero({embed_dim, hidden}, "FeedForward [E, F]");
    FeedForward f;
    f.linear1 = make_linear(embed_dim, hidden, Init::torch_linear(), rng);
    f.linear2 = make_linear(hidden, embed_dim, Init::torch_linear(), rng);
    return f;
}

Tensor3 feed_forward(const Tensor3& x, const FeedForward& f, FeedForwardTrace* keep) {
    if (f.linear1.out_features() != f.linear2.in_features() ||
        f.linear2.out_features() != f.linear1.in_features()) {
        fail("feed_forward: linear1 " + shape_of(f.linear1.weight) + " and linear2 " +
             shape_of(f.linear2.weight) + " must be [F, E] and [E, F]");
    }
    FeedForwardTrace local;
    FeedForwardTrace& t = keep ? *keep : local;
    t.h = linear(x, f.linear1);                        // [B, T, F]
    t.a = Tensor3::from_shape(t.h.shape());            // [B, T, F]
    for (std::size_t i = 0; i < t.h.size(); ++i) t.a.data()[i] = gelu(t.h.data()[i]);
    return linear(t.a, f.linear2);                     // [B, T, E]
}

Tensor3 feed_forward_backward(const Tensor3& x, const FeedForwardTrace& t, const Tensor3& dy,
                              const FeedForward& f, FeedForwardGrads& g) {
    Tensor3 dh = linear_backward(t.a, dy, f.linear2, g.linear2);  // dL/da [B, T, F]
    for (std::size_t i = 0; i < dh.size(); ++i) dh.data()[i] *= gelu_grad(t.h.data()[i]);
    return linear_backward(x, dh, f.linear1, g.linear1);          // [B, T, E]
}

}  // namespace mha
