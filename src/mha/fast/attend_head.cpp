// One (sequence, head) pair of the forward, a block of query rows at a time.
//
// Tq / Tk = queries / keys, D = head_dim, E = embed_dim (the stride of q's
// rows), Ekv = H_kv * D (the stride of k's and v's).
#include "mha/fast/attend_head.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>

#include "mha/fast/memory.hpp"

#include "mha/fast/blas.hpp"
#include "mha/fast/block_mask.hpp"
#include "mha/fast/packed_gemm.hpp"
#include "mha/fast/softmax.hpp"

namespace mha::fast {

namespace {

// A float is Inf or NaN when its exponent bits are all ones; without the
// sign bit, adding one to the exponent then carries into the top bit, and
// only for them, so OR-ing those sums keeps any such carry (integer adds
// and ORs, which the compiler does 4 floats at a time).
constexpr std::uint32_t kCarry = 0x80000000u;
inline std::uint32_t carry_of(const float* x) {
    std::uint32_t bits;
    std::memcpy(&bits, x, sizeof bits);
    return (bits & 0x7fffffffu) + 0x00800000u;
}

// Query rows per block: 64 rows of 2048 scores are 512 KiB, an L2 cache.
constexpr std::size_t kRowBlock = 64;
// Keys per tile of the tiled path: a [64, 256] tile of scores is 64 KiB,
// and a multiple of the packed panels' 16 columns.
constexpr std::size_t kKeyBlock = 256;

}  // namespace

// The last rows usually see the most, so they go first, and the others
// only check the columns past them.
std::size_t visible_columns(const Mask& mask, std::size_t b, std::size_t h,
                            std::size_t i0, std::size_t rows, std::size_t Tk) {
    std::size_t cols = 0;
    for (std::size_t r = rows; r-- > 0;) {
        const bool* keep = mask_row(mask, b, h, i0 + r);
        unsigned char any = 0;
        for (std::size_t j = cols; j < Tk; ++j) any |= keep[j];
        if (any == 0) continue;
        std::size_t last = Tk;
        while (!keep[last - 1]) --last;
        cols = last;
    }
    return cols;
}

std::size_t past_last_nonfinite(const float* x, std::size_t rows, std::size_t D,
                                std::size_t ld) {
    for (std::size_t j = rows; j > 0; --j) {
        std::uint32_t carry = 0;
        for (std::size_t d = 0; d < D; ++d) carry |= carry_of(x + (j - 1) * ld + d);
        if (carry & kCarry) return j;
    }
    return 0;
}

bool any_nonfinite(const float* x, std::size_t rows, std::size_t D, std::size_t ld) {
    std::uint32_t lanes[8] = {};  // 8 running ORs, which the compiler keeps in vectors
    for (std::size_t r = 0; r < rows; ++r) {
        const float* row = x + r * ld;
        std::size_t d = 0;
        for (; d + 8 <= D; d += 8)
            for (std::size_t l = 0; l < 8; ++l) lanes[l] |= carry_of(row + d + l);
        for (; d < D; ++d) lanes[0] |= carry_of(row + d);
    }
    std::uint32_t carry = 0;
    for (std::uint32_t l : lanes) carry |= l;
    return (carry & kCarry) != 0;
}

namespace {

// The key columns a block of query rows i0 .. i0+rows-1 computes: all Tk,
// or, where masked weights are exactly 0 (a mask under the -inf fill, the
// causal limit), up to the last key one of its rows sees; never short of a
// NaN or Inf in V (v_bad, found on first need), which 0 weights must meet.
std::size_t block_columns(const Head& x, std::size_t b, std::size_t h, std::size_t i0,
                          std::size_t rows, const HeadSizes& s, const Mask* mask, float fill,
                          std::size_t& v_bad) {
    const std::size_t Tk = s.Tk;
    std::size_t cols = Tk;
    if (mask != nullptr && fill == kNegInf) cols = visible_columns(*mask, b, h, i0, rows, Tk);
    if (s.causal != kNotCausal) cols = std::min(cols, std::min(Tk, i0 + rows + s.causal));
    if (cols < Tk) {
        if (v_bad > Tk) v_bad = past_last_nonfinite(x.v, Tk, s.D, s.Ekv);
        cols = std::max(cols, v_bad);
    }
    return cols;
}

// The score bias on one row: keys j0 .. j0+cols-1 of query i.
void add_bias(float* row, std::size_t cols, std::size_t b, std::size_t h, std::size_t i,
              std::size_t j0, const Tensor4* score_bias) {
    if (score_bias == nullptr) return;
    const float* add = broadcast_row(*score_bias, b, h, i) + j0;
    for (std::size_t j = 0; j < cols; ++j) row[j] += add[j];
}

// The mask and the causal limit on one row: keys j0 .. j0+cols-1 of query i.
void mask_part(float* row, std::size_t cols, std::size_t b, std::size_t h, std::size_t i,
               std::size_t j0, const HeadSizes& s, const Mask* mask, float fill) {
    if (mask != nullptr) {
        // The bools read as bytes (which they are): the compiler then does
        // 16 at a time without a branch, which it does not for bool, and a
        // branch mispredicted at every row's diagonal.
        const auto* keep = reinterpret_cast<const unsigned char*>(mask_row(*mask, b, h, i)) + j0;
        for (std::size_t j = 0; j < cols; ++j) row[j] = keep[j] != 0 ? row[j] : fill;
    }
    if (s.causal != kNotCausal) {  // keys past i + causal
        const std::size_t last = i + s.causal;  // the last key query i sees
        for (std::size_t j = last + 1 > j0 ? last + 1 - j0 : 0; j < cols; ++j) row[j] = kNegInf;
    }
}

}  // namespace

// Cap, bias, mask and the causal limit on one row: keys j0 .. j0+cols-1 of query i.
void bias_and_mask(float* row, std::size_t cols, std::size_t b, std::size_t h, std::size_t i,
                   std::size_t j0, const HeadSizes& s, const Mask* mask, float fill,
                   const Tensor4* score_bias) {
    if (s.softcap > 0.0f) soft_cap_row(row, cols, s.softcap, nullptr);
    add_bias(row, cols, b, h, i, j0, score_bias);
    mask_part(row, cols, b, h, i, j0, s, mask, fill);
}

std::size_t skip_block_rows(std::size_t Tk) {
    // Each block stops at the last key its own rows see, so smaller blocks
    // skip more of a causal mask's upper right triangle (at T = 64, 37% of
    // the per-head work, where 64-row blocks skip none); at T = 2048,
    // blocks of 16 to 48 rows were no faster than 64.
    return Tk <= 512 ? 16 : kRowBlock;
}

std::size_t panel_floats(std::size_t Tk, std::size_t D) {
    return packed_floats(D, Tk) + packed_floats(Tk, D);
}

namespace {

// K^T and V of a head, packed once into its panels for all its query blocks;
// both null when the head has no panels (the products then go to BLAS).
struct PackedKV {
    float* kt;
    float* vp;
};

PackedKV pack_kv(const Head& x, const HeadSizes& s) {
    if (x.panels == nullptr) return {nullptr, nullptr};
    PackedKV p{x.panels, x.panels + packed_floats(s.D, s.Tk)};
    pack_panels(x.k, s.Ekv, true, s.D, s.Tk, p.kt);
    pack_panels(x.v, s.Ekv, false, s.Tk, s.D, p.vp);
    return p;
}

}  // namespace

void attend_head(const Head& x, std::size_t b, std::size_t h, const HeadSizes& s,
                 const Mask* mask, float fill, const Tensor4* score_bias) {
    const std::size_t Tq = s.Tq, Tk = s.Tk, D = s.D, E = s.E, Ekv = s.Ekv;
    // Masked columns can be skipped only when they get exactly 0 weight.
    const bool may_skip = (mask != nullptr && fill == kNegInf) || s.causal != kNotCausal;
    std::size_t v_bad = Tk + 1;  // past_last_nonfinite(V), once it is needed
    const auto [kt, vp] = pack_kv(x, s);
    const std::size_t block = may_skip ? skip_block_rows(Tk) : kRowBlock;
    for (std::size_t i0 = 0; i0 < Tq; i0 += block) {
        const std::size_t rows = std::min(block, Tq - i0);
        float* w = x.weights + i0 * Tk;  // [rows, Tk]
        // key columns this block computes
        const std::size_t cols = block_columns(x, b, h, i0, rows, s, mask, fill, v_bad);
        if (cols == 0) {  // every key masked for every row: attend to nothing
            std::fill(w, w + rows * Tk, 0.0f);
            for (std::size_t r = 0; r < rows; ++r)
                std::fill(x.context + (i0 + r) * E, x.context + (i0 + r) * E + D, 0.0f);
            continue;
        }
        // 1) scores: [rows, D] x [D, cols] -> [rows, cols], times 1/sqrt(D)
        if (kt != nullptr) {
            packed_gemm(x.q + i0 * E, E, rows, D, kt, D, cols, w, Tk, s.scale);
        } else {
            gemm({x.q + i0 * E, rows, D, E}, false, {x.k, cols, D, Ekv}, true, w, Tk, s.scale);
        }
        // 2) bias, mask and softmax, one query row at a time
        for (std::size_t i = i0; i < i0 + rows; ++i) {
            float* row = w + (i - i0) * Tk;
            bias_and_mask(row, cols, b, h, i, 0, s, mask, fill, score_bias);
            softmax_row(row, cols);
            std::fill(row + cols, row + Tk, 0.0f);  // the skipped columns
        }
        // 3) weights x V: [rows, cols] x [cols, D] -> [rows, D], written
        //    straight into columns h*D.. of the merged context (rows E apart)
        if (vp != nullptr) {
            packed_gemm(w, Tk, rows, cols, vp, Tk, D, x.context + i0 * E, E, 1.0f);
        } else {
            gemm({w, rows, cols, Tk}, false, {x.v, cols, D, Ekv}, false, x.context + i0 * E, E);
        }
    }
}

std::size_t attend_head_tiled(const Head& x, std::size_t b, std::size_t h, const HeadSizes& s,
                              const Mask* mask, float fill, const Tensor4* score_bias,
                              const BlockMask& bm, std::size_t first_block,
                              std::size_t end_block) {
    const std::size_t Tq = s.Tq, Tk = s.Tk, D = s.D, E = s.E, Ekv = s.Ekv;
    const std::size_t C = bm.cols;  // keys per tile of the block mask
    if (bm.rows != kRowBlock || kKeyBlock % C != 0 || bm.q_blocks * kRowBlock < Tq ||
        bm.k_blocks * C < Tk) {
        fail("attend_head_tiled: the block mask's tiles do not fit the engine's");
    }
    // Empty tiles are skipped only where a hidden key's weight is exactly 0
    const bool may_skip = fill == kNegInf;
    std::size_t v_bad = Tk + 1;  // past_last_nonfinite(V), once it is needed
    const auto [kt, vp] = pack_kv(x, s);
    // This thread's tile [64, 256], accumulator [64, D], and each row's
    // running max and sum.
    thread_local Buffer work;
    work.resize(kRowBlock * (kKeyBlock + D + 2));
    float* const tile = work.data();
    float* const acc = tile + kRowBlock * kKeyBlock;
    float* const m = acc + kRowBlock * D;
    float* const l = m + kRowBlock;
    std::size_t computed = 0;  // block-mask tiles computed
    // Whether tile (qb, kb) is computed: not when empty and skippable, and
    // never short of a NaN or Inf in V, which 0 weights must meet.
    auto skipped = [&](std::size_t qb, std::size_t kb) {
        if (bm.at(b, h, qb, kb) != Tile::empty || !may_skip) return false;
        if (v_bad > Tk) v_bad = past_last_nonfinite(x.v, Tk, D, Ekv);
        return kb * C >= v_bad;
    };
    for (std::size_t qb = first_block; qb < end_block && qb * kRowBlock < Tq; ++qb) {
        const std::size_t i0 = qb * kRowBlock, rows = std::min(kRowBlock, Tq - i0);
        std::fill(acc, acc + rows * D, 0.0f);
        std::fill(m, m + rows, kNegInf);
        std::fill(l, l + rows, 0.0f);
        for (std::size_t kb = 0; kb < bm.k_blocks;) {
            if (skipped(qb, kb)) {
                ++kb;
                continue;
            }
            // Up to 256 keys of tiles computed one after another: one product
            std::size_t partial[kKeyBlock / kTileCols];  // which of them mask
            std::size_t n_tiles = 0, n_partial = 0;
            const std::size_t j0 = kb * C;
            for (; n_tiles < kKeyBlock / C && kb < bm.k_blocks && !skipped(qb, kb);
                 ++n_tiles, ++kb) {
                if (bm.at(b, h, qb, kb) != Tile::full) partial[n_partial++] = n_tiles;
            }
            computed += n_tiles;
            const std::size_t cols = std::min(Tk, kb * C) - j0;
            // 1) this tile's scores: [rows, D] x [D, cols], times 1/sqrt(D)
            if (kt != nullptr) {
                packed_gemm(x.q + i0 * E, E, rows, D, kt + j0 * D, D, cols, tile, kKeyBlock,
                            s.scale);
            } else {
                gemm({x.q + i0 * E, rows, D, E}, false, {x.k + j0 * Ekv, cols, D, Ekv}, true,
                     tile, kKeyBlock, s.scale);
            }
            // 2) per row: the soft-cap, the bias, the mask inside the partial tiles only,
            //    the new max, the old sum and weighted values rescaled by
            //    e^{m_old - m_new}, this tile's e^{s - m_new}
            for (std::size_t r = 0; r < rows; ++r) {
                float* row = tile + r * kKeyBlock;
                if (s.softcap > 0.0f) soft_cap_row(row, cols, s.softcap, nullptr);
                add_bias(row, cols, b, h, i0 + r, j0, score_bias);
                for (std::size_t p = 0; p < n_partial; ++p) {
                    const std::size_t off = partial[p] * C, n = std::min(C, cols - off);
                    mask_part(row + off, n, b, h, i0 + r, j0 + off, s, mask, fill);
                }
                const float mx = row_max(row, cols, m[r]);
                if (mx == kNegInf) {  // nothing to see yet, unless a NaN hides
                    bool nan = false;
                    for (std::size_t j = 0; j < cols; ++j) nan = nan || std::isnan(row[j]);
                    std::fill(row, row + cols, nan ? NAN : 0.0f);
                    if (nan) l[r] = NAN;
                    continue;
                }
                const float rescale = std::exp(m[r] - mx);  // 0 while m[r] is -inf
                l[r] = l[r] * rescale + exp_sum(row, cols, mx);
                if (mx != m[r]) {  // when the max stays, rescale is 1: nothing to do
                    for (std::size_t d = 0; d < D; ++d) acc[r * D + d] *= rescale;
                }
                m[r] = mx;
            }
            // 3) this tile's weights x V: [rows, cols] x [cols, D], added
            //    into the accumulator as the product stores it
            if (vp != nullptr) {
                packed_gemm(tile, kKeyBlock, rows, cols, vp + j0 * kPanelWidth, Tk, D, acc, D,
                            1.0f, true);
            } else {
                gemm({tile, rows, cols, kKeyBlock}, false, {x.v + j0 * Ekv, cols, D, Ekv}, false,
                     acc, D, 1.0f, 1.0f);
            }
        }
        // 4) divide by the sums. A row with every key masked has weights 0
        //    and keeps acc: 0, or NaN where 0 met a NaN in V, as attend_head()
        for (std::size_t r = 0; r < rows; ++r) {
            float* out = x.context + (i0 + r) * E;
            const bool none = m[r] == kNegInf && !std::isnan(l[r]);
            const float div = none ? 1.0f : l[r];
            for (std::size_t d = 0; d < D; ++d) out[d] = acc[r * D + d] / div;
            // what the backward rebuilds the weights from: -inf when none
            if (x.lse != nullptr) x.lse[i0 + r] = none ? kNegInf : m[r] + std::log(l[r]);
        }
    }
    return computed;
}

}  // namespace mha::fast
