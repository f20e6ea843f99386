// Randomised property test: 300 random configurations of the forward pass
// (B, Tq, Tk, E, H, masks of every broadcast shape, score biases, fills,
// seeds), each checked against the plain-loop oracle. The configurations
// come from one fixed seed, so every run tests the same 300.
#include <doctest/doctest.h>

#include <cmath>
#include <random>

#include "mha/reference.hpp"

namespace {

// Unit-scale data: float rounding in different summation orders stays
// below 2e-5 (the same tolerance as the hand-picked cases).
constexpr double kPropertyTol = 2e-5;

std::size_t pick(std::mt19937& g, std::size_t lo, std::size_t hi) {
    return std::uniform_int_distribution<std::size_t>(lo, hi)(g);
}

}  // namespace

TEST_CASE("property: 300 random configurations match the oracle" *
          doctest::test_suite("oracle")) {
    std::mt19937 g(20261130);
    int fully_masked_rows = 0, with_bias = 0, masked = 0;
    for (int c = 0; c < 300; ++c) {
        const std::size_t B = pick(g, 1, 3), Tq = pick(g, 1, 9), Tk = pick(g, 1, 9);
        const std::size_t H = pick(g, 1, 4), D = pick(g, 1, 6), E = H * D;
        const std::uint64_t seed = g();
        CAPTURE(c); CAPTURE(B); CAPTURE(Tq); CAPTURE(Tk); CAPTURE(E); CAPTURE(H);
        mha::Rng rng(seed);
        const mha::MultiHeadAttention m(E, H, mha::Init::xavier(seed));
        const mha::Tensor3 q = mha::randn(B, Tq, E, rng);
        const mha::Tensor3 k = mha::randn(B, Tk, E, rng);
        const mha::Tensor3 v = mha::randn(B, Tk, E, rng);
        // A random mask whose first three axes are each full or 1.
        mha::Mask mask;
        const bool use_mask = pick(g, 0, 3) > 0;
        if (use_mask) {
            mask = mha::Mask::from_shape({pick(g, 0, 1) ? B : 1, pick(g, 0, 1) ? H : 1,
                                          pick(g, 0, 1) ? Tq : 1, Tk});
            const std::size_t density = pick(g, 1, 4);  // of 4 keys, keep ~density
            for (bool& x : mask) x = pick(g, 1, 4) <= density;
            ++masked;
        }
        mha::Tensor4 bias;
        const bool use_bias = pick(g, 0, 4) == 0;
        if (use_bias) {
            bias = mha::Tensor4::from_shape({1, pick(g, 0, 1) ? H : 1, Tq, Tk});
            for (float& x : bias) x = rng.normal();
            ++with_bias;
        }
        const float fill = pick(g, 0, 1) ? mha::kNegInf : -1e10f;
        const auto fast = m.forward(q, k, v, use_mask ? &mask : nullptr, fill,
                                    use_bias ? &bias : nullptr);
        const auto ref = mha::reference_forward(m, q, k, v, use_mask ? &mask : nullptr,
                                                fill, use_bias ? &bias : nullptr);
        CHECK(mha::max_abs_diff(fast.output, ref.output) < kPropertyTol);
        CHECK(mha::max_abs_diff(fast.weights, ref.weights) < kPropertyTol);
        // Every row of weights sums to 1, or to 0 when fully masked by -inf.
        for (std::size_t r = 0; r < fast.weights.size() / Tk; ++r) {
            double sum = 0;
            for (std::size_t j = 0; j < Tk; ++j) sum += fast.weights.data()[r * Tk + j];
            if (sum == 0.0) ++fully_masked_rows;
            CHECK((std::fabs(sum - 1.0) < 1e-5 || (sum == 0.0 && fill == mha::kNegInf)));
        }
    }
    // The generator did reach the cases it was meant to reach.
    CHECK(masked > 150);
    CHECK(with_bias > 30);
    CHECK(fully_masked_rows > 10);
}

TEST_CASE("NaN and Inf inputs: what they reach, and what they do not" *
          doctest::test_suite("oracle")) {
    // Documented behaviour (no error is raised): a NaN or Inf in a key or
    // value makes every output of its sequence NaN, even under a causal mask,
    // because a masked key still enters the weighted sum as 0 x NaN = NaN
    // (PyTorch does the same). A NaN or Inf query spoils only its own row.
    // Other sequences of the batch are never touched.
    mha::Rng rng(71);
    const mha::MultiHeadAttention m(8, 2, mha::Init::xavier(71));
    const mha::Tensor3 clean = mha::randn(2, 5, 8, rng);
    const mha::Mask causal = mha::causal_mask(5, 5);
    float bad = NAN;
    SUBCASE("NaN") { bad = NAN; }
    SUBCASE("+Inf") { bad = INFINITY; }
    SUBCASE("-Inf") { bad = -INFINITY; }
    auto nan_rows = [](const mha::Tensor3& out, std::size_t b) {
        std::size_t n = 0;
        for (std::size_t t = 0; t < out.shape(1); ++t) {
            bool row_nan = false;
            for (std::size_t e = 0; e < out.shape(2); ++e)
                row_nan = row_nan || std::isnan(out(b, t, e));
            n += row_nan;
        }
        return n;
    };
    mha::Tensor3 x = clean;
    x(0, 2, 3) = bad;  // sequence 0, token 2, as query, key and value
    const auto self = m.forward(x, x, x, &causal).output;
    CHECK(nan_rows(self, 0) == 5);
    CHECK(nan_rows(self, 1) == 0);
    const auto query_only = m.forward(x, clean, clean, &causal).output;
    CHECK(nan_rows(query_only, 0) == 1);
    CHECK(std::isnan(query_only(0, 2, 0)));
    CHECK(nan_rows(query_only, 1) == 0);
    // Long enough for several 64-row query blocks: the forward skips the
    // key columns a whole block may not see, but not past a bad value row,
    // so the NaN still reaches the rows before it.
    const mha::Mask long_causal = mha::causal_mask(150, 150);
    const mha::Tensor3 long_clean = mha::randn(2, 150, 8, rng);
    mha::Tensor3 long_x = long_clean;
    long_x(0, 140, 5) = bad;  // only the value is bad
    const auto long_out = m.forward(long_clean, long_clean, long_x, &long_causal).output;
    CHECK(nan_rows(long_out, 0) == 150);
    CHECK(nan_rows(long_out, 1) == 0);
}

TEST_CASE("B = 1 and T = 1 work, and match the oracle" *
          doctest::test_suite("oracle")) {
    mha::Rng rng(81);
    const mha::MultiHeadAttention m(6, 3, mha::Init::xavier(81));
    const mha::Tensor3 x = mha::randn(1, 1, 6, rng);
    const mha::Mask causal = mha::causal_mask(1, 1);
    const auto fast = m.forward(x, x, x, &causal);
    const auto ref = mha::reference_forward(m, x, x, x, &causal);
    CHECK(mha::shape_of(fast.output) == "[1, 1, 6]");
    CHECK(fast.weights(0, 0, 0, 0) == 1.0f);  // one key: all the weight
    CHECK(mha::max_abs_diff(fast.output, ref.output) < kPropertyTol);
}
