// Lesson 27 (past the articles): half precision, float16 and bfloat16.
//
// Adds: the two 16-bit formats of mixed-precision training, emulated exactly
// (mha::round_to(): round to nearest, ties to even); the articles' fill values in
// float16; the 1/sqrt(D) scale and the max subtraction as what keeps scores and exp()
// in range, with the size where each is needed found by running. Lesson 28 goes on
// to where a kernel may round. Mirrors: the four-linear-layers article's
// masked_fill(-1e10) and the handwritten-course article's -inf (lesson 12), in half.
// B = batch, T = time, E = d_model, H = heads, D = head_dim = E / H.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <string>
#include <vector>

#include "mha/init.hpp"
#include "mha/precision.hpp"
#include "support/lesson.hpp"

using mha::Precision, mha::round_to;

int main(int argc, char** argv) {
    lesson::Info info;
    info.name = "27_half_precision";
    info.summary = "float16 and bfloat16: the formats, the fill, overflow";
    info.fixed_sizes = true, info.sizes_from = "the formats";  // not by B, T, E, H
    return lesson::run(argc, argv, info, [](lesson::Lesson& L) {
        using lesson::fixed;
        const Precision f16 = Precision::f16, bf16 = Precision::bf16;
        L.section("1. Two 16-bit formats, each a rounding of a float");
        std::printf("%-15s %-15s %s\n", "x", "float16", "bfloat16");
        for (float x : {1.0f / 3, 1.001f, 65504.0f, 65519.0f, 65520.0f, -1e9f, 3e-8f}) {
            SHOWN(L, const float h = round_to(x, f16), b = round_to(x, bf16));
            std::printf("%-15.9g %-15.11g %.11g\n", x, h, b);
        }
        L.code("torch.tensor(x).half(), torch.tensor(x).bfloat16()");
        L.say("float16 keeps 11 bits of precision (1.001 -> 1.0009765625) but nothing "
              "past 65504: from 65520 on it is inf. bfloat16 keeps float's range with 8 bits "
              "(1/3 -> 0.333984375). Both round to the nearest value, ties to even, as "
              ".half() and .bfloat16() do; tests check every one of the 65536 patterns.");

        L.section("2. The fill in float16, and a row with every key masked");
        std::printf("%-8s %-14s %s\n", "fill", "in float16", "a row of 4 keys, all masked");
        const float inf = std::numeric_limits<float>::infinity();
        for (float fill : {-inf, -1e4f, -1e9f, -1e10f}) {
            SHOWN(L, const float h = round_to(fill, f16));
            const float w = std::exp(h - h) / (4 * std::exp(h - h));  // e^(s-max) / sum
            std::printf("%-8.3g %-14.6g each weight %s\n", fill, h,
                        std::isnan(w) ? "NaN" : fixed(w, 2).c_str());
        }
        L.code("torch.tensor(fill).half()  # a cast: masked_fill(mask == 0, fill) raises");
        L.say("PyTorch 1.13's masked_fill checks that the fill fits the tensor's type, "
              "so on a float16 score -1e9 and -1e10 raise (anything from 65520 on does); "
              "cast instead (.half()), they round to -inf, the handwritten-course "
              "article's fill. A row with every key masked is then -inf - (-inf) = NaN, "
              "as in float32 (lesson 12); -1e4 fits and gives a uniform row.");

        L.section("3. What keeps scores and exp() in range");
        mha::Rng rng(L.opt.seed);
        std::printf("%-6s %-10s %-10s %s\n", "D", "max q.k", "scaled", "exp() in float16");
        std::size_t first_raw = 0, first_scaled = 0;
        float low = INFINITY, high = 0;  // of the scaled maxima
        for (std::size_t d = 1; d <= 1024; d *= 2) {
            float top = 0;  // over 64 queries x 64 keys of N(0, 1) numbers
            std::vector<float> a(64 * d), c(64 * d);
            for (float& x : a) x = rng.normal();
            for (float& x : c) x = rng.normal();
            for (std::size_t i = 0; i < 64; ++i)
                for (std::size_t j = 0; j < 64; ++j) {
                    float dot = 0;
                    for (std::size_t e = 0; e < d; ++e)
                        dot += a[i * d + e] * c[j * d + e];
                    top = std::max(top, dot);
                }
            const float scaled = top / std::sqrt(float(d));
            low = std::min(low, scaled), high = std::max(high, scaled);
            const bool raw_inf = std::isinf(round_to(std::exp(top), f16));
            const bool scaled_inf = std::isinf(round_to(std::exp(scaled), f16));
            if (raw_inf && !first_raw) first_raw = d;
            if (scaled_inf && !first_scaled) first_scaled = d;
            std::printf("%-6zu %-10.2f %-10.2f unscaled: %-4s scaled: %s\n", d, top,
                        scaled, raw_inf ? "inf" : "ok", scaled_inf ? "inf" : "ok");
        }
        L.say("exp(s) is inf in float16 once s > ln 65504 = " +
              fixed(std::log(65504.0), 2) +
              ". Unscaled, the largest of 4096 scores passes it from D = " +
              std::to_string(first_raw) + " on; scaled by 1/sqrt(D) it stays between " +
              fixed(low, 2) + " and " + fixed(high, 2) +
              (first_scaled ? "" : ", at every D") +
              ". Subtracting the "
              "row's max first makes every exp() at most 1: with it, no D overflows.");

        int rc = L.claim("float16's exp() overflows unscaled from some D, never scaled",
                         first_raw > 0 && first_scaled == 0);
        const bool fills = std::isinf(round_to(-1e9f, f16)) && round_to(-1e4f, f16) == -1e4f;
        return rc | L.claim("-1e9 and -1e10 become -inf in float16, -1e4 stays", fills);
    });
}
