// The block, 4: embeddings, L causal blocks, a final norm, a read-out.
//
// B batch, T positions, V vocabulary, E embed_dim, L layers.
#include "mha/model/language_model.hpp"

#include <string>

#include "mha/fast/dense.hpp"

namespace mha {

ModelConfig LanguageModel::config() const {
    return {tok_emb.vocab(), pos_emb.vocab(), tok_emb.dim(),
            layers.empty() ? 0 : layers[0].self_attn.num_heads(),
            layers.empty() ? 0 : layers[0].ff.linear1.out_features(), layers.size()};
}

LanguageModel make_language_model(const ModelConfig& c, std::uint64_t seed) {
    require_nonzero({c.vocab, c.max_len, c.embed_dim, c.num_heads, c.hidden, c.layers},
                    "ModelConfig [V, T_max, E, H, F, L]");
    if (c.embed_dim % c.num_heads != 0) {
        fail("make_language_model: E = " + std::to_string(c.embed_dim) +
             " is not divisible by H = " + std::to_string(c.num_heads));
    }
    LanguageModel m;
    Rng rng(seed);
    m.tok_emb = make_embedding(c.vocab, c.embed_dim, rng);
    m.pos_emb = make_embedding(c.max_len, c.embed_dim, rng);
    for (std::size_t l = 0; l < c.layers; ++l)
        m.layers.emplace_back(c.embed_dim, c.num_heads, c.hidden, seed + 10 * (l + 1));
    m.norm = make_layer_norm(c.embed_dim);
    m.head = make_linear(c.embed_dim, c.vocab, Init::torch_linear(), rng);
    return m;
}

ModelTrace forward(const LanguageModel& m, const Tokens& tokens, bool keep_weights,
                   const Dropout& drop) {
    const std::size_t B = tokens.shape(0), T = tokens.shape(1), L = m.layers.size();
    if (T == 0 || T > m.pos_emb.vocab()) {
        fail("LanguageModel: tokens " + shape_of(tokens) + " have T = " + std::to_string(T) +
             " positions; the model has pos_emb for 1 to T_max = " +
             std::to_string(m.pos_emb.vocab()));
    }
    ModelTrace t;
    t.x.resize(L + 1);
    t.layers.resize(L);
    t.x[0] = embed(m.tok_emb, tokens);  // [B, T, E], checks every id < V
    for (std::size_t b = 0; b < B; ++b)
        for (std::size_t i = 0; i < T; ++i)
            for (std::size_t c = 0; c < m.tok_emb.dim(); ++c) t.x[0](b, i, c) += m.pos_emb.weight(i, c);
    if (drop.p != 0) t.drop = dropout_mask(t.x[0].shape(), drop), t.x[0] *= t.drop;
    for (std::size_t l = 0; l < L; ++l)  // [B, T, E] -> [B, T, E], causal
        t.x[l + 1] = block_forward(m.layers[l], t.x[l], true, &t.layers[l], keep_weights, drop);
    t.h = fast::layer_norm(t.x[L], m.norm, &t.norm);  // [B, T, E]
    t.logits = fast::linear(t.h, m.head);             // [B, T, V]
    return t;
}

ModelGrads backward(const LanguageModel& m, const ModelTrace& t, const Tokens& tokens,
                    const Tensor3& d_logits) {
    const std::size_t L = m.layers.size(), T = tokens.shape(1);
    if (d_logits.shape() != t.logits.shape()) {
        fail("LanguageModel backward: d_logits " + shape_of(d_logits) +
             " must have the logits' shape " + shape_of(t.logits));
    }
    ModelGrads g;
    g.layers.resize(L);
    Tensor3 dx = fast::linear_backward(t.h, d_logits, m.head, g.head);  // d h [B, T, E]
    dx = fast::layer_norm_backward(t.norm, dx, m.norm, g.norm);   // d x[L]
    for (std::size_t l = L; l-- > 0;)                              // d x[l]
        dx = block_backward(m.layers[l], t.layers[l], dx, true, g.layers[l]);
    if (t.drop.shape() == dx.shape()) dx *= t.drop;  // the embeddings' dropout mask
    g.tok_emb = embed_backward(m.tok_emb, tokens, dx);
    g.pos_emb = xt::zeros<float>(m.pos_emb.weight.shape());  // position i's row: the sum over b
    for (std::size_t b = 0; b < dx.shape(0); ++b)
        for (std::size_t i = 0; i < T; ++i)
            for (std::size_t c = 0; c < dx.shape(2); ++c) g.pos_emb(i, c) += dx(b, i, c);
    return g;
}

std::vector<Parameter> parameters(LanguageModel& m, const ModelGrads& g) {
    auto of = [](const std::string& name, auto& value, const auto& grad) {
        return Parameter{name, value.data(), grad.data(), value.size()};
    };
    std::vector<Parameter> p{of("tok_emb.weight", m.tok_emb.weight, g.tok_emb),
                             of("pos_emb.weight", m.pos_emb.weight, g.pos_emb)};
    for (std::size_t l = 0; l < m.layers.size(); ++l)
        for (const Parameter& q : parameters(m.layers[l], g.layers[l], "layers." + std::to_string(l) + "."))
            p.push_back(q);
    p.push_back(of("norm.weight", m.norm.weight, g.norm.weight));
    p.push_back(of("norm.bias", m.norm.bias, g.norm.bias));
    p.push_back(of("head.weight", m.head.weight, g.head.weight));
    p.push_back(of("head.bias", m.head.bias, g.head.bias));
    return p;
}

std::size_t parameter_count(const LanguageModel& m) {
    std::size_t n = m.tok_emb.weight.size() + m.pos_emb.weight.size();
    for (const Block& b : m.layers) {
        for (const Linear* l : {&b.self_attn.wq, &b.self_attn.wk, &b.self_attn.wv,
                                &b.self_attn.w_o, &b.ff.linear1, &b.ff.linear2})
            n += l->weight.size() + l->bias.size();
        n += 2 * b.norm1.dim() + 2 * b.norm2.dim();
    }
    return n + 2 * m.norm.dim() + m.head.weight.size() + m.head.bias.size();
}

}  // namespace mha
