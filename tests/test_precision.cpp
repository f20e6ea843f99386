// float16 and bfloat16 emulation: every bit pattern's round trip, and rounding to the
// nearest value (ties to even) checked against the neighbours in double.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <cstdint>
#include <limits>
#include <random>

#include "mha/precision.hpp"

namespace {
bool is_nan_half(std::uint16_t h) { return (h & 0x7c00u) == 0x7c00u && (h & 0x3ffu); }
bool is_nan_bf16(std::uint16_t b) { return (b & 0x7f80u) == 0x7f80u && (b & 0x7fu); }

// The nearest of the format's values to x, ties to the even pattern, by looking at
// the pattern conversion chose and its two neighbours in double.
template <class To, class From>
void check_nearest(float x, To to, From from) {
    const std::uint16_t h = to(x);
    const double got = from(h), dx = x;
    for (int step : {-1, 1}) {
        const std::uint16_t n = std::uint16_t(h + step);
        const double other = from(n);
        if (std::isnan(other) || std::signbit(other) != std::signbit(got)) continue;
        const double d_got = std::fabs(got - dx), d_other = std::fabs(other - dx);
        INFO("x = " << x << ", chose " << got << ", neighbour " << other);
        if (!std::isinf(got)) CHECK(d_got <= d_other);
        if (d_got == d_other && !std::isinf(got)) CHECK((h & 1u) == 0u);  // ties to even
    }
}
}  // namespace

TEST_CASE("every float16 pattern survives the round trip, NaN stays NaN") {
    int checked = 0;
    for (std::uint32_t p = 0; p < 0x10000u; ++p) {
        const auto h = std::uint16_t(p);
        const float v = mha::from_half_bits(h);
        if (is_nan_half(h)) {
            CHECK(std::isnan(v));
            CHECK(is_nan_half(mha::half_bits(v)));
            continue;
        }
        REQUIRE(mha::half_bits(v) == h);
        ++checked;
    }
    CHECK(checked == 65536 - 2 * 1023);
}

TEST_CASE("every bfloat16 pattern survives the round trip, NaN stays NaN") {
    for (std::uint32_t p = 0; p < 0x10000u; ++p) {
        const auto b = std::uint16_t(p);
        const float v = mha::from_bf16_bits(b);
        if (is_nan_bf16(b)) {
            CHECK(std::isnan(v));
            CHECK(is_nan_bf16(mha::bf16_bits(v)));
            continue;
        }
        REQUIRE(mha::bf16_bits(v) == b);
    }
}

TEST_CASE("float16's landmarks: 65504 the largest, 65520 rounds to inf, 2^-24 the least") {
    CHECK(mha::from_half_bits(0x7bffu) == 65504.0f);
    CHECK(mha::round_to(65519.0f, mha::Precision::f16) == 65504.0f);
    CHECK(std::isinf(mha::round_to(65520.0f, mha::Precision::f16)));
    CHECK(mha::round_to(-1e9f, mha::Precision::f16) == -std::numeric_limits<float>::infinity());
    CHECK(mha::round_to(-1e4f, mha::Precision::f16) == -10000.0f);
    CHECK(mha::from_half_bits(0x0001u) == std::ldexp(1.0f, -24));
    CHECK(mha::round_to(std::ldexp(1.0f, -26), mha::Precision::f16) == 0.0f);  // below half of 2^-24
    CHECK(double(mha::round_to(1.0f / 3, mha::Precision::f16)) == 0.333251953125);
    CHECK(double(mha::round_to(1.0f / 3, mha::Precision::bf16)) == 0.333984375);
    CHECK(mha::round_to(-1e10f, mha::Precision::bf16) != -std::numeric_limits<float>::infinity());
    CHECK(mha::round_to(1.0f + 1.0f / 2048, mha::Precision::f16) == 1.0f);  // a tie: to even
    CHECK(mha::round_to(1.0f + 3.0f / 2048, mha::Precision::f16) == 1.0f + 2.0f / 1024);
    CHECK(mha::round_to(1.0f + 1.0f / 256, mha::Precision::bf16) == 1.0f);  // a tie: to even
    CHECK(mha::round_to(2.5f, mha::Precision::f32) == 2.5f);
}

TEST_CASE("rounding picks the nearest value, ties to even, over random and tie floats") {
    std::mt19937 gen(26);
    std::uniform_int_distribution<std::uint32_t> any;
    for (int i = 0; i < 200000; ++i) {
        std::uint32_t f = any(gen);
        if (i % 4 == 0) f = (f & ~0x1fffu) | 0x1000u;  // float16 ties in the normal range
        if (i % 4 == 1) f = (f & ~0xffffu) | 0x8000u;  // bfloat16 ties
        float x;
        std::memcpy(&x, &f, sizeof x);
        if (std::isnan(x)) continue;
        check_nearest(x, mha::half_bits, mha::from_half_bits);
        check_nearest(x, mha::bf16_bits, mha::from_bf16_bits);
    }
}

#if defined(__FLT16_MAX__)
TEST_CASE("float16 rounding equals the compiler's _Float16 conversion") {
    std::mt19937 gen(16);
    std::uniform_int_distribution<std::uint32_t> any;
    for (int i = 0; i < 200000; ++i) {
        const std::uint32_t f = any(gen);
        float x;
        std::memcpy(&x, &f, sizeof x);
        if (std::isnan(x)) continue;
        const float want = float(static_cast<_Float16>(x));
        REQUIRE(mha::round_to(x, mha::Precision::f16) == want);
    }
}
#endif
