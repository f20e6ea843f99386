// Tests for mha/attention.hpp: the fast forward against the oracle, against
// the stage functions one by one, and the properties attention must have.
#include <doctest/doctest.h>

#include <cmath>
#include <stdexcept>
#include <vector>

#include <xtensor/xview.hpp>

#include "mha/attend.hpp"
#include "mha/heads.hpp"
#include "mha/linear.hpp"
#include "mha/parallel.hpp"
#include "mha/reference.hpp"
#include "mha/scores.hpp"
#include "mha/softmax.hpp"

namespace {

// Fast path against the oracle: unit-scale data (randn inputs, Xavier
// weights), so float rounding in different summation orders stays < 2e-5.
constexpr double kTol = 2e-5;

struct Case {
    std::size_t B, Tq, Tk, E, H;
};

}  // namespace

TEST_CASE("forward equals the plain-loop oracle on many shapes") {
    const std::vector<Case> cases = {
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
    for (const Case& c : cases) {
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
            CHECK(mha::max_abs_diff(fast.output, ref.output) < kTol);
            CHECK(mha::max_abs_diff(fast.weights, ref.weights) < kTol);
        }
    }
}

TEST_CASE("forward with an additive score bias equals the oracle") {
    mha::Rng rng(61);
    const mha::MultiHeadAttention m(12, 3, mha::Init::xavier(61));
    const mha::Tensor3 q = mha::randn(2, 4, 12, rng), kv = mha::randn(2, 6, 12, rng);
    mha::Tensor4 bias({2, 1, 4, 6});  // per batch, shared by the heads
    for (float& x : bias) x = rng.normal();
    const mha::Mask causal = mha::causal_mask(4, 6);
    const auto fast = m.forward(q, kv, kv, &causal, mha::kNegInf, &bias);
    const auto ref = mha::reference_forward(m, q, kv, kv, &causal, mha::kNegInf, &bias);
    CHECK(mha::max_abs_diff(fast.output, ref.output) < kTol);
    CHECK(mha::max_abs_diff(fast.weights, ref.weights) < kTol);
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
    const std::size_t B = 8 * 4 * mha::worker_count() + 3;
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
    // sequence (chunk_starts() in attention.cpp): a sequence skipped, done
    // twice or read from the wrong rows would not match its forward alone.
    const std::size_t B = 8 * 4 * mha::worker_count() + 5, T = 64, E = 256;
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

TEST_CASE("forward equals the stages composed one by one") {
    mha::Rng rng(21);
    const mha::MultiHeadAttention m(16, 4, mha::Init::xavier(21));
    const mha::Tensor3 x = mha::randn(2, 6, 16, rng);
    const mha::Mask causal = mha::causal_mask(6, 6);
    const mha::Tensor4 Q = mha::split_heads(mha::linear(x, m.wq), 4);
    const mha::Tensor4 K = mha::split_heads(mha::linear(x, m.wk), 4);
    const mha::Tensor4 V = mha::split_heads(mha::linear(x, m.wv), 4);
    const mha::Tensor4 w =
        mha::softmax(mha::apply_mask(mha::scaled_scores(Q, K), causal));
    const mha::Tensor3 out =
        mha::linear(mha::merge_heads(mha::attend(w, V)), m.w_o);
    const auto fast = m.forward(x, x, x, &causal);
    CHECK(mha::max_abs_diff(fast.weights, w) < 1e-6);
    CHECK(mha::max_abs_diff(fast.output, out) < 1e-6);
}

TEST_CASE("causal: changing key or value j > i leaves output row i alone") {
    mha::Rng rng(31);
    const std::size_t T = 7, E = 12;
    const mha::MultiHeadAttention m(E, 3, mha::Init::xavier(31));
    const mha::Tensor3 x = mha::randn(2, T, E, rng);
    const mha::Mask causal = mha::causal_mask(T, T);
    const auto base = m.forward(x, x, x, &causal);
    for (std::size_t j = 1; j < T; ++j) {
        CAPTURE(j);
        mha::Tensor3 k = x, v = x;
        for (std::size_t e = 0; e < E; ++e) {
            k(1, j, e) += 3.0f;
            v(1, j, e) -= 2.0f;
        }
        const auto changed = m.forward(x, k, v, &causal);
        for (std::size_t i = 0; i < T; ++i)
            for (std::size_t e = 0; e < E; ++e) {
                if (i < j) {
                    CHECK(changed.output(1, i, e) == base.output(1, i, e));
                }
            }
        // and the change does reach row j itself
        CHECK(std::fabs(changed.output(1, j, 0) - base.output(1, j, 0)) > 1e-4);
    }
}

TEST_CASE("without a mask, self-attention is permutation-equivariant") {
    mha::Rng rng(41);
    const std::size_t T = 6, E = 8;
    const mha::MultiHeadAttention m(E, 2, mha::Init::xavier(41));
    const mha::Tensor3 x = mha::randn(1, T, E, rng);
    const std::size_t perm[T] = {3, 0, 5, 1, 4, 2};
    mha::Tensor3 px = x;
    for (std::size_t t = 0; t < T; ++t)
        for (std::size_t e = 0; e < E; ++e) px(0, t, e) = x(0, perm[t], e);
    const auto out = m.forward(x, x, x).output;
    const auto pout = m.forward(px, px, px).output;
    for (std::size_t t = 0; t < T; ++t)
        for (std::size_t e = 0; e < E; ++e)
            CHECK(pout(0, t, e) == doctest::Approx(out(0, perm[t], e)).epsilon(1e-5));
}

TEST_CASE("a fully masked query row: zero weights, output = w_o.bias") {
    mha::Rng rng(51);
    const mha::MultiHeadAttention m(8, 2, mha::Init::xavier(51));
    const mha::Tensor3 x = mha::randn(2, 3, 8, rng);
    const mha::Mask pad = mha::padding_mask({0, 3}, 3);  // sequence 0: no keys
    const auto fast = m.forward(x, x, x, &pad);
    const auto ref = mha::reference_forward(m, x, x, x, &pad);
    for (std::size_t i = 0; i < 3; ++i)
        for (std::size_t e = 0; e < 8; ++e) {
            CHECK(fast.output(0, i, e) == m.w_o.bias(e));
            CHECK(ref.output(0, i, e) == m.w_o.bias(e));
        }
    for (std::size_t h = 0; h < 2; ++h)
        for (std::size_t j = 0; j < 3; ++j) CHECK(fast.weights(0, h, 1, j) == 0.0f);
    // With -1e10 the same row is uniform over the three keys instead.
    const auto big = m.forward(x, x, x, &pad, -1e10f);
    CHECK(big.weights(0, 0, 0, 2) == doctest::Approx(1.0 / 3));
}

TEST_CASE("MultiHeadAttention: every bad input names the shapes") {
    CHECK_THROWS_WITH_AS(mha::MultiHeadAttention(512, 7),
                         doctest::Contains("head_dim would be 73.14"),
                         std::invalid_argument);
    CHECK_THROWS_AS(mha::MultiHeadAttention(0, 1), std::invalid_argument);
    CHECK_THROWS_AS(mha::MultiHeadAttention(8, 0), std::invalid_argument);
    CHECK_THROWS_AS(mha::MultiHeadAttention(4, 8), std::invalid_argument);
    mha::Rng rng(0);
    const mha::MultiHeadAttention m(8, 2);
    const mha::Tensor3 x = mha::randn(2, 3, 8, rng);
    CHECK_THROWS_WITH_AS(m.forward(mha::randn(2, 3, 6, rng), x, x),
                         doctest::Contains("query [2, 3, 6]"), std::invalid_argument);
    CHECK_THROWS_WITH_AS(m.forward(x, mha::randn(1, 3, 8, rng), x),
                         doctest::Contains("batch"), std::invalid_argument);
    CHECK_THROWS_WITH_AS(m.forward(x, x, mha::randn(2, 4, 8, rng)),
                         doctest::Contains("same length Tk"), std::invalid_argument);
    CHECK_THROWS_AS(m.forward(mha::Tensor3::from_shape({2, 0, 8}), x, x),
                    std::invalid_argument);
    const mha::Mask wrong = mha::causal_mask(3, 4);
    CHECK_THROWS_WITH_AS(m.forward(x, x, x, &wrong),
                         doctest::Contains("[1, 1, 3, 4]"), std::invalid_argument);
    CHECK_THROWS_AS(mha::reference_forward(m, x, x, x, &wrong),
                    std::invalid_argument);
    mha::MultiHeadAttention broken(8, 2);
    broken.w_o.weight = mha::zeros(8, 4);
    CHECK_THROWS_WITH_AS(broken.forward(x, x, x), doctest::Contains("[8, 4]"),
                         std::invalid_argument);
}
