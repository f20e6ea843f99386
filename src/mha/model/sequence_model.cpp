// Training, 4: embedding + positions, one attention layer, a read-out.
//
// B batch, T positions, V vocabulary size, E embed_dim.
#include "mha/model/sequence_model.hpp"

#include <string>

#include <xtensor/xview.hpp>

#include "mha/linear.hpp"

namespace mha {

SequenceModel::SequenceModel(std::size_t vocab, std::size_t length, std::size_t embed_dim,
                             std::size_t num_heads, const Init& init)
    : attn(embed_dim, num_heads, init), positions(sinusoidal_encoding(length, embed_dim)) {
    Rng rng(init.seed + 1);
    embedding = make_embedding(vocab, embed_dim, rng);
    readout = make_linear(embed_dim, vocab, Init::xavier(), rng);
}

SequenceTrace forward(const SequenceModel& m, const Tokens& tokens) {
    const std::size_t T = m.positions.shape(0);
    if (tokens.shape(1) != T) {
        fail("SequenceModel: tokens " + shape_of(tokens) + " must have T = " +
             std::to_string(T) + " positions, the length the model was built for");
    }
    SequenceTrace t;
    t.x = embed(m.embedding, tokens);  // [B, T, E]
    for (std::size_t b = 0; b < t.x.shape(0); ++b) xt::view(t.x, b) += m.positions;
    t.attn = m.attn.trace(t.x, t.x, t.x);      // output [B, T, E], weights [B, H, T, T]
    t.logits = linear(t.attn.output, m.readout);  // [B, T, V]
    return t;
}

SequenceGrads backward(const SequenceModel& m, const SequenceTrace& t, const Tokens& tokens,
                       const Tensor3& d_logits) {
    SequenceGrads g;
    const Tensor3 d_attn = linear_backward(t.attn.output, d_logits, m.readout, g.readout);
    // x fed query, key and value: its gradient is the sum of the three,
    // which backward_self_attention() makes at once
    g.attn = backward_self_attention(m.attn, t.attn, t.x, d_attn);
    g.embedding = embed_backward(m.embedding, tokens, g.attn.input);  // d x [B, T, E]
    return g;
}

std::vector<Parameter> parameters(SequenceModel& m, const SequenceGrads& g) {
    auto of = [](const std::string& name, auto& value, const auto& grad) {
        return Parameter{name, value.data(), grad.data(), value.size()};
    };
    std::vector<Parameter> p{of("embedding.weight", m.embedding.weight, g.embedding)};
    for (const Parameter& q : parameters(m.attn, g.attn)) p.push_back(q);  // the layer's eight
    p.push_back(of("readout.weight", m.readout.weight, g.readout.weight));
    p.push_back(of("readout.bias", m.readout.bias, g.readout.bias));
    return p;
}

std::vector<double> anti_diagonal_weights(const Tensor4& weights) {
    std::vector<double> w(weights.shape(1));
    for (std::size_t h = 0; h < w.size(); ++h) w[h] = anti_diagonal_weight(weights, h);
    return w;
}

TokenBatch reverse_batch(std::size_t batch, std::size_t length, std::size_t vocab, Rng& rng) {
    if (batch == 0 || length == 0 || vocab == 0) fail("reverse_batch: sizes must be at least 1");
    TokenBatch t{Tokens::from_shape({batch, length}), Tokens::from_shape({batch, length})};
    for (std::int32_t& token : t.x)  // uniform(0, V) < V; the % guards float rounding
        token = static_cast<std::int32_t>(rng.uniform(0.0f, float(vocab))) % int(vocab);
    for (std::size_t b = 0; b < batch; ++b)
        for (std::size_t i = 0; i < length; ++i) t.y(b, i) = t.x(b, length - 1 - i);
    return t;
}

double anti_diagonal_weight(const Tensor4& weights, std::size_t head) {
    const std::size_t B = weights.shape(0), T = weights.shape(2);
    if (head >= weights.shape(1) || weights.shape(3) != T) {
        fail("anti_diagonal_weight: head " + std::to_string(head) + " of weights " +
             shape_of(weights) + " (it needs [B, H, T, T] and head < H)");
    }
    double s = 0;
    for (std::size_t b = 0; b < B; ++b)
        for (std::size_t i = 0; i < T; ++i) s += weights(b, head, i, T - 1 - i);
    return s / double(B * T);
}

}  // namespace mha
