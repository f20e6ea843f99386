// Tests for the block (mha/model/layer_norm.hpp, feed_forward.hpp, block.hpp,
// language_model.hpp): each forward against the plain-loop oracle in double
// (reference_model.hpp) within 1e-5 of the largest value, and every
// gradient against central finite differences of the oracle's loss
// (worst.hpp's fd_error, error under 2e-3).
#include <doctest/doctest.h>

#include <cmath>
#include <vector>

#include "mha/model/block.hpp"
#include "mha/model/language_model.hpp"
#include "mha/model/reference_model.hpp"
#include "../worst.hpp"

namespace block_test {

using mha::Tensor3;
using mha::Tensor3d;

Tensor3d to_double(const Tensor3& x) { return xt::cast<double>(x); }

// Largest |a - b| over the largest |b|.
double rel_diff(const Tensor3& a, const Tensor3d& b) {
    double diff = 0, top = 1e-30;
    for (std::size_t i = 0; i < a.size(); ++i) {
        mha_test::keep_worst(diff, std::fabs(a.data()[i] - b.data()[i]));
        top = std::max(top, std::fabs(b.data()[i]));
    }
    return diff / top;
}

// sum(y * G): a loss whose dL/dy is G.
double dot(const Tensor3d& y, const Tensor3& g) {
    double s = 0;
    for (std::size_t i = 0; i < y.size(); ++i) s += y.data()[i] * g.data()[i];
    return s;
}

mha::Tokens some_tokens(std::size_t B, std::size_t T, std::size_t V, mha::Rng& rng) {
    mha::Tokens t = mha::Tokens::from_shape({B, T});
    for (auto& id : t) id = std::int32_t(rng.uniform(0.0f, float(V))) % int(V);
    return t;
}

// Weights and biases that are not 1 and 0, so their gradients matter.
void stir(mha::LayerNorm& n, mha::Rng& rng) {
    for (float& w : n.weight) w = 1.0f + 0.3f * rng.normal();
    for (float& b : n.bias) b = 0.3f * rng.normal();
}

}  // namespace block_test

using namespace block_test;

TEST_CASE("layer_norm: the oracle's numbers, at small and large scales, and eps matters") {
    mha::Rng rng(3);
    mha::LayerNorm n = mha::make_layer_norm(6);
    stir(n, rng);
    for (float scale : {1e-3f, 1.0f, 100.0f}) {
        const Tensor3 x = mha::randn(2, 3, 6, rng) * scale;
        mha::Block blk(6, 2, 4, 0);
        blk.norm1 = n;
        const Tensor3 y = mha::layer_norm(x, n);
        // the oracle's norm through a block with nothing else: compare by hand
        for (std::size_t b = 0; b < 2; ++b)
            for (std::size_t t = 0; t < 3; ++t) {
                double mean = 0, var = 0;
                for (std::size_t c = 0; c < 6; ++c) mean += x(b, t, c) / 6.0;
                for (std::size_t c = 0; c < 6; ++c) var += (x(b, t, c) - mean) * (x(b, t, c) - mean) / 6.0;
                for (std::size_t c = 0; c < 6; ++c) {
                    const double want = (x(b, t, c) - mean) / std::sqrt(var + 1e-5) * n.weight(c) + n.bias(c);
                    CHECK(y(b, t, c) == doctest::Approx(want).epsilon(1e-5).scale(1e-5));
                }
            }
    }
    // At scale 1e-3 the variance (1e-6) is below eps: the output is shrunk,
    // not normalised to variance 1.
    const Tensor3 tiny = mha::randn(1, 1, 6, rng) * 1e-3f;
    const Tensor3 y = mha::layer_norm(tiny, mha::make_layer_norm(6));
    double var = 0;
    for (float v : y) var += double(v) * v / 6.0;
    CHECK(var < 0.3);
    CHECK_THROWS_WITH_AS(mha::layer_norm(mha::Tensor3({1, 2, 5}), n),
                         "layer_norm: x [1, 2, 5] must end in E = 6, the size of weight [6] and bias [6]",
                         std::invalid_argument);
}

TEST_CASE("layer_norm and feed_forward: gradients against finite differences") {
    mha::Rng rng(4);
    mha::LayerNorm n = mha::make_layer_norm(5);
    stir(n, rng);
    Tensor3 x = mha::randn(2, 3, 5, rng);
    const Tensor3 g = mha::randn(2, 3, 5, rng);
    mha::NormTrace t;
    mha::layer_norm(x, n, &t);
    mha::NormGrad ng;
    const Tensor3 dx = mha::layer_norm_backward(t, g, n, ng);
    auto loss = [&] {
        double s = 0;
        const Tensor3 y = mha::layer_norm(x, n);
        for (std::size_t i = 0; i < y.size(); ++i) s += double(y.data()[i]) * g.data()[i];
        return s;
    };
    CHECK(mha_test::fd_error(x, dx, loss, 1e-2) < 2e-3);
    CHECK(mha_test::fd_error(n.weight, ng.weight, loss, 1e-2) < 2e-3);
    CHECK(mha_test::fd_error(n.bias, ng.bias, loss, 1e-2) < 2e-3);

    mha::FeedForward f = mha::make_feed_forward(5, 7, rng);
    mha::FeedForwardTrace ft;
    mha::feed_forward(x, f, &ft);
    mha::FeedForwardGrads fg;
    const Tensor3 fdx = mha::feed_forward_backward(x, ft, g, f, fg);
    auto ff_loss = [&] {
        double s = 0;
        const Tensor3 y = mha::feed_forward(x, f);
        for (std::size_t i = 0; i < y.size(); ++i) s += double(y.data()[i]) * g.data()[i];
        return s;
    };
    CHECK(mha_test::fd_error(x, fdx, ff_loss, 1e-2) < 2e-3);
    CHECK(mha_test::fd_error(f.linear1.weight, fg.linear1.weight, ff_loss, 1e-2) < 2e-3);
    CHECK(mha_test::fd_error(f.linear2.bias, fg.linear2.bias, ff_loss, 1e-2) < 2e-3);
}

TEST_CASE("gelu: the erf form, and its derivative") {
    for (float h : {-4.0f, -1.0f, -0.1f, 0.0f, 0.5f, 3.0f}) {
        const double want = 0.5 * h * (1 + std::erf(h / std::sqrt(2.0)));
        // absolute: near -4, 1 + erf loses digits in float, as PyTorch's own float GELU does
        CHECK(std::fabs(mha::gelu(h) - want) < 1e-7 * std::max(1.0f, std::fabs(h)));
        const double d = 1e-3;
        auto g = [](double v) { return 0.5 * v * (1 + std::erf(v / std::sqrt(2.0))); };
        CHECK(mha::gelu_grad(h) == doctest::Approx((g(h + d) - g(h - d)) / (2 * d)).epsilon(1e-5));
    }
    CHECK(mha::gelu(1.0f) == doctest::Approx(0.8413447).epsilon(1e-6));  // 1 * Phi(1)
}

TEST_CASE("block: forward equals the oracle, causal or not, and every gradient is right") {
    for (bool causal : {false, true}) {
        CAPTURE(causal);
        mha::Rng rng(causal ? 7 : 8);
        mha::Block blk(8, 2, 12, 5);
        stir(blk.norm1, rng);
        stir(blk.norm2, rng);
        Tensor3 x = mha::randn(2, 4, 8, rng);
        const Tensor3 g = mha::randn(2, 4, 8, rng);
        mha::BlockTrace t;
        const Tensor3 y = mha::block_forward(blk, x, causal, &t);
        CHECK(rel_diff(y, mha::reference_block(blk, to_double(x), causal)) < 1e-5);
        CHECK(rel_diff(mha::block_forward(blk, x, causal), mha::reference_block(blk, to_double(x), causal)) < 1e-5);
        mha::BlockGrads bg;
        const Tensor3 dx = mha::block_backward(blk, t, g, causal, bg);
        auto loss = [&] { return dot(mha::reference_block(blk, to_double(x), causal), g); };
        CHECK(mha_test::fd_error(x, dx, loss, 1e-2) < 2e-3);
        CHECK(mha_test::fd_error(blk.self_attn.wq.weight, bg.self_attn.wq.weight, loss, 1e-2) < 2e-3);
        CHECK(mha_test::fd_error(blk.self_attn.wk.bias, bg.self_attn.wk.bias, loss, 1e-2) < 2e-3);
        CHECK(mha_test::fd_error(blk.self_attn.wv.weight, bg.self_attn.wv.weight, loss, 1e-2) < 2e-3);
        CHECK(mha_test::fd_error(blk.self_attn.w_o.weight, bg.self_attn.w_o.weight, loss, 1e-2) < 2e-3);
        CHECK(mha_test::fd_error(blk.ff.linear1.weight, bg.ff.linear1.weight, loss, 1e-2) < 2e-3);
        CHECK(mha_test::fd_error(blk.ff.linear1.bias, bg.ff.linear1.bias, loss, 1e-2) < 2e-3);
        CHECK(mha_test::fd_error(blk.ff.linear2.weight, bg.ff.linear2.weight, loss, 1e-2) < 2e-3);
        CHECK(mha_test::fd_error(blk.norm1.weight, bg.norm1.weight, loss, 1e-2) < 2e-3);
        CHECK(mha_test::fd_error(blk.norm1.bias, bg.norm1.bias, loss, 1e-2) < 2e-3);
        CHECK(mha_test::fd_error(blk.norm2.weight, bg.norm2.weight, loss, 1e-2) < 2e-3);
        CHECK(mha_test::fd_error(blk.norm2.bias, bg.norm2.bias, loss, 1e-2) < 2e-3);
    }
}

TEST_CASE("language model: logits equal the oracle, position t ignores later tokens, gradients") {
    mha::Rng rng(9);
    mha::LanguageModel m = mha::make_language_model({7, 6, 8, 2, 16, 2}, 3);
    for (mha::Block& b : m.layers) stir(b.norm1, rng), stir(b.norm2, rng);
    stir(m.norm, rng);
    mha::Tokens tokens = some_tokens(2, 5, 7, rng);
    const mha::ModelTrace t = mha::forward(m, tokens);
    REQUIRE(t.logits.shape() == Tensor3::shape_type{2, 5, 7});
    CHECK(rel_diff(t.logits, mha::reference_logits(m, tokens)) < 1e-5);
    // causal: changing the last token changes no earlier position's logits
    mha::Tokens changed = tokens;
    changed(0, 4) = (changed(0, 4) + 1) % 7;
    const Tensor3 other = mha::forward(m, changed).logits;
    for (std::size_t i = 0; i < 4; ++i)
        for (std::size_t v = 0; v < 7; ++v) CHECK(other(0, i, v) == t.logits(0, i, v));
    CHECK(other(0, 4, 0) != t.logits(0, 4, 0));

    const Tensor3 g = mha::randn(2, 5, 7, rng);
    mha::ModelGrads mg = mha::backward(m, t, tokens, g);
    auto loss = [&] { return dot(mha::reference_logits(m, tokens), g); };
    CHECK(mha_test::fd_error(m.tok_emb.weight, mg.tok_emb, loss, 1e-2) < 2e-3);
    CHECK(mha_test::fd_error(m.pos_emb.weight, mg.pos_emb, loss, 1e-2) < 2e-3);
    CHECK(mha_test::fd_error(m.head.weight, mg.head.weight, loss, 1e-2) < 2e-3);
    CHECK(mha_test::fd_error(m.norm.weight, mg.norm.weight, loss, 1e-2) < 2e-3);
    // every parameter of both layers, through the named list the optimizer takes
    const std::vector<mha::Parameter> params = mha::parameters(m, mg);
    CHECK(params.size() == 2 + 16 * 2 + 4);
    CHECK(params[2].name == "layers.0.self_attn.wq.weight");
    CHECK(params.back().name == "head.bias");
    for (const mha::Parameter& p : params) {
        CAPTURE(p.name);
        std::vector<float> value(p.value, p.value + p.size);  // perturbed here, written back
        const std::vector<float> grad(p.grad, p.grad + p.size);
        auto write_back = [&] { std::copy(value.begin(), value.end(), p.value); };
        auto param_loss = [&] { write_back(); return loss(); };
        CHECK(mha_test::fd_error(value, grad, param_loss, 1e-2) < 2e-3);
        write_back();
    }
}

TEST_CASE("language model: bad sizes and tokens are one clear error") {
    const mha::LanguageModel m = mha::make_language_model({5, 4, 8, 2, 8, 1}, 0);
    mha::Tokens too_long = mha::Tokens::from_shape({1, 5});
    too_long.fill(0);
    CHECK_THROWS_WITH_AS(mha::forward(m, too_long),
                         "LanguageModel: tokens [1, 5] have T = 5 positions; the model has "
                         "pos_emb for 1 to T_max = 4", std::invalid_argument);
    mha::Tokens bad = mha::Tokens::from_shape({1, 2});
    bad(0, 0) = 0, bad(0, 1) = 5;
    CHECK_THROWS_AS(mha::forward(m, bad), std::invalid_argument);
    CHECK_THROWS_WITH_AS(mha::make_language_model({5, 4, 8, 3, 8, 1}, 0),
                         "make_language_model: E = 8 is not divisible by H = 3",
                         std::invalid_argument);
    CHECK_THROWS_AS(mha::make_language_model({5, 4, 8, 2, 8, 0}, 0), std::invalid_argument);
}

TEST_CASE("causal self-attention without a mask tensor: the trace and gradients of the masked one") {
    // T = 40: blocks of 16 query rows, so the backward's causal skipping runs
    mha::Rng rng(21);
    const mha::MultiHeadAttention a(16, 4, mha::Init::torch(2));
    const Tensor3 x = mha::randn(2, 40, 16, rng), dy = mha::randn(2, 40, 16, rng);
    const mha::Mask mask = mha::causal_mask(40, 40);
    mha::ForwardTrace with_mask, without;
    a.trace_into(with_mask, x, x, x, &mask);
    a.trace_into(without, x, x, x, mha::causal);
    CHECK(rel_diff(without.output, to_double(with_mask.output)) < 1e-6);
    const mha::AttentionGrads g1 = mha::backward_self_attention(a, with_mask, x, dy, &mask);
    const mha::AttentionGrads g2 = mha::backward_self_attention(a, without, x, dy, mha::causal);
    CHECK(rel_diff(g2.input, to_double(g1.input)) < 1e-6);
    double worst = 0;
    for (std::size_t i = 0; i < g1.wq.weight.size(); ++i)
        mha_test::keep_worst(worst, std::fabs(g1.wq.weight.data()[i] - g2.wq.weight.data()[i]));
    CHECK(worst < 1e-5);
}

TEST_CASE("dropout: the mask, p = 0 is the plain model bit for bit, and gradients through the masks") {
    mha::Rng draws(11);
    const mha::Tensor3 mask = mha::dropout_mask({4, 50, 10}, {0.2f, &draws});
    std::size_t zeros = 0;
    for (float m : mask) {
        CHECK((m == 0.0f || m == 1.0f / 0.8f));
        zeros += m == 0.0f;
    }
    // 2000 draws at p 0.2: the share dropped within 4 standard deviations (0.036)
    CHECK(std::fabs(double(zeros) / 2000.0 - 0.2) < 0.036);
    mha::Rng again(11);
    CHECK(mha::dropout_mask({4, 50, 10}, {0.2f, &again}) == mask);  // the same seed, the same mask
    CHECK_THROWS_WITH_AS(mha::dropout_mask({1, 1, 1}, {1.0f, &draws}),
                         "dropout: p = 1.000000 is outside [0, 1)", std::invalid_argument);
    CHECK_THROWS_WITH_AS(mha::dropout_mask({1, 1, 1}, {0.5f, nullptr}),
                         "dropout: p > 0 needs an Rng to draw the mask", std::invalid_argument);

    mha::Rng rng(12);
    mha::LanguageModel m = mha::make_language_model({7, 6, 8, 2, 16, 2}, 3);
    for (mha::Block& b : m.layers) stir(b.norm1, rng), stir(b.norm2, rng);
    const mha::Tokens tokens = some_tokens(2, 5, 7, rng);
    const Tensor3 plain = mha::forward(m, tokens).logits;
    mha::Rng unused(1);
    CHECK(mha::forward(m, tokens, true, {0.0f, &unused}).logits == plain);
    CHECK_THROWS_WITH_AS(mha::forward(m, tokens, true, {-0.1f, &unused}),
                         "dropout: p = -0.100000 is outside [0, 1)", std::invalid_argument);
    // With p = 0.3 the masks come from Rng(5) afresh each time, so the loss
    // is one function of the weights; the backward must go through the masks.
    const auto dropped = [&] {
        mha::Rng masks(5);
        return mha::forward(m, tokens, true, {0.3f, &masks});
    };
    const mha::ModelTrace t = dropped();
    CHECK(t.drop.shape() == Tensor3::shape_type{2, 5, 8});
    CHECK(t.layers[1].drop2.shape() == Tensor3::shape_type{2, 5, 8});
    CHECK(t.layers[0].x1 == t.x[0] + t.layers[0].attn.output * t.layers[0].drop1);
    CHECK(xt::amax(xt::abs(t.logits - plain))() > 1e-3);  // it does drop something
    const Tensor3 g = mha::randn(2, 5, 7, rng);
    mha::ModelGrads mg = mha::backward(m, t, tokens, g);
    auto loss = [&] {
        const Tensor3 z = dropped().logits;
        double s = 0;
        for (std::size_t i = 0; i < z.size(); ++i) s += double(z.data()[i]) * g.data()[i];
        return s;
    };
    // the forward in float: finite differences hold to about 1e-2 here; a
    // backward that skipped a mask is off by 1 / (1 - p) - 1 = 0.43 or more
    const std::vector<mha::Parameter> params = mha::parameters(m, mg);
    for (const mha::Parameter& p : params) {
        CAPTURE(p.name);
        std::vector<float> value(p.value, p.value + p.size);
        const std::vector<float> grad(p.grad, p.grad + p.size);
        auto write_back = [&] { std::copy(value.begin(), value.end(), p.value); };
        auto param_loss = [&] { write_back(); return loss(); };
        CHECK(mha_test::fd_error(value, grad, param_loss, 1e-1) < 3e-2);
        write_back();
    }
}
