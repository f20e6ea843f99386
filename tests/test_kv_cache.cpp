// Tests for mha/kv_cache.hpp: a prompt prefilled, then positions decoded one
// at a time, must give at every position what the whole prefix gives
// through the causal forward; through the stages and through the engine,
// for every H_kv; and a full cache or a mis-shaped one is one clear line.
#include <doctest/doctest.h>

#include <stdexcept>
#include <vector>

#include <xtensor/xview.hpp>

#include "mha/kv_cache.hpp"
#include "mha/reference.hpp"

namespace {

mha::Tensor3 positions(const mha::Tensor3& x, std::size_t from, std::size_t to) {
    return xt::view(x, xt::all(), xt::range(from, to));
}

}  // namespace

TEST_CASE("cached_causal_mask: new position i sees keys 0 .. L + i") {
    const mha::Mask m = mha::cached_causal_mask(2, 3);
    const mha::Mask want = {{{{1, 1, 1, 1, 0}, {1, 1, 1, 1, 1}}}};
    CHECK(m == want);
    CHECK(mha::cached_causal_mask(4, 0) == mha::causal_mask(4, 4));
}

TEST_CASE("KV cache: prefill then decode equals the causal forward at every position" *
          doctest::test_suite("oracle")) {
    struct Shape {
        std::size_t B, prompt, steps, E, H;
    };
    std::uint64_t seed = 1100;
    for (const Shape& c : {Shape{1, 1, 5, 8, 2}, Shape{3, 4, 6, 16, 4}, Shape{2, 70, 3, 32, 8}}) {
        for (std::size_t H_kv : {c.H, c.H / 2, std::size_t{1}}) {
            CAPTURE(c.B); CAPTURE(c.prompt); CAPTURE(H_kv);
            mha::Rng rng(++seed);
            const mha::MultiHeadAttention m(c.E, c.H, H_kv, mha::Init::xavier(seed));
            const std::size_t T = c.prompt + c.steps;
            const mha::Tensor3 x = mha::randn(c.B, T, c.E, rng);
            const mha::Mask causal = mha::causal_mask(T, T);
            const auto want = mha::reference_forward(m, x, x, x, &causal).output;  // [B, T, E]
            for (int fast = 0; fast < 2; ++fast) {
                CAPTURE(fast);
                mha::KVCache cache = mha::make_cache(m, c.B, T);
                CHECK(mha::shape_of(cache.k) == mha::shape_str(std::vector<std::size_t>{
                                                    c.B, H_kv, T, c.E / c.H}));
                const mha::Tensor3 prompt = positions(x, 0, c.prompt);
                const mha::Tensor3 first = fast ? m.prefill(prompt, cache)
                                                : mha::extend_stages(m, prompt, cache);
                CHECK(cache.length == c.prompt);
                CHECK(mha::max_abs_diff(first, positions(want, 0, c.prompt)) < 2e-5);
                for (std::size_t t = c.prompt; t < T; ++t) {
                    CAPTURE(t);
                    const mha::Tensor3 x_t = positions(x, t, t + 1);  // [B, 1, E]
                    const mha::Tensor3 y = fast ? m.decode(x_t, cache)
                                                : mha::extend_stages(m, x_t, cache);
                    CHECK(cache.length == t + 1);
                    CHECK(mha::max_abs_diff(y, positions(want, t, t + 1)) < 2e-5);
                }
                CHECK(cache.bytes() == 2 * c.B * H_kv * T * (c.E / c.H) * sizeof(float));
            }
        }
    }
}

TEST_CASE("KV cache: a prompt in two parts gives what it gives whole") {
    mha::Rng rng(3);
    const mha::MultiHeadAttention m(16, 4, 2, mha::Init::xavier(3));
    const mha::Tensor3 x = mha::randn(2, 9, 16, rng);
    mha::KVCache whole = mha::make_cache(m, 2, 9), parts = mha::make_cache(m, 2, 9);
    const mha::Tensor3 a = m.prefill(x, whole);
    const mha::Tensor3 b1 = m.prefill(positions(x, 0, 4), parts);
    const mha::Tensor3 b2 = m.prefill(positions(x, 4, 9), parts);
    CHECK(mha::max_abs_diff(positions(a, 0, 4), b1) < 1e-6);
    CHECK(mha::max_abs_diff(positions(a, 4, 9), b2) < 1e-6);
    CHECK(mha::max_abs_diff(whole.k, parts.k) < 1e-6);
}

TEST_CASE("KV cache: full, mis-shaped, or more than one position to decode: one line") {
    mha::Rng rng(4);
    const mha::MultiHeadAttention m(8, 2, mha::Init::xavier(4));
    mha::KVCache cache = mha::make_cache(m, 1, 3);
    (void)m.prefill(mha::randn(1, 3, 8, rng), cache);
    CHECK_THROWS_WITH_AS(m.decode(mha::randn(1, 1, 8, rng), cache),
                         "KV cache full: 3 positions cached, 1 more do not fit its capacity 3",
                         std::invalid_argument);
    CHECK_THROWS_WITH_AS(mha::extend_stages(m, mha::randn(1, 1, 8, rng), cache),
                         doctest::Contains("KV cache full"), std::invalid_argument);
    mha::KVCache two = mha::make_cache(m, 2, 8);
    CHECK_THROWS_WITH_AS(m.decode(mha::randn(1, 1, 8, rng), two),
                         doctest::Contains("do not fit x [1, 1, 8]"), std::invalid_argument);
    CHECK_THROWS_WITH_AS(m.decode(mha::randn(2, 2, 8, rng), two),
                         doctest::Contains("one position per sequence, [B, 1, E]"),
                         std::invalid_argument);
    CHECK_THROWS_WITH_AS(m.decode(mha::randn(2, 1, 6, rng), two),
                         doctest::Contains("must all end in E = 8"), std::invalid_argument);
    CHECK_THROWS_AS(mha::make_cache(m, 0, 4), std::invalid_argument);
    const mha::MultiHeadAttention gqa(8, 2, 1, mha::Init::xavier(4));
    CHECK_THROWS_WITH_AS(gqa.decode(mha::randn(2, 1, 8, rng), two),  // H_kv 1, the cache's 2
                         doctest::Contains("make it with make_cache"), std::invalid_argument);
}
