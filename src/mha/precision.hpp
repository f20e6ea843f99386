/// @file precision.hpp
/// @brief float16 and bfloat16, emulated in float: what low precision does to attention.
#pragma once

#include <cstdint>

namespace mha {

/// @defgroup precision Low precision, emulated
/// @brief The two 16-bit formats of mixed-precision training, each a rounding of a
///        float: IEEE binary16 (float16: 1 sign, 5 exponent, 10 mantissa bits; largest
///        65504) and bfloat16 (1, 8, 7: float's range with 8 bits of precision).
///
/// Conversions round to the nearest value of the format, ties to even, as the
/// hardware's conversions and PyTorch's `.half()` / `.bfloat16()` do. A float16
/// conversion of a number whose magnitude reaches 65520 (halfway between 65504 and
/// 2^16) gives +-inf; small numbers become subnormals (down to 2^-24), then 0. NaN stays
/// a (quiet) NaN. Lesson 27 applies them where mixed-precision code does.
/// @{

/// The float16 bit pattern nearest @p x (ties to even).
/// @param x any float
/// @return  its 16 bits: sign, 5 exponent bits (bias 15), 10 mantissa bits
std::uint16_t half_bits(float x);
/// The value of a float16 bit pattern, exactly (every float16 is a float).
/// @param h 16 bits as half_bits() makes them
/// @return  the float it stands for
float from_half_bits(std::uint16_t h);
/// The bfloat16 bit pattern nearest @p x (ties to even): float's top 16 bits, rounded.
/// @param x any float
/// @return  its 16 bits: sign, 8 exponent bits (bias 127), 7 mantissa bits
std::uint16_t bf16_bits(float x);
/// The value of a bfloat16 bit pattern, exactly.
/// @param b 16 bits as bf16_bits() makes them
/// @return  the float it stands for
float from_bf16_bits(std::uint16_t b);

/// A number format: float32 itself, or one of the two 16-bit ones.
enum class Precision { f32, f16, bf16 };

/// @p x rounded to @p p and back to float: what storing it in that format keeps.
/// @param x any float
/// @param p the format; f32 returns @p x unchanged
/// @return  the nearest value of the format
float round_to(float x, Precision p);

/// The format's name as PyTorch spells it: "float32", "float16", "bfloat16".
/// @param p the format
/// @return  its name
const char* name_of(Precision p);

/// @}

}  // namespace mha
