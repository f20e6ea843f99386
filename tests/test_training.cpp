// Tests for the training pieces: embedding.hpp, loss.hpp, optim.hpp and
// sequence_model.hpp. Gradients are checked against central finite
// differences of a loss computed in double (the plain-loop oracle for the
// attention layer, and double loops for the rest), with steps 2e-2 and 1e-2
// combined (Richardson) and the error |fd - analytic| / max(|fd|, |analytic|,
// floor) held under 1e-3, as in test_backward.cpp.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <vector>

#include "mha/model/embedding.hpp"
#include "mha/model/loss.hpp"
#include "mha/model/optim.hpp"
#include "mha/reference.hpp"
#include "mha/model/sequence_model.hpp"
#include "mha/model/train.hpp"
#include "worst.hpp"

namespace {

using mha_test::fd_error;

mha::Tokens tokens_of(std::vector<std::vector<int>> rows) {
    mha::Tokens t = mha::Tokens::from_shape({rows.size(), rows[0].size()});
    for (std::size_t b = 0; b < rows.size(); ++b)
        for (std::size_t i = 0; i < rows[b].size(); ++i) t(b, i) = rows[b][i];
    return t;
}

// Cross-entropy in double from double logits, as the checks' loss.
double cross_entropy_double(const xt::xtensor<double, 3>& z, const mha::Tokens& y) {
    double loss = 0;
    const std::size_t B = z.shape(0), T = z.shape(1), V = z.shape(2);
    for (std::size_t b = 0; b < B; ++b)
        for (std::size_t t = 0; t < T; ++t) {
            double top = z(b, t, 0), sum = 0;
            for (std::size_t j = 1; j < V; ++j) top = std::max(top, z(b, t, j));
            for (std::size_t j = 0; j < V; ++j) sum += std::exp(z(b, t, j) - top);
            loss += std::log(sum) + top - z(b, t, y(b, t));
        }
    return loss / double(B * T);
}

// The model's loss in double: the attention layer through the oracle.
double model_loss(const mha::SequenceModel& m, const mha::Tokens& tokens,
                  const mha::Tokens& targets) {
    mha::Tensor3 x = mha::embed(m.embedding, tokens);
    for (std::size_t b = 0; b < x.shape(0); ++b)
        for (std::size_t t = 0; t < x.shape(1); ++t)
            for (std::size_t c = 0; c < x.shape(2); ++c) x(b, t, c) += m.positions(t, c);
    const auto a = mha::reference_forward(m.attn, x, x, x).output;  // [B, T, E] double
    const std::size_t V = m.readout.out_features(), E = m.readout.in_features();
    xt::xtensor<double, 3> z = xt::zeros<double>({x.shape(0), x.shape(1), V});
    for (std::size_t b = 0; b < x.shape(0); ++b)
        for (std::size_t t = 0; t < x.shape(1); ++t)
            for (std::size_t v = 0; v < V; ++v) {
                double s = m.readout.bias(v);
                for (std::size_t c = 0; c < E; ++c) s += m.readout.weight(v, c) * a(b, t, c);
                z(b, t, v) = s;
            }
    return cross_entropy_double(z, targets);
}

}  // namespace

TEST_CASE("embedding: rows of the table, and the gradient adds repeated tokens") {
    mha::Rng rng(1);
    mha::Embedding e = mha::make_embedding(5, 3, rng);
    const mha::Tokens ids = tokens_of({{4, 0, 4}, {2, 2, 2}});
    const mha::Tensor3 x = mha::embed(e, ids);
    REQUIRE(x.shape() == mha::Tensor3::shape_type{2, 3, 3});
    CHECK(x(0, 0, 1) == e.weight(4, 1));
    CHECK(x(1, 2, 2) == e.weight(2, 2));
    const mha::Tensor3 r = mha::randn(2, 3, 3, rng);  // L = sum(x * R)
    const mha::Tensor2 dw = mha::embed_backward(e, ids, r);
    auto loss = [&] {
        const mha::Tensor3 y = mha::embed(e, ids);
        double l = 0;
        for (std::size_t i = 0; i < y.size(); ++i) l += double(y.data()[i]) * r.data()[i];
        return l;
    };
    CHECK(fd_error(e.weight, dw, loss, 1e-2) < 1e-3);
    CHECK(dw(2, 0) == doctest::Approx(r(1, 0, 0) + r(1, 1, 0) + r(1, 2, 0)).epsilon(1e-6));
    CHECK(dw(1, 0) == 0.0f);  // token 1 never appears
    CHECK(dw(3, 2) == 0.0f);
}

TEST_CASE("embedding: a token outside the vocabulary is one clear error") {
    mha::Rng rng(1);
    const mha::Embedding e = mha::make_embedding(5, 3, rng);
    CHECK_THROWS_WITH_AS(mha::embed(e, tokens_of({{0, 5}})),
                         "embed: token 5 at [0, 1] is outside the vocabulary [0, 5)",
                         std::invalid_argument);
    CHECK_THROWS_AS(mha::embed(e, tokens_of({{-1}})), std::invalid_argument);
    CHECK_THROWS_AS(mha::embed_backward(e, tokens_of({{0, 1}}), mha::Tensor3({1, 2, 4})),
                    std::invalid_argument);
}

TEST_CASE("sinusoidal encoding: the formula, and each offset a rotation") {
    const std::size_t T = 12, E = 10;
    const mha::Tensor2 pe = mha::sinusoidal_encoding(T, E);
    REQUIRE(pe.shape() == mha::Tensor2::shape_type{T, E});
    for (std::size_t c = 0; c < E; ++c) CHECK(pe(0, c) == (c % 2 == 0 ? 0.0f : 1.0f));
    for (std::size_t p = 0; p < T; ++p)
        for (std::size_t c = 0; c < E; ++c) {
            const double w = 1.0 / std::pow(10000.0, double(c - c % 2) / E);
            const double want = c % 2 == 0 ? std::sin(p * w) : std::cos(p * w);
            CHECK(pe(p, c) == doctest::Approx(want).epsilon(1e-6).scale(1e-6));
        }
    // [sin, cos] at p + k is [sin, cos] at p turned by the angle k w.
    const std::size_t k = 3;
    for (std::size_t p = 0; p + k < T; ++p)
        for (std::size_t c = 0; c < E; c += 2) {
            const double w = 1.0 / std::pow(10000.0, double(c) / E);
            const double s = pe(p, c), co = pe(p, c + 1);
            CHECK(pe(p + k, c) ==
                  doctest::Approx(s * std::cos(k * w) + co * std::sin(k * w)).epsilon(1e-5).scale(1e-5));
            CHECK(pe(p + k, c + 1) ==
                  doctest::Approx(co * std::cos(k * w) - s * std::sin(k * w)).epsilon(1e-5).scale(1e-5));
        }
    const mha::Tensor2 odd = mha::sinusoidal_encoding(3, 5);
    CHECK(odd(2, 4) == doctest::Approx(std::sin(2 / std::pow(10000.0, 4.0 / 5))));
    CHECK_THROWS_AS(mha::sinusoidal_encoding(0, 4), std::invalid_argument);
}

TEST_CASE("cross-entropy: log V at equal logits, its gradient, and the count right") {
    const mha::Tokens y = tokens_of({{0, 3, 1}, {2, 2, 0}});
    const mha::Tensor3 flat = xt::zeros<float>({2, 3, 4});
    CHECK(mha::cross_entropy(flat, y).loss == doctest::Approx(std::log(4.0)).epsilon(1e-12));
    mha::Rng rng(2);
    mha::Tensor3 z = mha::randn(2, 3, 4, rng) * 3.0f;
    z(0, 0, 0) = 50.0f;  // certainly right, and large: the max is taken first
    const mha::CrossEntropy ce = mha::cross_entropy(z, y);
    auto loss = [&] {
        xt::xtensor<double, 3> zd = xt::cast<double>(z);
        return cross_entropy_double(zd, y);
    };
    CHECK(ce.loss == doctest::Approx(loss()).epsilon(1e-6));
    CHECK(fd_error(z, ce.d_logits, loss, 1e-3) < 1e-3);
    std::size_t right = 0;  // arg-max counted by hand
    for (std::size_t b = 0; b < 2; ++b)
        for (std::size_t t = 0; t < 3; ++t) {
            std::size_t best = 0;
            for (std::size_t j = 1; j < 4; ++j) best = z(b, t, j) > z(b, t, best) ? j : best;
            right += best == std::size_t(y(b, t));
        }
    CHECK(ce.correct == right);
    CHECK(ce.correct >= 1);
    CHECK_THROWS_WITH_AS(mha::cross_entropy(z, tokens_of({{0, 4, 1}, {0, 0, 0}})),
                         "cross_entropy: target 4 at [0, 1] is outside [0, 4)",
                         std::invalid_argument);
    CHECK_THROWS_AS(mha::cross_entropy(z, tokens_of({{0, 1}})), std::invalid_argument);
}

TEST_CASE("cross-entropy with label smoothing: the mixed target's loss and gradient, as PyTorch's") {
    const mha::Tokens y = tokens_of({{0, 3, 1}, {2, 2, 0}});
    mha::Rng rng(5);
    mha::Tensor3 z = mha::randn(2, 3, 4, rng) * 3.0f;
    const double eps = 0.1;
    // F.cross_entropy(..., label_smoothing=eps): the target puts 1 - eps + eps / V on y
    // and eps / V on each other token; the loss is sum_j target_j * -log p_j, averaged
    auto loss = [&] {
        double total = 0;
        for (std::size_t b = 0; b < 2; ++b)
            for (std::size_t t = 0; t < 3; ++t) {
                double top = z(b, t, 0), sum = 0;
                for (std::size_t j = 1; j < 4; ++j) top = std::max(top, double(z(b, t, j)));
                for (std::size_t j = 0; j < 4; ++j) sum += std::exp(z(b, t, j) - top);
                for (std::size_t j = 0; j < 4; ++j) {
                    const double target = (j == std::size_t(y(b, t)) ? 1 - eps : 0) + eps / 4;
                    total += target * (std::log(sum) + top - z(b, t, j));
                }
            }
        return total / 6;
    };
    const mha::CrossEntropy ce = mha::cross_entropy(z, y, eps);
    CHECK(ce.loss == doctest::Approx(loss()).epsilon(1e-9));
    CHECK(std::fabs(ce.loss - mha::cross_entropy(z, y).loss) > 1e-2);  // not the plain loss
    CHECK(fd_error(z, ce.d_logits, loss, 1e-3) < 1e-3);
    // equal logits: every -log p_j is log V, whatever the target
    const mha::Tensor3 flat = xt::zeros<float>({2, 3, 4});
    CHECK(mha::cross_entropy(flat, y, eps).loss == doctest::Approx(std::log(4.0)).epsilon(1e-12));
    for (double bad : {-0.1, 1.0})
        CHECK_THROWS_WITH_AS(mha::cross_entropy(z, y, bad),
                             ("cross_entropy: label smoothing " + std::to_string(bad) +
                              " is outside [0, 1)").c_str(), std::invalid_argument);
}

TEST_CASE("linear_backward: finite differences, and shapes that do not fit") {
    mha::Rng rng(3);
    mha::Linear l = mha::make_linear(5, 3, mha::Init::xavier(), rng);
    mha::Tensor3 x = mha::randn(2, 4, 5, rng);
    const mha::Tensor3 r = mha::randn(2, 4, 3, rng);
    mha::LinearGrad g;
    const mha::Tensor3 dx = mha::linear_backward(x, r, l, g);
    auto loss = [&] {  // sum(layer(x) * R) in double
        double s = 0;
        for (std::size_t b = 0; b < 2; ++b)
            for (std::size_t t = 0; t < 4; ++t)
                for (std::size_t o = 0; o < 3; ++o) {
                    double y = l.bias(o);
                    for (std::size_t i = 0; i < 5; ++i) y += double(l.weight(o, i)) * x(b, t, i);
                    s += y * r(b, t, o);
                }
        return s;
    };
    CHECK(fd_error(l.weight, g.weight, loss, 1e-2) < 1e-3);
    CHECK(fd_error(l.bias, g.bias, loss, 1e-2) < 1e-3);
    CHECK(fd_error(x, dx, loss, 1e-2) < 1e-3);
    CHECK_THROWS_AS(mha::linear_backward(x, mha::Tensor3({2, 4, 2}), l, g),
                    std::invalid_argument);
}

TEST_CASE("sequence model: every gradient against finite differences") {
    mha::SequenceModel m(5, 4, 8, 2, mha::Init::xavier(7));
    const mha::Tokens tokens = tokens_of({{1, 4, 0, 2}, {3, 3, 1, 0}});
    const mha::Tokens targets = tokens_of({{2, 0, 4, 1}, {0, 1, 3, 3}});
    const mha::SequenceTrace t = mha::forward(m, tokens);
    const mha::CrossEntropy ce = mha::cross_entropy(t.logits, targets);
    CHECK(ce.loss == doctest::Approx(model_loss(m, tokens, targets)).epsilon(1e-5));
    const mha::SequenceGrads g = mha::backward(m, t, tokens, ce.d_logits);
    auto loss = [&] { return model_loss(m, tokens, targets); };
    const double floor = 1e-3, limit = 1e-3;
    CHECK(fd_error(m.embedding.weight, g.embedding, loss, floor) < limit);
    CHECK(fd_error(m.attn.wq.weight, g.attn.wq.weight, loss, floor) < limit);
    CHECK(fd_error(m.attn.wk.weight, g.attn.wk.weight, loss, floor) < limit);
    CHECK(fd_error(m.attn.wv.weight, g.attn.wv.weight, loss, floor) < limit);
    CHECK(fd_error(m.attn.wv.bias, g.attn.wv.bias, loss, floor) < limit);
    CHECK(fd_error(m.attn.w_o.weight, g.attn.w_o.weight, loss, floor) < limit);
    CHECK(fd_error(m.attn.w_o.bias, g.attn.w_o.bias, loss, floor) < limit);
    CHECK(fd_error(m.readout.weight, g.readout.weight, loss, floor) < limit);
    CHECK(fd_error(m.readout.bias, g.readout.bias, loss, floor) < limit);
    const std::vector<mha::Parameter> p = mha::parameters(m, g);
    REQUIRE(p.size() == 11);
    CHECK(p[0].name == "embedding.weight");
    CHECK(p[0].size == 40);
    CHECK(p[10].grad == g.readout.bias.data());
    CHECK_THROWS_AS(mha::forward(m, tokens_of({{1, 2, 3}})), std::invalid_argument);
}

TEST_CASE("optimizers: SGD and Adam against the update rules written in double") {
    std::vector<float> w{0.5f, -1.0f, 2.0f}, g{0.1f, -4.0f, 0.0f};
    std::vector<mha::Parameter> p{{"w", w.data(), g.data(), 3}};
    mha::Sgd{0.25f}.step(p);
    CHECK(w[0] == doctest::Approx(0.5 - 0.025).epsilon(1e-7));
    CHECK(w[1] == doctest::Approx(-1.0 + 1.0).scale(1e-7));
    CHECK(w[2] == 2.0f);

    std::vector<float> a{0.5f, -1.0f, 2.0f};
    std::vector<mha::Parameter> q{{"a", a.data(), g.data(), 3}};
    mha::Adam adam(0.01f, 0.9f, 0.999f, 1e-8f);
    double m[3] = {}, v[3] = {}, ref[3] = {0.5, -1.0, 2.0};
    for (int t = 1; t <= 3; ++t) {
        g = {0.1f * t, -4.0f / t, 0.0f};
        adam.step(q);
        for (int i = 0; i < 3; ++i) {
            m[i] = 0.9 * m[i] + 0.1 * g[i];
            v[i] = 0.999 * v[i] + 0.001 * double(g[i]) * g[i];
            const double mh = m[i] / (1 - std::pow(0.9, t)), vh = v[i] / (1 - std::pow(0.999, t));
            ref[i] -= 0.01 * mh / (std::sqrt(vh) + 1e-8);
            CHECK(adam.first_moment(0)[i] == doctest::Approx(m[i]).epsilon(1e-6));
            CHECK(adam.second_moment(0)[i] == doctest::Approx(v[i]).epsilon(1e-5));
            CHECK(a[i] == doctest::Approx(ref[i]).epsilon(1e-6));
        }
    }
    CHECK(adam.steps() == 3);
    // The first step moves each entry by lr against its gradient's sign,
    // whatever its size (the bias corrections make m / sqrt(v) = g / |g|).
    CHECK(a[2] == 2.0f);
    std::vector<float> short_w{1.0f};
    CHECK_THROWS_AS(adam.step({{"a", short_w.data(), g.data(), 1}}), std::invalid_argument);
    CHECK_THROWS_AS(mha::Adam(0.0f), std::invalid_argument);
    CHECK_THROWS_AS(mha::Adam(0.1f, 1.0f), std::invalid_argument);
}

TEST_CASE("training: the same seed gives the same losses, and the loss falls") {
    auto run = [](std::uint64_t seed) {
        mha::SequenceModel m(6, 5, 16, 2, mha::Init::xavier(seed));
        mha::Adam adam(0.01f);
        mha::Rng rng(seed);
        std::vector<double> losses;
        mha::SequenceTrace trace;
        for (int step = 0; step < 40; ++step) {
            mha::TokenBatch d{mha::Tokens::from_shape({8, 5}), mha::Tokens::from_shape({8, 5})};
            for (std::size_t b = 0; b < 8; ++b)
                for (std::size_t t = 0; t < 5; ++t) d.x(b, t) = int(rng.uniform(0, 6)) % 6;
            for (std::size_t b = 0; b < 8; ++b)
                for (std::size_t t = 0; t < 5; ++t) d.y(b, t) = d.x(b, 4 - t);  // reversed
            losses.push_back(mha::train_step(m, adam, d, trace).loss);
        }
        return losses;
    };
    const std::vector<double> a = run(3), b = run(3), c = run(4);
    CHECK(a == b);
    CHECK(a != c);
    CHECK(a.back() < 0.8 * a.front());
}

TEST_CASE("the reversal task: batches, and the weight on the anti-diagonal") {
    mha::Rng rng(9);
    const mha::TokenBatch d = mha::reverse_batch(3, 5, 4, rng);
    REQUIRE(d.x.shape() == mha::Tokens::shape_type{3, 5});
    std::vector<int> seen(4, 0);
    for (std::size_t b = 0; b < 3; ++b)
        for (std::size_t i = 0; i < 5; ++i) {
            CHECK(d.y(b, i) == d.x(b, 4 - i));
            REQUIRE(d.x(b, i) >= 0);
            REQUIRE(d.x(b, i) < 4);
            ++seen[d.x(b, i)];
        }
    CHECK(std::count(seen.begin(), seen.end(), 0) == 0);  // 15 draws hit all 4 tokens
    mha::Tensor4 w = xt::zeros<float>({2, 2, 5, 5});
    for (std::size_t b = 0; b < 2; ++b)
        for (std::size_t i = 0; i < 5; ++i) {
            w(b, 0, i, 4 - i) = 1.0f;                               // head 0: the anti-diagonal
            for (std::size_t j = 0; j < 5; ++j) w(b, 1, i, j) = 0.2f;  // head 1: even
        }
    CHECK(mha::anti_diagonal_weight(w, 0) == doctest::Approx(1.0));
    CHECK(mha::anti_diagonal_weight(w, 1) == doctest::Approx(0.2));
    CHECK_THROWS_AS(mha::anti_diagonal_weight(w, 2), std::invalid_argument);
    CHECK_THROWS_AS(mha::reverse_batch(0, 5, 4, rng), std::invalid_argument);
}
