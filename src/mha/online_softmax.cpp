// Past the articles: the online softmax, and attention in tiles.
//
// B = batch, H = heads, H_kv = kv heads, Tq / Tk = queries / keys,
// D = head_dim; a tile is [rows, cols] of a query block and a key block.
#include "mha/online_softmax.hpp"

#include <algorithm>
#include <cmath>

#include <xtensor-blas/xlinalg.hpp>
#include <xtensor/xbuilder.hpp>
#include <xtensor/xview.hpp>

namespace mha {

void take_block(RunningSoftmax& state, const float* block, std::size_t n) {
    float max = state.max;
    bool nan = false;
    for (std::size_t j = 0; j < n; ++j) {
        max = std::max(max, block[j]);
        nan = nan || std::isnan(block[j]);
    }
    if (nan) {  // a NaN spoils its row, as in softmax_row()
        state.sum = NAN;
        return;
    }
    if (max == -INFINITY) return;  // only masked keys so far: nothing to add
    // The old terms were e^{s - m_old}; against the new max they are
    // e^{s - m_new} = e^{s - m_old} e^{m_old - m_new}.
    float sum = state.sum * std::exp(state.max - max);
    for (std::size_t j = 0; j < n; ++j) sum += std::exp(block[j] - max);
    state = {max, sum};
}

void online_softmax_row(float* row, std::size_t n, std::size_t block,
                        std::vector<RunningSoftmax>* steps) {
    require_nonzero({block}, "online_softmax_row block");
    RunningSoftmax state;
    for (std::size_t j0 = 0; j0 < n; j0 += block) {  // pass 1: the max and the sum
        take_block(state, row + j0, std::min(block, n - j0));
        if (steps != nullptr) steps->push_back(state);
    }
    for (std::size_t j = 0; j < n; ++j) {  // pass 2: the weights
        if (std::isnan(state.sum)) row[j] = NAN;
        else row[j] = state.max == -INFINITY ? 0.0f : std::exp(row[j] - state.max) / state.sum;
    }
}

TiledAttention tiled_attention(const Tensor4& q, const Tensor4& k, const Tensor4& v,
                               const Mask* mask, float fill, std::size_t block_q,
                               std::size_t block_k) {
    if (mask != nullptr)
        check_mask(*mask, q.shape(0), q.shape(1), q.shape(2), k.shape(2));
    return tiled_attention(q, k, v, mask != nullptr ? mask_mod_of(*mask) : MaskMod{}, fill,
                           block_q, block_k);
}

TiledAttention tiled_attention(const Tensor4& q, const Tensor4& k, const Tensor4& v,
                               const MaskMod& mask_mod, float fill, std::size_t block_q,
                               std::size_t block_k, const ScoreMod& score_mod) {
    const std::size_t B = q.shape(0), H = q.shape(1), Tq = q.shape(2), D = q.shape(3);
    const std::size_t H_kv = k.shape(1), Tk = k.shape(2);
    require_nonzero({B, H, Tq, D, block_q, block_k}, "tiled_attention q [B, H, Tq, D], blocks");
    if (k.shape(0) != B || H_kv == 0 || H % H_kv != 0 || k.shape(3) != D || Tk == 0 ||
        v.shape() != k.shape()) {
        fail("tiled_attention: q " + shape_of(q) + ", k " + shape_of(k) + " and v " +
             shape_of(v) + " must be [B, H, Tq, D], [B, H_kv, Tk, D] twice, H_kv dividing H");
    }
    const std::size_t group = H / H_kv;
    const float scale = 1.0f / std::sqrt(static_cast<float>(D));
    TiledAttention out{xt::zeros<float>({B, H, Tq, D}), Tensor3::from_shape({B, H, Tq})};
    for (std::size_t b = 0; b < B; ++b)
        for (std::size_t h = 0; h < H; ++h)
            for (std::size_t i0 = 0; i0 < Tq; i0 += block_q) {
                const std::size_t rows = std::min(block_q, Tq - i0);
                const Tensor2 qb = xt::view(q, b, h, xt::range(i0, i0 + rows));  // [rows, D]
                std::vector<RunningSoftmax> state(rows);
                Tensor2 acc = xt::zeros<float>({rows, D});  // the weighted values so far
                for (std::size_t j0 = 0; j0 < Tk; j0 += block_k) {
                    const std::size_t cols = std::min(block_k, Tk - j0);
                    const Tensor2 kb = xt::view(k, b, h / group, xt::range(j0, j0 + cols));
                    const Tensor2 vb = xt::view(v, b, h / group, xt::range(j0, j0 + cols));
                    // The only scores that exist: [rows, D] x [D, cols] -> [rows, cols]
                    Tensor2 s = xt::linalg::dot(qb, xt::transpose(kb)) * scale;
                    for (std::size_t r = 0; r < rows; ++r) {
                        if (score_mod) {  // then the score_mod, before the mask
                            for (std::size_t c = 0; c < cols; ++c)
                                s(r, c) = score_mod(s(r, c), b, h, i0 + r, j0 + c);
                        }
                        if (mask_mod) {
                            for (std::size_t c = 0; c < cols; ++c)
                                if (!mask_mod(b, h, i0 + r, j0 + c)) s(r, c) = fill;
                        }
                        const float old_max = state[r].max;
                        take_block(state[r], &s(r, 0), cols);
                        const float m = state[r].max;
                        if (m == -INFINITY) continue;  // masked so far: nothing to add
                        // rescale what was added against the old max, then add
                        // this block's e^{s - m} V
                        const float rescale = std::exp(old_max - m);
                        for (std::size_t d = 0; d < D; ++d) acc(r, d) *= rescale;
                        for (std::size_t c = 0; c < cols; ++c) {
                            const float p = std::exp(s(r, c) - m);
                            for (std::size_t d = 0; d < D; ++d) acc(r, d) += p * vb(c, d);
                        }
                    }
                }
                for (std::size_t r = 0; r < rows; ++r) {  // divide by the sum
                    const RunningSoftmax& st = state[r];
                    // a NaN score spoils its row, as in softmax_row()
                    const bool nan = std::isnan(st.sum);
                    const bool none = st.max == -INFINITY && !nan;  // every key masked
                    for (std::size_t d = 0; d < D; ++d)
                        out.context(b, h, i0 + r, d) = nan ? NAN
                                                       : none ? 0.0f
                                                              : acc(r, d) / st.sum;
                    out.lse(b, h, i0 + r) = nan    ? NAN
                                            : none ? -INFINITY
                                                   : st.max + std::log(st.sum);
                }
            }
    return out;
}

}  // namespace mha
