// The backward pass, stage by stage in reverse, with the same in-place
// blocks as the forward: head h of a [B, T, E] tensor is the T x D block at
// column h*D with leading dimension E.
#include "mha/backward.hpp"

#include <cmath>

#include "mha/gemm.hpp"
#include "mha/linear.hpp"

namespace mha {

namespace {

// For y = x W^T + b over R rows: dx = dy W, dW = dy^T x, db = sum_r dy.
// x is [R, in], dy is [R, out]; dx gets [R, in].
LinearGrad linear_backward(const float* x, const float* dy, std::size_t R,
                           const Linear& l, float* dx) {
    const std::size_t out = l.out_features(), in = l.in_features();
    LinearGrad g{Tensor2::from_shape({out, in}), Tensor1::from_shape({out})};
    // [out, R] x [R, in] -> [out, in]
    gemm({dy, R, out, out}, true, {x, R, in, in}, false, g.weight.data(), in);
    // [R, out] x [out, in] -> [R, in]
    gemm({dy, R, out, out}, false, {l.weight.data(), out, in, in}, false, dx, in);
    g.bias.fill(0.0f);
    for (std::size_t r = 0; r < R; ++r)
        for (std::size_t o = 0; o < out; ++o) g.bias(o) += dy[r * out + o];
    return g;
}

}  // namespace

AttentionGrads backward(const MultiHeadAttention& m, const Tensor3& query,
                        const Tensor3& key, const Tensor3& value,
                        const Tensor3& d_output, const Mask* mask, float fill,
                        const Tensor4* score_bias) {
    m.check_inputs(query, key, value);
    const std::size_t B = query.shape(0), Tq = query.shape(1);
    const std::size_t Tk = key.shape(1), E = m.embed_dim();
    const std::size_t H = m.num_heads(), D = m.head_dim();
    if (d_output.shape(0) != B || d_output.shape(1) != Tq ||
        d_output.shape(2) != E) {
        fail("backward: d_output " + shape_of(d_output) +
             " must have the output's shape [B, Tq, E] = " + shape_of(query));
    }

    // Forward again, keeping what the backward needs.
    const ForwardTrace t = m.trace(query, key, value, mask, fill, score_bias);
    const Tensor3 &q = t.q, &k = t.k, &v = t.v;  // [B, T, E] each
    const Tensor4& P = t.weights;                // [B, H, Tq, Tk]
    const float scale = 1.0f / std::sqrt(static_cast<float>(D));

    AttentionGrads g;
    // 1) output layer: output = context W_o^T + b_o
    Tensor3 d_context({B, Tq, E});
    g.w_o = linear_backward(t.context.data(), d_output.data(), B * Tq, m.w_o,
                            d_context.data());

    // 2) per (b, h): weights x V, softmax, mask, scores
    Tensor3 dq({B, Tq, E}), dk({B, Tk, E}), dv({B, Tk, E});
    std::vector<float> dP(Tq * Tk);
    for (std::size_t b = 0; b < B; ++b)
        for (std::size_t h = 0; h < H; ++h) {
            const std::size_t qo = b * Tq * E + h * D, ko = b * Tk * E + h * D;
            const float* w = &P(b, h, 0, 0);                 // [Tq, Tk]
            const float* dctx = d_context.data() + qo;       // [Tq, D], ld E
            // context = P V:  dP = dctx V^T,  dV = P^T dctx
            gemm({dctx, Tq, D, E}, false, {v.data() + ko, Tk, D, E}, true,
                 dP.data(), Tk);
            gemm({w, Tq, Tk, Tk}, true, {dctx, Tq, D, E}, false,
                 dv.data() + ko, E);
            // softmax: dS_j = P_j (dP_j - sum_k P_k dP_k), row by row; then
            // the mask: a filled score is a constant, its gradient is 0.
            for (std::size_t i = 0; i < Tq; ++i) {
                const float* p = w + i * Tk;
                float* ds = dP.data() + i * Tk;
                float dot = 0.0f;
                for (std::size_t j = 0; j < Tk; ++j) dot += p[j] * ds[j];
                for (std::size_t j = 0; j < Tk; ++j) ds[j] = p[j] * (ds[j] - dot);
                if (mask != nullptr) {
                    const bool* keep = mask_row(*mask, b, h, i);
                    for (std::size_t j = 0; j < Tk; ++j)
                        if (!keep[j]) ds[j] = 0.0f;
                }
            }
            // S = scale Q K^T:  dQ = scale dS K,  dK = scale dS^T Q
            gemm({dP.data(), Tq, Tk, Tk}, false, {k.data() + ko, Tk, D, E}, false,
                 dq.data() + qo, E, scale);
            gemm({dP.data(), Tq, Tk, Tk}, true, {q.data() + qo, Tq, D, E}, false,
                 dk.data() + ko, E, scale);
        }

    // 3) the three projections
    g.query = Tensor3({B, Tq, E});
    g.key = Tensor3({B, Tk, E});
    g.value = Tensor3({B, Tk, E});
    g.wq = linear_backward(query.data(), dq.data(), B * Tq, m.wq, g.query.data());
    g.wk = linear_backward(key.data(), dk.data(), B * Tk, m.wk, g.key.data());
    g.wv = linear_backward(value.data(), dv.data(), B * Tk, m.wv, g.value.data());
    return g;
}

}  // namespace mha
