// The block and the model as plain loops in double, written to be read.
//
// B batch, T positions, V vocabulary, E embed_dim, H heads, D head_dim, F hidden.
#include "mha/model/reference_model.hpp"

#include <cmath>
#include <vector>

namespace mha {

namespace {

Tensor3d norm(const Tensor3d& x, const LayerNorm& n) {
    const std::size_t B = x.shape(0), T = x.shape(1), E = x.shape(2);
    Tensor3d y = Tensor3d::from_shape({B, T, E});
    for (std::size_t b = 0; b < B; ++b)
        for (std::size_t t = 0; t < T; ++t) {
            double mean = 0, var = 0;
            for (std::size_t c = 0; c < E; ++c) mean += x(b, t, c) / double(E);
            for (std::size_t c = 0; c < E; ++c) var += (x(b, t, c) - mean) * (x(b, t, c) - mean) / double(E);
            for (std::size_t c = 0; c < E; ++c)
                y(b, t, c) = (x(b, t, c) - mean) / std::sqrt(var + double(n.eps)) * n.weight(c) + n.bias(c);
        }
    return y;
}

Tensor3d dense(const Tensor3d& x, const Linear& l) {  // x W^T + b
    const std::size_t B = x.shape(0), T = x.shape(1), in = l.in_features(), out = l.out_features();
    Tensor3d y = Tensor3d::from_shape({B, T, out});
    for (std::size_t b = 0; b < B; ++b)
        for (std::size_t t = 0; t < T; ++t)
            for (std::size_t o = 0; o < out; ++o) {
                double s = l.bias(o);
                for (std::size_t i = 0; i < in; ++i) s += x(b, t, i) * double(l.weight(o, i));
                y(b, t, o) = s;
            }
    return y;
}

Tensor3d self_attention(const Tensor3d& x, const MultiHeadAttention& a, bool causal) {
    const std::size_t B = x.shape(0), T = x.shape(1), E = x.shape(2);
    const std::size_t H = a.num_heads(), D = a.head_dim();
    const Tensor3d q = dense(x, a.wq), k = dense(x, a.wk), v = dense(x, a.wv);  // [B, T, E]
    Tensor3d context = xt::zeros<double>({B, T, E});  // heads side by side
    std::vector<double> w(T);
    for (std::size_t b = 0; b < B; ++b)
        for (std::size_t h = 0; h < H; ++h)
            for (std::size_t i = 0; i < T; ++i) {
                const std::size_t seen = causal ? i + 1 : T;  // keys 0 .. seen-1
                double top = -INFINITY, sum = 0;
                for (std::size_t j = 0; j < seen; ++j) {
                    double s = 0;
                    for (std::size_t d = 0; d < D; ++d) s += q(b, i, h * D + d) * k(b, j, h * D + d);
                    w[j] = s / std::sqrt(double(D));
                    top = std::max(top, w[j]);
                }
                for (std::size_t j = 0; j < seen; ++j) sum += (w[j] = std::exp(w[j] - top));
                for (std::size_t j = 0; j < seen; ++j)
                    for (std::size_t d = 0; d < D; ++d) context(b, i, h * D + d) += w[j] / sum * v(b, j, h * D + d);
            }
    return dense(context, a.w_o);
}

}  // namespace

Tensor3d reference_block(const Block& blk, const Tensor3d& x, bool causal) {
    const Tensor3d x1 = x + self_attention(norm(x, blk.norm1), blk.self_attn, causal);
    Tensor3d hidden = dense(norm(x1, blk.norm2), blk.ff.linear1);  // [B, T, F]
    for (double& h : hidden) h = 0.5 * h * (1.0 + std::erf(h / std::sqrt(2.0)));
    return x1 + dense(hidden, blk.ff.linear2);
}

Tensor3d reference_logits(const LanguageModel& m, const Tokens& tokens) {
    const std::size_t B = tokens.shape(0), T = tokens.shape(1), E = m.tok_emb.dim();
    if (T > m.pos_emb.vocab()) fail("reference_logits: tokens " + shape_of(tokens) + " longer than T_max");
    Tensor3d x = Tensor3d::from_shape({B, T, E});
    for (std::size_t b = 0; b < B; ++b)
        for (std::size_t t = 0; t < T; ++t)
            for (std::size_t c = 0; c < E; ++c)
                x(b, t, c) = double(m.tok_emb.weight(tokens(b, t), c)) + m.pos_emb.weight(t, c);
    for (const Block& blk : m.layers) x = reference_block(blk, x, true);
    return dense(norm(x, m.norm), m.head);
}

}  // namespace mha
