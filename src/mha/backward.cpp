// The backward pass: the stages of forward_stages() in reverse, each
// written out with the tensors of the forward.
//
// B = batch, Tq / Tk = queries / keys, E = embed_dim, H = heads, D = E / H.
#include "mha/backward.hpp"

#include <algorithm>
#include <array>
#include <cmath>

#include <xtensor-blas/xlinalg.hpp>
#include <xtensor/xbuilder.hpp>
#include <xtensor/xmanipulation.hpp>
#include <xtensor/xmath.hpp>
#include <xtensor/xview.hpp>

#include "mha/fast/backward.hpp"
#include "mha/heads.hpp"

namespace mha {

// For y = x W^T + b over the rows of x [B, T, in]: dW = dy^T x,
// db = the sum of dy over the rows, and dx = dy W.
Tensor3 linear_backward(const Tensor3& x, const Tensor3& dy, const Linear& l, LinearGrad& g) {
    if (x.shape(0) != dy.shape(0) || x.shape(1) != dy.shape(1) ||
        x.shape(2) != l.in_features() || dy.shape(2) != l.out_features()) {
        fail("linear_backward: x " + shape_of(x) + " and dy " + shape_of(dy) +
             " do not fit a layer [out, in] = " + shape_of(l.weight));
    }
    const std::size_t rows = x.shape(0) * x.shape(1);
    const std::size_t in = l.in_features(), out = l.out_features();
    const std::array<std::size_t, 2> x_rows{rows, in}, dy_rows{rows, out};
    const Tensor2 x2 = xt::reshape_view(x, x_rows);     // [B*T, in]
    const Tensor2 dy2 = xt::reshape_view(dy, dy_rows);  // [B*T, out]
    g.weight = xt::linalg::dot(xt::transpose(dy2), x2);  // [out, B*T] x [B*T, in]
    g.bias = xt::sum(dy2, {0});                          // [out]
    const Tensor2 dx = xt::linalg::dot(dy2, l.weight);   // [B*T, out] x [out, in]
    const std::array<std::size_t, 3> x_shape{x.shape(0), x.shape(1), in};
    return xt::reshape_view(dx, x_shape);                // [B, T, in]
}

Tensor4 softmax_backward(const Tensor4& weights, const Tensor4& d_weights) {
    if (weights.shape() != d_weights.shape()) {
        fail("softmax_backward: weights " + shape_of(weights) + " and d_weights " +
             shape_of(d_weights) + " must have one shape [B, H, Tq, Tk]");
    }
    const std::size_t Tk = weights.shape(3), rows = weights.size() / std::max<std::size_t>(Tk, 1);
    Tensor4 d_scores(weights.shape());  // [B, H, Tq, Tk]
    for (std::size_t r = 0; r < rows; ++r) {
        const float* p = weights.data() + r * Tk;
        const float* dp = d_weights.data() + r * Tk;
        float* ds = d_scores.data() + r * Tk;
        // A score moves its own weight and, through the sum, every other one.
        float dot = 0.0f;  // sum_k P_k dP_k
        for (std::size_t j = 0; j < Tk; ++j) dot += p[j] * dp[j];
        for (std::size_t j = 0; j < Tk; ++j) ds[j] = p[j] * (dp[j] - dot);
    }
    return d_scores;
}

AttentionGrads backward_stages(const MultiHeadAttention& m, const Tensor3& query,
                               const Tensor3& key, const Tensor3& value,
                               const Tensor3& d_output, const Mask* mask, float fill,
                               const Tensor4* score_bias) {
    m.check_inputs(query, key, value);
    const std::size_t B = query.shape(0), Tq = query.shape(1);
    const std::size_t Tk = key.shape(1), E = m.embed_dim();
    const std::size_t H = m.num_heads(), D = m.head_dim(), H_kv = m.num_kv_heads();
    const std::size_t group = H / H_kv;  // query heads per kv head
    if (d_output.shape(0) != B || d_output.shape(1) != Tq ||
        d_output.shape(2) != E) {
        fail("backward: d_output " + shape_of(d_output) +
             " must have the output's shape [B, Tq, E] = " + shape_of(query));
    }
    // The forward again, keeping every stage.
    const Stages s = m.forward_stages(query, key, value, mask, fill, score_bias);
    const float scale = 1.0f / std::sqrt(static_cast<float>(D));
    AttentionGrads g;

    // 7) output = w_o(context)
    const Tensor3 d_context = linear_backward(s.context, d_output, m.w_o, g.w_o);
    // 6) context = merge_heads(weights @ v): merge backward is a split
    const Tensor4 d_attended = split_heads(d_context, H);  // [B, H, Tq, D]
    // A kv head serves `group` query heads: its gradients are their sum.
    Tensor4 dq({B, H, Tq, D});
    Tensor4 dk = xt::zeros<float>({B, H_kv, Tk, D}), dv = xt::zeros<float>({B, H_kv, Tk, D});
    for (std::size_t b = 0; b < B; ++b)
        for (std::size_t h = 0; h < H; ++h) {
            const Tensor2 P = xt::view(s.weights, b, h);    // [Tq, Tk]
            const Tensor2 dO = xt::view(d_attended, b, h);  // [Tq, D]
            const Tensor2 q = xt::view(s.q, b, h);          // [Tq, D]
            const Tensor2 k = xt::view(s.k, b, h / group);  // [Tk, D]
            const Tensor2 v = xt::view(s.v, b, h / group);  // [Tk, D]
            // O = P V:  dP = dO V^T [Tq, Tk],  dV = P^T dO [Tk, D]
            Tensor2 dS = xt::linalg::dot(dO, xt::transpose(v));
            xt::view(dv, b, h / group) += xt::linalg::dot(xt::transpose(P), dO);
            // 5) softmax, row by row: dS_j = P_j (dP_j - sum_k P_k dP_k), as
            //    softmax_backward() does for all the heads at once
            // 4) a masked score is a constant (the fill): its gradient is 0
            for (std::size_t i = 0; i < Tq; ++i) {
                float dot = 0.0f;
                for (std::size_t j = 0; j < Tk; ++j) dot += P(i, j) * dS(i, j);
                const bool* keep = mask != nullptr ? mask_row(*mask, b, h, i) : nullptr;
                for (std::size_t j = 0; j < Tk; ++j) {
                    const bool masked = keep != nullptr && !keep[j];
                    dS(i, j) = masked ? 0.0f : P(i, j) * (dS(i, j) - dot);
                }
            }
            // 3) S = scale Q K^T:  dQ = scale dS K,  dK = scale dS^T Q
            xt::view(dq, b, h) = xt::linalg::dot(dS, k) * scale;
            xt::view(dk, b, h / group) += xt::linalg::dot(xt::transpose(dS), q) * scale;
        }
    // 2) split backward is a merge; 1) the three projections
    g.query = linear_backward(query, merge_heads(dq), m.wq, g.wq);  // [B, Tq, E]
    g.key = linear_backward(key, merge_heads(dk), m.wk, g.wk);      // [B, Tk, E]
    g.value = linear_backward(value, merge_heads(dv), m.wv, g.wv);  // [B, Tk, E]
    return g;
}

std::vector<Parameter> parameters(MultiHeadAttention& m, const AttentionGrads& g) {
    std::vector<Parameter> p;
    const char* names[4] = {"wq", "wk", "wv", "w_o"};
    Linear* layers[4] = {&m.wq, &m.wk, &m.wv, &m.w_o};
    const LinearGrad* grads[4] = {&g.wq, &g.wk, &g.wv, &g.w_o};
    for (int l = 0; l < 4; ++l) {
        p.push_back({std::string(names[l]) + ".weight", layers[l]->weight.data(),
                     grads[l]->weight.data(), layers[l]->weight.size()});
        p.push_back({std::string(names[l]) + ".bias", layers[l]->bias.data(),
                     grads[l]->bias.data(), layers[l]->bias.size()});
    }
    return p;
}

// The fast path: the same gradients from the engine (src/mha/fast/).

AttentionGrads backward(const MultiHeadAttention& m, const Tensor3& query,
                        const Tensor3& key, const Tensor3& value, const Tensor3& d_output,
                        const Mask* mask, float fill, const Tensor4* score_bias) {
    const ForwardTrace t = m.trace(query, key, value, mask, fill, score_bias);
    return fast::backward(m, {query, key, value, mask, fill, score_bias}, t, d_output);
}

AttentionGrads backward(const MultiHeadAttention& m, const ForwardTrace& trace,
                        const Tensor3& query, const Tensor3& key, const Tensor3& value,
                        const Tensor3& d_output, const Mask* mask, float fill,
                        const Tensor4* score_bias, float softcap) {
    return fast::backward(m, {query, key, value, mask, fill, score_bias, true, false, softcap},
                          trace, d_output);
}

AttentionGrads backward_self_attention(const MultiHeadAttention& m, const ForwardTrace& trace,
                                       const Tensor3& x, const Tensor3& d_output,
                                       const Mask* mask, float fill, const Tensor4* score_bias,
                                       float softcap) {
    return fast::backward(m, {x, x, x, mask, fill, score_bias, true, false, softcap}, trace,
                          d_output, true);
}

AttentionGrads backward_self_attention(const MultiHeadAttention& m, const ForwardTrace& trace,
                                       const Tensor3& x, const Tensor3& d_output, Causal,
                                       float softcap) {
    // a hidden key's weight is exactly 0, so the gradient needs no mask tensor
    return fast::backward(m, {x, x, x, nullptr, kNegInf, nullptr, true, true, softcap}, trace,
                          d_output, true);
}

}  // namespace mha
