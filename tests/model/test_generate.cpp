// Tests for mha/model/generate.hpp: prefill() and decode() through every
// layer's KV cache give forward()'s logits at each new position (within
// 1e-5 of the largest logit); greedy generation is the arg-max of the full
// forward, step by step; top-k draws only among the k largest; a
// temperature near 0 is greedy; bad arguments are one clear line.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <set>
#include <vector>

#include <xtensor/xview.hpp>

#include "mha/model/generate.hpp"

namespace generate_test {

using mha::Tensor3;
using mha::Tokens;

// A model whose norms are not 1 and 0, so that skipping one would show.
mha::LanguageModel stirred_model(const mha::ModelConfig& c, std::uint64_t seed) {
    mha::LanguageModel m = mha::make_language_model(c, seed);
    mha::Rng rng(seed + 100);
    auto stir = [&](mha::LayerNorm& n) {
        for (float& w : n.weight) w = 1.0f + 0.3f * rng.normal();
        for (float& b : n.bias) b = 0.3f * rng.normal();
    };
    for (mha::Block& b : m.layers) stir(b.norm1), stir(b.norm2);
    stir(m.norm);
    return m;
}

Tokens random_tokens(std::size_t B, std::size_t T, std::size_t V, mha::Rng& rng) {
    Tokens t = Tokens::from_shape({B, T});
    for (auto& id : t) id = std::int32_t(rng.uniform(0.0f, float(V))) % int(V);
    return t;
}

Tokens first(const Tokens& t, std::size_t n) {  // positions 0 .. n-1 `[B, n]`
    return xt::view(t, xt::all(), xt::range(0, n));
}

// Largest |a - b| over the largest |b|, at every sequence's position @p i of b.
double rel_diff_at(const Tensor3& a, std::size_t ia, const Tensor3& b, std::size_t ib) {
    double diff = 0, top = 1e-30;
    for (std::size_t s = 0; s < a.shape(0); ++s)
        for (std::size_t v = 0; v < a.shape(2); ++v) {
            diff = std::max(diff, std::fabs(double(a(s, ia, v)) - b(s, ib, v)));
            top = std::max(top, std::fabs(double(b(s, ib, v))));
        }
    return diff / top;
}

std::size_t arg_max(const Tensor3& logits, std::size_t b, std::size_t i) {
    std::size_t best = 0;
    for (std::size_t v = 1; v < logits.shape(2); ++v)
        if (logits(b, i, v) > logits(b, i, best)) best = v;
    return best;
}

}  // namespace generate_test

using namespace generate_test;

TEST_CASE("prefill then decode: each step's logits are forward()'s last position") {
    const mha::ModelConfig c{13, 12, 16, 4, 32, 2};
    const mha::LanguageModel m = stirred_model(c, 5);
    mha::Rng rng(1);
    const Tokens seq = random_tokens(2, 12, 13, rng);  // teacher-forced: any tokens will do
    mha::ModelCache cache = mha::make_cache(m, 2);
    REQUIRE(cache.layers.size() == 2);
    CHECK(cache.layers[1].capacity() == 12);
    const Tensor3 pre = mha::prefill(m, first(seq, 5), cache);  // [2, 5, 13]
    REQUIRE(pre.shape() == Tensor3::shape_type{2, 5, 13});
    CHECK(cache.length() == 5);
    const Tensor3 whole = mha::forward(m, first(seq, 5)).logits;
    for (std::size_t i = 0; i < 5; ++i) CHECK(rel_diff_at(pre, i, whole, i) < 1e-5);
    for (std::size_t n = 5; n < 12; ++n) {  // position n, after the n before it
        CAPTURE(n);
        const Tensor3 step = mha::decode(m, xt::view(seq, xt::all(), xt::range(n, n + 1)), cache);
        REQUIRE(step.shape() == Tensor3::shape_type{2, 1, 13});
        CHECK(cache.length() == n + 1);
        const Tensor3 full = mha::forward(m, first(seq, n + 1)).logits;  // [2, n + 1, 13]
        CHECK(rel_diff_at(step, 0, full, n) < 1e-5);
    }
    // T_max positions read: the model has no position 12
    CHECK_THROWS_WITH_AS(mha::decode(m, first(seq, 1), cache),
                         "decode: 12 positions read and 1 more make 13, past T_max = 12 "
                         "(pos_emb has 12 rows)",
                         std::invalid_argument);
    // a prompt read in two parts gives what it gives whole
    mha::ModelCache two = mha::make_cache(m, 2);
    mha::prefill(m, first(seq, 3), two);
    const Tensor3 rest = mha::prefill(m, xt::view(seq, xt::all(), xt::range(3, 7)), two);
    const Tensor3 seven = mha::forward(m, first(seq, 7)).logits;
    for (std::size_t i = 0; i < 4; ++i) CHECK(rel_diff_at(rest, i, seven, 3 + i) < 1e-5);
}

TEST_CASE("generate, greedy: every new token is the arg-max of forward() on what came before") {
    const mha::LanguageModel m = stirred_model({11, 10, 16, 2, 24, 2}, 7);
    mha::Rng rng(2), untouched(2);
    const Tokens prompt = random_tokens(3, 4, 11, rng);
    mha::Rng draws(3), same(3);
    const Tokens out = mha::generate(m, prompt, 6, {0.0f, std::nullopt}, draws);
    REQUIRE(out.shape() == Tokens::shape_type{3, 10});
    CHECK(first(out, 4) == prompt);
    for (std::size_t n = 4; n < 10; ++n) {
        const Tensor3 logits = mha::forward(m, first(out, n)).logits;
        for (std::size_t b = 0; b < 3; ++b) {
            CAPTURE(n);
            CAPTURE(b);
            CHECK(std::size_t(out(b, n)) == arg_max(logits, b, n - 1));
        }
    }
    CHECK(draws.uniform(0, 1) == same.uniform(0, 1));  // greedy draws nothing
    // top-k does not change the arg-max; a temperature near 0 is greedy too
    CHECK(mha::generate(m, prompt, 6, {0.0f, 3}, draws) == out);
    CHECK(mha::generate(m, prompt, 6, {1e-6f, std::nullopt}, draws) == out);
    // no new token: the prompt; all T_max: fine
    CHECK(mha::generate(m, prompt, 0, {}, draws) == prompt);
    CHECK(mha::generate(m, prompt, 6, {}, draws).shape(1) == 10);
}

TEST_CASE("generate, sampled: the same seed gives the same text, another seed other text") {
    const mha::LanguageModel m = stirred_model({11, 12, 16, 2, 24, 1}, 3);
    const Tokens prompt{{1, 2, 3}};
    mha::Rng a(5), b(5), c(6);
    const mha::Sampling s{1.5f, std::nullopt};
    const Tokens x = mha::generate(m, prompt, 9, s, a);
    CHECK(x == mha::generate(m, prompt, 9, s, b));
    CHECK(x != mha::generate(m, prompt, 9, s, c));
}

TEST_CASE("sample_token: top-k only among the k largest, in softmax's proportions") {
    const mha::Tensor1 z{0.5f, 2.0f, -1.0f, 1.7f, 1.9f, 0.0f};  // the 3 largest: 1, 4, 3
    mha::Rng rng(11);
    std::vector<int> count(6, 0);
    const int n = 6000;
    for (int i = 0; i < n; ++i) ++count[mha::sample_token(z, {1.0f, 3}, rng)];
    CHECK(count[0] + count[2] + count[5] == 0);
    const double sum = std::exp(2.0) + std::exp(1.9) + std::exp(1.7);
    for (std::size_t j : {1, 4, 3}) {
        CAPTURE(j);
        CHECK(count[j] / double(n) == doctest::Approx(std::exp(z(j)) / sum).epsilon(0.1));
    }
    // k = 1 is greedy; k at or past V keeps every token
    for (int i = 0; i < 50; ++i) CHECK(mha::sample_token(z, {1.0f, 1}, rng) == 1);
    std::set<int> seen;
    for (int i = 0; i < 500; ++i) seen.insert(mha::sample_token(z, {1.0f, 100}, rng));
    CHECK(seen.size() == 6);
    // ties at the k-th largest are kept, as nanoGPT's `logits < v[:, [-1]]` keeps them
    const mha::Tensor1 tied{1.0f, 5.0f, 5.0f, 2.0f, 5.0f};
    seen.clear();
    for (int i = 0; i < 300; ++i) seen.insert(mha::sample_token(tied, {1.0f, 2}, rng));
    CHECK(seen == std::set<int>{1, 2, 4});
}

TEST_CASE("sample_token: the temperature sharpens or flattens, and near 0 it is the arg-max") {
    const mha::Tensor1 z{0.30f, 0.31f, 0.0f, -2.0f};  // the arg-max wins by 0.01
    mha::Rng rng(4);
    for (int i = 0; i < 200; ++i) CHECK(mha::sample_token(z, {1e-4f, std::nullopt}, rng) == 1);
    CHECK(mha::sample_token(z, {0.0f, std::nullopt}, rng) == 1);
    // at tau = 100 the four are nearly even; at tau = 1, token 3 is rare
    std::vector<int> hot(4, 0), warm(4, 0);
    for (int i = 0; i < 4000; ++i) {
        ++hot[mha::sample_token(z, {100.0f, std::nullopt}, rng)];
        ++warm[mha::sample_token(z, {1.0f, std::nullopt}, rng)];
    }
    CHECK(hot[3] / 4000.0 == doctest::Approx(0.25).epsilon(0.15));
    double sum = 0;
    for (float v : z) sum += std::exp(double(v));
    CHECK(warm[3] / 4000.0 == doctest::Approx(std::exp(-2.0) / sum).epsilon(0.3));
    // greedy takes the first of equal largest, as torch.argmax
    CHECK(mha::sample_token(mha::Tensor1{1.0f, 3.0f, 3.0f}, {0.0f, std::nullopt}, rng) == 1);
    // -inf logits (a banned token) are never drawn
    const float inf = std::numeric_limits<float>::infinity();
    const mha::Tensor1 banned{-inf, 0.0f, 0.1f};
    for (int i = 0; i < 100; ++i) CHECK(mha::sample_token(banned, {}, rng) != 0);
}

TEST_CASE("generate and sampling: bad arguments are one clear line") {
    const mha::LanguageModel m = mha::make_language_model({13, 12, 8, 2, 16, 1}, 0);
    mha::Rng rng(0);
    Tokens long_prompt = Tokens::from_shape({1, 13});
    long_prompt.fill(0);
    CHECK_THROWS_WITH_AS(mha::generate(m, long_prompt, 0, {}, rng),
                         "generate: a prompt of 13 tokens and 0 new ones make 13, past T_max = 12",
                         std::invalid_argument);
    CHECK_THROWS_WITH_AS(mha::generate(m, first(long_prompt, 10), 3, {}, rng),
                         "generate: a prompt of 10 tokens and 3 new ones make 13, past T_max = 12",
                         std::invalid_argument);
    mha::ModelCache cache = mha::make_cache(m, 1);
    CHECK_THROWS_WITH_AS(mha::prefill(m, long_prompt, cache),
                         "prefill: 0 positions read and 13 more make 13, past T_max = 12 "
                         "(pos_emb has 12 rows)",
                         std::invalid_argument);
    CHECK(cache.length() == 0);
    CHECK_THROWS_WITH_AS(mha::generate(m, Tokens{{1, 2}}, 3, {1.0f, 0}, rng),
                         "sampling: top_k must be at least 1 (none: all tokens), got 0",
                         std::invalid_argument);
    CHECK_THROWS_WITH_AS(mha::generate(m, Tokens{{1, 2}}, 3, {-0.5f, std::nullopt}, rng),
                         "sampling: temperature must be a finite number >= 0 (0: greedy), got -0.5",
                         std::invalid_argument);
    CHECK_THROWS_AS(mha::generate(m, Tokens{{1, 2}}, 3, {NAN, std::nullopt}, rng),
                    std::invalid_argument);
    CHECK_THROWS_AS(mha::generate(m, Tokens{{1, 2}}, 3, {INFINITY, std::nullopt}, rng),
                    std::invalid_argument);
    CHECK_THROWS_WITH_AS(mha::generate(m, Tokens{{1, 13}}, 3, {}, rng),
                         "embed: token 13 at [0, 1] is outside the vocabulary [0, 13)",
                         std::invalid_argument);
    CHECK_THROWS_AS(mha::generate(m, Tokens{{-1}}, 3, {}, rng), std::invalid_argument);
    CHECK_THROWS_WITH_AS(mha::generate(m, Tokens::from_shape({1, 0}), 3, {}, rng),
                         "generate: prompt [1, 0] holds no token; give [B, P], P >= 1",
                         std::invalid_argument);
    CHECK_THROWS_WITH_AS(mha::decode(m, Tokens{{1, 2}}, cache),
                         "decode: token [1, 2] must be one per sequence, [B, 1]; prefill() takes more",
                         std::invalid_argument);
    CHECK_THROWS_WITH_AS(mha::decode(m, Tokens{{1}, {2}}, cache),
                         "decode: tokens [2, 1] are 2 sequences, the cache's 1: "
                         "make it with make_cache(m, 2)",
                         std::invalid_argument);
    CHECK_THROWS_AS(mha::make_cache(m, 0), std::invalid_argument);
    CHECK_THROWS_WITH_AS(mha::sample_token(mha::Tensor1{0.0f, NAN}, {}, rng),
                         "sample_token: logit 1 is NaN", std::invalid_argument);
    const float inf = std::numeric_limits<float>::infinity();
    CHECK_THROWS_AS(mha::sample_token(mha::Tensor1{-inf, -inf}, {}, rng), std::invalid_argument);
    CHECK_THROWS_AS(mha::sample_token(mha::Tensor1{0.0f, 1.0f}, {1.0f, 0}, rng),
                    std::invalid_argument);
}
