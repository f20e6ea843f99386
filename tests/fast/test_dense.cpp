// Tests for mha/fast/dense.hpp: the engine's position-wise stages against the
// teaching core's (layer_norm.hpp, feed_forward.hpp, linear.hpp, loss.hpp), at
// sizes with fewer rows than workers, odd widths, and extreme values.
#include <doctest/doctest.h>

#include <cmath>

#include "../worst.hpp"
#include "mha/fast/dense.hpp"

namespace dense_test {

// Largest |a - b| over the largest |b| (1 if b is all 0), for tensors of any rank.
template <class A, class B>
double rel(const A& a, const B& b) {
    double diff = 0, top = 0;
    for (std::size_t i = 0; i < a.size(); ++i) {
        mha_test::keep_worst(diff, std::fabs(double(a.data()[i]) - b.data()[i]));
        top = std::max(top, double(std::fabs(b.data()[i])));
    }
    return diff / (top > 0 ? top : 1);
}

}  // namespace dense_test

using dense_test::rel;

TEST_CASE("fast dense: linear and its backward equal the teaching core's") {
    mha::Rng rng(11);
    for (auto [B, T, in, out] : {std::array<std::size_t, 4>{1, 1, 3, 5}, {2, 33, 17, 9},
                                 {4, 64, 64, 96}}) {
        const mha::Linear l = mha::make_linear(in, out, mha::Init::torch_linear(), rng);
        const mha::Tensor3 x = mha::randn(B, T, in, rng), dy = mha::randn(B, T, out, rng);
        CHECK(rel(mha::fast::linear(x, l), mha::linear(x, l)) < 1e-6);
        mha::LinearGrad g1, g2;
        CHECK(rel(mha::fast::linear_backward(x, dy, l, g1), mha::linear_backward(x, dy, l, g2)) < 1e-6);
        CHECK(rel(g1.weight, g2.weight) < 1e-6);
        CHECK(rel(g1.bias, g2.bias) < 1e-6);
    }
    const mha::Linear l = mha::make_linear(3, 5, mha::Init::xavier(), rng);
    CHECK_THROWS_AS(mha::fast::linear(mha::Tensor3({1, 2, 4}), l), std::invalid_argument);
}

TEST_CASE("fast dense: layer_norm and its backward, at small and large scales") {
    mha::Rng rng(12);
    for (float scale : {1e-4f, 1.0f, 1e3f})
        for (std::size_t E : {1, 7, 64}) {
            CAPTURE(scale);
            CAPTURE(E);
            mha::LayerNorm n = mha::make_layer_norm(E);
            for (float& w : n.weight) w = 1 + 0.5f * rng.normal();
            for (float& b : n.bias) b = rng.normal();
            const mha::Tensor3 x = mha::randn(3, 5, E, rng) * scale, dy = mha::randn(3, 5, E, rng);
            mha::NormTrace t1, t2;
            CHECK(rel(mha::fast::layer_norm(x, n, &t1), mha::layer_norm(x, n, &t2)) < 1e-5);
            mha::NormGrad g1, g2;
            CHECK(rel(mha::fast::layer_norm_backward(t1, dy, n, g1),
                      mha::layer_norm_backward(t2, dy, n, g2)) < 1e-5);
            CHECK(rel(g1.weight, g2.weight) < 1e-5);
            CHECK(rel(g1.bias, g2.bias) < 1e-5);
        }
}

TEST_CASE("fast dense: the feed-forward's GELU in vectors, within 1e-6 of erf's for |h| <= 10") {
    // h from -10 to 10 through the identity layers: gelu itself, then its gradient
    const std::size_t n = 2001;
    mha::FeedForward f;
    f.linear1 = {mha::Tensor2({1, 1}, 1.0f), mha::Tensor1({1}, 0.0f)};
    f.linear2 = {mha::Tensor2({1, 1}, 1.0f), mha::Tensor1({1}, 0.0f)};
    mha::Tensor3 x = mha::Tensor3::from_shape({1, n, 1});
    for (std::size_t i = 0; i < n; ++i) x(0, i, 0) = -10.0f + 0.01f * float(i);
    mha::FeedForwardTrace t;
    const mha::Tensor3 y = mha::fast::feed_forward(x, f, &t);
    double worst = 0, worst_grad = 0;
    for (std::size_t i = 0; i < n; ++i) {
        const double h = x(0, i, 0);
        mha_test::keep_worst(worst, std::fabs(y(0, i, 0) - 0.5 * h * (1 + std::erf(h / std::sqrt(2.0)))));
    }
    const mha::Tensor3 ones = xt::ones<float>({std::size_t(1), n, std::size_t(1)});
    mha::FeedForwardGrads g;
    const mha::Tensor3 dx = mha::fast::feed_forward_backward(x, t, ones, f, g);
    for (std::size_t i = 0; i < n; ++i)
        mha_test::keep_worst(worst_grad, std::fabs(dx(0, i, 0) - mha::gelu_grad(x(0, i, 0))));
    MESSAGE("gelu: worst absolute error " << worst << ", of its gradient " << worst_grad);
    CHECK(worst < 1e-6);  // measured 4e-7; |h| up to 10: erf's 1.5e-7 times |h| / 2, plus float rounding
    CHECK(worst_grad < 1e-6);
    // and a real layer, against the teaching core's
    mha::Rng rng(13);
    const mha::FeedForward ff = mha::make_feed_forward(16, 40, rng);
    const mha::Tensor3 xs = mha::randn(2, 9, 16, rng), dy = mha::randn(2, 9, 16, rng);
    mha::FeedForwardTrace t1, t2;
    CHECK(rel(mha::fast::feed_forward(xs, ff, &t1), mha::feed_forward(xs, ff, &t2)) < 1e-5);
    mha::FeedForwardGrads g1, g2;
    CHECK(rel(mha::fast::feed_forward_backward(xs, t1, dy, ff, g1),
              mha::feed_forward_backward(xs, t2, dy, ff, g2)) < 1e-5);
    CHECK(rel(g1.linear1.weight, g2.linear1.weight) < 1e-5);
}

TEST_CASE("fast dense: cross-entropy equals the teaching core's, even for extreme logits") {
    mha::Rng rng(14);
    for (float scale : {1.0f, 50.0f}) {
        const mha::Tensor3 z = mha::randn(3, 7, 11, rng) * scale;
        mha::Tokens y = mha::Tokens::from_shape({3, 7});
        for (auto& id : y) id = std::int32_t(rng.uniform(0, 11)) % 11;
        const mha::CrossEntropy a = mha::fast::cross_entropy(z, y), b = mha::cross_entropy(z, y);
        CHECK(a.loss == doctest::Approx(b.loss).epsilon(1e-6));
        CHECK(a.correct == b.correct);
        CHECK(rel(a.d_logits, b.d_logits) < 1e-5);
        const mha::CrossEntropy c = mha::fast::cross_entropy(z, y, 0.1), d = mha::cross_entropy(z, y, 0.1);
        CHECK(c.loss == doctest::Approx(d.loss).epsilon(1e-6));  // with label smoothing
        CHECK(c.loss != doctest::Approx(a.loss).epsilon(1e-6));
        CHECK(rel(c.d_logits, d.d_logits) < 1e-5);
    }
    mha::Tokens bad = mha::Tokens::from_shape({1, 1});
    bad(0, 0) = 4;
    CHECK_THROWS_AS(mha::fast::cross_entropy(mha::Tensor3({1, 1, 4}), bad), std::invalid_argument);
}
