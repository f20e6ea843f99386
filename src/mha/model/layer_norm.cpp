// The block, 1: LayerNorm over the last axis.
//
// B batch, T positions, E embed_dim.
#include "mha/model/layer_norm.hpp"

#include <cmath>
#include <string>

namespace mha {

LayerNorm make_layer_norm(std::size_t dim) {
    if (dim == 0) fail("make_layer_norm: E must be at least 1");
    LayerNorm n;
    n.weight = Tensor1::from_shape({dim});
    n.bias = Tensor1::from_shape({dim});
    n.weight.fill(1.0f);
    n.bias.fill(0.0f);
    return n;
}

Tensor3 layer_norm(const Tensor3& x, const LayerNorm& n, NormTrace* keep) {
    const std::size_t B = x.shape(0), T = x.shape(1), E = x.shape(2);
    if (E != n.dim() || n.bias.shape(0) != E || E == 0) {
        fail("layer_norm: x " + shape_of(x) + " must end in E = " + std::to_string(n.dim()) +
             ", the size of weight " + shape_of(n.weight) + " and bias " + shape_of(n.bias));
    }
    Tensor3 y = Tensor3::from_shape({B, T, E});  // [B, T, E]
    if (keep) {
        keep->x_hat.resize({B, T, E});
        keep->rstd.resize({B, T});
    }
    for (std::size_t b = 0; b < B; ++b)
        for (std::size_t t = 0; t < T; ++t) {
            const float* row = &x(b, t, 0);
            double mean = 0, var = 0;  // in double: a float sum of E terms drifts
            for (std::size_t c = 0; c < E; ++c) mean += row[c];
            mean /= double(E);
            for (std::size_t c = 0; c < E; ++c) var += (row[c] - mean) * (row[c] - mean);
            var /= double(E);  // biased, as PyTorch's
            const float rstd = float(1.0 / std::sqrt(var + n.eps)), mu = float(mean);
            for (std::size_t c = 0; c < E; ++c) {
                const float x_hat = (row[c] - mu) * rstd;
                y(b, t, c) = x_hat * n.weight(c) + n.bias(c);
                if (keep) keep->x_hat(b, t, c) = x_hat;
            }
            if (keep) keep->rstd(b, t) = rstd;
        }
    return y;
}

Tensor3 layer_norm_backward(const NormTrace& t, const Tensor3& dy, const LayerNorm& n,
                            NormGrad& g) {
    if (dy.shape() != t.x_hat.shape() || dy.shape(2) != n.dim()) {
        fail("layer_norm_backward: dy " + shape_of(dy) + " must have the input's shape " +
             shape_of(t.x_hat) + ", ending in E = " + std::to_string(n.dim()));
    }
    const std::size_t B = dy.shape(0), T = dy.shape(1), E = dy.shape(2);
    g.weight = xt::zeros<float>({E});
    g.bias = xt::zeros<float>({E});
    Tensor3 dx = Tensor3::from_shape({B, T, E});  // [B, T, E]
    for (std::size_t b = 0; b < B; ++b)
        for (std::size_t i = 0; i < T; ++i) {
            const float* x_hat = &t.x_hat(b, i, 0);
            const float* d = &dy(b, i, 0);
            // g = dy w; the two means the normalisation's gradient subtracts
            double mean_g = 0, mean_gx = 0;
            for (std::size_t c = 0; c < E; ++c) {
                const double gc = double(d[c]) * n.weight(c);
                mean_g += gc;
                mean_gx += gc * x_hat[c];
                g.weight(c) += d[c] * x_hat[c];
                g.bias(c) += d[c];
            }
            mean_g /= double(E);
            mean_gx /= double(E);
            const double r = t.rstd(b, i);
            for (std::size_t c = 0; c < E; ++c)
                dx(b, i, c) = float(r * (double(d[c]) * n.weight(c) - mean_g - x_hat[c] * mean_gx));
        }
    return dx;
}

}  // namespace mha
