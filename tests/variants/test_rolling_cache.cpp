// Tests for mha/variants/rolling_cache.hpp: a cache of S + W slots that
// never grows, equal at every decoded position to the forward under the
// sinks + window mask (and to the oracle), with grouped heads, with and
// without RoPE (keys cached turned by their true positions), for S = 0 and
// W >= T; its bytes against the full cache's.
//
// B = batch, T = positions, H = heads, H_kv = kv heads, D = head_dim,
// E = embed_dim, S = sinks, W = window.
#include <doctest/doctest.h>

#include <algorithm>
#include <optional>
#include <stdexcept>

#include <xtensor/xview.hpp>

#include "mha/heads.hpp"
#include "mha/kv_cache.hpp"
#include "mha/reference.hpp"
#include "mha/variants/rolling_cache.hpp"

namespace {

struct RollingCase {
    std::size_t S, W, T;
};

// S = 0 (the window alone), W = 1 (a query sees itself and the sinks),
// windows that wrap many times, W >= T (never wraps: causal), S >= T.
const RollingCase kRollingCases[] = {{2, 3, 12}, {0, 4, 11}, {1, 1, 7},
                                     {3, 16, 10}, {0, 10, 10}, {4, 2, 3}};

const std::optional<mha::Rope> kRollingRopes[] = {
    std::nullopt, mha::Rope{mha::RopeStyle::interleaved, 10000.0},
    mha::Rope{mha::RopeStyle::half, 500.0}};

std::string rope_name(const std::optional<mha::Rope>& r) {
    if (!r) return "none";
    return r->style == mha::RopeStyle::half ? "half" : "interleaved";
}

}  // namespace

TEST_CASE("rolling cache: every step equals the sinks + window forward" *
          doctest::test_suite("oracle")) {
    std::uint64_t seed = 3800;
    const std::size_t B = 2, E = 16, H = 4;
    for (const RollingCase& c : kRollingCases) {
        for (std::size_t H_kv : mha::divisors(H)) {
            for (const std::optional<mha::Rope>& r : kRollingRopes) {
                CAPTURE(c.S); CAPTURE(c.W); CAPTURE(c.T); CAPTURE(H_kv);
                CAPTURE(rope_name(r));
                mha::Rng rng(++seed);
                const mha::MultiHeadAttention m(E, H, H_kv, mha::Init::xavier(seed));
                const mha::Tensor3 x = mha::randn(B, c.T, E, rng);  // [B, T, E]
                const mha::Mods mods{{}, mha::sinks_window(c.S, c.W), mha::kNegInf, r};
                const mha::Stages want = m.forward_stages(x, x, x, mods);
                const auto oracle = mha::reference_forward(m, x, x, x, mods).output;
                mha::RollingCache cache = mha::make_rolling_cache(m, B, c.S, c.W, r);
                const float* storage = cache.k.data();
                for (std::size_t t = 0; t < c.T; ++t) {
                    CAPTURE(t);
                    const mha::Tensor3 x_t = xt::view(x, xt::all(), xt::range(t, t + 1));
                    const mha::Tensor3 y = mha::decode_rolling(m, x_t, cache);  // [B, 1, E]
                    const auto at = [&](const mha::Tensor3& full) -> mha::Tensor3 {
                        return xt::view(full, xt::all(), xt::range(t, t + 1));
                    };
                    CHECK(mha::max_abs_diff(y, at(want.output)) < 2e-5);
                    CHECK(mha::max_abs_diff(y, at(oracle)) < 2e-5);
                    // never grows, never moves
                    CHECK(cache.capacity() == c.S + c.W);
                    CHECK(cache.k.data() == storage);
                    CHECK(cache.length() == std::min(t + 1, c.S + c.W));
                    // each filled slot holds the forward's (turned) key and value
                    // of the position it says
                    for (std::size_t s = 0; s < cache.length(); ++s) {
                        const std::size_t p = cache.position[s];
                        CHECK(p <= t);
                        CHECK((p < c.S || p + c.W > t));  // visible from t
                        const auto slot = xt::view(cache.k, xt::all(), xt::all(), s);
                        const auto key = xt::view(want.k, xt::all(), xt::all(), p);
                        CHECK(xt::amax(xt::abs(slot - key))() < 1e-5);
                        const auto vs = xt::view(cache.v, xt::all(), xt::all(), s);
                        const auto vp = xt::view(want.v, xt::all(), xt::all(), p);
                        CHECK(xt::amax(xt::abs(vs - vp))() < 1e-5);
                    }
                }
            }
        }
    }
}

TEST_CASE("rolling cache: the window matters, and positions not slots turn the keys") {
    // Past S + W positions the rolling cache is not the causal forward (the
    // test above can fail); and a cache of W >= T is (the window never wraps).
    mha::Rng rng(3810);
    const std::size_t B = 1, E = 16, H = 2, T = 12;
    const mha::MultiHeadAttention m(E, H, mha::Init::xavier(3810));
    const mha::Tensor3 x = mha::randn(B, T, E, rng);
    const mha::Rope r{mha::RopeStyle::interleaved, 10000.0};
    const mha::Tensor3 causal =
        m.forward_stages(x, x, x, mha::Mods{{}, mha::causal_mod(), mha::kNegInf, r}).output;
    mha::RollingCache small = mha::make_rolling_cache(m, B, 1, 3, r);
    const mha::Tensor3 y = mha::decode_rolling(m, x, small);  // all T positions in one call
    const auto tail = [](const mha::Tensor3& t) -> mha::Tensor3 {
        return xt::view(t, xt::all(), xt::range(4, 12));
    };
    CHECK(mha::max_abs_diff(tail(y), tail(causal)) > 1e-3);
    mha::RollingCache wide = mha::make_rolling_cache(m, B, 0, T, r);
    CHECK(mha::max_abs_diff(mha::decode_rolling(m, x, wide), causal) < 2e-5);
    // Slot 1 holds position 10 after 12 positions: its key turned by 10,
    // not by 1 (its slot), which would give other scores.
    CHECK(small.position[1] == 10);
    const mha::Tensor4 k = mha::split_heads(mha::linear(x, m.wk), H);  // [B, H, T, D]
    const mha::Tensor4 k10 = xt::view(k, xt::all(), xt::all(), xt::range(10, 11));
    const mha::Tensor4 slot1 = xt::view(small.k, xt::all(), xt::all(), xt::range(1, 2));
    CHECK(mha::max_abs_diff(slot1, mha::apply_rope(k10, r, 10)) < 1e-5);
    CHECK(mha::max_abs_diff(slot1, mha::apply_rope(k10, r, 1)) > 1e-2);
}

TEST_CASE("rolling cache: T positions in one call equal T calls of one") {
    mha::Rng rng(3820);
    const std::size_t B = 2, E = 12, H = 3, T = 9;
    const mha::MultiHeadAttention m(E, H, 1, mha::Init::xavier(3820));
    const mha::Tensor3 x = mha::randn(B, T, E, rng);
    mha::RollingCache a = mha::make_rolling_cache(m, B, 2, 3);
    mha::RollingCache b = mha::make_rolling_cache(m, B, 2, 3);
    const mha::Tensor3 first = xt::view(x, xt::all(), xt::range(0, 5));  // a prompt of 5
    const mha::Tensor3 rest = xt::view(x, xt::all(), xt::range(5, T));
    mha::Tensor3 chunked = mha::Tensor3::from_shape({B, T, E});
    xt::view(chunked, xt::all(), xt::range(0, 5)) = mha::decode_rolling(m, first, a);
    xt::view(chunked, xt::all(), xt::range(5, T)) = mha::decode_rolling(m, rest, a);
    for (std::size_t t = 0; t < T; ++t) {
        const mha::Tensor3 x_t = xt::view(x, xt::all(), xt::range(t, t + 1));
        const mha::Tensor3 y = mha::decode_rolling(m, x_t, b);
        CHECK(mha::max_abs_diff(y, xt::view(chunked, xt::all(), xt::range(t, t + 1))) < 1e-6);
    }
    CHECK(a.seen == T);
    CHECK(a.position == b.position);
}

TEST_CASE("rolling cache: its bytes stop at S + W positions, the full cache's grow") {
    mha::Rng rng(3830);
    const std::size_t B = 2, E = 16, H = 4, H_kv = 2, D = 4, S = 2, W = 5, T = 20;
    const mha::MultiHeadAttention m(E, H, H_kv, mha::Init::xavier(3830));
    const mha::Tensor3 x = mha::randn(B, T, E, rng);
    mha::RollingCache rolling = mha::make_rolling_cache(m, B, S, W);
    mha::KVCache full = mha::make_cache(m, B, T);
    for (std::size_t t = 0; t < T; ++t) {
        CAPTURE(t);
        const mha::Tensor3 x_t = xt::view(x, xt::all(), xt::range(t, t + 1));
        mha::decode_rolling(m, x_t, rolling);
        m.decode(x_t, full);
        const std::size_t per_position = 2 * B * H_kv * D * sizeof(float);  // K and V
        CHECK(full.bytes() == (t + 1) * per_position);
        CHECK(rolling.bytes() == std::min(t + 1, S + W) * per_position);
        CHECK(rolling.k.size() + rolling.v.size() == (S + W) * per_position / sizeof(float));
    }
    CHECK(full.bytes() * (S + W) == rolling.bytes() * T);  // T positions against S + W
}

TEST_CASE("rolling cache: bad input is one clear line") {
    const mha::MultiHeadAttention m(8, 2, mha::Init::xavier(3840));
    CHECK_THROWS_WITH_AS(mha::make_rolling_cache(m, 1, 2, 0), doctest::Contains("W"),
                         std::invalid_argument);
    const mha::MultiHeadAttention odd(6, 2, mha::Init::xavier(3840));  // D = 3
    CHECK_THROWS_WITH_AS(mha::make_rolling_cache(odd, 1, 0, 4, mha::Rope{}),
                         doctest::Contains("D must be even"), std::invalid_argument);
    mha::RollingCache c = mha::make_rolling_cache(m, 1, 1, 2);
    mha::Rng rng(3840);
    const mha::Tensor3 two = mha::randn(2, 1, 8, rng);
    CHECK_THROWS_WITH_AS(mha::decode_rolling(m, two, c),
                         doctest::Contains("make_rolling_cache(m, 2, S, W)"),
                         std::invalid_argument);
    const mha::Tensor3 wrong_e = mha::randn(1, 1, 6, rng);
    CHECK_THROWS_AS(mha::decode_rolling(m, wrong_e, c), std::invalid_argument);
    CHECK(c.seen == 0);  // nothing written
}
