// Seeded generator and initialisers.
#include "mha/init.hpp"

#include <cmath>

namespace mha {

Rng::Rng(std::uint64_t seed)
    : gen_(static_cast<std::mt19937::result_type>(seed ^ (seed >> 32))) {}

double Rng::unit() {
    // 27 + 26 bits from two 32-bit draws, as NumPy's random_sample does.
    const std::uint64_t a = gen_() >> 5;
    const std::uint64_t b = gen_() >> 6;
    return (static_cast<double>(a) * 67108864.0 + static_cast<double>(b)) /
           9007199254740992.0;
}

float Rng::uniform(float lo, float hi) {
    return static_cast<float>(lo + (static_cast<double>(hi) - lo) * unit());
}

float Rng::normal() {
    if (has_spare_) {
        has_spare_ = false;
        return static_cast<float>(spare_);
    }
    // A point uniform in the unit disc (r2 = 0 is refused: log(0)); its
    // two coordinates, scaled, are two independent normals.
    double x1, x2, r2;
    do {
        x1 = 2.0 * unit() - 1.0;
        x2 = 2.0 * unit() - 1.0;
        r2 = x1 * x1 + x2 * x2;
    } while (r2 >= 1.0 || r2 == 0.0);
    const double f = std::sqrt(-2.0 * std::log(r2) / r2);
    spare_ = f * x1;
    has_spare_ = true;
    return static_cast<float>(f * x2);
}

Tensor2 xavier_uniform(std::size_t fan_out, std::size_t fan_in, Rng& rng) {
    require_nonzero({fan_out, fan_in}, "xavier_uniform weight [out, in]");
    const float a = std::sqrt(6.0f / static_cast<float>(fan_in + fan_out));
    Tensor2 w({fan_out, fan_in});
    for (float& x : w) x = rng.uniform(-a, a);
    return w;
}

Tensor2 zeros(std::size_t rows, std::size_t cols) {
    return constant(rows, cols, 0.0f);
}

Tensor2 constant(std::size_t rows, std::size_t cols, float value) {
    require_nonzero({rows, cols}, "weight [rows, cols]");
    Tensor2 w({rows, cols});
    w.fill(value);
    return w;
}

Tensor1 linear_default_bias(std::size_t out_features, std::size_t in_features,
                            Rng& rng) {
    require_nonzero({out_features, in_features}, "bias of Linear [out, in]");
    const float a = 1.0f / std::sqrt(static_cast<float>(in_features));
    // Not Tensor1 b({n}): for rank 1 that is the one-element tensor {n}.
    auto b = Tensor1::from_shape({out_features});
    for (float& x : b) x = rng.uniform(-a, a);
    return b;
}

Tensor3 randn(std::size_t b, std::size_t t, std::size_t e, Rng& rng) {
    require_nonzero({b, t, e}, "randn [B, T, E]");
    Tensor3 x({b, t, e});
    for (float& v : x) v = rng.normal();
    return x;
}

}  // namespace mha
