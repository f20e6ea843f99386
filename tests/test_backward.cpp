// Tests for mha/backward.hpp: every gradient against central finite
// differences of the loss L = sum(output * R), R random, so dL/doutput = R.
//
// The analytic gradients are the core's, in float: backward_stages() (the
// stages in reverse) and backward() (the engine's), each checked alone. The finite differences
// run in double: the loss comes from the plain-loop oracle, which computes
// in double, so only the float parameters themselves are float. Steps of
// 2e-2 and 1e-2 are combined (Richardson) to cancel the h^2 error. The error
// measure is |fd - analytic| / max(|fd|, |analytic|, 1e-2) and the limit is
// 1e-3; the floor 1e-2 keeps gradients that are zero (masked keys) from
// dividing by nothing, so those must agree to 1e-5 absolute.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "mha/backward.hpp"
#include "mha/init.hpp"
#include "mha/reference.hpp"
#include "mha/softmax.hpp"
#include "worst.hpp"

namespace {

struct Problem {
    mha::MultiHeadAttention m;
    mha::Tensor3 q, k, v, r;
    mha::Mask mask;
    bool masked;
    float fill = mha::kNegInf;
};

double loss(const Problem& p) {
    const auto out = mha::reference_forward(
        p.m, p.q, p.k, p.v, p.masked ? &p.mask : nullptr, p.fill).output;
    double l = 0;
    for (std::size_t i = 0; i < out.size(); ++i)
        l += double(out.data()[i]) * p.r.data()[i];
    return l;
}

// Worst relative error between the analytic gradient and finite differences
// over every element of the tensor @p x inside @p p.
constexpr float kStep = 2e-2f;

template <class T>
double worst_error(Problem& p, T& x, const T& analytic) {
    double worst = 0;
    for (std::size_t i = 0; i < x.size(); ++i) {
        const float keep = x.data()[i];
        // Central difference with step h; the step actually taken is
        // measured in float, so rounding of keep + h does not count.
        auto central = [&](float h) {
            x.data()[i] = keep + h;
            const double hi = x.data()[i];
            const double up = loss(p);
            x.data()[i] = keep - h;
            const double lo = x.data()[i];
            const double down = loss(p);
            x.data()[i] = keep;
            return (up - down) / (hi - lo);
        };
        // Richardson: the h^2 error terms of D(h) and D(h/2) cancel.
        const double fd = (4.0 * central(kStep / 2) - central(kStep)) / 3.0;
        const double an = analytic.data()[i];
        const double err = std::fabs(fd - an) /
                           std::max({std::fabs(fd), std::fabs(an), 1e-2});
        mha_test::keep_worst(worst, err);
    }
    return worst;
}

void check_gradients(Problem& p, const mha::AttentionGrads& g) {
    const double limit = 1e-3;
    CHECK(worst_error(p, p.m.wq.weight, g.wq.weight) < limit);
    CHECK(worst_error(p, p.m.wq.bias, g.wq.bias) < limit);
    CHECK(worst_error(p, p.m.wk.weight, g.wk.weight) < limit);
    CHECK(worst_error(p, p.m.wk.bias, g.wk.bias) < limit);
    CHECK(worst_error(p, p.m.wv.weight, g.wv.weight) < limit);
    CHECK(worst_error(p, p.m.wv.bias, g.wv.bias) < limit);
    CHECK(worst_error(p, p.m.w_o.weight, g.w_o.weight) < limit);
    CHECK(worst_error(p, p.m.w_o.bias, g.w_o.bias) < limit);
    CHECK(worst_error(p, p.q, g.query) < limit);
    CHECK(worst_error(p, p.k, g.key) < limit);
    CHECK(worst_error(p, p.v, g.value) < limit);
}

void check_all_gradients(Problem& p) {
    const mha::Mask* mask = p.masked ? &p.mask : nullptr;
    SUBCASE("backward_stages, the stages in reverse") {
        check_gradients(p, mha::backward_stages(p.m, p.q, p.k, p.v, p.r, mask, p.fill));
    }
    SUBCASE("backward, the engine's") {
        check_gradients(p, mha::backward(p.m, p.q, p.k, p.v, p.r, mask, p.fill));
    }
}

Problem make(std::size_t B, std::size_t Tq, std::size_t Tk, std::size_t E,
             std::size_t H, std::uint64_t seed) {
    mha::Rng rng(seed);
    Problem p{mha::MultiHeadAttention(E, H, mha::Init::xavier(seed)),
              mha::randn(B, Tq, E, rng), mha::randn(B, Tk, E, rng),
              mha::randn(B, Tk, E, rng), mha::randn(B, Tq, E, rng),
              mha::Mask(), false};
    return p;
}

}  // namespace

TEST_CASE("backward: finite differences, self-attention without a mask") {
    Problem p = make(2, 4, 4, 6, 2, 1);
    p.k = p.q;
    p.v = p.q;
    check_all_gradients(p);
}

TEST_CASE("backward: finite differences, causal mask") {
    Problem p = make(2, 5, 5, 8, 4, 2);
    p.mask = mha::causal_mask(5, 5);
    p.masked = true;
    check_all_gradients(p);
}

TEST_CASE("backward: finite differences, cross-attention with Tq != Tk") {
    Problem p = make(2, 3, 5, 6, 3, 3);
    check_all_gradients(p);
}

TEST_CASE("backward: finite differences, padding with a fully masked row") {
    Problem p = make(2, 3, 4, 4, 2, 4);
    p.mask = mha::padding_mask({0, 2}, 4);  // sequence 0 sees no key at all
    p.masked = true;
    check_all_gradients(p);
    // No gradient reaches keys or values that are masked for every query.
    for (const auto& g : {mha::backward_stages(p.m, p.q, p.k, p.v, p.r, &p.mask),
                          mha::backward(p.m, p.q, p.k, p.v, p.r, &p.mask)}) {
        for (std::size_t e = 0; e < 4; ++e) {
            CHECK(g.key(1, 3, e) == 0.0f);
            CHECK(g.value(1, 3, e) == 0.0f);
            CHECK(g.value(0, 0, e) == 0.0f);
        }
    }
}

TEST_CASE("backward: finite differences, grouped-query attention (H_kv = 1 and H / 2)") {
    // The heads of a group share wk, wv and their keys: their gradients add.
    for (std::size_t H_kv : {std::size_t{1}, std::size_t{2}}) {
        CAPTURE(H_kv);
        mha::Rng rng(9);
        Problem p{mha::MultiHeadAttention(8, 4, H_kv, mha::Init::xavier(9)),
                  mha::randn(2, 3, 8, rng), mha::randn(2, 4, 8, rng), mha::randn(2, 4, 8, rng),
                  mha::randn(2, 3, 8, rng), mha::causal_mask(3, 4), true};
        check_all_gradients(p);
    }
}

TEST_CASE("backward: finite differences, fill -1e10 on a fully masked row") {
    // The row's weights are uniform, yet its scores are constants: no
    // gradient may flow back into q or k through them.
    Problem p = make(2, 3, 4, 4, 2, 7);
    p.mask = mha::padding_mask({0, 3}, 4);
    p.masked = true;
    p.fill = -1e10f;
    check_all_gradients(p);
}

TEST_CASE("backward: self-attention dX is the sum of the three input grads") {
    Problem p = make(1, 3, 3, 4, 2, 5);
    p.k = p.q;
    p.v = p.q;
    const auto g = mha::backward_stages(p.m, p.q, p.q, p.q, p.r);
    const mha::Tensor3 dx = g.query + g.key + g.value;
    // Moving all three inputs together is moving X.
    const float eps = 1e-2f;
    for (std::size_t i = 0; i < p.q.size(); ++i) {
        const float keep = p.q.data()[i];
        auto at = [&](float x) {
            p.q.data()[i] = x;
            p.k = p.q;
            p.v = p.q;
            return loss(p);
        };
        const double fd = (at(keep + eps) - at(keep - eps)) / (2 * eps);
        at(keep);
        CHECK(dx.data()[i] == doctest::Approx(fd).epsilon(1e-3).scale(1e-2));
    }
}

TEST_CASE("backward: bad shapes are refused") {
    Problem p = make(1, 3, 3, 4, 2, 6);
    mha::Rng rng(0);
    CHECK_THROWS_WITH_AS(mha::backward(p.m, p.q, p.k, p.v, mha::randn(1, 2, 4, rng)),
                         doctest::Contains("d_output [1, 2, 4]"), std::invalid_argument);
    const mha::Mask wrong = mha::causal_mask(3, 2);
    CHECK_THROWS_AS(mha::backward(p.m, p.q, p.k, p.v, p.r, &wrong),
                    std::invalid_argument);
    CHECK_THROWS_AS(mha::backward(p.m, mha::randn(1, 3, 5, rng), p.k, p.v, p.r),
                    std::invalid_argument);
    CHECK_THROWS_WITH_AS(mha::backward_stages(p.m, p.q, p.k, p.v, mha::randn(1, 2, 4, rng)),
                         doctest::Contains("d_output [1, 2, 4]"), std::invalid_argument);
    // a trace of other inputs
    const mha::ForwardTrace other = p.m.trace(mha::randn(1, 2, 4, rng), p.k, p.v);
    CHECK_THROWS_WITH_AS(mha::backward(p.m, other, p.q, p.k, p.v, p.r),
                         doctest::Contains("not a trace() of"), std::invalid_argument);
}

TEST_CASE("backward: softmax_backward against finite differences of softmax") {
    // L = sum(softmax(S) * R), so dL/dP = R; S [2, 2, 3, 5] with one key masked.
    mha::Rng rng(4);
    mha::Tensor4 s({2, 2, 3, 5}), r({2, 2, 3, 5});
    for (auto& x : s) x = rng.normal();
    for (auto& x : r) x = rng.normal();
    s(1, 0, 2, 3) = mha::kNegInf;
    auto loss_of = [&](const mha::Tensor4& scores) {
        const mha::Tensor4 p = mha::softmax(scores);
        double l = 0;
        for (std::size_t i = 0; i < p.size(); ++i) l += double(p.data()[i]) * r.data()[i];
        return l;
    };
    const mha::Tensor4 ds = mha::softmax_backward(mha::softmax(s), r);
    CHECK(ds(1, 0, 2, 3) == 0.0f);  // a masked score does not move the loss
    for (std::size_t i = 0; i < s.size(); ++i) {
        if (std::isinf(s.data()[i])) continue;
        const float keep = s.data()[i], h = 1e-2f;
        s.data()[i] = keep + h;
        const double up = loss_of(s);
        s.data()[i] = keep - h;
        const double down = loss_of(s);
        s.data()[i] = keep;
        const double fd = (up - down) / (double(keep + h) - double(keep - h));
        CHECK(ds.data()[i] == doctest::Approx(fd).epsilon(1e-3).scale(1e-2));
    }
    CHECK_THROWS_WITH_AS(mha::softmax_backward(s, mha::Tensor4({2, 2, 5, 3})),
                         doctest::Contains("[2, 2, 5, 3]"), std::invalid_argument);
}
