// The engine's backward: the forward's stages in reverse, on the trace's
// [B, T, E] tensors, head h read in place as the T x D block at column h*D.
//
// B = batch, Tq / Tk = queries / keys, E = embed_dim, H = heads, D = E / H,
// H_kv = key/value heads, Ekv = H_kv * D.
#include "mha/fast/backward.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <vector>

#include "mha/fast/attend_head.hpp"
#include "mha/fast/blas.hpp"
#include "mha/fast/memory.hpp"
#include "mha/fast/packed_gemm.hpp"
#include "mha/fast/parallel.hpp"
#include "mha/fast/softmax.hpp"
#include "mha/fast/tiled_backward.hpp"

namespace mha::fast {

namespace {

// sums[c] = the sum of column c of x [rows, cols], rows ld apart: a piece
// of a bias gradient, taken where its rows were just written (in cache).
void column_sums(const float* __restrict x, std::size_t rows, std::size_t cols,
                 std::size_t ld, float* __restrict sums) {
    std::fill(sums, sums + cols, 0.0f);
    for (std::size_t r = 0; r < rows; ++r)
        for (std::size_t c = 0; c < cols; ++c) sums[c] += x[r * ld + c];
}

// A bias gradient [n] from per-sequence pieces [B, n], added in order of b.
Tensor1 sum_of_pieces(const Buffer& pieces, std::size_t B, std::size_t n) {
    Tensor1 sum = Tensor1::from_shape({n});
    sum.fill(0.0f);
    for (std::size_t b = 0; b < B; ++b)
        for (std::size_t c = 0; c < n; ++c) sum(c) += pieces[b * n + c];
    return sum;
}

// The backward's large products: on the packed kernels when they run here
// (packed_product()), else through BLAS (gemm()); the arguments are gemm()'s.
void product(Block a, bool trans_a, Block b, bool trans_b, float* c, std::size_t ldc) {
    if (packed_products_on()) {
        packed_product(a, trans_a, b, trans_b, c, ldc);
    } else {
        gemm(a, trans_a, b, trans_b, c, ldc);
    }
}

// For y = x W^T + b over R rows: dW = dy^T x and dx = dy W (db is summed
// where dy is made). x is [R, in], dy is [R, out]; dx gets [R, in].
Tensor2 linear_backward(const float* x, const float* dy, std::size_t R, const Linear& l,
                        float* dx) {
    const std::size_t out = l.out_features(), in = l.in_features();
    Tensor2 d_weight = Tensor2::from_shape({out, in});
    product({dy, R, out, out}, true, {x, R, in, in}, false, d_weight.data(), in);  // [out, in]
    product({dy, R, out, out}, false, {l.weight.data(), out, in, in}, false, dx, in);  // [R, in]
    return d_weight;
}

}  // namespace

AttentionGrads backward(const MultiHeadAttention& m, const Call& in, const ForwardTrace& t,
                        const Tensor3& d_output, bool self_attention) {
    m.check_inputs(in.query, in.key, in.value);
    const std::size_t B = in.query.shape(0), Tq = in.query.shape(1);
    const std::size_t Tk = in.key.shape(1), E = m.embed_dim();
    const std::size_t H = m.num_heads(), D = m.head_dim(), H_kv = m.num_kv_heads();
    const std::size_t Ekv = m.kv_dim(), group = H / H_kv;
    if (d_output.shape(0) != B || d_output.shape(1) != Tq || d_output.shape(2) != E) {
        fail("backward: d_output " + shape_of(d_output) +
             " must have the output's shape [B, Tq, E] = " + shape_of(in.query));
    }
    // A trace without weights (trace_no_weights()) keeps each row's
    // log-sum-exp instead: then the tiles rebuild the weights (FlashAttention-2)
    const bool tiled = t.weights.size() == 0;
    if (shape_of(t.q) != shape_of(in.query) ||
        t.k.shape() != Tensor3::shape_type{B, Tk, Ekv} ||
        shape_of(t.context) != shape_of(in.query) ||
        (!tiled && t.weights.shape() != Tensor4::shape_type{B, H, Tq, Tk}) ||
        (tiled && t.lse.shape() != Tensor3::shape_type{B, H, Tq})) {
        fail("backward: the trace holds q " + shape_of(t.q) + ", weights " +
             shape_of(t.weights) + " and lse " + shape_of(t.lse) + ", not a trace() of " +
             "(or trace_no_weights() of) query " + shape_of(in.query) + " and key " +
             shape_of(in.key));
    }
    check_softcap(in.softcap, "backward");
    if (in.rope != nullptr) check_rope(*in.rope, D);
    if (in.softcap > 0.0f && !tiled) {
        fail("backward: soft-capping runs in the tiled backward only: give it a "
             "trace_no_weights()");
    }
    const float scale = 1.0f / std::sqrt(static_cast<float>(D));
    AttentionGrads g;

    // 1) output = context W_o^T + b_o: dW_o = dy^T context, db_o = sum of dy
    g.w_o.weight = Tensor2::from_shape({E, E});
    product({d_output.data(), B * Tq, E, E}, true, {t.context.data(), B * Tq, E, E}, false,
            g.w_o.weight.data(), E);

    // 2) per sequence (or a share of its kv heads, when there are few
    //    sequences), each on its own blocks: per kv head, first its group's
    //    columns of d context = dy W_o (never the whole [B, Tq, E] at once),
    //    then per query head of the group: weights x V, softmax, mask,
    //    scores. The group's heads add their dK and dV into the kv head
    //    they share.
    //    dQ, dK and dV are three tensors, or for self-attention the three
    //    column blocks of one [B*T, E + 2 Ekv], as PyTorch's in_proj.
    const std::size_t W = E + 2 * Ekv;
    Buffer dqkv(self_attention ? B * Tq * W : 0);
    Tensor3 dq, dk, dv;
    if (!self_attention) {
        dq = Tensor3::from_shape({B, Tq, E});
        dk = Tensor3::from_shape({B, Tk, Ekv});
        dv = Tensor3::from_shape({B, Tk, Ekv});
    }
    float* const dq_p = self_attention ? dqkv.data() : dq.data();
    float* const dk_p = self_attention ? dqkv.data() + E : dk.data();
    float* const dv_p = self_attention ? dqkv.data() + E + Ekv : dv.data();
    const std::size_t ldq = self_attention ? W : E, ldkv = self_attention ? W : Ekv;
    const std::size_t GD = group * D;  // the group's columns of the context
    // Under a mask with the -inf fill a masked weight is exactly 0, and so is
    // its score's gradient: then each block of query rows stops its products
    // at the last key its rows see (as the forward, attend_head.cpp), and
    // each block of keys starts at the first block of queries that sees it.
    // A causal call without a mask tensor (mha::causal) hides keys past i the same way.
    const bool may_skip = (in.mask != nullptr && in.fill == kNegInf) || in.causal;
    const std::size_t block = may_skip ? skip_block_rows(Tk) : std::max(Tq, Tk);
    const std::size_t blocks = (Tq + block - 1) / block;
    // dP: [Tq, Tk]; dctx_g: the group's d context [Tq, GD]
    // vt, kp: the kv head's V^T (vt_k terms to a panel) and K packed into
    // panels, or nullptr (BLAS)
    // kv_bad: past_last_nonfinite() of the kv head's K and V
    // q_finite: the head's Q is known to hold no NaN or Inf
    // cols: [blocks], the key columns each block of query rows computes
    // dq_h [Tq, D], dk_g, dv_g [Tk, D]: where the gradients go, compact
    auto head_backward = [&](std::size_t b, std::size_t h, float* dP, const float* dctx_g,
                             const float* vt, std::size_t vt_k, const float* kp,
                             std::size_t kv_bad, bool q_finite, std::size_t* cols,
                             float* dq_h, float* dk_g, float* dv_g) {
        const std::size_t g = h / group;
        const float add = h == g * group ? 0.0f : 1.0f;  // beta: the group's first writes
        const std::size_t qo = b * Tq * E + h * D, ko = b * Tk * Ekv + g * D;  // in the trace
        const float* P = &t.weights(b, h, 0, 0);           // [Tq, Tk]
        const float* dctx = dctx_g + (h - g * group) * D;  // [Tq, D], rows GD apart
        const float* q = t.q.data() + qo, *k = t.k.data() + ko, *v = t.v.data() + ko;
        // Skipped columns must not hide a NaN or an Inf that 0 meets there:
        // in K or V (kv_bad), or in this head's Q or d context (no skipping).
        const bool skip = may_skip && !any_nonfinite(dctx, Tq, D, GD) &&
                          (q_finite || !any_nonfinite(q, Tq, D, E));
        for (std::size_t ib = 0; ib < blocks; ++ib) {
            const std::size_t i0 = ib * block, rows = std::min(block, Tq - i0);
            std::size_t c = !skip     ? Tk
                            : in.causal ? std::min(Tk, i0 + rows)  // the block's last row sees 0..i0+rows-1
                                        : visible_columns(*in.mask, b, h, i0, rows, Tk);
            if (c < Tk) c = std::max(c, kv_bad);
            cols[ib] = c;
            float* dp = dP + i0 * Tk;  // [rows, Tk]
            // context = P V:  dP = dctx V^T
            if (c > 0 && vt != nullptr) {
                packed_gemm(dctx + i0 * GD, GD, rows, D, vt, vt_k, c, dp, Tk, 1.0f);
            } else if (c > 0) {
                gemm({dctx + i0 * GD, rows, D, GD}, false, {v, c, D, Ekv}, true, dp, Tk);
            }
            // softmax: dS_j = P_j (dP_j - sum_k P_k dP_k); a masked score is
            // a constant (the fill): its gradient is 0
            for (std::size_t i = i0; i < i0 + rows; ++i) {
                const auto* keep = in.mask == nullptr ? nullptr
                                   : reinterpret_cast<const unsigned char*>(
                                         mask_row(*in.mask, b, h, i));
                softmax_grad_row(P + i * Tk, dP + i * Tk, keep, c, Tk);
            }
            // S = scale Q K^T:  dQ = scale dS K
            float* dq = dq_h + i0 * D;
            if (c == 0) {
                for (std::size_t r = 0; r < rows; ++r) std::fill_n(dq + r * D, D, 0.0f);
            } else if (kp != nullptr) {
                packed_gemm(dp, Tk, rows, c, kp, Tk, D, dq, D, scale);
            } else {
                gemm({dp, rows, c, Tk}, false, {k, c, D, Ekv}, false, dq, D, scale);
            }
        }
        // dV = P^T dctx,  dK = scale dS^T Q: keys j0.. from the first block
        // of queries that sees them (before it, P and dS are 0 there)
        for (std::size_t j0 = 0; j0 < Tk; j0 += block) {
            const std::size_t w = std::min(block, Tk - j0);
            std::size_t first = 0;
            while (first < blocks && cols[first] <= j0) ++first;
            const std::size_t i0 = first * block, n = first < blocks ? Tq - i0 : 0;
            if (n == 0) {  // no query sees these keys
                for (std::size_t j = j0; add == 0.0f && j < j0 + w; ++j) {
                    std::fill_n(dv_g + j * D, D, 0.0f);
                    std::fill_n(dk_g + j * D, D, 0.0f);
                }
                continue;
            }
            gemm({P + i0 * Tk + j0, n, w, Tk}, true, {dctx + i0 * GD, n, D, GD}, false,
                 dv_g + j0 * D, D, 1.0f, add);
            gemm({dP + i0 * Tk + j0, n, w, Tk}, true, {q + i0 * E, n, D, E}, false,
                 dk_g + j0 * D, D, scale, add);
        }
    };
    // W_o packed once for every (sequence, kv head)'s d context, when the
    // packed kernels run (B = W_o: d context = dy W_o)
    const bool packed = packed_products_on();
    const std::size_t per_group = packed_floats(E, GD);  // W_o's columns of one group
    Buffer w_o_panels(packed ? H_kv * per_group : 0);
    for (std::size_t g = 0; packed && g < H_kv; ++g)
        pack_panels(m.w_o.weight.data() + g * GD, E, false, E, GD,
                    w_o_panels.data() + g * per_group);
    // Each bias gradient in per-sequence pieces, summed as the rows of dy,
    // dq, dk, dv are made, then added in order (the same bits for any count
    // of workers).
    Buffer db_o(B * E), db_q(B * E), db_k(B * Ekv), db_v(B * Ekv);
    // Work items: a sequence, or when there are few, a share of its kv heads
    // (so that every core has some). Each reads its Q, and its K and V when
    // D is a multiple of 16, in one pass over its columns of whole rows (not
    // head by head: 256 bytes a row), keeps dQ, dK and dV in compact blocks
    // until they are done, then streams them out: step 3 reads them later.
    const std::size_t shares = std::min(H_kv, (4 * worker_count() + B - 1) / B);
    const std::size_t most = (H_kv + shares - 1) / shares;  // kv heads in a share
    // K's columns of a share start on a panel, so one packing serves its heads
    const bool at_once = packed && !tiled && D % kPanelWidth == 0;
    const std::size_t per_pack = at_once ? most * D : D;  // columns packed at once
    std::atomic<std::size_t> next_item{0};
    parallel_for(std::min(B * shares, worker_count()), [&](std::size_t, std::size_t) {
        Buffer dP(tiled ? 0 : Tq * Tk), dctx(Tq * GD);  // this worker's
        const bool pack_kv = packed && !tiled;  // the tiles read K and V in place
        Buffer vt(pack_kv ? packed_floats(per_pack, Tk) : 0);
        Buffer kp(pack_kv ? packed_floats(Tk, per_pack) : 0);
        Buffer dq_s(most * GD * Tq), dk_s(most * D * Tk), dv_s(most * D * Tk);  // compact
        std::vector<std::size_t> cols(blocks);
        for (std::size_t item; (item = next_item++) < B * shares;) {
            const std::size_t b = item / shares, share = item % shares;
            const std::size_t g0 = H_kv * share / shares, g1 = H_kv * (share + 1) / shares;
            const float* k_b = t.k.data() + b * Tk * Ekv;  // [Tk, Ekv]
            const float* v_b = t.v.data() + b * Tk * Ekv;
            const std::size_t kv_cols = (g1 - g0) * D;
            bool kv_finite = !may_skip;  // of the whole share, if packed at once
            if (at_once) {
                pack_panels(v_b + g0 * D, Ekv, true, kv_cols, Tk, vt.data());   // B = V^T
                pack_panels(k_b + g0 * D, Ekv, false, Tk, kv_cols, kp.data());  // B = K
                kv_finite = kv_finite ||
                            (!any_nonfinite(vt.data(), 1, packed_floats(kv_cols, Tk), 0) &&
                             !any_nonfinite(kp.data(), 1, packed_floats(Tk, kv_cols), 0));
            }
            const bool q_finite = may_skip && !any_nonfinite(t.q.data() + b * Tq * E + g0 * GD,
                                                             Tq, kv_cols * group, E);
            for (std::size_t g = g0; g < g1; ++g) {
                const float* v = v_b + g * D, *k = k_b + g * D;  // [Tk, D]
                const float* vt_g = vt.data(), *kp_g = kp.data();
                if (at_once) {  // the kv head's panels inside the share's
                    vt_g += (g - g0) * D * kPanelWidth;
                    kp_g += (g - g0) * D * Tk;
                }
                if (packed) {
                    packed_gemm(d_output.data() + b * Tq * E, E, Tq, E,
                                w_o_panels.data() + g * per_group, E, GD, dctx.data(), GD,
                                1.0f);
                    if (!at_once && pack_kv) {
                        pack_panels(v, Ekv, true, D, Tk, vt.data());   // B = V^T
                        pack_panels(k, Ekv, false, Tk, D, kp.data());  // B = K
                    }
                } else {
                    gemm({d_output.data() + b * Tq * E, Tq, E, E}, false,
                         {m.w_o.weight.data() + g * GD, E, GD, E}, false, dctx.data(), GD);
                }
                float* dk_g = dk_s.data() + (g - g0) * Tk * D;  // [Tk, D]
                float* dv_g = dv_s.data() + (g - g0) * Tk * D;
                if (tiled) {  // each head of the group adds its dK and dV
                    std::fill_n(dk_g, Tk * D, 0.0f);
                    std::fill_n(dv_g, Tk * D, 0.0f);
                    const HeadSizes sizes{Tq, Tk, D, E, Ekv, scale,
                                          in.causal ? 0 : kNotCausal, in.softcap};
                    for (std::size_t h = g * group; h < (g + 1) * group; ++h) {
                        float* dq_h = dq_s.data() + (h - g0 * group) * Tq * D;  // [Tq, D]
                        const std::size_t qo = b * Tq * E + h * D;
                        const HeadGrads x{t.q.data() + qo, k, v, t.context.data() + qo,
                                          dctx.data() + (h - g * group) * D, GD,
                                          &t.lse(b, h, 0), dq_h, dk_g, dv_g};
                        head_backward_tiled(x, b, h, sizes, in.mask, in.fill, in.score_bias);
                        if (in.rope == nullptr)  // with RoPE: summed below, once turned back
                            column_sums(dq_h, Tq, D, D, db_q.data() + b * E + h * D);
                        stream_rows(dq_h, D, Tq, D, dq_p + b * Tq * ldq + h * D, ldq);
                    }
                }
                // K and V checked where they are in cache: their panels, if packed
                bool finite = kv_finite || tiled;
                if (!at_once && !finite)
                    finite = packed ? !any_nonfinite(vt.data(), 1, vt.size(), 0) &&
                                          !any_nonfinite(kp.data(), 1, kp.size(), 0)
                                    : !any_nonfinite(k, Tk, D, Ekv) &&
                                          !any_nonfinite(v, Tk, D, Ekv);
                const std::size_t kv_bad =
                    finite ? 0
                           : std::max(past_last_nonfinite(k, Tk, D, Ekv),
                                      past_last_nonfinite(v, Tk, D, Ekv));
                for (std::size_t h = g * group; !tiled && h < (g + 1) * group; ++h) {
                    float* dq_h = dq_s.data() + (h - g0 * group) * Tq * D;  // [Tq, D]
                    head_backward(b, h, dP.data(), dctx.data(), packed ? vt_g : nullptr,
                                  at_once ? kv_cols : D, packed ? kp_g : nullptr, kv_bad,
                                  q_finite, cols.data(), dq_h, dk_g, dv_g);
                    if (in.rope == nullptr)  // with RoPE: summed below, once turned back
                        column_sums(dq_h, Tq, D, D, db_q.data() + b * E + h * D);
                    stream_rows(dq_h, D, Tq, D, dq_p + b * Tq * ldq + h * D, ldq);
                }
                const std::size_t ko = b * Tk * ldkv + g * D;
                if (in.rope == nullptr)  // with RoPE: summed below, once turned back
                    column_sums(dk_g, Tk, D, D, db_k.data() + b * Ekv + g * D);
                column_sums(dv_g, Tk, D, D, db_v.data() + b * Ekv + g * D);
                stream_rows(dk_g, D, Tk, D, dk_p + ko, ldkv);
                stream_rows(dv_g, D, Tk, D, dv_p + ko, ldkv);
            }
            if (share == 0)
                column_sums(d_output.data() + b * Tq * E, Tq, E, E, db_o.data() + b * E);
        }
        stream_fence();  // before step 3 reads them, on other threads too
    });
    g.w_o.bias = sum_of_pieces(db_o, B, E);
    if (in.rope == nullptr) {
        g.wq.bias = sum_of_pieces(db_q, B, E);
        g.wk.bias = sum_of_pieces(db_k, B, Ekv);
    } else {
        // RoPE's backward: q_rot = R q gives dq = R^T dq_rot (R is a
        // rotation), the same for k; their biases' gradients are then the
        // column sums of the turned-back rows, in order of the rows
        rope_rows(dq_p, B * Tq, Tq, H, D, ldq, *in.rope, true);
        rope_rows(dk_p, B * Tk, Tk, H_kv, D, ldkv, *in.rope, true);
        g.wq.bias = Tensor1::from_shape({E});
        g.wk.bias = Tensor1::from_shape({Ekv});
        column_sums(dq_p, B * Tq, E, ldq, g.wq.bias.data());
        column_sums(dk_p, B * Tk, Ekv, ldkv, g.wk.bias.data());
    }
    g.wv.bias = sum_of_pieces(db_v, B, Ekv);
    // each scratch tensor below goes as soon as it is used: the peak memory

    // 3) the three projections
    if (self_attention) {
        // One product for the three weights' gradients, [dQ dK dV]^T X, and
        // one for dL/dX = [dQ dK dV] [Wq; Wk; Wv]: X is read once, and
        // dL/dX written once, not as three tensors to add.
        const std::size_t R = B * Tq;
        const float* x = in.query.data();
        Buffer dw(W * E), stacked(W * E);
        product({dqkv.data(), R, W, W}, true, {x, R, E, E}, false, dw.data(), E);  // [W, E]
        const Linear* layers[3] = {&m.wq, &m.wk, &m.wv};
        LinearGrad* grads[3] = {&g.wq, &g.wk, &g.wv};
        for (std::size_t l = 0, row = 0; l < 3; row += layers[l]->out_features(), ++l) {
            const std::size_t n = layers[l]->out_features();
            grads[l]->weight = Tensor2::from_shape({n, E});
            std::copy_n(dw.data() + row * E, n * E, grads[l]->weight.data());
            std::copy_n(layers[l]->weight.data(), n * E, stacked.data() + row * E);
        }
        g.input = Tensor3::from_shape({B, Tq, E});
        product({dqkv.data(), R, W, W}, false, {stacked.data(), W, E, E}, false,
                g.input.data(), E);  // [R, E]
        return g;
    }
    g.query = Tensor3::from_shape({B, Tq, E});
    g.wq.weight = linear_backward(in.query.data(), dq.data(), B * Tq, m.wq, g.query.data());
    dq = Tensor3();
    g.key = Tensor3::from_shape({B, Tk, E});
    g.wk.weight = linear_backward(in.key.data(), dk.data(), B * Tk, m.wk, g.key.data());
    dk = Tensor3();
    g.value = Tensor3::from_shape({B, Tk, E});
    g.wv.weight = linear_backward(in.value.data(), dv.data(), B * Tk, m.wv, g.value.data());
    return g;
}

}  // namespace mha::fast
