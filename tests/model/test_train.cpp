// Tests for mha/model/train.hpp: the learning-rate schedule against its
// formula, grad_norm() against a hand sum, clip_scale() as PyTorch's
// clip_grad_norm_ computes it, and train_step() against the step written
// out by hand on a copy of the model (forward, cross_entropy, backward,
// Adam), with and without clipping; a few dozen steps lower the loss. The
// language model's step takes the engine's cross-entropy (fast/dense.hpp,
// held to loss.hpp's in tests/fast/test_dense.cpp), and so does its copy here.
#include <doctest/doctest.h>

#include <cmath>
#include <vector>

#include "mha/fast/dense.hpp"
#include "mha/model/train.hpp"
#include "../worst.hpp"

namespace train_test {

// A batch of the counting task: x(b, t) = (start_b + t) mod V, y the next
// one: the token alone says what follows, so a model learns it fast.
mha::TokenBatch counting_batch(std::size_t B, std::size_t T, std::size_t V, mha::Rng& rng) {
    mha::TokenBatch d{mha::Tokens::from_shape({B, T}), mha::Tokens::from_shape({B, T})};
    for (std::size_t b = 0; b < B; ++b) {
        const int start = int(rng.uniform(0.0f, float(V))) % int(V);
        for (std::size_t t = 0; t < T; ++t) {
            d.x(b, t) = (start + int(t)) % int(V);
            d.y(b, t) = (start + int(t) + 1) % int(V);
        }
    }
    return d;
}

// The largest |a - b| over every parameter of two models of one config
// (g: any gradients of that config; parameters() needs them, only to pair).
double max_param_diff(mha::LanguageModel& a, mha::LanguageModel& b, const mha::ModelGrads& g) {
    const std::vector<mha::Parameter> pa = mha::parameters(a, g), pb = mha::parameters(b, g);
    double worst = 0;
    for (std::size_t k = 0; k < pa.size(); ++k)
        for (std::size_t i = 0; i < pa[k].size; ++i)
            worst = std::max(worst, std::fabs(double(pa[k].value[i]) - pb[k].value[i]));
    return worst;
}

}  // namespace train_test

using namespace train_test;

TEST_CASE("LrSchedule: linear warm-up to the peak, a half cosine down, then the floor") {
    const mha::LrSchedule s{2e-3f, 10, 110, 0.1f};
    // warm-up: peak * step / warmup, from peak / warmup at step 1 to the peak at warmup
    CHECK(s.at(1) == doctest::Approx(2e-4).epsilon(1e-6));
    CHECK(s.at(4) == doctest::Approx(8e-4).epsilon(1e-6));
    CHECK(s.at(10) == doctest::Approx(2e-3).epsilon(1e-6));
    // decay: peak (f + (1 - f) (1 + cos(pi (step - warmup) / (total - warmup))) / 2)
    for (int step : {11, 30, 60, 85, 109}) {
        CAPTURE(step);
        const double done = (step - 10) / 100.0;
        const double want = 2e-3 * (0.1 + 0.9 * 0.5 * (1 + std::cos(M_PI * done)));
        CHECK(s.at(step) == doctest::Approx(want).epsilon(1e-6));
    }
    CHECK(s.at(60) == doctest::Approx(2e-3 * (0.1 + 0.9 / 2)).epsilon(1e-6));  // halfway
    CHECK(s.at(110) == doctest::Approx(2e-4).epsilon(1e-6));  // final_fraction * peak at total
    CHECK(s.at(1000) == s.at(110));                          // and there it stays
    for (int step = 1; step < 110; ++step) {  // up, then down, never 0
        CAPTURE(step);
        CHECK(s.at(step) > 0);
        if (step < 10) CHECK(s.at(step + 1) > s.at(step));
        if (step >= 10) CHECK(s.at(step + 1) < s.at(step));
    }
    // no warm-up: step 1 already decays from the peak; total = warmup: no decay
    CHECK(mha::LrSchedule{1.0f, 0, 100, 0.0f}.at(1) ==
          doctest::Approx(0.5 * (1 + std::cos(M_PI / 100))).epsilon(1e-6));
    CHECK(mha::LrSchedule{1.0f, 5, 5, 0.5f}.at(5) == 1.0f);
    CHECK(mha::LrSchedule{1.0f, 5, 5, 0.5f}.at(6) == 0.5f);
}

TEST_CASE("LrSchedule: a field out of range or a step before 1 is one clear error") {
    const mha::LrSchedule good{1e-3f, 10, 100, 0.1f};
    for (const mha::LrSchedule& bad :
         {mha::LrSchedule{0.0f, 10, 100, 0.1f}, mha::LrSchedule{-1e-3f, 10, 100, 0.1f},
          mha::LrSchedule{NAN, 10, 100, 0.1f}, mha::LrSchedule{1e-3f, -1, 100, 0.1f},
          mha::LrSchedule{1e-3f, 0, 0, 0.1f}, mha::LrSchedule{1e-3f, 101, 100, 0.1f},
          mha::LrSchedule{1e-3f, 10, 100, -0.1f}, mha::LrSchedule{1e-3f, 10, 100, 1.5f}}) {
        CHECK_THROWS_AS(bad.at(5), std::invalid_argument);
    }
    CHECK_THROWS_WITH_AS(mha::LrSchedule({1e-3f, 101, 100, 0.1f}).at(5),
                         "LrSchedule: needs peak > 0, 0 <= warmup <= total, total >= 1, "
                         "final_fraction in [0, 1]; got peak 0.001000, warmup 101, total 100, "
                         "final_fraction 0.100000",
                         std::invalid_argument);
    CHECK_THROWS_WITH_AS(good.at(0), "LrSchedule: steps count from 1, got step 0",
                         std::invalid_argument);
    CHECK_THROWS_AS(good.at(-3), std::invalid_argument);
    CHECK_THROWS_AS(mha::LrSchedule({1e-3f, 0, 100, 0.1f}).at(0), std::invalid_argument);
}

TEST_CASE("grad_norm: the square root of every gradient's squares, summed") {
    std::vector<float> w1(2), w2(1), g1{3.0f, -4.0f}, g2{12.0f};
    const std::vector<mha::Parameter> p{{"a", w1.data(), g1.data(), 2},
                                        {"b", w2.data(), g2.data(), 1}};
    CHECK(mha::grad_norm(p) == 13.0);  // 9 + 16 + 144 = 169
    CHECK(mha::grad_norm({}) == 0.0);
    // many small gradients, summed in double by hand
    mha::Rng rng(5);
    std::vector<float> v(1000), g(1000);
    double sum = 0;
    for (float& x : g) {
        x = 1e-3f * rng.normal();
        sum += double(x) * x;
    }
    CHECK(mha::grad_norm({{"c", v.data(), g.data(), g.size()}}) ==
          doctest::Approx(std::sqrt(sum)).epsilon(1e-12));
}

TEST_CASE("clip_scale: PyTorch's max_norm / (norm + 1e-6), only when below 1") {
    CHECK(mha::clip_scale(10.0, 1.0) == doctest::Approx(1.0 / (10.0 + 1e-6)).epsilon(1e-7));
    CHECK(mha::clip_scale(10.0, 1.0) < 0.1f);
    CHECK(mha::clip_scale(0.5, 1.0) == 1.0f);  // below max_norm: untouched
    CHECK(mha::clip_scale(1.0, 1.0) == float(1.0 / (1.0 + 1e-6)));  // at it: 1e-6 shy of 1
    CHECK(mha::clip_scale(1e9, 0.0) == 1.0f);  // 0: no clipping
    CHECK(mha::clip_scale(0.0, 1e-3) == 1.0f);
    CHECK_THROWS_AS(mha::clip_scale(1.0, -1.0), std::invalid_argument);
}

TEST_CASE("train_step: a LanguageModel's step is forward, cross_entropy, backward, Adam") {
    const mha::ModelConfig c{11, 8, 16, 2, 32, 2};
    mha::LanguageModel m = mha::make_language_model(c, 4);
    mha::LanguageModel hand = m;  // the same step written out, on a copy
    mha::Adam opt(1e-2f), hand_opt(1e-2f);
    mha::Rng rng(6);
    mha::ModelTrace trace;
    mha::ModelGrads g;
    for (int step = 1; step <= 3; ++step) {
        CAPTURE(step);
        const mha::TokenBatch d = counting_batch(3, 8, 11, rng);
        const mha::StepReport r = mha::train_step(m, opt, d, trace);

        const mha::ModelTrace t = mha::forward(hand, d.x);
        const mha::CrossEntropy ce = mha::fast::cross_entropy(t.logits, d.y);
        g = mha::backward(hand, t, d.x, ce.d_logits);
        const std::vector<mha::Parameter> params = mha::parameters(hand, g);
        const double norm = mha::grad_norm(params);
        hand_opt.step(params);

        CHECK(r.loss == ce.loss);
        CHECK(r.correct == ce.correct);
        CHECK(r.grad_norm == norm);
        CHECK(r.lr == 1e-2f);
        CHECK(mha::max_abs_diff(trace.logits, t.logits) == 0.0);  // the forward before the update
        CHECK(max_param_diff(m, hand, g) == 0.0);                 // the same bits after it
    }
    CHECK(opt.steps() == 3);
    // the batch must fit the model: T > T_max, an id out of range
    CHECK_THROWS_AS(mha::train_step(m, opt, counting_batch(1, 9, 11, rng), trace),
                    std::invalid_argument);
    mha::TokenBatch bad = counting_batch(1, 4, 11, rng);
    bad.x(0, 2) = 11;
    CHECK_THROWS_AS(mha::train_step(m, opt, bad, trace), std::invalid_argument);
    // a negative max_norm throws before the update: the weights stay
    CHECK_THROWS_AS(mha::train_step(m, opt, counting_batch(2, 4, 11, rng), trace, -1.0),
                    std::invalid_argument);
    CHECK(opt.steps() == 3);
    CHECK(max_param_diff(m, hand, g) == 0.0);
}

TEST_CASE("train_step through the tiled backward (no weights kept) follows the ordinary one") {
    // T = 20: every row's causal limit differs. First the gradients of one
    // backward each way, within 1e-5 of the largest (float sums in another
    // order). Then 3 steps of Adam each way: Adam divides by |g| + eps, so a
    // gradient near 0 turns rounding into a step (with eps 1e-8, up to lr);
    // with eps = 1e-3 a weight's step moves by at most lr / eps = 10x its
    // gradient's difference, and 3 steps must stay within 30x the
    // gradients' tolerance (and the losses within 1e-5 of each other).
    const mha::ModelConfig c{11, 20, 16, 2, 32, 2};
    mha::LanguageModel ordinary = mha::make_language_model(c, 5);
    mha::LanguageModel tiled = ordinary;
    mha::Rng rng(7);
    const mha::TokenBatch d0 = counting_batch(3, 20, 11, rng);
    const mha::ModelTrace t0 = mha::forward(ordinary, d0.x);
    const mha::ModelTrace tt0 = mha::forward(ordinary, d0.x, false);  // lse, no weights
    CHECK(tt0.layers[0].attn.weights.size() == 0);  // nothing [B, H, T, T] was kept
    CHECK(tt0.layers[0].attn.lse.size() == 3 * 2 * 20);
    const mha::Tensor3 d_logits = mha::fast::cross_entropy(t0.logits, d0.y).d_logits;
    const mha::ModelGrads g = mha::backward(ordinary, t0, d0.x, d_logits);
    const mha::ModelGrads gt = mha::backward(ordinary, tt0, d0.x, d_logits);
    const std::vector<mha::Parameter> pg = mha::parameters(ordinary, g);
    const std::vector<mha::Parameter> pt = mha::parameters(ordinary, gt);
    double largest = 0, worst = 0;
    for (std::size_t k = 0; k < pg.size(); ++k)
        for (std::size_t i = 0; i < pg[k].size; ++i) {
            largest = std::max(largest, std::fabs(double(pg[k].grad[i])));
            mha_test::keep_worst(worst, std::fabs(double(pg[k].grad[i]) - pt[k].grad[i]));
        }
    const double tolerance = 1e-5 * largest;
    CHECK(worst <= tolerance);

    const float lr = 1e-2f, eps = 1e-3f;
    mha::Adam opt(lr, 0.9f, 0.999f, eps), tiled_opt(lr, 0.9f, 0.999f, eps);
    mha::ModelTrace t, tt;
    for (int step = 1; step <= 3; ++step) {
        CAPTURE(step);
        const mha::TokenBatch d = counting_batch(3, 20, 11, rng);
        const mha::StepReport r = mha::train_step(ordinary, opt, d, t, 1.0);
        const mha::StepReport rt = mha::train_step(tiled, tiled_opt, d, tt, 1.0, false);
        CHECK(tt.layers[1].attn.weights.size() == 0);
        CHECK(std::fabs(rt.loss - r.loss) <= 1e-5 * r.loss);
        CHECK(max_param_diff(ordinary, tiled, g) <= 30 * tolerance);
    }
}

TEST_CASE("train_step: clipped at a tiny max_norm, each weight moves by lr s g / (|s g| + eps)") {
    // At step 1 Adam's m_hat = s g and v_hat = (s g)^2, so a weight moves by
    // lr s g / (|s g| + eps): about lr when |s g| >> eps = 1e-8, much less
    // when the clipped gradient is near eps or below. max_norm 1e-7 puts it there.
    const mha::ModelConfig c{7, 6, 8, 2, 16, 1};
    mha::LanguageModel m = mha::make_language_model(c, 8);
    mha::LanguageModel before = m;
    mha::Rng rng(9);
    const mha::TokenBatch d = counting_batch(2, 6, 7, rng);
    const float lr = 1e-2f;
    const double max_norm = 1e-7;
    mha::Adam opt(lr);
    mha::ModelTrace trace;
    const mha::StepReport r = mha::train_step(m, opt, d, trace, max_norm);

    const mha::ModelTrace t = mha::forward(before, d.x);
    const mha::CrossEntropy ce = mha::fast::cross_entropy(t.logits, d.y);
    const mha::ModelGrads g = mha::backward(before, t, d.x, ce.d_logits);
    mha::LanguageModel copy = before;  // Adam with the clip's scale, on a copy
    const std::vector<mha::Parameter> params = mha::parameters(before, g);
    const double norm = mha::grad_norm(params);
    CHECK(r.grad_norm == norm);  // as clip_grad_norm_ returns it: before clipping
    const float s = mha::clip_scale(norm, max_norm);
    CHECK(s == float(max_norm / (norm + 1e-6)));
    CHECK(s < 1e-4f);
    mha::Adam copy_opt(lr);
    copy_opt.step(mha::parameters(copy, g), s);
    CHECK(max_param_diff(m, copy, g) == 0.0);

    const std::vector<mha::Parameter> after = mha::parameters(m, g);
    double worst = 0, moved = 0, count = 0;
    for (std::size_t k = 0; k < params.size(); ++k)
        for (std::size_t i = 0; i < params[k].size; ++i) {
            const double sg = double(s) * params[k].grad[i];
            const double want = params[k].value[i] - lr * sg / (std::fabs(sg) + 1e-8);
            worst = std::max(worst, std::fabs(after[k].value[i] - want));
            moved += std::fabs(double(after[k].value[i]) - params[k].value[i]);
            count += 1;
        }
    CHECK(worst < 1e-6);
    CHECK(moved / count < 0.25 * lr);  // unclipped, nearly every weight would move by lr
}

TEST_CASE("train_step: lesson 19's SequenceModel, the same step as by hand") {
    mha::SequenceModel m(6, 5, 8, 2, mha::Init::xavier(2));
    mha::SequenceModel hand = m;
    mha::Adam opt(5e-2f), hand_opt(5e-2f);
    mha::Rng rng(3);
    mha::SequenceTrace trace;
    for (int step = 1; step <= 2; ++step) {
        const mha::TokenBatch d = mha::reverse_batch(4, 5, 6, rng);
        const mha::StepReport r = mha::train_step(m, opt, d, trace);
        const mha::SequenceTrace t = mha::forward(hand, d.x);
        const mha::CrossEntropy ce = mha::cross_entropy(t.logits, d.y);
        hand_opt.step(mha::parameters(hand, mha::backward(hand, t, d.x, ce.d_logits)));
        CHECK(r.loss == ce.loss);
        CHECK(mha::max_abs_diff(m.attn.wq.weight, hand.attn.wq.weight) == 0.0);
        CHECK(mha::max_abs_diff(m.embedding.weight, hand.embedding.weight) == 0.0);
        CHECK(mha::max_abs_diff(m.readout.weight, hand.readout.weight) == 0.0);
    }
}

TEST_CASE("train_step: forty steps with warm-up and clipping learn to count") {
    mha::LanguageModel m = mha::make_language_model({10, 8, 16, 2, 32, 1}, 1);
    const mha::LrSchedule schedule{1e-2f, 5, 40, 0.1f};
    mha::Adam opt(schedule.at(1));
    mha::Rng rng(2);
    mha::ModelTrace trace;
    std::vector<double> losses;
    for (int step = 1; step <= 40; ++step) {
        opt.set_lr(schedule.at(step));
        const mha::StepReport r = mha::train_step(m, opt, counting_batch(8, 8, 10, rng), trace, 1.0);
        CHECK(r.lr == schedule.at(step));
        losses.push_back(r.loss);
    }
    CAPTURE(losses.front());
    CAPTURE(losses.back());
    CHECK(losses.front() > 0.8 * std::log(10.0));  // about a uniform guess at first
    CHECK(losses.back() < 0.25 * losses.front());
}

TEST_CASE("Adam::set_lr: 0 is a rate that moves nothing (a schedule may end there), below 0 refused") {
    std::vector<float> w{1.0f, -2.0f}, g{0.5f, 0.25f};
    const std::vector<mha::Parameter> p{{"w", w.data(), g.data(), w.size()}};
    mha::Adam adam(0.1f);
    adam.set_lr(0.0f);
    adam.step(p);
    CHECK(w[0] == 1.0f);
    CHECK(w[1] == -2.0f);
    CHECK_THROWS_AS(adam.set_lr(-1e-3f), std::invalid_argument);
    const mha::LrSchedule to_zero{1e-3f, 2, 10, 0.0f};
    CHECK(to_zero.at(10) == 0.0f);
    CHECK_NOTHROW(adam.set_lr(to_zero.at(10)));
}
