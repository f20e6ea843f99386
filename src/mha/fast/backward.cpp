// The engine's backward: the forward's stages in reverse, on the trace's
// [B, T, E] tensors, head h read in place as the T x D block at column h*D.
//
// B = batch, Tq / Tk = queries / keys, E = embed_dim, H = heads, D = E / H,
// H_kv = key/value heads, Ekv = H_kv * D.
#include "mha/fast/backward.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>

#include "mha/fast/blas.hpp"
#include "mha/fast/memory.hpp"
#include "mha/fast/parallel.hpp"

namespace mha::fast {

namespace {

// For y = x W^T + b over R rows: dW = dy^T x, db = the sum of dy's rows,
// dx = dy W. x is [R, in], dy is [R, out]; dx gets [R, in].
LinearGrad linear_backward(const float* x, const float* dy, std::size_t R, const Linear& l,
                           float* dx) {
    const std::size_t out = l.out_features(), in = l.in_features();
    LinearGrad g{Tensor2::from_shape({out, in}), Tensor1::from_shape({out})};
    gemm({dy, R, out, out}, true, {x, R, in, in}, false, g.weight.data(), in);  // [out, in]
    gemm({dy, R, out, out}, false, {l.weight.data(), out, in, in}, false, dx, in);  // [R, in]
    g.bias.fill(0.0f);
    for (std::size_t r = 0; r < R; ++r)
        for (std::size_t o = 0; o < out; ++o) g.bias(o) += dy[r * out + o];
    return g;
}

}  // namespace

AttentionGrads backward(const MultiHeadAttention& m, const Call& in, const ForwardTrace& t,
                        const Tensor3& d_output) {
    m.check_inputs(in.query, in.key, in.value);
    const std::size_t B = in.query.shape(0), Tq = in.query.shape(1);
    const std::size_t Tk = in.key.shape(1), E = m.embed_dim();
    const std::size_t H = m.num_heads(), D = m.head_dim(), H_kv = m.num_kv_heads();
    const std::size_t Ekv = m.kv_dim(), group = H / H_kv;
    if (d_output.shape(0) != B || d_output.shape(1) != Tq || d_output.shape(2) != E) {
        fail("backward: d_output " + shape_of(d_output) +
             " must have the output's shape [B, Tq, E] = " + shape_of(in.query));
    }
    if (shape_of(t.q) != shape_of(in.query) ||
        t.k.shape() != Tensor3::shape_type{B, Tk, Ekv} ||
        shape_of(t.context) != shape_of(in.query) ||
        t.weights.shape() != Tensor4::shape_type{B, H, Tq, Tk}) {
        fail("backward: the trace holds q " + shape_of(t.q) + " and weights " +
             shape_of(t.weights) + ", not a trace() of query " + shape_of(in.query) +
             " and key " + shape_of(in.key));
    }
    const float scale = 1.0f / std::sqrt(static_cast<float>(D));
    AttentionGrads g;

    // 1) output = context W_o^T + b_o: dW_o = dy^T context, db_o = sum of dy
    g.w_o = LinearGrad{Tensor2::from_shape({E, E}), Tensor1::from_shape({E})};
    gemm({d_output.data(), B * Tq, E, E}, true, {t.context.data(), B * Tq, E, E}, false,
         g.w_o.weight.data(), E);
    g.w_o.bias.fill(0.0f);
    for (std::size_t r = 0; r < B * Tq; ++r)
        for (std::size_t o = 0; o < E; ++o) g.w_o.bias(o) += d_output.data()[r * E + o];

    // 2) per (sequence, kv head), each on its own blocks: first that group's
    //    columns of d context = dy W_o (never the whole [B, Tq, E] at once),
    //    then per query head of the group: weights x V, softmax, mask,
    //    scores. The group's heads add their dK and dV into the kv head
    //    they share.
    Tensor3 dq = Tensor3::from_shape({B, Tq, E});
    Tensor3 dk = Tensor3::from_shape({B, Tk, Ekv}), dv = Tensor3::from_shape({B, Tk, Ekv});
    const std::size_t GD = group * D;  // the group's columns of the context
    // dP: [Tq, Tk]; dctx_g: the group's d context [Tq, GD]
    auto head_backward = [&](std::size_t b, std::size_t h, float* dP, const float* dctx_g) {
        const std::size_t g = h / group;
        const float add = h == g * group ? 0.0f : 1.0f;  // beta: the group's first writes
        const std::size_t qo = b * Tq * E + h * D, ko = b * Tk * Ekv + g * D;
        const float* P = &t.weights(b, h, 0, 0);           // [Tq, Tk]
        const float* dctx = dctx_g + (h - g * group) * D;  // [Tq, D], rows GD apart
        // context = P V:  dP = dctx V^T,  dV = P^T dctx
        gemm({dctx, Tq, D, GD}, false, {t.v.data() + ko, Tk, D, Ekv}, true, dP, Tk);
        gemm({P, Tq, Tk, Tk}, true, {dctx, Tq, D, GD}, false, dv.data() + ko, Ekv, 1.0f, add);
        // softmax: dS_j = P_j (dP_j - sum_k P_k dP_k); a masked score is a
        // constant (the fill): its gradient is 0
        for (std::size_t i = 0; i < Tq; ++i) {
            const float* p = P + i * Tk;
            float* ds = dP + i * Tk;
            float dot = 0.0f;
            for (std::size_t j = 0; j < Tk; ++j) dot += p[j] * ds[j];
            for (std::size_t j = 0; j < Tk; ++j) ds[j] = p[j] * (ds[j] - dot);
            if (in.mask != nullptr) {
                const bool* keep = mask_row(*in.mask, b, h, i);
                for (std::size_t j = 0; j < Tk; ++j)
                    if (!keep[j]) ds[j] = 0.0f;
            }
        }
        // S = scale Q K^T:  dQ = scale dS K,  dK = scale dS^T Q
        gemm({dP, Tq, Tk, Tk}, false, {t.k.data() + ko, Tk, D, Ekv}, false, dq.data() + qo, E,
             scale);
        gemm({dP, Tq, Tk, Tk}, true, {t.q.data() + qo, Tq, D, E}, false, dk.data() + ko, Ekv,
             scale, add);
    };
    std::atomic<std::size_t> next_pair{0};
    parallel_for(std::min(B * H_kv, worker_count()), [&](std::size_t, std::size_t) {
        Buffer dP(Tq * Tk), dctx(Tq * GD);  // this worker's
        for (std::size_t bg; (bg = next_pair++) < B * H_kv;) {
            const std::size_t b = bg / H_kv, g = bg % H_kv;
            gemm({d_output.data() + b * Tq * E, Tq, E, E}, false,
                 {m.w_o.weight.data() + g * GD, E, GD, E}, false, dctx.data(), GD);
            for (std::size_t h = g * group; h < (g + 1) * group; ++h)
                head_backward(b, h, dP.data(), dctx.data());
        }
    });
    // each scratch tensor below goes as soon as it is used: the peak memory

    // 3) the three projections
    g.query = Tensor3::from_shape({B, Tq, E});
    g.wq = linear_backward(in.query.data(), dq.data(), B * Tq, m.wq, g.query.data());
    dq = Tensor3();
    g.key = Tensor3::from_shape({B, Tk, E});
    g.wk = linear_backward(in.key.data(), dk.data(), B * Tk, m.wk, g.key.data());
    dk = Tensor3();
    g.value = Tensor3::from_shape({B, Tk, E});
    g.wv = linear_backward(in.value.data(), dv.data(), B * Tk, m.wv, g.value.data());
    return g;
}

}  // namespace mha::fast
