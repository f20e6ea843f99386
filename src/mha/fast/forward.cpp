// The engine's forward. It never makes [B, H, T, D] copies: head h of a
// [B, T, E] tensor is the T x D block at column h*D with rows E apart, and
// the products read that block in place. The batch goes through in chunks
// of whole sequences: a chunk's Q, K, V and context stay in cache from its
// first layer to its last (docs/pages/engine.md).
//
// B = batch, Tq / Tk = queries / keys, E = embed_dim, H = heads, D = E / H.
#include "mha/fast/forward.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <string>
#include <vector>

#include "mha/fast/attend_head.hpp"
#include "mha/fast/block_mask.hpp"
#include "mha/fast/memory.hpp"
#include "mha/fast/packed_gemm.hpp"
#include "mha/fast/parallel.hpp"
#include "mha/fast/projections.hpp"

namespace mha::fast {

namespace {

// Rows per chunk: a chunk's Q, K, V and context (4 MiB at E = 512) stay in
// this machine's L3 cache between its products.
constexpr std::size_t kChunkRows = 512;

// What every step of one call reads.
struct Job {
    const Call& in;
    const Projections& layers;
    ForwardTrace& out;
    std::size_t B, Tq, Tk, E, H, Ekv, group;  // Ekv = H_kv * D; group = H / H_kv
    HeadSizes head;
    bool packed;  // K^T and V packed per head for the packed kernels
    bool self;    // query, key and value are one tensor
    const BlockMask* tiles;  // without weights: the mask's tiles, made once per call
};

// The chunks of one call: where each starts, and how the cores share them.
struct Plan {
    std::size_t per_chunk;            // sequences in a full chunk
    std::size_t workers;              // cores taking chunks; 1: all inside one
    std::vector<std::size_t> starts;  // first sequence of each chunk, then B
    std::size_t chunks() const { return starts.size() - 1; }
};

// Where one chunk's rows live: [n*Tq, E], [n*Tk, Ekv], [n*Tk, Ekv], [n*Tq, E].
struct Rows {
    float *q, *k, *v, *context;
};

// Plan the chunks. Enough of them: every core takes chunks, each chunk on
// one core. Few (long sequences): one chunk after another, each using every
// core inside. When several cores share them, the last chunks shrink (each
// takes at most 1/(2 workers) of what is left, down to one sequence), so
// that the cores finish together. The boundaries follow from B, the sizes
// and the worker count only, never from timing, so every call gives the
// same bits.
Plan plan_chunks(std::size_t B, std::size_t Tq, std::size_t Tk) {
    Plan p;
    p.per_chunk = std::max<std::size_t>(1, kChunkRows / std::max(Tq, Tk));
    const std::size_t full_chunks = (B + p.per_chunk - 1) / p.per_chunk;
    p.workers = full_chunks >= 4 * worker_count() ? worker_count() : 1;
    for (std::size_t b = 0; b < B;) {
        p.starts.push_back(b);
        const std::size_t left = B - b;
        const std::size_t share = p.workers > 1 ? left / (2 * p.workers) : p.per_chunk;
        b += std::min(p.per_chunk, std::max<std::size_t>(1, share));
    }
    p.starts.push_back(B);
    return p;
}

// The block mask of a call: its mask tensor's (a scan of every bool), the
// causal limit's (from the corners), both (a tile is empty when either is,
// full when both are), or every tile full.
BlockMask block_mask_of(const Call& in, std::size_t Tq, std::size_t Tk) {
    if (in.mask == nullptr)
        return in.causal ? causal_block_mask(Tq, Tk, 0) : full_block_mask(Tq, Tk);
    BlockMask bm = block_mask(*in.mask, Tq, Tk);
    if (!in.causal) return bm;
    const BlockMask c = causal_block_mask(Tq, Tk, 0);
    bm.empty = bm.partial = bm.full = 0;
    for (std::size_t i = 0; i < bm.tiles.size(); ++i) {
        Tile& t = bm.tiles[i];
        const Tile u = c.tiles[i % c.tiles.size()];  // one causal slice for all
        t = t == Tile::empty || u == Tile::empty ? Tile::empty
            : t == Tile::full && u == Tile::full ? Tile::full
                                                 : Tile::partial;
        ++(t == Tile::empty ? bm.empty : t == Tile::full ? bm.full : bm.partial);
    }
    return bm;
}

// Into how many shares of its query blocks the tiled path cuts each head:
// enough items (16 per worker) that a core slowed by other work does not
// leave the other idle at the end, at most one per block. Each share packs
// its head's K and V again (at T = 16384, 8 MiB against seconds of work).
std::size_t head_shares(const Job& job, std::size_t pairs) {
    if (job.in.weights) return 1;
    const std::size_t want = (16 * worker_count() + pairs - 1) / pairs;
    return std::max<std::size_t>(1, std::min(want, job.tiles->q_blocks));
}

// Scores, mask, softmax and weights x V for every (sequence, head) pair of
// the chunk of n sequences from b0, each independent of the others. With
// one chunk at a time on every core, each core takes the next item nobody
// has taken: a pair, or without weights a share of a pair's query blocks,
// the last shares first (under a causal mask they cost the most, so the
// cheap ones are left for the end). A row's numbers do not depend on who
// computes it.
void attend_heads(const Job& job, const Rows& rows, std::size_t b0, std::size_t n) {
    const std::size_t Tq = job.Tq, Tk = job.Tk, E = job.E, H = job.H, D = job.head.D;
    const std::size_t Ekv = job.Ekv;
    const std::size_t shares = head_shares(job, n * H), items = n * H * shares;
    std::atomic<std::size_t> next_item{0};
    parallel_for(std::min(items, worker_count()), [&](std::size_t, std::size_t) {
        Buffer panels(job.packed ? panel_floats(Tk, D) : 0);
        for (std::size_t item; (item = next_item++) < items;) {
            const std::size_t bh = item % (n * H), share = shares - 1 - item / (n * H);
            const std::size_t b = bh / H, h = bh % H, g = h / job.group;  // g: its kv head
            const Head head{rows.q + b * Tq * E + h * D,        // [Tq, D], rows E apart
                            rows.k + b * Tk * Ekv + g * D,      // [Tk, D], rows Ekv apart
                            rows.v + b * Tk * Ekv + g * D,      // [Tk, D]
                            rows.context + b * Tq * E + h * D,  // [Tq, D]
                            job.in.weights ? &job.out.weights(b0 + b, h, 0, 0) : nullptr,
                            job.packed ? panels.data() : nullptr,
                            job.out.lse.size() > 0 ? &job.out.lse(b0 + b, h, 0) : nullptr};
            // Without weights to return, the online softmax: no [Tq, Tk] block
            if (job.in.weights) {
                attend_head(head, b0 + b, h, job.head, job.in.mask, job.in.fill,
                            job.in.score_bias);
            } else {
                const std::size_t blocks = job.tiles->q_blocks;  // of 64 query rows
                attend_head_tiled(head, b0 + b, h, job.head, job.in.mask, job.in.fill,
                                  job.in.score_bias, *job.tiles, share * blocks / shares,
                                  (share + 1) * blocks / shares);
            }
        }
    });
}

// Run one chunk: the n sequences from b0, through every stage.
void run_chunk(const Job& job, const Rows& rows, std::size_t b0, std::size_t n) {
    const std::size_t Tq = job.Tq, Tk = job.Tk, E = job.E;
    // 1) the three projections (one pass over the rows when they read one input)
    float* const qkv[3] = {rows.q, rows.k, rows.v};
    const float* xq = job.in.query.data() + b0 * Tq * E;
    if (job.self) {
        job.layers.run(xq, n * Tq, 0, 3, qkv);
    } else {
        job.layers.run(xq, n * Tq, 0, 1, qkv);
        job.layers.run(job.in.key.data() + b0 * Tk * E, n * Tk, 1, 1, qkv + 1);
        job.layers.run(job.in.value.data() + b0 * Tk * E, n * Tk, 2, 1, qkv + 2);
    }
    // RoPE: query i and key j turned to their positions, before the scores
    if (job.in.rope != nullptr) {
        const std::size_t D = job.head.D;
        rope_rows(rows.q, n * Tq, Tq, job.H, D, E, *job.in.rope, false);
        rope_rows(rows.k, n * Tk, Tk, job.Ekv / D, D, job.Ekv, *job.in.rope, false);
    }
    // 2) scores, mask, softmax, weights x V, per (sequence, head)
    attend_heads(job, rows, b0, n);
    // 3) the output layer
    float* const out = job.out.output.data() + b0 * Tq * E;
    job.layers.run(rows.context, n * Tq, 3, 1, &out);
}

}  // namespace

void rope_rows(float* x, std::size_t rows, std::size_t T, std::size_t heads, std::size_t D,
               std::size_t ld, const Rope& rope, bool back) {
    // cos and sin of each (position, pair) angle, as rope_rotate() makes them
    const std::size_t P = D / 2, used = std::min(rows, T);
    std::vector<double> cs(2 * used * P);  // [T, P, 2]
    for (std::size_t t = 0; t < used; ++t)
        for (std::size_t p = 0; p < P; ++p) {
            const double angle = double(t) * rope_frequency(p, D, rope.theta);
            cs[2 * (t * P + p)] = std::cos(angle);
            cs[2 * (t * P + p) + 1] = back ? -std::sin(angle) : std::sin(angle);
        }
    for (std::size_t r = 0; r < rows; ++r) {
        const double* a = cs.data() + 2 * (r % T) * P;  // this position's [P, 2]
        for (std::size_t h = 0; h < heads; ++h) {
            float* v = x + r * ld + h * D;  // [D]
            for (std::size_t p = 0; p < P; ++p) {
                const auto [i, j] = rope_pair(p, D, rope.style);
                const double x1 = v[i], x2 = v[j], c = a[2 * p], s = a[2 * p + 1];
                v[i] = float(x1 * c - x2 * s);
                v[j] = float(x1 * s + x2 * c);
            }
        }
    }
}

void check_softcap(float softcap, const char* where) {
    if (!(softcap == 0.0f || (softcap > 0.0f && std::isfinite(softcap))))
        fail(std::string(where) + ": softcap C = " + std::to_string(softcap) +
             "; C must be above 0 and finite (0: none)");
}

void forward(const MultiHeadAttention& m, const Call& in, ForwardTrace& t, bool keep) {
    m.check_inputs(in.query, in.key, in.value);
    check_softcap(in.softcap, "forward");
    if (in.rope != nullptr) check_rope(*in.rope, m.head_dim());
    const std::size_t B = in.query.shape(0), Tq = in.query.shape(1);
    const std::size_t Tk = in.key.shape(1), E = m.embed_dim(), H = m.num_heads();
    const std::size_t Ekv = m.kv_dim();
    if (in.mask != nullptr) check_mask(*in.mask, B, H, Tq, Tk);
    if (in.score_bias != nullptr) check_score_bias(*in.score_bias, B, H, Tq, Tk);
    keep_freed_memory();  // so that the next call gets these blocks back

    if (in.weights) resize_to(t.weights, {B, H, Tq, Tk});
    else t.weights = Tensor4();
    // a trace without weights keeps each row's log-sum-exp for the backward
    if (keep && !in.weights) resize_to(t.lse, {B, H, Tq});
    else t.lse = Tensor3();
    resize_to(t.output, {B, Tq, E});
    if (keep) {
        resize_to(t.q, {B, Tq, E});
        resize_to(t.k, {B, Tk, Ekv});
        resize_to(t.v, {B, Tk, Ekv});
        resize_to(t.context, {B, Tq, E});
    } else {
        t.q = t.k = t.v = t.context = Tensor3();
    }
    const bool packed = packed_products_on();  // else BLAS for every product
    const Projections layers(m.wq, m.wk, m.wv, m.w_o, packed);
    const float scale = 1.0f / std::sqrt(static_cast<float>(m.head_dim()));
    const bool self = in.query.data() == in.key.data() && in.key.data() == in.value.data();
    // Without weights, the tiles: each classified once for the whole call
    const BlockMask tiles = in.weights ? BlockMask() : block_mask_of(in, Tq, Tk);
    const Job job{in, layers, t, B, Tq, Tk, E, H, Ekv, H / m.num_kv_heads(),
                  {Tq, Tk, m.head_dim(), E, Ekv, scale, in.causal ? 0 : kNotCausal,
                   in.softcap},
                  packed,
                  self, &tiles};

    const Plan plan = plan_chunks(B, Tq, Tk);
    // Each worker takes the next chunk nobody has taken, so a core that runs
    // slower (these are shared virtual cores) takes fewer. A chunk's
    // boundaries do not depend on who takes it, so neither do the results.
    std::atomic<std::size_t> next_chunk{0};
    parallel_for(plan.workers, [&](std::size_t, std::size_t) {
        Buffer scratch;  // this worker's chunk rows, reused chunk to chunk
        for (std::size_t c; (c = next_chunk++) < plan.chunks();) {
            const std::size_t b0 = plan.starts[c], n = plan.starts[c + 1] - b0;
            Rows rows;
            if (keep) {
                rows = {t.q.data() + b0 * Tq * E, t.k.data() + b0 * Tk * Ekv,
                        t.v.data() + b0 * Tk * Ekv, t.context.data() + b0 * Tq * E};
            } else {
                scratch.resize(2 * plan.per_chunk * (Tq * E + Tk * Ekv));
                rows.q = scratch.data();
                rows.k = rows.q + n * Tq * E;
                rows.v = rows.k + n * Tk * Ekv;
                rows.context = rows.v + n * Tk * Ekv;
            }
            run_chunk(job, rows, b0, n);
        }
    });
}

}  // namespace mha::fast
