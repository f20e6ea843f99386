// Stage 7: the fast forward. It never materialises [B, H, T, D]: head h of
// a [B, T, E] tensor is the block of rows T x D starting at column h*D with
// leading dimension E, and the products read that block in place (K and V
// through one packed copy per head, for the kernels of packed_gemm.hpp).
#include "mha/attention.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include <xtensor/xview.hpp>

#include "mha/gemm.hpp"
#include "mha/heads.hpp"
#include "mha/linear.hpp"
#include "mha/packed_gemm.hpp"
#include "mha/parallel.hpp"
#include "mha/softmax.hpp"

namespace mha {

namespace {

// Query rows per block: 64 rows of 2048 scores are 512 KiB, an L2 cache.
constexpr std::size_t kRowBlock = 64;
// Query rows per block when masked key columns may be skipped and the keys
// are few: each block stops at the last key its own rows see, so smaller
// blocks skip more of a causal mask's upper right triangle. At T = 64 this
// skips 37% of the per-head work, where blocks of 64 rows skip none; the
// forward took 0.975-0.98x the time of 64-row blocks at T = 64..512 (paired
// runs). At T = 2048, blocks of 64 already skip almost all of it, and 16
// rows measured 1.01-1.04x.
constexpr std::size_t kSkipRowBlock = 16;
constexpr std::size_t kSkipMaxKeys = 512;
// Rows per chunk of the batch: a chunk's Q, K, V and context (4 MiB at
// E = 512) stay in this machine's L3 cache between its gemms (and, on the
// BLAS path, each projection's weight, which BLAS packs again at every
// call, is packed once per 512 rows). In paired runs at T = 64, 128 and 256,
// with the projections in BLAS, the forward took 0.95-1.00x the time of
// 256-row chunks, and 2048-row chunks 1.00-1.08x.
constexpr std::size_t kChunkRows = 512;

// Where each chunk of sequences starts, and B at the end. Chunks hold
// per_chunk sequences; when several workers share them out, the last ones
// shrink: a chunk takes at most 1/(2 workers) of what is left, down to one
// sequence, so that the cores finish close together (with equal chunks to
// the end, one core could sit idle for up to a whole chunk while another
// finished its last). Paired runs against equal chunks: 0.96-0.97x the
// forward's time at T = 64, 128 and 256; dividing what is left by 2 or 8
// instead of 4 was no better. The boundaries follow from B, per_chunk and
// the worker count only, never from timing, so every call gives the same
// bits.
std::vector<std::size_t> chunk_starts(std::size_t B, std::size_t per_chunk,
                                      std::size_t workers) {
    std::vector<std::size_t> starts;
    for (std::size_t b = 0; b < B;) {
        starts.push_back(b);
        const std::size_t left = B - b;
        const std::size_t share = workers > 1 ? left / (2 * workers) : per_chunk;
        b += std::min(per_chunk, std::max<std::size_t>(1, share));
    }
    starts.push_back(B);
    return starts;
}

// One (sequence, head) pair: its Q, K, V blocks (rows E apart), where its
// context goes (also E apart), and its [Tq, Tk] weights.
struct Head {
    const float* q;
    const float* k;
    const float* v;
    float* context;
    float* weights;
    // Room for K^T and V packed into panels (packed_gemm.hpp), or null when
    // the processor does not run those kernels: then BLAS does the products.
    float* panels;
};

// Floats of Head::panels for one head: K^T [D, Tk] and V [Tk, D], packed.
std::size_t panel_floats(std::size_t Tk, std::size_t D) {
    return packed_floats(D, Tk) + packed_floats(Tk, D);
}

// How many leading key columns a block of query rows needs. Past the last
// key that any of its rows may see, every score is masked to -inf and every
// weight is exactly 0: both products can stop there (under a causal mask,
// the upper right triangle). The last rows usually see the most, so they
// go first, and the others only check the columns past them.
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

// One past the last row of a [Tk, D] block (rows E apart) that holds a NaN
// or an Inf; 0 when all are finite. Skipped columns must not hide them:
// a weight of 0 times NaN is NaN, with or without skipping. A float is Inf
// or NaN when its exponent bits are all ones; without the sign bit, adding
// one to the exponent then carries into the top bit, and only for them, so
// OR-ing those sums over a row keeps any such carry. In integer adds and
// ORs the compiler does 4 floats at a time on any x86-64. (A loop of
// std::isfinite with an early return was about 2% of the forward's profile
// at T = 64, once 16-row blocks ran it every head; an unsigned max of the
// bit patterns, which plain x86-64 lacks and GCC emulated, about 0.5%.)
std::size_t past_last_nonfinite(const float* v, std::size_t Tk, std::size_t D,
                                std::size_t E) {
    constexpr std::uint32_t kNoSign = 0x7fffffffu, kExponentOne = 0x00800000u;
    for (std::size_t j = Tk; j > 0; --j) {
        const float* row = v + (j - 1) * E;
        std::uint32_t carry = 0;
        for (std::size_t d = 0; d < D; ++d) {
            std::uint32_t bits;
            std::memcpy(&bits, row + d, sizeof bits);
            carry |= (bits & kNoSign) + kExponentOne;
        }
        if (carry & 0x80000000u) return j;
    }
    return 0;
}

// The four layers, wq, wk, wv, w_o, as the forward's projections use them.
// On AVX2 processors each weight is packed into panels (packed_gemm.hpp)
// once per forward call, and every chunk's rows go through
// packed_linear(), which adds the bias as it stores each tile. On others
// each projection is one BLAS call (linear_rows()), which packs the weight
// again at every call and starts from rows of bias.
class Projections {
public:
    Projections(const Linear& wq, const Linear& wk, const Linear& wv, const Linear& w_o,
                std::size_t E, bool packed)
        : layers_{&wq, &wk, &wv, &w_o}, E_(E), each_(packed_floats(E, E)) {
        if (!packed) return;
        // From the core's allocator: a loop of forwards gets the same 4 MiB
        // back each call, without the page faults of fresh memory.
        panels_ = Tensor1::from_shape({4 * each_});
        parallel_for(4, [&](std::size_t begin, std::size_t end) {
            for (std::size_t l = begin; l < end; ++l)
                pack_panels(layers_[l]->weight.data(), E, true, E, E, data() + l * each_);
        });
    }

    // out[i] = x W^T + b for layers first .. first+count-1, all reading the
    // same rows of x (Q, K and V of self-attention: one pass over x).
    void run(const float* x, std::size_t rows, std::size_t first, std::size_t count,
             float* const* out) const {
        if (data() == nullptr) {
            for (std::size_t l = 0; l < count; ++l)
                linear_rows(x, rows, *layers_[first + l], out[l]);
            return;
        }
        // Outside a worker (a few long sequences), blocks of rows go to the
        // workers; no row's result depends on where a block starts.
        constexpr std::size_t kRows = 48;
        const std::size_t blocks = (rows + kRows - 1) / kRows;
        parallel_for(blocks, [&](std::size_t begin, std::size_t end) {
            const std::size_t r0 = begin * kRows, r1 = std::min(rows, end * kRows);
            LinearPanels to[4];
            for (std::size_t l = 0; l < count; ++l) {
                to[l] = {data() + (first + l) * each_,
                         layers_[first + l]->bias.data(), out[l] + r0 * E_};
            }
            packed_linear(x + r0 * E_, E_, r1 - r0, E_, to, count, E_, E_);
        });
    }

private:
    float* data() { return panels_.size() != 0 ? panels_.data() : nullptr; }
    const float* data() const { return panels_.size() != 0 ? panels_.data() : nullptr; }
    const Linear* layers_[4];
    std::size_t E_, each_;
    Tensor1 panels_;  // the four packed weights, or empty: BLAS
};

// Scores, mask, softmax and weights x V for one head, a block of query rows
// at a time, so that a block's scores stay in cache from the first product,
// through the softmax, to the second.
void attend_head(const Head& x, std::size_t b, std::size_t h, std::size_t Tq,
                 std::size_t Tk, std::size_t D, std::size_t E, float scale,
                 const Mask* mask, float fill, const Tensor4* score_bias) {
    // Masked columns can be skipped only when they get exactly 0 weight.
    const bool may_skip = mask != nullptr && fill == kNegInf;
    std::size_t v_bad = Tk + 1;  // past_last_nonfinite(V), once it is needed
    // K^T and V, packed once for all of this head's query blocks.
    float* const kt = x.panels;
    float* const vp = kt != nullptr ? kt + packed_floats(D, Tk) : nullptr;
    if (kt != nullptr) {
        pack_panels(x.k, E, true, D, Tk, kt);
        pack_panels(x.v, E, false, Tk, D, vp);
    }
    const std::size_t block = may_skip && Tk <= kSkipMaxKeys ? kSkipRowBlock : kRowBlock;
    for (std::size_t i0 = 0; i0 < Tq; i0 += block) {
        const std::size_t rows = std::min(block, Tq - i0);
        float* w = x.weights + i0 * Tk;  // [rows, Tk]
        std::size_t cols = Tk;           // key columns this block computes
        if (may_skip) {
            cols = visible_columns(*mask, b, h, i0, rows, Tk);
            if (cols < Tk) {
                if (v_bad > Tk) v_bad = past_last_nonfinite(x.v, Tk, D, E);
                cols = std::max(cols, v_bad);
            }
        }
        if (cols == 0) {  // every key masked for every row: attend to nothing
            std::fill(w, w + rows * Tk, 0.0f);
            for (std::size_t r = 0; r < rows; ++r)
                std::fill(x.context + (i0 + r) * E, x.context + (i0 + r) * E + D, 0.0f);
            continue;
        }
        // 2) scores: [rows, D] x [D, cols] -> [rows, cols], times 1/sqrt(D)
        if (kt != nullptr) {
            packed_gemm(x.q + i0 * E, E, rows, D, kt, D, cols, w, Tk, scale);
        } else {
            gemm({x.q + i0 * E, rows, D, E}, false, {x.k, cols, D, E}, true, w, Tk, scale);
        }
        // 3) bias, mask and softmax, one query row at a time
        for (std::size_t i = i0; i < i0 + rows; ++i) {
            float* row = w + (i - i0) * Tk;
            if (score_bias != nullptr) {
                const float* add = broadcast_row(*score_bias, b, h, i);
                for (std::size_t j = 0; j < cols; ++j) row[j] += add[j];
            }
            if (mask != nullptr) {
                // The bools read as bytes (which they are): the compiler then
                // does 16 at a time without a branch, which it does not
                // for bool. A branch here mispredicted at every row's
                // diagonal.
                const auto* keep =
                    reinterpret_cast<const unsigned char*>(mask_row(*mask, b, h, i));
                for (std::size_t j = 0; j < cols; ++j) row[j] = keep[j] != 0 ? row[j] : fill;
            }
            softmax_row(row, cols);
            std::fill(row + cols, row + Tk, 0.0f);  // the skipped columns
        }
        // 4) weights x V: [rows, cols] x [cols, D] -> [rows, D], written
        //    straight into columns h*D.. of the merged context (ld E)
        if (vp != nullptr) {
            packed_gemm(w, Tk, rows, cols, vp, Tk, D, x.context + i0 * E, E, 1.0f);
        } else {
            gemm({w, rows, cols, Tk}, false, {x.v, cols, D, E}, false, x.context + i0 * E, E);
        }
    }
}

}  // namespace

MultiHeadAttention::MultiHeadAttention(std::size_t embed_dim,
                                       std::size_t num_heads, const Init& init)
    : embed_dim_(embed_dim),
      num_heads_(num_heads),
      head_dim_(head_dim_for(embed_dim, num_heads)) {
    Rng rng(init.seed);
    if (init.kind == Init::Kind::torch_mha) {
        // One Xavier draw over the packed [3E, E] in_proj weight: rows
        // 0..E-1 are wq, E..2E-1 wk, 2E..3E-1 wv.
        const Tensor2 packed = xavier_uniform(3 * embed_dim, embed_dim, rng);
        Linear* parts[3] = {&wq, &wk, &wv};
        for (std::size_t p = 0; p < 3; ++p) {
            parts[p]->weight = xt::view(packed, xt::range(p * embed_dim,
                                                          (p + 1) * embed_dim));
        }
        // out_proj: nn.Linear's kaiming_uniform(a=sqrt(5)) = U(-1/sqrt(E), ..)
        const float a = 1.0f / std::sqrt(static_cast<float>(embed_dim));
        w_o.weight = Tensor2::from_shape({embed_dim, embed_dim});
        for (float& x : w_o.weight) x = rng.uniform(-a, a);
        for (Linear* l : {&wq, &wk, &wv, &w_o}) {
            l->bias = Tensor1::from_shape({embed_dim});
            l->bias.fill(0.0f);
        }
        return;
    }
    wq = make_linear(embed_dim, embed_dim, init, rng);
    wk = make_linear(embed_dim, embed_dim, init, rng);
    wv = make_linear(embed_dim, embed_dim, init, rng);
    w_o = make_linear(embed_dim, embed_dim, init, rng);
}

void MultiHeadAttention::check_inputs(const Tensor3& query, const Tensor3& key,
                                      const Tensor3& value) const {
    const std::size_t E = embed_dim_;
    const std::string shapes = "query " + shape_of(query) + ", key " +
                               shape_of(key) + ", value " + shape_of(value);
    for (const Tensor3* t : {&query, &key, &value}) {
        require_nonzero({t->shape(0), t->shape(1), t->shape(2)},
                        "MultiHeadAttention input (" + shapes + ")");
    }
    if (query.shape(2) != E || key.shape(2) != E || value.shape(2) != E) {
        fail("MultiHeadAttention(embed_dim " + std::to_string(E) + "): " +
             shapes + " must all end in E = " + std::to_string(E));
    }
    if (key.shape(0) != query.shape(0) || value.shape(0) != query.shape(0)) {
        fail("MultiHeadAttention: " + shapes +
             " must have the same batch size B");
    }
    if (key.shape(1) != value.shape(1)) {
        fail("MultiHeadAttention: " + shapes +
             " : key and value must have the same length Tk");
    }
    for (const Linear* l : {&wq, &wk, &wv, &w_o}) {
        if (l->weight.shape(0) != E || l->weight.shape(1) != E ||
            l->bias.shape(0) != E) {
            fail("MultiHeadAttention: a layer has weight " +
                 shape_of(l->weight) + " and bias " + shape_of(l->bias) +
                 "; every layer must be [" + std::to_string(E) + ", " +
                 std::to_string(E) + "] with bias [" + std::to_string(E) + "]");
        }
    }
}

AttentionOutput MultiHeadAttention::forward(const Tensor3& query,
                                            const Tensor3& key,
                                            const Tensor3& value,
                                            const Mask* mask, float fill,
                                            const Tensor4* score_bias) const {
    ForwardTrace t;
    compute(t, query, key, value, mask, fill, score_bias, false);
    return {std::move(t.output), std::move(t.weights)};
}

void MultiHeadAttention::forward_into(AttentionOutput& out, const Tensor3& query,
                                      const Tensor3& key, const Tensor3& value,
                                      const Mask* mask, float fill,
                                      const Tensor4* score_bias) const {
    ForwardTrace t;  // borrows out's memory for the call
    t.output = std::move(out.output);
    t.weights = std::move(out.weights);
    compute(t, query, key, value, mask, fill, score_bias, false);
    out.output = std::move(t.output);
    out.weights = std::move(t.weights);
}

ForwardTrace MultiHeadAttention::trace(const Tensor3& query, const Tensor3& key,
                                       const Tensor3& value, const Mask* mask,
                                       float fill,
                                       const Tensor4* score_bias) const {
    ForwardTrace t;
    compute(t, query, key, value, mask, fill, score_bias, true);
    return t;
}

void MultiHeadAttention::trace_into(ForwardTrace& t, const Tensor3& query,
                                    const Tensor3& key, const Tensor3& value,
                                    const Mask* mask, float fill,
                                    const Tensor4* score_bias) const {
    compute(t, query, key, value, mask, fill, score_bias, true);
}

void MultiHeadAttention::compute(ForwardTrace& t, const Tensor3& query,
                                 const Tensor3& key, const Tensor3& value,
                                 const Mask* mask, float fill,
                                 const Tensor4* score_bias, bool keep) const {
    check_inputs(query, key, value);
    const std::size_t B = query.shape(0), Tq = query.shape(1);
    const std::size_t Tk = key.shape(1), E = embed_dim_;
    const std::size_t H = num_heads_, D = head_dim_;
    if (mask != nullptr) check_mask(*mask, B, H, Tq, Tk);
    if (score_bias != nullptr) check_score_bias(*score_bias, B, H, Tq, Tk);

    resize_to(t.weights, {B, H, Tq, Tk});
    resize_to(t.output, {B, Tq, E});
    if (keep) {
        resize_to(t.q, {B, Tq, E});
        resize_to(t.k, {B, Tk, E});
        resize_to(t.v, {B, Tk, E});
        resize_to(t.context, {B, Tq, E});
    } else {
        t.q = t.k = t.v = t.context = Tensor3();
    }
    const float scale = 1.0f / std::sqrt(static_cast<float>(D));
    const bool packed = packed_products_on();  // else BLAS for every product
    const Projections project(wq, wk, wv, w_o, E, packed);
    const bool self = query.data() == key.data() && key.data() == value.data();

    // The batch goes through in chunks of whole sequences, about kChunkRows
    // rows each. A chunk's Q, K, V and context live in a small buffer that
    // stays in cache from its projection to the output layer, instead of
    // four [B, T, E] tensors in fresh memory (trace() keeps them: then the
    // chunk writes straight into t.q, t.k, t.v and t.context).
    const std::size_t per_chunk = std::max<std::size_t>(1, kChunkRows / std::max(Tq, Tk));
    // Enough chunks: every worker takes chunks, each chunk on one core.
    // Few chunks (long sequences): one chunk after another, each using every
    // core inside (its layers' rows split, its heads taken one at a time).
    const std::size_t workers =
        (B + per_chunk - 1) / per_chunk >= 4 * worker_count() ? worker_count() : 1;
    const std::vector<std::size_t> starts = chunk_starts(B, per_chunk, workers);
    const std::size_t chunks = starts.size() - 1;
    // Each worker takes the next chunk nobody has taken yet, so a core that
    // runs slower (these are shared virtual cores) takes fewer. A chunk's
    // boundaries do not depend on who takes it, so neither do the results.
    // Paired against one fixed run of chunks per worker: 0.95-1.02x the
    // time at T = 64 (eleven pairings, median 1.00x), 0.92-1.00x at T = 128,
    // 256 and 512 (ten pairings, median 0.97x).
    std::atomic<std::size_t> next_chunk{0};
    auto run = [&](std::size_t, std::size_t) {
        // One per worker, reused chunk to chunk; from the core's allocator,
        // so that it starts on a cache line.
        std::vector<float, ReuseAllocator<float>> scratch;
        for (std::size_t c; (c = next_chunk++) < chunks;) {
            const std::size_t b0 = starts[c], n = starts[c + 1] - b0;
            float *q, *k, *v, *ctx;  // [n*Tq, E], [n*Tk, E], [n*Tk, E], [n*Tq, E]
            if (keep) {
                q = t.q.data() + b0 * Tq * E;
                k = t.k.data() + b0 * Tk * E;
                v = t.v.data() + b0 * Tk * E;
                ctx = t.context.data() + b0 * Tq * E;
            } else {
                scratch.resize(2 * per_chunk * (Tq + Tk) * E);
                q = scratch.data();
                k = q + n * Tq * E;
                v = k + n * Tk * E;
                ctx = v + n * Tk * E;
            }
            // 1) the three projections of this chunk's rows (one pass over
            //    the rows for all three when they read one input)
            const float* xq = query.data() + b0 * Tq * E;
            float* const qkv[3] = {q, k, v};
            if (self) {
                project.run(xq, n * Tq, 0, 3, qkv);
            } else {
                project.run(xq, n * Tq, 0, 1, qkv);
                project.run(key.data() + b0 * Tk * E, n * Tk, 1, 1, qkv + 1);
                project.run(value.data() + b0 * Tk * E, n * Tk, 2, 1, qkv + 2);
            }
            // 2)-4) every (sequence, head) pair of the chunk, independently.
            //    With one chunk at a time on every core (long sequences),
            //    each core takes the next pair nobody has taken, as with the
            //    chunks (0.98-0.986x the time of half the heads each at
            //    T = 2048, paired, causal and unmasked).
            std::atomic<std::size_t> next_pair{0};
            parallel_for(std::min(n * H, worker_count()), [&](std::size_t, std::size_t) {
                std::vector<float, ReuseAllocator<float>> panels(packed ? panel_floats(Tk, D) : 0);
                for (std::size_t bh; (bh = next_pair++) < n * H;) {
                    const std::size_t b = bh / H, h = bh % H;
                    Head head{q + b * Tq * E + h * D,  // [Tq, D], ld E
                              k + b * Tk * E + h * D,  // [Tk, D], ld E
                              v + b * Tk * E + h * D,  // [Tk, D], ld E
                              ctx + b * Tq * E + h * D,
                              &t.weights(b0 + b, h, 0, 0),
                              packed ? panels.data() : nullptr};
                    attend_head(head, b0 + b, h, Tq, Tk, D, E, scale, mask, fill,
                                score_bias);
                }
            });
            // 5) the output layer on this chunk's rows
            float* const out = t.output.data() + b0 * Tq * E;
            project.run(ctx, n * Tq, 3, 1, &out);
        }
    };
    parallel_for(workers, run);
}

}  // namespace mha
