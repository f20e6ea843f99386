// Tests for mha/fast/forward.hpp: the engine's forward against the oracle on
// shapes across its chunks and query blocks, its buffers, and its promise
// of the same bits on every call. (The module's contract, and forward()
// against forward_stages(): tests/test_attention.cpp.)
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <vector>

#include <xtensor/xmath.hpp>
#include <xtensor/xview.hpp>

#include "mha/fast/parallel.hpp"
#include "mha/backward.hpp"
#include "mha/reference.hpp"

namespace {

// Fast path against the oracle: unit-scale data (randn inputs, Xavier
// weights), so float rounding in different summation orders stays < 2e-5.
constexpr double kEngineTol = 2e-5;

struct EngineCase {
    std::size_t B, Tq, Tk, E, H;
};

// The largest |value| of @p t, at least 1e-6: the scale of a gradient.
template <class T>
double largest(const T& t) {
    double big = 1e-6;
    for (float v : t) big = std::max(big, double(std::fabs(v)));
    return big;
}

// max |a - b| relative to the largest of @p b: gradients are sums of up to
// B*T terms, in other orders on each side.
template <class A, class B>
double relative_diff(const A& a, const B& b) {
    return mha::max_abs_diff(a, b) / largest(b);
}

// The four layers' weight gradients of @p got against @p want's, each
// within 1e-5 of its largest.
void check_weight_grads(const mha::AttentionGrads& got, const mha::AttentionGrads& want) {
    CHECK(relative_diff(got.wq.weight, want.wq.weight) < 1e-5);
    CHECK(relative_diff(got.wk.weight, want.wk.weight) < 1e-5);
    CHECK(relative_diff(got.wv.weight, want.wv.weight) < 1e-5);
    CHECK(relative_diff(got.w_o.weight, want.w_o.weight) < 1e-5);
}

}  // namespace

TEST_CASE("forward equals the plain-loop oracle on many shapes" *
          doctest::test_suite("oracle")) {
    const std::vector<EngineCase> cases = {
        {1, 1, 1, 1, 1},  {1, 1, 1, 8, 8},  {1, 4, 4, 8, 2},   {2, 5, 5, 12, 3},
        {3, 7, 7, 16, 1}, {2, 3, 9, 16, 4}, {1, 9, 2, 6, 6},   {4, 6, 6, 32, 8},
        {2, 16, 16, 64, 8}, {1, 1, 5, 4, 2}, {5, 3, 3, 10, 5}, {2, 33, 17, 24, 6},
        // The batch goes through in chunks of about 512 rows: many chunks
        // with a short last one (each worker takes the next), and a few
        // long sequences (one chunk at a time, its heads across workers),
        // with several query blocks (16 rows under a mask when Tk <= 512,
        // else 64) and a short last block.
        {65, 64, 64, 8, 2}, {210, 10, 20, 8, 4}, {3, 300, 300, 8, 2}, {2, 70, 130, 8, 4},
        {1, 70, 600, 8, 2}};
    std::uint64_t seed = 100;
    for (const EngineCase& c : cases) {
        for (int masked = 0; masked < 3; ++masked) {
            CAPTURE(c.B); CAPTURE(c.Tq); CAPTURE(c.Tk); CAPTURE(c.E);
            CAPTURE(c.H); CAPTURE(masked);
            mha::Rng rng(++seed);
            const mha::MultiHeadAttention m(c.E, c.H, mha::Init::xavier(seed));
            const mha::Tensor3 q = mha::randn(c.B, c.Tq, c.E, rng);
            const mha::Tensor3 kv = mha::randn(c.B, c.Tk, c.E, rng);
            const mha::Tensor3 v = mha::randn(c.B, c.Tk, c.E, rng);
            std::vector<std::size_t> lengths;
            // Sequence 0 is all padding: fully masked rows, zero weights
            // with -inf, uniform with -1e10 (the fill alternates by case).
            for (std::size_t b = 0; b < c.B; ++b)
                lengths.push_back(b == 0 ? 0 : 1 + b % c.Tk);
            const float fill = seed % 2 == 0 ? mha::kNegInf : -1e10f;
            mha::Mask mask;
            if (masked == 1) mask = mha::causal_mask(c.Tq, c.Tk);
            if (masked == 2)
                mask = mha::combine_masks(mha::causal_mask(c.Tq, c.Tk),
                                          mha::padding_mask(lengths, c.Tk));
            const mha::Mask* mp = masked ? &mask : nullptr;
            CAPTURE(fill);
            const auto fast = m.forward(q, kv, v, mp, fill);
            const auto ref = mha::reference_forward(m, q, kv, v, mp, fill);
            CHECK(mha::shape_of(fast.output) == mha::shape_of(q));
            CHECK(fast.weights.shape(1) == c.H);
            CHECK(mha::max_abs_diff(fast.output, ref.output) < kEngineTol);
            CHECK(mha::max_abs_diff(fast.weights, ref.weights) < kEngineTol);
            // without the weights: the tiled path, the same output
            CHECK(mha::max_abs_diff(m.forward_no_weights(q, kv, v, mp, fill), ref.output) < kEngineTol);
        }
    }
}

TEST_CASE("forward_no_weights equals the oracle across its tiles, with GQA, bias and NaN" *
          doctest::test_suite("oracle")) {
    struct Shape {
        std::size_t B, Tq, Tk, E, H, H_kv;
    };
    // Tiles of 64 queries by 256 keys: one key, tiles with a short last
    // one, a causal mask that hides whole tiles, grouped-query heads.
    std::uint64_t seed = 700;
    for (const Shape& c : {Shape{1, 1, 1, 8, 2, 1}, Shape{2, 65, 257, 16, 4, 2},
                           Shape{1, 600, 600, 16, 4, 1}, Shape{3, 130, 513, 8, 2, 2},
                           Shape{1, 64, 256, 32, 8, 4}}) {
        for (int masked = 0; masked < 2; ++masked) {
            CAPTURE(c.Tq); CAPTURE(c.Tk); CAPTURE(c.H_kv); CAPTURE(masked);
            mha::Rng rng(++seed);
            const mha::MultiHeadAttention m(c.E, c.H, c.H_kv, mha::Init::xavier(seed));
            const mha::Tensor3 q = mha::randn(c.B, c.Tq, c.E, rng);
            const mha::Tensor3 kv = mha::randn(c.B, c.Tk, c.E, rng);
            mha::Tensor4 bias({1, c.H, 1, c.Tk});  // per head and key, as ALiBi-like biases are
            for (float& x : bias) x = rng.normal();
            const mha::Mask causal = mha::causal_mask(c.Tq, c.Tk);
            const mha::Mask* mp = masked ? &causal : nullptr;
            const auto ref = mha::reference_forward(m, q, kv, kv, mp, mha::kNegInf, &bias);
            const mha::Tensor3 got = m.forward_no_weights(q, kv, kv, mp, mha::kNegInf, &bias);
            CHECK(mha::max_abs_diff(got, ref.output) < kEngineTol);
        }
    }
    // A NaN in a key spoils the rows that see it, as in forward()
    mha::Rng rng(799);
    const mha::MultiHeadAttention m(8, 2, mha::Init::xavier(799));
    mha::Tensor3 x = mha::randn(1, 300, 8, rng);
    x(0, 280, 3) = NAN;
    const mha::Mask causal = mha::causal_mask(300, 300);
    const mha::Tensor3 with = m.forward(x, x, x, &causal).output;
    const mha::Tensor3 without = m.forward_no_weights(x, x, x, &causal);
    std::size_t nan_rows = 0, same = 0;
    for (std::size_t i = 0; i < 300; ++i) {
        nan_rows += std::isnan(without(0, i, 0));
        same += std::isnan(without(0, i, 0)) == std::isnan(with(0, i, 0));
    }
    CHECK(nan_rows > 0);
    CHECK(same == 300);
    const mha::Tensor3 clean = mha::randn(1, 300, 8, rng);  // and without NaN, none
    CHECK(!xt::any(xt::isnan(m.forward_no_weights(clean, clean, clean, &causal))));
}

TEST_CASE("mha::causal gives what the causal mask tensor gives, bit for bit, without it") {
    struct Shape {
        std::size_t B, Tq, Tk, E, H, H_kv;
    };
    // Tq != Tk both ways (query i sees keys 0..i, as causal_mask), one row,
    // blocks of 16 and 64 rows and tiles of 256 keys, chunks, GQA.
    std::uint64_t seed = 900;
    for (const Shape& c : {Shape{1, 1, 1, 8, 2, 2}, Shape{2, 5, 9, 12, 3, 3},
                           Shape{2, 9, 5, 12, 3, 1}, Shape{70, 17, 17, 8, 2, 1},
                           Shape{1, 300, 300, 16, 4, 2}, Shape{1, 600, 600, 8, 2, 2},
                           Shape{2, 130, 513, 16, 4, 4}}) {
        CAPTURE(c.B); CAPTURE(c.Tq); CAPTURE(c.Tk); CAPTURE(c.H_kv);
        mha::Rng rng(++seed);
        const mha::MultiHeadAttention m(c.E, c.H, c.H_kv, mha::Init::xavier(seed));
        const mha::Tensor3 q = mha::randn(c.B, c.Tq, c.E, rng);
        const mha::Tensor3 kv = mha::randn(c.B, c.Tk, c.E, rng);
        const mha::Mask tril = mha::causal_mask(c.Tq, c.Tk);
        const auto with_mask = m.forward(q, kv, kv, &tril);
        const auto flag = m.forward(q, kv, kv, mha::causal);
        CHECK(mha::max_abs_diff(flag.output, with_mask.output) == 0.0);
        CHECK(mha::max_abs_diff(flag.weights, with_mask.weights) == 0.0);
        const mha::Tensor3 tiled = m.forward_no_weights(q, kv, kv, mha::causal);
        CHECK(mha::max_abs_diff(tiled, m.forward_no_weights(q, kv, kv, &tril)) == 0.0);
        const auto ref = mha::reference_forward(m, q, kv, kv, &tril);
        CHECK(mha::max_abs_diff(tiled, ref.output) < kEngineTol);
    }
    // and it is causal: the future cannot change the past
    mha::Rng rng(990);
    const mha::MultiHeadAttention m(16, 4, mha::Init::xavier(990));
    mha::Tensor3 x = mha::randn(1, 300, 16, rng);
    const mha::Tensor3 before = m.forward_no_weights(x, x, x, mha::causal);
    x(0, 299, 5) += 1.0f;
    const mha::Tensor3 after = m.forward_no_weights(x, x, x, mha::causal);
    CHECK(mha::max_abs_diff(xt::view(before, 0, xt::range(0, 299)),
                            xt::view(after, 0, xt::range(0, 299))) == 0.0);
    CHECK(mha::max_abs_diff(before, after) > 1e-4);
}

TEST_CASE("forward with an additive score bias equals the oracle" *
          doctest::test_suite("oracle")) {
    mha::Rng rng(61);
    const mha::MultiHeadAttention m(12, 3, mha::Init::xavier(61));
    const mha::Tensor3 q = mha::randn(2, 4, 12, rng), kv = mha::randn(2, 6, 12, rng);
    mha::Tensor4 bias({2, 1, 4, 6});  // per batch, shared by the heads
    for (float& x : bias) x = rng.normal();
    const mha::Mask causal = mha::causal_mask(4, 6);
    const auto fast = m.forward(q, kv, kv, &causal, mha::kNegInf, &bias);
    const auto ref = mha::reference_forward(m, q, kv, kv, &causal, mha::kNegInf, &bias);
    CHECK(mha::max_abs_diff(fast.output, ref.output) < kEngineTol);
    CHECK(mha::max_abs_diff(fast.weights, ref.weights) < kEngineTol);
    // and the bias matters: without it the weights differ
    CHECK(mha::max_abs_diff(m.forward(q, kv, kv, &causal).weights, fast.weights) > 1e-3);
    const mha::Tensor4 wrong({2, 2, 4, 6});
    CHECK_THROWS_WITH_AS(m.forward(q, kv, kv, nullptr, mha::kNegInf, &wrong),
                         doctest::Contains("score bias [2, 2, 4, 6] does not fit"),
                         std::invalid_argument);
}

TEST_CASE("trace_into and forward_into reuse their buffers, with forward's numbers") {
    mha::Rng rng(91);
    const mha::MultiHeadAttention m(12, 3, mha::Init::xavier(91));
    const mha::Mask causal = mha::causal_mask(5, 5);
    mha::ForwardTrace t;
    mha::AttentionOutput o;
    for (std::size_t b : {2, 2, 3, 2}) {  // same shape twice, then others
        CAPTURE(b);
        const mha::Tensor3 x = mha::randn(b, 5, 12, rng);
        const bool same = t.weights.size() == b * 3 * 25;
        const float* kept = t.weights.data();
        const float* kept_w = o.weights.data();
        const float* kept_out = o.output.data();
        m.trace_into(t, x, x, x, &causal);
        m.forward_into(o, x, x, x, &causal);
        if (same) {  // no new memory
            CHECK(t.weights.data() == kept);
            CHECK(o.weights.data() == kept_w);
            CHECK(o.output.data() == kept_out);
        }
        const auto fresh = m.forward(x, x, x, &causal);
        CHECK(mha::max_abs_diff(t.output, fresh.output) == 0.0);
        CHECK(mha::max_abs_diff(t.weights, fresh.weights) == 0.0);
        CHECK(mha::max_abs_diff(o.output, fresh.output) == 0.0);
        CHECK(mha::max_abs_diff(o.weights, fresh.weights) == 0.0);
    }
}

TEST_CASE("forward gives the same bits on every call, whichever core takes a chunk") {
    // Enough sequences for the batch to go through in chunks, one core
    // taking the next chunk nobody has taken: which core takes which chunk
    // changes from call to call, and must not change a single bit. (Had the
    // chunks' boundaries followed the timing, results would differ in the
    // last bits: BLAS rounds [M, E] x [E, E] differently for different M.)
    // Chunks hold 8 sequences of 64 (512 rows), and are shared out one at a
    // time from 4 per worker on: that many, and the smaller last ones, on
    // any machine.
    const std::size_t B = 8 * 4 * mha::fast::worker_count() + 3;
    mha::Rng rng(17);
    const mha::MultiHeadAttention m(256, 4, mha::Init::xavier(17));
    const mha::Tensor3 x = mha::randn(B, 64, 256, rng);
    const mha::Mask causal = mha::causal_mask(64, 64);
    const auto first = m.forward(x, x, x, &causal);
    mha::AttentionOutput again;
    for (int call = 0; call < 12; ++call) {
        CAPTURE(call);
        m.forward_into(again, x, x, x, &causal);
        REQUIRE(mha::max_abs_diff(again.output, first.output) == 0.0);
        REQUIRE(mha::max_abs_diff(again.weights, first.weights) == 0.0);
    }
}

TEST_CASE("forward: every sequence of a chunked batch, the last chunks' too, as if alone") {
    // A batch in chunks of 8 sequences whose last chunks shrink to one
    // sequence (plan_chunks() in fast/forward.cpp): a sequence skipped, done
    // twice or read from the wrong rows would not match its forward alone.
    const std::size_t B = 8 * 4 * mha::fast::worker_count() + 5, T = 64, E = 256;
    mha::Rng rng(19);
    const mha::MultiHeadAttention m(E, 4, mha::Init::xavier(19));
    const mha::Tensor3 x = mha::randn(B, T, E, rng);
    const mha::Mask causal = mha::causal_mask(T, T);
    const auto all = m.forward(x, x, x, &causal);
    for (std::size_t b : {std::size_t{0}, B / 2, B - 9, B - 5, B - 3, B - 2, B - 1}) {
        CAPTURE(b);
        const mha::Tensor3 one = xt::view(x, xt::range(b, b + 1));
        const auto alone = m.forward(one, one, one, &causal);
        // the same sums, over different row counts in BLAS: a few ulps apart
        CHECK(mha::max_abs_diff(alone.output, xt::view(all.output, xt::range(b, b + 1))) < 1e-5);
        CHECK(mha::max_abs_diff(alone.weights, xt::view(all.weights, xt::range(b, b + 1))) < 1e-6);
    }
}

TEST_CASE("backward_self_attention: dL/dX is the stages' query + key + value, every weight's "
          "gradient as theirs, GQA and masks" * doctest::test_suite("oracle")) {
    // One [B*T, E + 2 Ekv] dQKV and one product for dL/dX against the three
    // tensors of backward_stages(X, X, X), summed in double.
    struct Shape {
        std::size_t B, T, E, H;
    };
    std::uint64_t seed = 800;
    for (const Shape& c : {Shape{2, 5, 12, 3}, Shape{40, 16, 16, 2}, Shape{1, 70, 8, 2},
                           Shape{3, 9, 64, 4}}) {
        for (int masked = 0; masked < 2; ++masked) {
            for (std::size_t H_kv : {c.H, std::size_t{1}}) {
                CAPTURE(c.B); CAPTURE(c.T); CAPTURE(c.E); CAPTURE(masked); CAPTURE(H_kv);
                mha::Rng rng(++seed);
                const mha::MultiHeadAttention m(c.E, c.H, H_kv, mha::Init::xavier(seed));
                const mha::Tensor3 x = mha::randn(c.B, c.T, c.E, rng);
                const mha::Tensor3 r = mha::randn(c.B, c.T, c.E, rng);
                const mha::Mask causal = mha::causal_mask(c.T, c.T);
                const mha::Mask* mp = masked ? &causal : nullptr;
                const auto want = mha::backward_stages(m, x, x, x, r, mp);
                const auto got = mha::backward_self_attention(m, m.trace(x, x, x, mp), x, r, mp);
                const mha::Tensor3 sum = want.query + want.key + want.value;
                CHECK(relative_diff(got.input, sum) < 1e-5);
                check_weight_grads(got, want);
                CHECK(relative_diff(got.wq.bias, want.wq.bias) < 1e-5);
                CHECK(relative_diff(got.wv.bias, want.wv.bias) < 1e-5);
                CHECK(relative_diff(got.w_o.bias, want.w_o.bias) < 1e-5);
                // wk's bias shifts every score of a row alike, which softmax
                // ignores: its gradient is 0, here rounding of order 1e-8
                CHECK(mha::max_abs_diff(got.wk.bias, want.wk.bias) < 1e-5 * largest(want.wq.bias));
                CHECK(got.query.size() == 0);  // the one input's gradient is input
                CHECK(got.key.size() == 0);
                CHECK(got.value.size() == 0);
            }
        }
    }
}

TEST_CASE("backward: the engine's gradients equal the stages', masks, cross-attention, GQA" *
          doctest::test_suite("oracle")) {
    // Shapes across the engine's chunks, a fully padded sequence, a causal
    // mask with Tq != Tk; from a kept trace as from the inputs.
    struct Shape {
        std::size_t B, Tq, Tk, E, H;
    };
    std::uint64_t seed = 700;
    // (D = 16: each work item packs the K and V of all its kv heads at once)
    for (const Shape& c : {Shape{2, 5, 5, 12, 3}, Shape{3, 7, 4, 16, 4},
                           Shape{40, 16, 16, 16, 2}, Shape{1, 70, 33, 8, 2},
                           Shape{5, 7, 6, 64, 4}}) {
        for (int masked = 0; masked < 3; ++masked) {
            for (std::size_t H_kv : {c.H, c.H > 1 ? c.H / 2 : c.H}) {
                CAPTURE(c.B); CAPTURE(c.Tq); CAPTURE(c.Tk); CAPTURE(masked); CAPTURE(H_kv);
                mha::Rng rng(++seed);
                const mha::MultiHeadAttention m(c.E, c.H, H_kv, mha::Init::xavier(seed));
                const mha::Tensor3 q = mha::randn(c.B, c.Tq, c.E, rng);
                const mha::Tensor3 kv = mha::randn(c.B, c.Tk, c.E, rng);
                const mha::Tensor3 r = mha::randn(c.B, c.Tq, c.E, rng);
                std::vector<std::size_t> lengths(c.B, c.Tk);
                lengths[0] = 0;
                mha::Mask mask = masked == 1 ? mha::causal_mask(c.Tq, c.Tk)
                                             : mha::padding_mask(lengths, c.Tk);
                const mha::Mask* mp = masked ? &mask : nullptr;
                const auto want = mha::backward_stages(m, q, kv, kv, r, mp);
                const mha::ForwardTrace t = m.trace(q, kv, kv, mp);
                for (const auto& got : {mha::backward(m, q, kv, kv, r, mp),
                                        mha::backward(m, t, q, kv, kv, r, mp)}) {
                    check_weight_grads(got, want);
                    CHECK(relative_diff(got.wq.bias, want.wq.bias) < 1e-5);
                    CHECK(relative_diff(got.w_o.bias, want.w_o.bias) < 1e-5);
                    CHECK(relative_diff(got.query, want.query) < 1e-5);
                    CHECK(relative_diff(got.key, want.key) < 1e-5);
                    CHECK(relative_diff(got.value, want.value) < 1e-5);
                }
            }
        }
    }
}

TEST_CASE("backward under a random mask: keys nobody sees, rows that see nothing, blocks "
          "that stop early, the stages' gradients" * doctest::test_suite("oracle")) {
    // Under the -inf fill each block of 16 query rows stops at the last key
    // its rows see, and each block of keys starts at the first query block
    // that sees it; a random mask makes those limits uneven.
    mha::Rng rng(950);
    const std::size_t B = 3, Tq = 40, Tk = 37, E = 16, H = 2;
    const mha::MultiHeadAttention m(E, H, 1, mha::Init::xavier(950));
    const mha::Tensor3 q = mha::randn(B, Tq, E, rng), kv = mha::randn(B, Tk, E, rng);
    const mha::Tensor3 r = mha::randn(B, Tq, E, rng);
    mha::Mask mask = mha::Mask::from_shape({B, H, Tq, Tk});
    for (bool& keep : mask) keep = rng.uniform(0.0f, 1.0f) < 0.3f;
    for (std::size_t i = 0; i < Tq; ++i) {
        for (std::size_t j = 0; j < Tk; ++j) {
            mask(0, 1, i, j) = j < i / 3;  // head 1: a staircase, the last keys unseen
            if (j >= 20) mask(1, 0, i, j) = false;  // keys 20.. seen by no query
        }
    }
    for (std::size_t j = 0; j < Tk; ++j) mask(2, 0, 17, j) = false;  // a row that sees nothing
    const auto want = mha::backward_stages(m, q, kv, kv, r, &mask);
    const auto got = mha::backward(m, m.trace(q, kv, kv, &mask), q, kv, kv, r, &mask);
    CHECK(relative_diff(got.query, want.query) < 1e-5);
    CHECK(relative_diff(got.key, want.key) < 1e-5);
    CHECK(relative_diff(got.value, want.value) < 1e-5);
    check_weight_grads(got, want);
}

TEST_CASE("backward: skipping masked keys hides no NaN that the whole sums meet") {
    // One NaN in V, K, Q or d output. With the -inf fill the backward skips
    // what the causal mask hides; with another fill (on the same trace) it
    // computes every column. A weight of 0 times NaN is NaN in the whole
    // sums, so both must put NaN in the same places, and agree elsewhere.
    // E = 32 (D = 16): K and V of both heads packed and checked at once.
    const std::size_t B = 1, T = 64, H = 2;
    const mha::Mask causal = mha::causal_mask(T, T);
    for (int where = 0; where < 8; ++where) {
        const std::size_t E = where < 4 ? 16 : 32;
        const mha::MultiHeadAttention m(E, H, mha::Init::xavier(960));
        CAPTURE(where);  // % 4: 0 value, 1 key, 2 query, 3 d output
        mha::Rng rng(960);
        mha::Tensor3 q = mha::randn(B, T, E, rng), k = mha::randn(B, T, E, rng);
        mha::Tensor3 v = mha::randn(B, T, E, rng), dy = mha::randn(B, T, E, rng);
        mha::Tensor3* spoiled[4] = {&v, &k, &q, &dy};
        // a late key or an early query; with E = 32 in the second head
        (*spoiled[where % 4])(0, where % 4 < 2 ? 50 : 5, where < 4 ? 3 : 19) = NAN;
        const mha::ForwardTrace t = m.trace(q, k, v, &causal);
        const auto skipped = mha::backward(m, t, q, k, v, dy, &causal);
        const auto whole = mha::backward(m, t, q, k, v, dy, &causal, -1e30f);
        const std::pair<const mha::Tensor3*, const mha::Tensor3*> pairs[] = {
            {&skipped.query, &whole.query}, {&skipped.key, &whole.key},
            {&skipped.value, &whole.value}};
        std::size_t nans = 0;
        for (const auto& [a, b] : pairs) {
            double scale = 1e-6, diff = 0.0;
            for (std::size_t i = 0; i < a->size(); ++i) {
                const float x = a->data()[i], y = b->data()[i];
                REQUIRE(std::isnan(x) == std::isnan(y));
                nans += std::isnan(y);
                if (!std::isnan(y)) {
                    scale = std::max(scale, double(std::fabs(y)));
                    diff = std::max(diff, double(std::fabs(x - y)));
                }
            }
            CHECK(diff < 1e-5 * scale);
        }
        CHECK(nans > 0);
    }
}
