// Past the articles: the FlashAttention-2 backward. The forward
// (tiled_attention()) kept O and one number per row, L = m + log(l); the
// backward rebuilds each tile's weights from them, P = e^{S - L}, instead
// of reading a [Tq, Tk] tensor of weights.
//
// B = batch, H = heads, H_kv = kv heads, Tq / Tk = queries / keys,
// D = head_dim; a tile is [rows, cols] of a query block and a key block.
#include "mha/tiled_backward.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

#include <xtensor-blas/xlinalg.hpp>
#include <xtensor/xbuilder.hpp>
#include <xtensor/xmath.hpp>
#include <xtensor/xview.hpp>

#include "mha/heads.hpp"
#include "mha/linear.hpp"

namespace mha {

TiledGrads tiled_attention_backward(const Tensor4& q, const Tensor4& k, const Tensor4& v,
                                    const Tensor4& o, const Tensor4& d_o, const Tensor3& lse,
                                    const MaskMod& mask_mod, float fill, std::size_t block_q,
                                    std::size_t block_k, const ScoreModGrad& score_mod) {
    const std::size_t B = q.shape(0), H = q.shape(1), Tq = q.shape(2), D = q.shape(3);
    const std::size_t H_kv = k.shape(1), Tk = k.shape(2);
    require_nonzero({B, H, Tq, D, block_q, block_k},
                    "tiled_attention_backward q [B, H, Tq, D], blocks");
    if (k.shape(0) != B || H_kv == 0 || H % H_kv != 0 || k.shape(3) != D || Tk == 0 ||
        v.shape() != k.shape() || o.shape() != q.shape() || d_o.shape() != q.shape() ||
        lse.shape() != Tensor3::shape_type{B, H, Tq}) {
        fail("tiled_attention_backward: q " + shape_of(q) + ", k " + shape_of(k) + ", v " +
             shape_of(v) + ", o " + shape_of(o) + ", d_o " + shape_of(d_o) + " and lse " +
             shape_of(lse) + " must be [B, H, Tq, D], [B, H_kv, Tk, D] twice, [B, H, Tq, D]"
             " twice and [B, H, Tq], H_kv dividing H");
    }
    if (score_mod.mod && !score_mod.derivative) {
        fail("tiled_attention_backward: the score_mod has no derivative ds'/ds; pass the "
             "pair (alibi_with_grad(), softcap_with_grad(), ...)");
    }
    const ScoreMod& mod = score_mod.mod;               // s' = mod(s)
    const ScoreMod& mod_grad = score_mod.derivative;   // ds'/ds
    const std::size_t group = H / H_kv;  // query heads per kv head
    const float scale = 1.0f / std::sqrt(static_cast<float>(D));
    // A hidden tile has P = 0, so it adds 0 to every gradient, unless a NaN
    // or an Inf meets that 0 (0 x NaN is NaN): then no tile is skipped.
    const bool finite = xt::all(xt::isfinite(q)) && xt::all(xt::isfinite(k)) &&
                        xt::all(xt::isfinite(v)) && xt::all(xt::isfinite(o)) &&
                        xt::all(xt::isfinite(d_o));
    const bool may_skip = fill == kNegInf && finite;
    TiledGrads g{xt::zeros<float>({B, H, Tq, D}), xt::zeros<float>({B, H_kv, Tk, D}),
                 xt::zeros<float>({B, H_kv, Tk, D})};
    for (std::size_t b = 0; b < B; ++b)
        for (std::size_t h = 0; h < H; ++h) {
            const std::size_t kv = h / group;  // the kv head this query head reads
            // 1) D_i = rowsum(dO o O): sum_j P_ij dP_ij without the P's, since
            //    sum_j P_ij (dO_i . V_j) = dO_i . (sum_j P_ij V_j) = dO_i . O_i
            Tensor1 rowsum_do_o = Tensor1::from_shape({Tq});  // [Tq]
            for (std::size_t i = 0; i < Tq; ++i) {
                float sum = 0.0f;
                for (std::size_t d = 0; d < D; ++d) sum += d_o(b, h, i, d) * o(b, h, i, d);
                rowsum_do_o(i) = sum;
            }
            // A row that sees no key under a finite fill has Tk equal scores,
            // so weights 1 / Tk; L cannot rebuild them: in float,
            // -1e10 + log(Tk) is -1e10 (the step between floats there is 1024)
            std::vector<bool> sees_nothing(Tq, false);  // [Tq]
            for (std::size_t i = 0; mask_mod && fill != kNegInf && i < Tq; ++i) {
                bool none = true;
                for (std::size_t j = 0; none && j < Tk; ++j) none = !mask_mod(b, h, i, j);
                sees_nothing[i] = none;
            }
            // 2) the keys a block at a time (the outer loop, as in FA-2): the
            //    block's dK_j and dV_j are summed over every query block
            for (std::size_t j0 = 0; j0 < Tk; j0 += block_k) {
                const std::size_t cols = std::min(block_k, Tk - j0);
                auto keys = xt::range(j0, j0 + cols);
                const Tensor2 kb = xt::view(k, b, kv, keys);  // K_j [cols, D]
                const Tensor2 vb = xt::view(v, b, kv, keys);  // V_j [cols, D]
                Tensor2 dk_j = xt::zeros<float>({cols, D});   // [cols, D]
                Tensor2 dv_j = xt::zeros<float>({cols, D});   // [cols, D]
                for (std::size_t i0 = 0; i0 < Tq; i0 += block_q) {
                    const std::size_t rows = std::min(block_q, Tq - i0);
                    auto queries = xt::range(i0, i0 + rows);
                    // 3) which scores of the tile the mask lets through; a
                    //    tile with none is skipped whole (causal: the upper
                    //    right half of the tiles)
                    xt::xtensor<bool, 2> seen = xt::ones<bool>({rows, cols});  // [rows, cols]
                    bool any = !mask_mod;
                    for (std::size_t r = 0; mask_mod && r < rows; ++r)
                        for (std::size_t c = 0; c < cols; ++c) {
                            seen(r, c) = mask_mod(b, h, i0 + r, j0 + c);
                            any = any || seen(r, c);
                        }
                    if (!any && may_skip) continue;
                    const Tensor2 qb = xt::view(q, b, h, queries);     // Q_i [rows, D]
                    const Tensor2 dob = xt::view(d_o, b, h, queries);  // dO_i [rows, D]
                    // 4) recompute the tile's weights from L, as the forward
                    //    made them: S = scale Q_i K_j^T, S' = mod(S), then
                    //    P = e^{S' - L}   [rows, D] x [D, cols] -> [rows, cols]
                    const Tensor2 raw = xt::linalg::dot(qb, xt::transpose(kb)) * scale;
                    Tensor2 p = Tensor2::from_shape({rows, cols});  // [rows, cols]
                    for (std::size_t r = 0; r < rows; ++r) {
                        const float L = lse(b, h, i0 + r);
                        for (std::size_t c = 0; c < cols; ++c) {
                            const float s_mod =
                                mod ? mod(raw(r, c), b, h, i0 + r, j0 + c) : raw(r, c);
                            const float s = seen(r, c) ? s_mod : fill;
                            // a row that sees no key (L = -inf) has weights 0
                            p(r, c) = L == kNegInf           ? 0.0f
                                      : sees_nothing[i0 + r] ? 1.0f / Tk
                                                             : std::exp(s - L);
                        }
                    }
                    // 5) O = P V:  dV_j += P^T dO_i  [cols, rows] x [rows, D]
                    dv_j += xt::linalg::dot(xt::transpose(p), dob);
                    // 6) dP = dO_i V_j^T  [rows, D] x [D, cols] -> [rows, cols]
                    Tensor2 ds = xt::linalg::dot(dob, xt::transpose(vb));
                    // 7) the softmax: dS' = P o (dP - D_i); a hidden score is
                    //    a constant (the fill), so its gradient is 0; then
                    //    the score_mod: dS = dS' o ds'/ds at the raw score
                    for (std::size_t r = 0; r < rows; ++r)
                        for (std::size_t c = 0; c < cols; ++c) {
                            if (!seen(r, c)) {
                                ds(r, c) = 0.0f;
                                continue;
                            }
                            ds(r, c) = p(r, c) * (ds(r, c) - rowsum_do_o(i0 + r));
                            if (mod) ds(r, c) *= mod_grad(raw(r, c), b, h, i0 + r, j0 + c);
                        }
                    // 8) S = scale Q K^T:  dQ_i += scale dS K_j
                    //    [rows, cols] x [cols, D] -> [rows, D]
                    xt::view(g.dq, b, h, queries) += xt::linalg::dot(ds, kb) * scale;
                    // 9) and dK_j += scale dS^T Q_i  [cols, rows] x [rows, D]
                    dk_j += xt::linalg::dot(xt::transpose(ds), qb) * scale;
                }
                // 10) the group's query heads share K and V: their dK, dV add
                xt::view(g.dk, b, kv, keys) += dk_j;
                xt::view(g.dv, b, kv, keys) += dv_j;
            }
        }
    return g;
}

AttentionGrads backward_tiled(const MultiHeadAttention& m, const Tensor3& query,
                              const Tensor3& key, const Tensor3& value,
                              const Tensor3& d_output, const MaskMod& mask_mod, float fill,
                              std::size_t block_q, std::size_t block_k,
                              const ScoreModGrad& score_mod, const std::optional<Rope>& rope) {
    m.check_inputs(query, key, value);
    if (d_output.shape() != query.shape()) {
        fail("backward_tiled: d_output " + shape_of(d_output) +
             " must have the output's shape [B, Tq, E] = " + shape_of(query));
    }
    if (score_mod.mod && !score_mod.derivative) {
        fail("backward_tiled: the score_mod has no derivative ds'/ds; pass the pair "
             "(alibi_with_grad(), softcap_with_grad(), ...)");
    }
    const std::size_t H = m.num_heads(), H_kv = m.num_kv_heads();
    // The forward, keeping only what the backward reads
    Tensor4 q = split_heads(linear(query, m.wq), H);     // [B, H, Tq, D]
    Tensor4 k = split_heads(linear(key, m.wk), H_kv);    // [B, H_kv, Tk, D]
    if (rope) {  // query i turned to position i, key j to j
        q = apply_rope(q, *rope);  // [B, H, Tq, D]
        k = apply_rope(k, *rope);  // [B, H_kv, Tk, D]
    }
    const Tensor4 v = split_heads(linear(value, m.wv), H_kv);  // [B, H_kv, Tk, D]
    const TiledAttention f = tiled_attention(q, k, v, mask_mod, fill, block_q, block_k,
                                               score_mod.mod);
    const Tensor3 context = merge_heads(f.context);            // [B, Tq, E]
    // and back: w_o, the tiles, the projections
    AttentionGrads g;
    const Tensor3 d_context = linear_backward(context, d_output, m.w_o, g.w_o);  // [B, Tq, E]
    const Tensor4 d_o = split_heads(d_context, H);             // [B, H, Tq, D]
    const TiledGrads t = tiled_attention_backward(q, k, v, f.context, d_o, f.lse, mask_mod,
                                                  fill, block_q, block_k, score_mod);
    // RoPE's backward: y = R x gives dx = R^T dy, each pair turned back
    const Tensor4 dq = rope ? apply_rope_backward(t.dq, *rope) : t.dq;  // [B, H, Tq, D]
    const Tensor4 dk = rope ? apply_rope_backward(t.dk, *rope) : t.dk;  // [B, H_kv, Tk, D]
    g.query = linear_backward(query, merge_heads(dq), m.wq, g.wq);  // [B, Tq, E]
    g.key = linear_backward(key, merge_heads(dk), m.wk, g.wk);      // [B, Tk, E]
    g.value = linear_backward(value, merge_heads(t.dv), m.wv, g.wv);  // [B, Tk, E]
    return g;
}

}  // namespace mha
