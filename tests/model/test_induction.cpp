// Tests for mha/model/induction.hpp: the repeated batches, the two scores on
// hand-made weights whose score is exactly 1, 0 or 1/T, the loss per
// position against cross_entropy(), and a model without one head against
// the context with that head's slice zeroed by hand; the training loop against
// the same loop written out, and the small helpers the lesson prints with.
#include <doctest/doctest.h>

#include <cmath>
#include <numeric>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include <xtensor/xview.hpp>

#include "mha/linear.hpp"
#include "mha/model/induction.hpp"
#include "mha/model/loss.hpp"

namespace induction_test {

using mha::Tensor4;

// Weights [B, H, T, T] with head h putting all its weight on key pick(i).
template <class Pick>
void one_key(Tensor4& w, std::size_t h, Pick pick) {
    for (std::size_t b = 0; b < w.shape(0); ++b)
        for (std::size_t i = 0; i < w.shape(2); ++i)
            for (std::size_t j = 0; j < w.shape(3); ++j) w(b, h, i, j) = j == pick(i) ? 1.0f : 0.0f;
}

mha::ModelConfig small() { return {7, 7, 8, 2, 16, 2}; }  // V, T_max, E, H, F, L

}  // namespace induction_test

using namespace induction_test;

TEST_CASE("repeated_batch: BOS, n distinct tokens, the same n again, targets the next token") {
    mha::Rng rng(4);
    const std::size_t B = 50, n = 6, V = 10, T = 2 * n + 1;
    const mha::TokenBatch d = mha::repeated_batch(B, n, V, rng);
    REQUIRE(d.x.shape() == std::array<std::size_t, 2>{B, T});
    REQUIRE(d.y.shape() == d.x.shape());
    std::set<std::int32_t> seen_anywhere;
    for (std::size_t b = 0; b < B; ++b) {
        CHECK(d.x(b, 0) == mha::kBos);
        std::set<std::int32_t> first;
        for (std::size_t i = 1; i <= n; ++i) {
            CHECK(d.x(b, n + i) == d.x(b, i));  // the second half equals the first
            CHECK(d.x(b, i) >= 1);
            CHECK(d.x(b, i) < std::int32_t(V));
            first.insert(d.x(b, i));
            seen_anywhere.insert(d.x(b, i));
        }
        CHECK(first.size() == n);  // distinct
        for (std::size_t i = 0; i + 1 < T; ++i) CHECK(d.y(b, i) == d.x(b, i + 1));
        CHECK(d.y(b, T - 1) == d.x(b, 1));  // the repetition goes on
        for (std::size_t i = n + 1; i < T; ++i) CHECK(d.y(b, i) == d.x(b, i - n + 1));
    }
    CHECK(seen_anywhere.size() == V - 1);  // every token but BOS, somewhere in 50 sequences
    mha::Rng again(4);
    CHECK(mha::repeated_batch(B, n, V, again).x == d.x);  // the seed decides
    CHECK(mha::repeated_batch(1, V - 1, V, rng).x.shape(1) == 2 * V - 1);  // n = V - 1
    CHECK_THROWS_AS(mha::repeated_batch(2, 10, 10, rng), std::invalid_argument);
    CHECK_THROWS_AS(mha::repeated_batch(0, 3, 10, rng), std::invalid_argument);
    CHECK_THROWS_AS(mha::repeated_batch(2, 0, 10, rng), std::invalid_argument);
    CHECK_THROWS_AS(mha::repeated_batch(2, 3, 10, rng, 4), std::invalid_argument);
}

TEST_CASE("repeated_batch with n_min: random tokens, then a stretch over and over") {
    mha::Rng rng(7);
    const std::size_t B = 200, n = 6, V = 12, T = 2 * n + 1, n_min = 2;
    const mha::TokenBatch d = mha::repeated_batch(B, n, V, rng, n_min);
    REQUIRE(d.x.shape() == std::array<std::size_t, 2>{B, T});
    std::set<std::size_t> lengths, starts;
    for (std::size_t b = 0; b < B; ++b) {
        CAPTURE(b);
        CHECK(d.x(b, 0) == mha::kBos);
        for (std::size_t i = 0; i + 1 < T; ++i) CHECK(d.y(b, i) == d.x(b, i + 1));
        // Some stretch of m distinct tokens from 1 + a repeats to the end (and on, in y).
        bool found = false;
        for (std::size_t m = n_min; m <= n && !found; ++m)
            for (std::size_t a = 0; a + 2 * m <= 2 * n && !found; ++a) {
                std::set<std::int32_t> stretch;
                for (std::size_t i = 0; i < m; ++i) stretch.insert(d.x(b, 1 + a + i));
                bool fits = stretch.size() == m && stretch.count(mha::kBos) == 0;
                for (std::size_t i = 1 + a + m; i < T && fits; ++i) fits = d.x(b, i) == d.x(b, i - m);
                fits = fits && d.y(b, T - 1) == d.x(b, T - m);
                if (fits) found = true, lengths.insert(m), starts.insert(a);
            }
        CHECK(found);
    }
    CHECK(lengths.size() == n - n_min + 1);  // every length from n_min to n occurs
    CHECK(starts.size() > 4);                // and the stretch starts at many places
}

TEST_CASE("previous_token_scores: 1 one back, 0 on itself, 1/T spread evenly, first q queries") {
    const std::size_t B = 3, H = 3, T = 8;
    Tensor4 w = xt::zeros<float>({B, H, T, T});
    one_key(w, 0, [](std::size_t i) { return i == 0 ? 0 : i - 1; });  // a previous-token head
    one_key(w, 1, [](std::size_t i) { return i; });                   // looks at itself
    for (std::size_t b = 0; b < B; ++b)                               // evenly over all keys
        for (std::size_t i = 0; i < T; ++i)
            for (std::size_t j = 0; j < T; ++j) w(b, 2, i, j) = 1.0f / T;
    const std::vector<double> s = mha::previous_token_scores(w);
    REQUIRE(s.size() == H);
    CHECK(s[0] == doctest::Approx(1.0));
    CHECK(s[1] == 0.0);
    CHECK(s[2] == doctest::Approx(1.0 / T));
    // Over the queries 1 .. q-1 only: head 1 looks one back there and at itself after.
    one_key(w, 1, [](std::size_t i) { return i == 0 ? 0 : i < 4 ? i - 1 : i; });
    CHECK(mha::previous_token_scores(w, 4)[1] == doctest::Approx(1.0));
    CHECK(mha::previous_token_scores(w)[1] == doctest::Approx(3.0 / (T - 1)));
    CHECK_THROWS_AS(mha::previous_token_scores(w, 1), std::invalid_argument);
    CHECK_THROWS_AS(mha::previous_token_scores(w, T + 1), std::invalid_argument);
    CHECK_THROWS_AS(mha::previous_token_scores(Tensor4::from_shape({1, 1, 1, 1})),
                    std::invalid_argument);
    CHECK_THROWS_AS(mha::previous_token_scores(Tensor4::from_shape({1, 1, 3, 4})),
                    std::invalid_argument);
}

TEST_CASE("induction_scores: 1 on the key after the earlier occurrence, 0 one off, 1/T evenly") {
    mha::Rng rng(1);
    const std::size_t B = 4, n = 5, T = 2 * n + 1, H = 4;
    const mha::TokenBatch d = mha::repeated_batch(B, n, 8, rng);  // second half = first
    Tensor4 w = xt::zeros<float>({B, H, T, T});
    one_key(w, 0, [&](std::size_t i) { return i > n ? i - n + 1 : 0; });  // induction
    one_key(w, 1, [&](std::size_t i) { return i > n ? i - n : 0; });      // the earlier token itself
    one_key(w, 2, [](std::size_t i) { return i == 0 ? 0 : i - 1; });      // previous token
    for (std::size_t b = 0; b < B; ++b)
        for (std::size_t i = 0; i < T; ++i)
            for (std::size_t j = 0; j < T; ++j) w(b, 3, i, j) = 1.0f / T;
    const std::vector<double> s = mha::induction_scores(w, d.x);
    REQUIRE(s.size() == H);
    CHECK(s[0] == doctest::Approx(1.0));
    CHECK(s[1] == 0.0);
    CHECK(s[2] == 0.0);
    CHECK(s[3] == doctest::Approx(1.0 / T));
    // Only the queries whose token came before count: here the last one.
    mha::Tokens x = {{3, 1, 4, 1}};
    Tensor4 one = xt::zeros<float>({1, 1, 4, 4});
    one(0, 0, 3, 2) = 0.75f;  // token 1 at 3 occurred at 1: the key after it is 2
    one(0, 0, 2, 2) = 1.0f;   // query 2 (token 4, new) is not counted
    CHECK(mha::induction_scores(one, x)[0] == doctest::Approx(0.75));
    // The latest earlier occurrence: token 1 at 4 occurred at 1 and 3.
    x = {{1, 2, 0, 1, 1}};
    Tensor4 five = xt::zeros<float>({1, 1, 5, 5});
    five(0, 0, 3, 1) = 1.0f;  // query 3: after the 1 at 0
    five(0, 0, 4, 4) = 1.0f;  // query 4: after the 1 at 3, itself
    CHECK(mha::induction_scores(five, x)[0] == doctest::Approx(1.0));
    CHECK(mha::induction_scores(five, mha::Tokens{{0, 1, 2, 3, 4}})[0] == 0.0);  // no repeat
    CHECK_THROWS_AS(mha::induction_scores(w, mha::Tokens::from_shape({B, T - 1})),
                    std::invalid_argument);
}

TEST_CASE("position_losses: their mean is cross_entropy's loss, and half_losses splits them") {
    mha::Rng rng(2);
    const std::size_t B = 3, n = 4, T = 2 * n + 1, V = 6;
    const mha::TokenBatch d = mha::repeated_batch(B, n, V, rng);
    mha::Tensor3 logits = mha::Tensor3::from_shape({B, T, V});
    for (float& z : logits) z = 3.0f * rng.normal();
    const std::vector<double> per = mha::position_losses(logits, d.y);
    REQUIRE(per.size() == T);
    const double mean = std::accumulate(per.begin(), per.end(), 0.0) / T;
    CHECK(mean == doctest::Approx(mha::cross_entropy(logits, d.y).loss).epsilon(1e-6));
    const mha::HalfLosses h = mha::half_losses(logits, d.y);  // positions 0..n, n+1..2n
    CHECK((h.first * (n + 1) + h.repeated * n) / T == doctest::Approx(mean).epsilon(1e-9));
    CHECK(h.first == doctest::Approx(std::accumulate(per.begin(), per.begin() + n + 1, 0.0) /
                                     (n + 1)));
    // Equal logits: every position costs ln V.
    const mha::HalfLosses flat = mha::half_losses(xt::zeros<float>({B, T, V}), d.y);
    CHECK(flat.first == doctest::Approx(std::log(double(V))));
    CHECK(flat.repeated == doctest::Approx(std::log(double(V))));
    CHECK_THROWS_AS(mha::half_losses(mha::Tensor3::from_shape({B, 4, V}),
                                     mha::Tokens::from_shape({B, 4})), std::invalid_argument);
    mha::Tokens bad = d.y;
    bad(0, 0) = std::int32_t(V);
    CHECK_THROWS_AS(mha::position_losses(logits, bad), std::invalid_argument);
}

TEST_CASE("without_head: the head's slice of the context is zeroed before w_o") {
    const mha::LanguageModel m = mha::make_language_model(small(), 3);
    mha::Rng rng(5);
    const mha::TokenBatch d = mha::repeated_batch(2, 3, 7, rng);  // T = 7
    const mha::ModelTrace full = mha::forward(m, d.x);
    const std::size_t D = m.layers[1].self_attn.head_dim();
    for (std::size_t h = 0; h < 2; ++h) {
        CAPTURE(h);
        const mha::ModelTrace cut = mha::forward(mha::without_head(m, 1, h), d.x);
        // Layer 0 is untouched, and layer 1 attends as before ...
        CHECK(mha::max_abs_diff(cut.layers[0].attn.output, full.layers[0].attn.output) == 0.0);
        CHECK(mha::max_abs_diff(cut.layers[1].attn.weights, full.layers[1].attn.weights) == 0.0);
        // ... but its output is w_o of the context with head h's D columns zeroed.
        mha::Tensor3 context = full.layers[1].attn.context;  // [B, T, E]
        xt::view(context, xt::all(), xt::all(), xt::range(h * D, (h + 1) * D)) = 0.0f;
        const mha::Tensor3 by_hand = mha::linear(context, m.layers[1].self_attn.w_o);
        CHECK(mha::max_abs_diff(cut.layers[1].attn.output, by_hand) < 1e-6);
        CHECK(mha::max_abs_diff(cut.logits, full.logits) > 1e-4);  // and it matters
    }
    CHECK(m.layers[1].self_attn.w_o.weight(0, 0) != 0.0f);  // the model itself is unchanged
    CHECK_THROWS_AS(mha::without_head(m, 2, 0), std::invalid_argument);
    CHECK_THROWS_AS(mha::without_head(m, 0, 2), std::invalid_argument);
}

TEST_CASE("score_heads: the half losses and both scores of every layer, from one forward") {
    const mha::LanguageModel m = mha::make_language_model(small(), 4);
    mha::Rng rng(6);
    const mha::TokenBatch d = mha::repeated_batch(3, 3, 7, rng);  // T = 7, first half 0..3
    const mha::HeadScores s = mha::score_heads(m, d);
    const mha::ModelTrace t = mha::forward(m, d.x);
    REQUIRE(s.prev.size() == 2);
    REQUIRE(s.ind.size() == 2);
    REQUIRE(s.weights.size() == 2);
    CHECK(s.loss.first == mha::half_losses(t.logits, d.y).first);
    CHECK(s.loss.repeated == mha::half_losses(t.logits, d.y).repeated);
    for (std::size_t l = 0; l < 2; ++l) {
        CAPTURE(l);
        CHECK(s.weights[l] == t.layers[l].attn.weights);
        CHECK(s.prev[l] == mha::previous_token_scores(t.layers[l].attn.weights, 4));
        CHECK(s.ind[l] == mha::induction_scores(t.layers[l].attn.weights, d.x));
    }
}

TEST_CASE("InductionLog: the losses, the first report past 0.5 as the jump, its weights") {
    const mha::LanguageModel m = mha::make_language_model(small(), 7);
    mha::Rng test_rng(8);
    const mha::TokenBatch test = mha::repeated_batch(2, 3, 7, test_rng);
    mha::InductionLog log(m, test);
    REQUIRE(log.frames.size() == 1);  // before training
    CHECK(log.frames[0].second.size() == small().layers);
    auto report = [](double first, double repeated, double best_last_layer) {
        mha::HeadScores s;
        s.loss = {first, repeated};
        s.ind = {{0.9, 0.9}, {0.1, best_last_layer}};  // layer 0 high: only the last counts
        s.weights = {mha::Tensor4({1, 2, 3, 3}, float(best_last_layer))};
        return s;
    };
    CHECK_FALSE(log.add(10, report(2.0, 1.8, 0.49)));
    CHECK(log.add(20, report(2.0, 1.0, 0.5)));  // the jump: 0.5 reached
    CHECK_FALSE(log.add(30, report(2.0, 0.4, 0.9)));  // only the first counts
    CHECK(log.jump == 20);
    REQUIRE(log.frames.size() == 2);
    CHECK(log.frames[1].first == "at the jump, step 20");
    CHECK(log.frames[1].second[0](0, 0, 0, 0) == 0.5f);  // that report's weights
    CHECK(log.steps == std::vector<int>{10, 20, 30});
    CHECK(log.repeated() == std::vector<double>{1.8, 1.0, 0.4});
    CHECK(log.lowest_ratio() == doctest::Approx(0.2));
    CHECK(log.last.loss.repeated == 0.4);
    mha::InductionLog none(m, test);
    none.add(10, report(2.0, 1.9, 0.3));
    CHECK(none.jump == 0);
    CHECK(none.frames.size() == 1);
}

TEST_CASE("train_on_repeats: the loop written out, reporting every 10 steps and the last") {
    mha::LanguageModel m = mha::make_language_model(small(), 7), by_hand = m;
    mha::Rng test_rng(8);
    const mha::TokenBatch test = mha::repeated_batch(2, 3, 7, test_rng);  // T = 7
    const mha::LrSchedule lr{1e-2f, 2, 25, 0.1f};
    mha::Rng data(9), data_by_hand(9);
    std::vector<int> steps;
    mha::HeadScores last;
    mha::train_on_repeats(m, lr, test, 7, 2, data, [&](int step, const mha::HeadScores& s) {
        steps.push_back(step);
        last = s;
    });
    CHECK(steps == std::vector<int>{10, 20, 25});
    mha::Adam adam(lr.at(1));  // the same loop by hand
    mha::ModelTrace trace;
    for (int step = 1; step <= 25; ++step) {
        adam.set_lr(lr.at(step));
        const mha::TokenBatch batch = mha::repeated_batch(2, 3, 7, data_by_hand, 2);
        mha::train_step(by_hand, adam, batch, trace, 1.0);
    }
    const mha::HeadScores s = mha::score_heads(by_hand, test);
    CHECK(last.loss.first == s.loss.first);
    CHECK(last.loss.repeated == s.loss.repeated);
    CHECK(last.ind == s.ind);
}

TEST_CASE("best_head, top_keys, token_letters: the head, where it looks, the tokens") {
    CHECK(mha::best_head({0.1, 0.9, 0.3}) == 1);
    CHECK(mha::best_head({0.5, 0.2, 0.5}) == 0);  // the first on a tie
    CHECK_THROWS_AS(mha::best_head({}), std::invalid_argument);

    Tensor4 w = Tensor4::from_shape({2, 2, 5, 5});  // [B, H, T, T]
    w.fill(0.0f);
    one_key(w, 0, [](std::size_t i) { return i == 0 ? 0 : i - 1; });  // one back
    for (std::size_t i = 0; i < 5; ++i)  // head 1 spreads evenly: the first key on a tie
        for (std::size_t j = 0; j <= i; ++j) w(1, 1, i, j) = 1.0f / float(i + 1);
    CHECK(mha::top_keys(w, 0, 0) == std::vector<std::size_t>{0, 0, 1, 2, 3});
    CHECK(mha::top_keys(w, 1, 1) == std::vector<std::size_t>{0, 0, 0, 0, 0});
    w(0, 0, 2, 4) = 5.0f;  // a key after the query is not looked at
    CHECK(mha::top_keys(w, 0, 0)[2] == 1);
    CHECK_THROWS_AS(mha::top_keys(w, 2, 0), std::invalid_argument);
    CHECK_THROWS_AS(mha::top_keys(w, 0, 2), std::invalid_argument);

    mha::Tokens t = mha::Tokens::from_shape({2, 5});  // [B, T]
    t.fill(0);
    t(1, 1) = 1;  // a
    t(1, 2) = 26;  // z
    t(1, 3) = 27;  // A
    t(1, 4) = 52;  // Z
    CHECK(mha::token_letters(t, 1) == std::vector<std::string>{"^", "a", "z", "A", "Z"});
    CHECK_THROWS_AS(mha::token_letters(t, 2), std::invalid_argument);
    t(0, 3) = 53;
    CHECK_THROWS_AS(mha::token_letters(t, 0), std::invalid_argument);
}
