// The engine's FlashAttention-2 backward of one (sequence, head) pair.
//
// Tq / Tk = queries / keys, D = head_dim, E = embed_dim (the stride of q's
// and o's rows), Ekv = H_kv * D (the stride of k's and v's).
#include "mha/fast/tiled_backward.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

#include "mha/fast/blas.hpp"
#include "mha/fast/memory.hpp"
#include "mha/fast/packed_gemm.hpp"
#include "mha/fast/softmax.hpp"

namespace mha::fast {

namespace {

// A tile: 64 queries by 64 keys, its P and dS 16 KiB each; a key block's
// dK and dV [64, D] stay in cache over all the query blocks.
constexpr std::size_t kQueries = 64, kKeys = 64;

// dS = P o (dP - D_i) on a tile that no mask or causal limit touches: rows
// x c, kKeys apart, in vectors (the compiler's).
void softmax_back_tile(const float* __restrict p, float* __restrict ds, const float* d_i,
                       std::size_t rows, std::size_t c) {
    for (std::size_t r = 0; r < rows; ++r) {
        const float* __restrict pr = p + r * kKeys;
        float* __restrict dsr = ds + r * kKeys;
        const float di = d_i[r];
        for (std::size_t j = 0; j < c; ++j) dsr[j] = pr[j] * (dsr[j] - di);
    }
}

}  // namespace

void head_backward_tiled(const HeadGrads& x, std::size_t b, std::size_t h, const HeadSizes& s,
                         const Mask* mask, float fill, const Tensor4* score_bias) {
    const std::size_t Tq = s.Tq, Tk = s.Tk, D = s.D, E = s.E, Ekv = s.Ekv;
    const bool causal = s.causal != kNotCausal;
    const std::size_t blocks = (Tq + kQueries - 1) / kQueries;
    thread_local Buffer work;
    const bool capped = s.softcap > 0.0f;
    work.resize((capped ? 3 : 2) * kQueries * kKeys + 2 * kKeys * D + Tq);
    float* const p = work.data();            // P [rows, cols], kKeys apart
    float* const ds = p + kQueries * kKeys;  // dP, then dS [rows, cols]
    // with soft-capping: ds'/ds = 1 - tanh^2(s / C) [rows, cols], kKeys apart
    float* const dcap = ds + kQueries * kKeys;
    float* const dk_j = dcap + (capped ? kQueries * kKeys : 0);  // [cols, D]
    float* const dv_j = dk_j + kKeys * D;       // [cols, D]
    float* const d_row = dv_j + kKeys * D;      // D_i [Tq]
    thread_local std::vector<std::size_t> cols;  // [blocks]
    thread_local std::vector<unsigned char> sees_nothing;  // [Tq]
    // With the packed kernels: Q and dO of the head packed once (B of dK
    // and dV), Q copied with its rows together (A of S), K_j^T, V_j^T and
    // K_j packed once per key block; P and dS are read in place, by columns
    // as P^T and dS^T
    const bool packed = packed_products_on();
    thread_local Buffer panels;
    panels.resize(packed ? 2 * packed_floats(Tq, D) + Tq * D + 2 * packed_floats(D, kKeys) +
                               packed_floats(kKeys, D)
                         : 0);
    float* const qp = panels.data();                // Q [Tq, D]
    float* const dop = qp + packed_floats(Tq, D);   // dO [Tq, D]
    float* const qc = dop + packed_floats(Tq, D);   // Q [Tq, D], rows D apart
    float* const kt = qc + Tq * D;                  // K_j^T [D, w]
    float* const vt = kt + packed_floats(D, kKeys); // V_j^T [D, w]
    float* const kp = vt + packed_floats(D, kKeys); // K_j [w, D]
    if (packed) {
        pack_panels(x.q, E, false, Tq, D, qp);
        pack_panels(x.d_o, x.ld_do, false, Tq, D, dop);
        // Q's rows, E apart in place, fall on few of the L1 cache's sets
        for (std::size_t i = 0; i < Tq; ++i) std::copy_n(x.q + i * E, D, qc + i * D);
    }

    // 1) D_i = rowsum(dO o O), which is sum_j P_ij dP_ij
    for (std::size_t i = 0; i < Tq; ++i) {
        const float *d_o = x.d_o + i * x.ld_do, *o = x.o + i * E;
        float sum = 0.0f;
        for (std::size_t d = 0; d < D; ++d) sum += d_o[d] * o[d];
        d_row[i] = sum;
    }
    // 2) a row that sees no key under a finite fill has Tk equal scores,
    //    weights 1 / Tk, which L (the fill + log Tk, rounded) cannot rebuild
    sees_nothing.assign(Tq, 0);
    for (std::size_t i = 0; mask != nullptr && fill != kNegInf && i < Tq; ++i)
        sees_nothing[i] = visible_columns(*mask, b, h, i, 1, Tk) == 0;
    // 3) the keys each query block computes: past the last key its rows see,
    //    P = 0 and dS = 0, unless 0 meets a NaN or an Inf
    const bool may_skip = (mask != nullptr && fill == kNegInf) || causal;
    const bool skip = may_skip && !any_nonfinite(x.q, Tq, D, E) && !any_nonfinite(x.o, Tq, D, E) &&
                      !any_nonfinite(x.d_o, Tq, D, x.ld_do) && !any_nonfinite(x.k, Tk, D, Ekv) &&
                      !any_nonfinite(x.v, Tk, D, Ekv);
    cols.resize(blocks);
    for (std::size_t ib = 0; ib < blocks; ++ib) {
        const std::size_t i0 = ib * kQueries, rows = std::min(kQueries, Tq - i0);
        std::size_t c = Tk;
        if (skip && mask != nullptr) c = visible_columns(*mask, b, h, i0, rows, Tk);
        if (skip && causal) c = std::min(c, std::min(Tk, i0 + rows + s.causal));
        cols[ib] = c;
    }
    std::fill(x.dq, x.dq + Tq * D, 0.0f);
    HeadSizes uncapped = s;  // b) caps the scores itself, keeping the derivative
    uncapped.softcap = 0.0f;
    // 4) per block of keys (dK_j and dV_j summed in cache), per block of
    //    queries that sees it
    for (std::size_t j0 = 0; j0 < Tk; j0 += kKeys) {
        const std::size_t w = std::min(kKeys, Tk - j0);
        const float *k = x.k + j0 * Ekv, *v = x.v + j0 * Ekv;  // K_j, V_j [w, D]
        std::fill(dk_j, dk_j + w * D, 0.0f);
        std::fill(dv_j, dv_j + w * D, 0.0f);
        if (packed) {
            pack_panels(k, Ekv, true, D, w, kt);
            pack_panels(v, Ekv, true, D, w, vt);
            pack_panels(k, Ekv, false, w, D, kp);
        }
        for (std::size_t ib = 0; ib < blocks; ++ib) {
            if (cols[ib] <= j0) continue;  // an empty tile
            const std::size_t i0 = ib * kQueries, rows = std::min(kQueries, Tq - i0);
            const std::size_t c = std::min(w, cols[ib] - j0);  // keys of the tile
            const float *q = x.q + i0 * E, *d_o = x.d_o + i0 * x.ld_do;
            // a) S = scale Q_i K_j^T  [rows, D] x [D, c]
            if (packed) packed_gemm(qc + i0 * D, D, rows, D, kt, D, c, p, kKeys, s.scale);
            else gemm({q, rows, D, E}, false, {k, c, D, Ekv}, true, p, kKeys, s.scale);
            // b) P = e^{S' - L}, S' after the soft-cap, the bias and the mask
            //    as in the forward; the cap's derivative kept for e)
            for (std::size_t r = 0; r < rows; ++r) {
                float* row = p + r * kKeys;
                const float L = x.lse[i0 + r];
                // s' = C tanh(s / C), and ds'/ds = 1 - tanh^2(s / C) kept
                if (capped) soft_cap_row(row, c, s.softcap, dcap + r * kKeys);
                bias_and_mask(row, c, b, h, i0 + r, j0, uncapped, mask, fill, score_bias);
                if (std::isnan(L) || L == kNegInf) {  // NaN spoils; -inf sees nothing
                    std::fill(row, row + c, std::isnan(L) ? NAN : 0.0f);
                } else if (sees_nothing[i0 + r]) {
                    std::fill(row, row + c, 1.0f / static_cast<float>(Tk));
                } else {
                    exp_sum(row, c, L);  // L is at least every score of the row
                }
            }
            // c) dV_j += P^T dO_i  [c, rows] x [rows, D]
            if (packed) {
                packed_gemm_add(p, kKeys, true, c, rows, dop + i0 * kPanelWidth, Tq, D, dv_j, D,
                                1.0f, true);
            } else {
                gemm({p, rows, c, kKeys}, true, {d_o, rows, D, x.ld_do}, false, dv_j, D, 1.0f,
                     1.0f);
            }
            // d) dP = dO_i V_j^T  [rows, D] x [D, c]
            if (packed) packed_gemm(d_o, x.ld_do, rows, D, vt, D, c, ds, kKeys, 1.0f);
            else gemm({d_o, rows, D, x.ld_do}, false, {v, c, D, Ekv}, true, ds, kKeys);
            // e) dS' = P o (dP - D_i); a masked score is a constant: 0; then
            //    through the cap: dS = dS' o (1 - tanh^2(s / C))
            const bool whole = mask == nullptr && (!causal || j0 + c <= i0 + s.causal + 1);
            if (whole) softmax_back_tile(p, ds, d_row + i0, rows, c);
            for (std::size_t r = 0; !whole && r < rows; ++r) {
                const std::size_t i = i0 + r;
                const float* pr = p + r * kKeys;
                float* dsr = ds + r * kKeys;
                const auto* keep = mask == nullptr ? nullptr
                                   : reinterpret_cast<const unsigned char*>(
                                         mask_row(*mask, b, h, i)) + j0;
                const float di = d_row[i];
                for (std::size_t j = 0; j < c; ++j) {
                    const bool hidden = (keep != nullptr && keep[j] == 0) ||
                                        (causal && j0 + j > i + s.causal);
                    dsr[j] = hidden ? 0.0f : pr[j] * (dsr[j] - di);
                }
            }
            for (std::size_t r = 0; capped && r < rows; ++r) {
                float* __restrict dsr = ds + r * kKeys;
                const float* __restrict dc = dcap + r * kKeys;
                for (std::size_t j = 0; j < c; ++j) dsr[j] *= dc[j];
            }
            // f) dQ_i += scale dS K_j  [rows, c] x [c, D], and
            // g) dK_j += scale dS^T Q_i  [c, rows] x [rows, D]
            if (packed) {
                packed_gemm_add(ds, kKeys, false, rows, c, kp, w, D, x.dq + i0 * D, D, s.scale,
                                true);
                packed_gemm_add(ds, kKeys, true, c, rows, qp + i0 * kPanelWidth, Tq, D, dk_j, D,
                                s.scale, true);
            } else {
                gemm({ds, rows, c, kKeys}, false, {k, c, D, Ekv}, false, x.dq + i0 * D, D,
                     s.scale, 1.0f);
                gemm({ds, rows, c, kKeys}, true, {q, rows, D, E}, false, dk_j, D, s.scale, 1.0f);
            }
        }
        // 5) this key block's dK and dV, added: the group's heads share them
        for (std::size_t t = 0; t < w * D; ++t) {
            x.dk[j0 * D + t] += dk_j[t];
            x.dv[j0 * D + t] += dv_j[t];
        }
    }
}

}  // namespace mha::fast
