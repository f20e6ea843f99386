#include "mha/precision.hpp"

#include <cmath>
#include <cstring>
#include <limits>

namespace mha {

namespace {
std::uint32_t bits_of(float x) {
    std::uint32_t f;
    std::memcpy(&f, &x, sizeof f);
    return f;
}
float float_of(std::uint32_t f) {
    float x;
    std::memcpy(&x, &f, sizeof x);
    return x;
}
}  // namespace

std::uint16_t half_bits(float x) {
    const std::uint32_t f = bits_of(x);
    const auto sign = std::uint16_t((f >> 16) & 0x8000u);
    const std::uint32_t abs = f & 0x7fffffffu;
    if (abs > 0x7f800000u) return sign | 0x7e00u;    // NaN: a quiet one
    if (abs >= 0x477ff000u) return sign | 0x7c00u;   // >= 65520 (and inf): inf
    if (abs >= 0x38800000u) {                        // >= 2^-14: a normal float16
        // Exponent rebiased from 127 to 15, then the 13 bits float16 has no room
        // for rounded away, ties to even; a carry moves into the exponent, as it should.
        const std::uint32_t m = abs - 0x38000000u;
        const std::uint32_t keep = m >> 13, low = m & 0x1fffu;
        const bool up = low > 0x1000u || (low == 0x1000u && (keep & 1u));
        return std::uint16_t(sign | (keep + up));
    }
    // A subnormal (or 0): a whole number of 2^-24. x * 2^24 is exact in float, and
    // nearbyint rounds to nearest even in the default rounding mode.
    return std::uint16_t(sign | std::uint16_t(std::nearbyint(float_of(abs) * 16777216.0f)));
}

float from_half_bits(std::uint16_t h) {
    const unsigned e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
    float v;
    if (e == 0) v = std::ldexp(float(m), -24);                    // subnormal: m 2^-24
    else if (e == 31) v = m ? std::numeric_limits<float>::quiet_NaN()
                            : std::numeric_limits<float>::infinity();
    else v = std::ldexp(float(m | 0x400u), int(e) - 25);          // (1 + m / 1024) 2^(e-15)
    return (h & 0x8000u) ? -v : v;
}

std::uint16_t bf16_bits(float x) {
    const std::uint32_t f = bits_of(x);
    if ((f & 0x7fffffffu) > 0x7f800000u) return std::uint16_t((f >> 16) | 0x40u);  // NaN
    const std::uint32_t keep = f >> 16, low = f & 0xffffu;
    const bool up = low > 0x8000u || (low == 0x8000u && (keep & 1u));
    return std::uint16_t(keep + up);  // past the largest: the exponent fills, inf
}

float from_bf16_bits(std::uint16_t b) { return float_of(std::uint32_t(b) << 16); }

float round_to(float x, Precision p) {
    switch (p) {
    case Precision::f16: return from_half_bits(half_bits(x));
    case Precision::bf16: return from_bf16_bits(bf16_bits(x));
    case Precision::f32: break;
    }
    return x;
}

const char* name_of(Precision p) {
    switch (p) {
    case Precision::f16: return "float16";
    case Precision::bf16: return "bfloat16";
    case Precision::f32: break;
    }
    return "float32";
}

}  // namespace mha
