// Stage 1: y = x W^T + b, one matrix product over all B*T rows.
//
// B = batch, T = time, in / out = the layer's sizes.
#include "mha/linear.hpp"

#include <array>
#include <cmath>

#include <xtensor-blas/xblas.hpp>
#include <xtensor/xadapt.hpp>

namespace mha {

namespace {

Tensor2 make_weight(std::size_t out, std::size_t in, const Init& init,
                    Rng& rng) {
    switch (init.kind) {
        case Init::Kind::zeros: return zeros(out, in);
        case Init::Kind::constant: return constant(out, in, init.value);
        case Init::Kind::torch_linear: {
            Tensor2 w = Tensor2::from_shape({out, in});
            const float a = 1.0f / std::sqrt(static_cast<float>(in));
            for (float& x : w) x = rng.uniform(-a, a);
            return w;
        }
        case Init::Kind::xavier_uniform:
        case Init::Kind::torch_mha: break;  // the module handles torch_mha
    }
    return xavier_uniform(out, in, rng);
}

void check_layer(const Linear& layer) {
    if (layer.weight.shape(0) == 0 || layer.weight.shape(1) == 0 ||
        layer.bias.shape(0) != layer.weight.shape(0)) {
        fail("linear: weight " + shape_of(layer.weight) + " and bias " +
             shape_of(layer.bias) +
             " do not fit; a layer in -> out has weight [out, in] and bias "
             "[out]");
    }
}

}  // namespace

Linear make_linear(std::size_t in_features, std::size_t out_features,
                   const Init& init, Rng& rng) {
    require_nonzero({out_features, in_features}, "Linear [out, in]");
    Linear layer;
    layer.weight = make_weight(out_features, in_features, init, rng);
    layer.bias = linear_default_bias(out_features, in_features, rng);
    return layer;
}

Tensor3 linear(const Tensor3& x, const Linear& layer) {
    check_layer(layer);
    const std::size_t B = x.shape(0), T = x.shape(1), in = x.shape(2);
    const std::size_t out = layer.out_features();
    require_nonzero({B, T, in}, "linear input x [B, T, in]");
    if (in != layer.in_features()) {
        fail("linear: input x " + shape_of(x) + " has last size " +
             std::to_string(in) + " but the weight " + shape_of(layer.weight) +
             " expects in = " + std::to_string(layer.in_features()) +
             "; give x as [B, T, " + std::to_string(layer.in_features()) + "]");
    }
    // The tokens as rows: x's own memory read as [B*T, in], as x.view(-1, in).
    const std::array<std::size_t, 2> rows_shape{B * T, in}, y_shape{B * T, out};
    const auto rows = xt::adapt(x.data(), B * T * in, xt::no_ownership(), rows_shape);
    Tensor3 y = Tensor3::from_shape({B, T, out});  // [B, T, out]
    auto y_rows = xt::adapt(y.data(), B * T * out, xt::no_ownership(), y_shape);
    // y = x W^T: [B*T, in] x [in, out] -> [B*T, out], one BLAS gemm into y
    xt::blas::gemm(rows, layer.weight, y_rows, false, true);
    // + b, the same bias on every row
    for (std::size_t r = 0; r < B * T; ++r)
        for (std::size_t o = 0; o < out; ++o) y_rows(r, o) += layer.bias(o);
    return y;
}

}  // namespace mha
