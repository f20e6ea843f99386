// Tests for mha/fast/block_mask.hpp and the tiles that use it: each tile's
// kind against a brute-force count written here from the formulas, the
// tiles each head computes, and every mask variant through the tiled
// forward (forward_no_weights) against the teaching stages and the
// plain-loop oracle, on sizes the 64 x 64 tiles do not divide.
//
// B = batch, Tq / Tk = queries / keys, E = embed_dim, H = heads, H_kv =
// key/value heads, D = E / H.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <functional>
#include <tuple>
#include <utility>
#include <vector>

#include "mha/fast/attend_head.hpp"
#include "mha/fast/block_mask.hpp"
#include "mha/reference.hpp"

namespace {

using mha::fast::BlockMask;
using mha::fast::Tile;

// Engine against the stages and the oracle: unit-scale data, as in
// test_forward.cpp.
constexpr double kTol = 2e-5;

using Sees = std::function<bool(long i, long j)>;

// Tiles of rows x cols over Tq x Tk, counted by visiting every element:
// {empty, partial, full}.
struct Counts {
    std::size_t empty = 0, partial = 0, full = 0;
};
Counts brute_force(const Sees& sees, long Tq, long Tk, long rows, long cols) {
    Counts c;
    for (long i0 = 0; i0 < Tq; i0 += rows)
        for (long j0 = 0; j0 < Tk; j0 += cols) {
            long seen = 0, all = 0;
            for (long i = i0; i < std::min(Tq, i0 + rows); ++i)
                for (long j = j0; j < std::min(Tk, j0 + cols); ++j) seen += sees(i, j), ++all;
            if (seen == 0) ++c.empty;
            else if (seen == all) ++c.full;
            else ++c.partial;
        }
    return c;
}

void check_counts(const BlockMask& bm, const Counts& want) {
    CHECK(bm.empty == want.empty);
    CHECK(bm.partial == want.partial);
    CHECK(bm.full == want.full);
}

// The tiles one head computes, from attend_head_tiled() itself: head 0 of
// one sequence, Tq x D queries and Tk x D keys and values, through BLAS.
std::size_t tiles_computed(const mha::Mask* mask, std::size_t Tq, std::size_t Tk,
                           std::size_t causal, const BlockMask& bm, long nan_at_key = -1) {
    const std::size_t D = 4;
    mha::Rng rng(5);
    const mha::Tensor3 q = mha::randn(1, Tq, D, rng);   // [1, Tq, D]
    mha::Tensor3 kv = mha::randn(1, Tk, D, rng);        // [1, Tk, D]
    if (nan_at_key >= 0) kv(0, std::size_t(nan_at_key), 1) = NAN;
    mha::Tensor3 context = mha::Tensor3::from_shape({1, Tq, D});
    const mha::fast::Head head{q.data(), kv.data(), kv.data(), context.data(), nullptr, nullptr};
    const mha::fast::HeadSizes s{Tq, Tk, D, D, D, 0.5f, causal};
    return mha::fast::attend_head_tiled(head, 0, 0, s, mask, mha::kNegInf, nullptr, bm);
}

}  // namespace

TEST_CASE("block mask: causal at T = 1024 in 64 x 64 tiles computes 136 of 256") {
    const BlockMask corners = mha::fast::causal_block_mask(1024, 1024, 0);
    CHECK(corners.total() == 256);
    CHECK(corners.computed() == 136);  // 16 * 17 / 2
    CHECK(corners.full == 120);        // below the diagonal
    CHECK(corners.partial == 16);      // on it
    const mha::Mask tril = mha::causal_mask(1024, 1024);
    const BlockMask scanned = mha::fast::block_mask(tril, 1024, 1024);
    CHECK(scanned.tiles == corners.tiles);
    // and the engine computes exactly those, from either
    CHECK(tiles_computed(nullptr, 1024, 1024, 0, corners) == 136);
    CHECK(tiles_computed(&tril, 1024, 1024, mha::fast::kNotCausal, scanned) == 136);
}

TEST_CASE("block mask: each kind as counted element by element, Tq != Tk, edge tiles") {
    struct Case {
        const char* name;
        mha::MaskMod mod;
        Sees sees;
    };
    const long W = 100, S = 4, P = 70;
    const std::vector<Case> cases = {
        {"full", mha::full(), [](long, long) { return true; }},
        {"causal", mha::causal_mod(), [](long i, long j) { return j <= i; }},
        {"window", mha::sliding_window(W), [=](long i, long j) { return j <= i && i - j < W; }},
        {"sinks", mha::sinks_window(S, W),
         [=](long i, long j) { return j <= i && (j < S || i - j < W); }},
        {"prefix", mha::prefix_lm(P), [=](long i, long j) { return j < P || j <= i; }},
        {"window or prefix", mha::or_masks(mha::sliding_window(W), mha::prefix_lm(P)),
         [=](long i, long j) { return (j <= i && i - j < W) || j < P || j <= i; }},
    };
    const std::vector<std::pair<std::size_t, std::size_t>> sizes = {
        {1000, 1000}, {333, 1000}, {1000, 77}};
    for (const auto& [Tq, Tk] : sizes) {
        for (const Case& c : cases) {
            CAPTURE(c.name); CAPTURE(Tq); CAPTURE(Tk);
            const Counts want = brute_force(c.sees, long(Tq), long(Tk), 64, 64);
            const mha::Mask mask = mha::mask_of(c.mod, 1, 1, Tq, Tk);  // [1, 1, Tq, Tk]
            const BlockMask scanned = mha::fast::block_mask(mask, Tq, Tk);
            check_counts(scanned, want);
            CHECK(mha::fast::block_mask(c.mod, 1, 1, Tq, Tk).tiles == scanned.tiles);
            CHECK(tiles_computed(&mask, Tq, Tk, mha::fast::kNotCausal, scanned) ==
                  want.partial + want.full);
        }
    }
    // the causal corners against the scan, Tq != Tk both ways, an offset
    const std::vector<std::tuple<std::size_t, std::size_t, std::size_t>> causal = {
        {200, 700, 0}, {700, 200, 0}, {130, 390, 260}};
    for (const auto& [Tq, Tk, L] : causal) {
        CAPTURE(Tq); CAPTURE(Tk); CAPTURE(L);
        const auto sees = [L = long(L)](long i, long j) { return j <= i + L; };
        check_counts(mha::fast::causal_block_mask(Tq, Tk, L),
                     brute_force(sees, long(Tq), long(Tk), 64, 64));
    }
}

TEST_CASE("block mask: a window's and sinks' computed tiles, by brute force, and a NaN") {
    // T = 4000 (not a multiple of 64), W = 256: tiles counted from the formula
    const std::size_t T = 4000, W = 256, S = 4;
    const Sees window = [=](long i, long j) { return j <= i && i - j < long(W); };
    const Sees sinks = [=](long i, long j) { return j <= i && (j < long(S) || i - j < long(W)); };
    std::size_t window_tiles = 0, sink_tiles = 0;
    for (long i0 = 0; i0 < long(T); i0 += 64)
        for (long j0 = 0; j0 < long(T); j0 += 64) {
            bool w = false, s = false;
            for (long i = i0; i < std::min(long(T), i0 + 64); ++i)
                for (long j = j0; j < std::min(long(T), j0 + 64); ++j)
                    w = w || window(i, j), s = s || sinks(i, j);
            window_tiles += w, sink_tiles += s;
        }
    // a window of 256 over 64-row tiles touches 5 key tiles per query block,
    // sinks one more (the first key tile) once the window has left it
    CHECK(window_tiles < 5 * 63);
    CHECK(sink_tiles > window_tiles);
    const mha::Mask wm = mha::mask_of(mha::sliding_window(W), 1, 1, T, T);
    const mha::Mask sm = mha::mask_of(mha::sinks_window(S, W), 1, 1, T, T);
    const BlockMask wb = mha::fast::block_mask(wm, T, T), sb = mha::fast::block_mask(sm, T, T);
    CHECK(wb.computed() == window_tiles);
    CHECK(sb.computed() == sink_tiles);
    CHECK(tiles_computed(&wm, T, T, mha::fast::kNotCausal, wb) == window_tiles);
    CHECK(tiles_computed(&sm, T, T, mha::fast::kNotCausal, sb) == sink_tiles);
    // A NaN in V at key 1000: every empty tile at or before its key tile is
    // computed (0 weight times NaN is NaN, skipped or not), none after
    std::size_t with_nan = 0;
    for (std::size_t qb = 0; qb < wb.q_blocks; ++qb)
        for (std::size_t kb = 0; kb < wb.k_blocks; ++kb)
            with_nan += wb.at(0, 0, qb, kb) != Tile::empty || kb <= 1000 / 64;
    CHECK(tiles_computed(&wm, T, T, mha::fast::kNotCausal, wb, 1000) == with_nan);
}

TEST_CASE("block mask: every variant through the tiles equals the stages and the oracle" *
          doctest::test_suite("oracle")) {
    struct Shape {
        std::size_t B, Tq, Tk, E, H, H_kv;
    };
    struct Variant {
        const char* name;
        mha::MaskMod mod;
        bool self_only;  // its formula needs Tq = Tk (documents)
    };
    // rows 150..214 see nothing: a whole query tile (128..191 partly, 192..255
    // partly), as padding would make them
    const mha::MaskMod blind = [](std::size_t, std::size_t, std::size_t q, std::size_t) {
        return q < 150 || q >= 215;
    };
    std::uint64_t seed = 3600;
    for (const Shape& c : {Shape{2, 300, 300, 16, 4, 2}, Shape{1, 130, 333, 8, 2, 1},
                           Shape{1, 333, 130, 16, 4, 4}}) {
        // two documents per sequence, split in different places
        xt::xtensor<std::int64_t, 2> ids = xt::zeros<std::int64_t>({c.B, c.Tq});
        for (std::size_t b = 0; b < c.B; ++b)
            for (std::size_t t = 0; t < c.Tq; ++t) ids(b, t) = t >= 97 + 61 * b;
        const std::vector<Variant> variants = {
            {"full", mha::full(), false},
            {"causal", mha::causal_mod(), false},
            {"window 70", mha::sliding_window(70), false},
            {"sinks 3 window 50", mha::sinks_window(3, 50), false},
            {"prefix 100", mha::prefix_lm(100), false},
            {"documents", mha::documents(ids), true},
            {"window and prefix", mha::and_masks(mha::sliding_window(90), mha::prefix_lm(40)),
             false},
            {"window or prefix", mha::or_masks(mha::sliding_window(20), mha::prefix_lm(70)),
             false},
            {"window, blind rows", mha::and_masks(mha::sliding_window(100), blind), false},
        };
        for (const Variant& v : variants) {
            if (v.self_only && c.Tq != c.Tk) continue;
            for (float fill : {mha::kNegInf, -1e10f}) {
                CAPTURE(v.name); CAPTURE(c.Tq); CAPTURE(c.Tk); CAPTURE(c.H_kv); CAPTURE(fill);
                mha::Rng rng(++seed);
                const mha::MultiHeadAttention m(c.E, c.H, c.H_kv, mha::Init::xavier(seed));
                const mha::Tensor3 q = mha::randn(c.B, c.Tq, c.E, rng);   // [B, Tq, E]
                const mha::Tensor3 kv = mha::randn(c.B, c.Tk, c.E, rng);  // [B, Tk, E]
                const mha::Mask mask = mha::mask_of(v.mod, c.B, 1, c.Tq, c.Tk);  // [B,1,Tq,Tk]
                mha::Mods mods;
                mods.mask_mod = v.mod;
                mods.fill = fill;
                const mha::Tensor3 tiled = m.forward_no_weights(q, kv, kv, &mask, fill);
                const mha::Stages stages = m.forward_stages(q, kv, kv, mods);
                const auto ref = mha::reference_forward(m, q, kv, kv, mods);
                CHECK(mha::max_abs_diff(tiled, stages.output) < kTol);
                CHECK(mha::max_abs_diff(tiled, ref.output) < kTol);
            }
        }
    }
    // ALiBi's bias with a window: the bias added in every computed tile
    const std::size_t T = 300, H = 4;
    mha::Rng rng(3699);
    const mha::MultiHeadAttention m(16, H, 2, mha::Init::xavier(3699));
    const mha::Tensor3 x = mha::randn(1, T, 16, rng);
    mha::Mods mods;
    mods.mask_mod = mha::sliding_window(70);
    mods.score_mod = mha::alibi(H);
    mha::Tensor4 bias = xt::zeros<float>({std::size_t(1), H, T, T});  // [1, H, T, T]
    for (std::size_t h = 0; h < H; ++h)
        for (std::size_t i = 0; i < T; ++i)
            for (std::size_t j = 0; j < T; ++j) bias(0, h, i, j) = mods.score_mod(0, 0, h, i, j);
    const mha::Mask mask = mha::mask_of(mods.mask_mod, 1, 1, T, T);
    const mha::Tensor3 tiled = m.forward_no_weights(x, x, x, &mask, mha::kNegInf, &bias);
    CHECK(mha::max_abs_diff(tiled, mha::reference_forward(m, x, x, x, mods).output) < kTol);
}

TEST_CASE("block mask: rows that see nothing and NaN in V, as the engine with weights") {
    // a window that leaves rows 150..214 blind, a NaN in V at key 40 (in a
    // tile the window skips for the later rows) and at key 280
    const std::size_t T = 300;
    const mha::MaskMod mod = mha::and_masks(
        mha::sliding_window(60),
        [](std::size_t, std::size_t, std::size_t q, std::size_t) { return q < 150 || q >= 215; });
    const mha::Mask mask = mha::mask_of(mod, 1, 1, T, T);
    mha::Rng rng(3700);
    const mha::MultiHeadAttention m(8, 2, mha::Init::xavier(3700));
    const mha::Tensor3 x = mha::randn(1, T, 8, rng);
    // blind rows: w_o's bias alone, as forward() gives them
    const mha::Tensor3 clean = m.forward_no_weights(x, x, x, &mask);
    const mha::Tensor3 with = m.forward(x, x, x, &mask).output;
    CHECK(mha::max_abs_diff(clean, with) < kTol);
    for (std::size_t e = 0; e < 8; ++e) CHECK(clean(0, 170, e) == m.w_o.bias(e));
    for (std::size_t key : {std::size_t(40), std::size_t(280)}) {
        CAPTURE(key);
        mha::Tensor3 v = x;
        v(0, key, 2) = NAN;
        const mha::Tensor3 tiled = m.forward_no_weights(x, x, v, &mask);
        const mha::Tensor3 full = m.forward(x, x, v, &mask).output;
        std::size_t nan_rows = 0, same = 0;
        for (std::size_t i = 0; i < T; ++i) {
            nan_rows += std::isnan(tiled(0, i, 0));
            same += std::isnan(tiled(0, i, 0)) == std::isnan(full(0, i, 0));
        }
        CHECK(nan_rows > 0);
        CHECK(same == T);
    }
}
