// Stage 1: y = x W^T + b as one gemm over all B*T rows.
#include "mha/linear.hpp"

#include <algorithm>

#include "mha/gemm.hpp"

namespace mha {

namespace {

Tensor2 make_weight(std::size_t out, std::size_t in, const Init& init,
                    Rng& rng) {
    switch (init.kind) {
        case Init::Kind::zeros: return zeros(out, in);
        case Init::Kind::constant: return constant(out, in, init.value);
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
    Tensor3 y;
    linear_into(x, layer, y);
    return y;
}

void linear_into(const Tensor3& x, const Linear& layer, Tensor3& y) {
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
    resize_to(y, {B, T, out});  // [B, T, out]
    linear_rows(x.data(), B * T, layer, y.data());
}

void linear_rows(const float* x, std::size_t rows, const Linear& layer,
                 float* y) {
    const std::size_t in = layer.in_features(), out = layer.out_features();
    // Start every row of y at the bias, then add x W^T with beta = 1.
    for (std::size_t r = 0; r < rows; ++r) {
        std::copy(layer.bias.begin(), layer.bias.end(), y + r * out);
    }
    // [rows, in] x [out, in]^T -> [rows, out]
    gemm({x, rows, in, in}, false, {layer.weight.data(), out, in, in}, true, y,
         out, 1.0f, 1.0f);
}

}  // namespace mha
