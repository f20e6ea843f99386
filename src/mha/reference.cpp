// The oracle, in the manner of llm.c: plain loops, numbered passes, double.
//
// B = batch, Tq = queries, Tk = keys, E = embed_dim, H = heads, D = E / H,
// H_kv = key/value heads and Ekv = H_kv * D (Ekv = E without grouping).
// All arrays are row-major: x[b, t, e] is x[(b * T + t) * E + e].
#include "mha/reference.hpp"

#include <cmath>
#include <vector>

namespace mha {

namespace {

// out[r, o] = b[o] + sum_i x[r, i] * w[o, i]; x is (R, in), w is (out, in).
template <class In>
void linear_loops(const In* x, const Linear& l, std::size_t R, double* out) {
    const std::size_t in = l.in_features(), n = l.out_features();
    const float* w = l.weight.data();
    for (std::size_t r = 0; r < R; ++r)
        for (std::size_t o = 0; o < n; ++o) {
            double acc = l.bias(o);
            for (std::size_t i = 0; i < in; ++i)
                acc += double(x[r * in + i]) * w[o * in + i];
            out[r * n + o] = acc;
        }
}

}  // namespace

ReferenceOutput reference_forward(const MultiHeadAttention& m,
                                  const Tensor3& query, const Tensor3& key,
                                  const Tensor3& value, const Mask* mask,
                                  float fill, const Tensor4* score_bias) {
    m.check_inputs(query, key, value);
    const std::size_t B = query.shape(0), Tq = query.shape(1), Tk = key.shape(1);
    // the tensors as the two mods, as forward_stages() does
    Mods mods;
    mods.fill = fill;
    if (score_bias != nullptr) {
        check_score_bias(*score_bias, B, m.num_heads(), Tq, Tk);
        mods.score_mod = bias_mod_of(*score_bias);
    }
    if (mask != nullptr) {
        check_mask(*mask, B, m.num_heads(), Tq, Tk);
        mods.mask_mod = mask_mod_of(*mask);
    }
    return reference_forward(m, query, key, value, mods);
}

ReferenceOutput reference_forward(const MultiHeadAttention& m,
                                  const Tensor3& query, const Tensor3& key,
                                  const Tensor3& value, const Mods& mods) {
    m.check_inputs(query, key, value);
    const std::size_t B = query.shape(0), Tq = query.shape(1);
    const std::size_t Tk = key.shape(1), E = m.embed_dim();
    const std::size_t H = m.num_heads(), D = m.head_dim();
    const std::size_t Ekv = m.kv_dim(), group = H / m.num_kv_heads();

    // pass 1: the projections q = query wq^T + b, and likewise k and v
    std::vector<double> q(B * Tq * E), k(B * Tk * Ekv), v(B * Tk * Ekv);
    linear_loops(query.data(), m.wq, B * Tq, q.data());
    linear_loops(key.data(), m.wk, B * Tk, k.data());
    linear_loops(value.data(), m.wv, B * Tk, v.data());
    if (mods.rope) {
        // pass 1b: RoPE. Each pair (x1, x2) of a head turns by pos * freq_p:
        // query row t and key row t at position t, every head
        check_rope(*mods.rope, D);
        auto turn = [&](double* x, std::size_t pos) {  // one head, D values
            for (std::size_t p = 0; p < D / 2; ++p) {
                const double a = double(pos) * rope_frequency(p, D, mods.rope->theta);
                const auto [i, j] = rope_pair(p, D, mods.rope->style);
                const double x1 = x[i], x2 = x[j];
                x[i] = x1 * std::cos(a) - x2 * std::sin(a);
                x[j] = x1 * std::sin(a) + x2 * std::cos(a);
            }
        };
        for (std::size_t r = 0; r < B * Tq; ++r)
            for (std::size_t h = 0; h < H; ++h) turn(&q[r * E + h * D], r % Tq);
        for (std::size_t r = 0; r < B * Tk; ++r)
            for (std::size_t g = 0; g < Ekv / D; ++g) turn(&k[r * Ekv + g * D], r % Tk);
    }

    ReferenceOutput out;
    out.weights = xt::xtensor<double, 4>::from_shape({B, H, Tq, Tk});
    std::vector<double> context(B * Tq * E);  // (B, Tq, E), heads merged
    const double scale = 1.0 / std::sqrt(static_cast<double>(D));
    for (std::size_t b = 0; b < B; ++b)
        for (std::size_t h = 0; h < H; ++h)
            for (std::size_t i = 0; i < Tq; ++i) {
                double* w = &out.weights(b, h, i, 0);  // this query's row
                // pass 2: scores of query i against every key j, head h
                // (head h is columns h*D .. h*D + D-1; its keys and values
                // are kv head g = h / group), the score_mod, the mask_mod
                const std::size_t g = h / group;
                const double* qi = &q[(b * Tq + i) * E + h * D];
                double maxval = -INFINITY;
                for (std::size_t j = 0; j < Tk; ++j) {
                    const double* kj = &k[(b * Tk + j) * Ekv + g * D];
                    double dot = 0.0;
                    for (std::size_t d = 0; d < D; ++d) dot += qi[d] * kj[d];
                    w[j] = dot * scale;
                    if (mods.score_mod)
                        w[j] = mods.score_mod(float(w[j]), b, h, i, j);
                    if (mods.mask_mod && !mods.mask_mod(b, h, i, j))
                        w[j] = mods.fill;
                    if (w[j] > maxval) maxval = w[j];
                }
                // pass 3: softmax; maxval is subtracted only for stability.
                // A row with every key masked (-inf) attends to nothing.
                double sum = 0.0;
                for (std::size_t j = 0; j < Tk; ++j) {
                    w[j] = maxval == -INFINITY ? 0.0 : std::exp(w[j] - maxval);
                    sum += w[j];
                }
                for (std::size_t j = 0; j < Tk; ++j)
                    w[j] = sum > 0.0 ? w[j] / sum : 0.0;
                // pass 4: weighted sum of the values into columns h*D..
                double* ctx = &context[(b * Tq + i) * E + h * D];
                for (std::size_t d = 0; d < D; ++d) {
                    double acc = 0.0;
                    for (std::size_t j = 0; j < Tk; ++j)
                        acc += w[j] * v[(b * Tk + j) * Ekv + g * D + d];
                    ctx[d] = acc;
                }
            }
    // pass 5: the output layer
    out.output = xt::xtensor<double, 3>::from_shape({B, Tq, E});
    linear_loops(context.data(), m.w_o, B * Tq, out.output.data());
    return out;
}

}  // namespace mha
