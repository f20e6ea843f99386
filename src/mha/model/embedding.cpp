// Training, 1: the token table and the positions' sines and cosines.
//
// B batch, T positions, V vocabulary size, E embed_dim.
#include "mha/model/embedding.hpp"

#include <cmath>
#include <string>

namespace mha {

namespace {

void check_tokens(const Embedding& e, const Tokens& tokens) {
    for (std::size_t b = 0; b < tokens.shape(0); ++b)
        for (std::size_t t = 0; t < tokens.shape(1); ++t) {
            const std::int32_t id = tokens(b, t);
            if (id < 0 || static_cast<std::size_t>(id) >= e.vocab()) {
                fail("embed: token " + std::to_string(id) + " at [" + std::to_string(b) +
                     ", " + std::to_string(t) + "] is outside the vocabulary [0, " +
                     std::to_string(e.vocab()) + ")");
            }
        }
}

}  // namespace

Embedding make_embedding(std::size_t vocab, std::size_t dim, Rng& rng) {
    if (vocab == 0 || dim == 0) fail("make_embedding: vocab and dim must be at least 1");
    Embedding e{Tensor2::from_shape({vocab, dim})};
    for (float& w : e.weight) w = rng.normal();
    return e;
}

Tensor3 embed(const Embedding& e, const Tokens& tokens) {
    check_tokens(e, tokens);
    const std::size_t B = tokens.shape(0), T = tokens.shape(1), E = e.dim();
    Tensor3 x = Tensor3::from_shape({B, T, E});  // [B, T, E]
    for (std::size_t b = 0; b < B; ++b)
        for (std::size_t t = 0; t < T; ++t)
            for (std::size_t c = 0; c < E; ++c) x(b, t, c) = e.weight(tokens(b, t), c);
    return x;
}

Tensor2 embed_backward(const Embedding& e, const Tokens& tokens, const Tensor3& d_output) {
    check_tokens(e, tokens);
    const std::size_t B = tokens.shape(0), T = tokens.shape(1), E = e.dim();
    if (d_output.shape() != Tensor3::shape_type{B, T, E}) {
        fail("embed_backward: d_output " + shape_of(d_output) + " must be [B, T, E] = [" +
             std::to_string(B) + ", " + std::to_string(T) + ", " + std::to_string(E) + "]");
    }
    Tensor2 dw = xt::zeros<float>({e.vocab(), E});  // [V, E]
    for (std::size_t b = 0; b < B; ++b)
        for (std::size_t t = 0; t < T; ++t)
            for (std::size_t c = 0; c < E; ++c) dw(tokens(b, t), c) += d_output(b, t, c);
    return dw;
}

Tensor2 sinusoidal_encoding(std::size_t positions, std::size_t dim) {
    if (positions == 0 || dim == 0) fail("sinusoidal_encoding: sizes must be at least 1");
    Tensor2 pe = Tensor2::from_shape({positions, dim});  // [T, E]
    for (std::size_t p = 0; p < positions; ++p)
        for (std::size_t c = 0; c < dim; ++c) {
            const double i2 = static_cast<double>(c - c % 2);  // 2i for both of a pair
            const double angle = p / std::pow(10000.0, i2 / dim);
            pe(p, c) = static_cast<float>(c % 2 == 0 ? std::sin(angle) : std::cos(angle));
        }
    return pe;
}

}  // namespace mha
