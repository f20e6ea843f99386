// Lesson 28 (past the articles): mixed precision, where a kernel may round.
//
// Adds: lesson 18's online softmax with its running sum l and accumulator o kept in
// bfloat16, as T grows; then one head's attention with a round_to() at each place a
// mixed-precision kernel stores a number, and the error of each choice against the same
// loops in float64, at the articles' T, E and H. Lesson 27 has the formats themselves.
// B = batch, T = time, E = d_model, H = heads, D = head_dim = E / H.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "mha/attention.hpp"
#include "mha/precision.hpp"
#include "support/lesson.hpp"

using mha::Precision, mha::round_to;

namespace {
// Where a mixed-precision kernel rounds: what it reads (q, k, v), the scores it
// stores, the running sum of the softmax, the accumulators of its dot products.
struct Choice { const char* name; Precision inputs, scores, sums, acc; };

float rnd(float x, Precision p) { return round_to(x, p); }
double rnd(double x, Precision) { return x; }  // the float64 reference rounds nothing

// One head's causal attention o_i = sum_j p_ij v_j in F (float or double), rounding
// where @p c says: the plain loops of lesson 06, with a round_to() at each store.
template <class F>
std::vector<F> head(const mha::Tensor4& q, const mha::Tensor4& k, const mha::Tensor4& v,
                    std::size_t b, std::size_t h, const Choice& c) {
    const std::size_t T = q.shape(2), D = q.shape(3);
    const F scale = F(1) / std::sqrt(F(D));
    auto in = [&](const mha::Tensor4& t, std::size_t i, std::size_t d) {
        return rnd(F(t(b, h, i, d)), c.inputs);
    };
    std::vector<F> out(T * D), s(T);
    for (std::size_t i = 0; i < T; ++i) {
        F top = -std::numeric_limits<F>::infinity(), sum = 0;
        for (std::size_t j = 0; j <= i; ++j) {  // causal: keys 0..i
            F dot = 0;
            for (std::size_t d = 0; d < D; ++d)
                dot = rnd(dot + in(q, i, d) * in(k, j, d), c.acc);
            s[j] = rnd(dot * scale, c.scores);
            top = std::max(top, s[j]);
        }
        for (std::size_t j = 0; j <= i; ++j) {
            s[j] = rnd(std::exp(s[j] - top), c.scores);
            sum = rnd(sum + s[j], c.sums);
        }
        for (std::size_t d = 0; d < D; ++d)
            for (std::size_t j = 0; j <= i; ++j)  // o_i = sum_j p_ij v_j, from 0
                out[i * D + d] = rnd(out[i * D + d] + s[j] / sum * in(v, j, d), c.acc);
    }
    return out;
}
}  // namespace

int main(int argc, char** argv) {
    lesson::Info info;
    info.name = "28_mixed_precision";
    info.summary = "16-bit sums and where to round, against float64";
    info.default_batch = 4, info.dump_mb = 0.5;  // the articles' T, E, H; 4 of 128 sequences
    return lesson::run(argc, argv, info, [](lesson::Lesson& L) {
        const std::size_t B = L.opt.batch, T = L.opt.time, E = L.opt.d_model, H = L.opt.heads;
        using lesson::fixed, lesson::sci;
        const Precision f16 = Precision::f16, bf16 = Precision::bf16, f32 = Precision::f32;
        mha::Rng rng(L.opt.seed);

        L.section("1. The online softmax's running sums in 16 bits");
        std::printf("%-7s %-12s %-12s %s\n", "T", "float32", "bfloat16 l", "bfloat16 l and o");
        double worst_long = 0;  // bfloat16 l and o at the longest T
        for (std::size_t n = 64; n <= 16384; n *= 4) {
            double err[3] = {0, 0, 0};  // mean over 8 rows
            for (int row = 0; row < 8; ++row) {
                std::vector<float> s(n), v(n);
                for (std::size_t j = 0; j < n; ++j)
                    s[j] = 2 * rng.normal(), v[j] = rng.normal();
                double top = -1e300, l64 = 0, o64 = 0;
                for (float x : s) top = std::max(top, double(x));
                for (std::size_t j = 0; j < n; ++j)
                    l64 += std::exp(s[j] - top), o64 += std::exp(s[j] - top) * v[j];
                int c = 0;
                for (auto [lp, op] : {std::pair{f32, f32}, {bf16, f32}, {bf16, bf16}}) {
                    float m = -std::numeric_limits<float>::infinity(), l = 0, o = 0;
                    for (std::size_t j = 0; j < n; ++j) {  // lesson 18's update
                        const float m2 = std::max(m, s[j]), r = std::exp(m - m2);
                        const float p = std::exp(s[j] - m2);
                        l = round_to(l * r + p, lp), o = round_to(o * r + p * v[j], op), m = m2;
                    }
                    err[c++] += std::fabs(o / l - o64 / l64) / 8;
                }
            }
            worst_long = err[2];
            std::printf("%-7zu %-12s %-12s %s\n", n, sci(err[0]).c_str(),
                        sci(err[1]).c_str(), sci(err[2]).c_str());
        }
        L.say("|o/l - the float64 answer|, the mean over 8 rows of N(0, 4) scores. Once l is "
              "large, a term below half of bfloat16's step at l (l / 256) rounds away and l stops "
              "growing. Kernels keep m, l and o in float32 for this, whatever they read.");

        L.section("2. Where to round: the error of each choice, against float64");
        const mha::MultiHeadAttention mod(E, H, mha::Init::xavier(L.opt.seed));
        const mha::Tensor3 X = mha::randn(B, T, E, rng);
        SHOWN(L, const mha::Stages st = mod.forward_stages(X, X, X));
        L.recap("q, k, v: the articles' projections", "st.q", st.q, "B, H, T, D");
        const Choice ref{"float32", f32, f32, f32, f32};
        const std::vector<Choice> choices{ref,  // inputs, scores, sums, accumulators
                                          {"inputs float16", f16, f32, f32, f32},
                                          {"inputs bfloat16", bf16, f32, f32, f32},
                                          {"+ scores bfloat16", bf16, bf16, f32, f32},
                                          {"+ sums bfloat16", bf16, bf16, bf16, f32},
                                          {"all bfloat16", bf16, bf16, bf16, bf16},
                                          {"all float16", f16, f16, f16, f16}};
        std::printf("%-20s %-10s %s\n", "rounded", "max err", "mean err");
        std::vector<std::vector<double>> want;  // [B * H][T * D], in float64
        for (std::size_t bh = 0; bh < B * H; ++bh)
            want.push_back(head<double>(st.q, st.k, st.v, bh / H, bh % H, ref));
        std::vector<double> mean(choices.size());
        for (std::size_t c = 0; c < choices.size(); ++c) {
            double top = 0, sum = 0;
            for (std::size_t bh = 0; bh < B * H; ++bh) {
                const auto o = head<float>(st.q, st.k, st.v, bh / H, bh % H, choices[c]);
                for (std::size_t x = 0; x < o.size(); ++x) {
                    const double e = std::fabs(o[x] - want[bh][x]);
                    top = std::max(top, e), sum += e;
                }
            }
            mean[c] = sum / double(B * T * E);
            std::printf("%-20s %-10s %s\n", choices[c].name, sci(top).c_str(),
                        sci(mean[c]).c_str());
        }
        const bool grows = mean[2] < mean[3] && mean[3] < mean[4] && mean[4] < mean[5];
        L.say("Each head's output against the same loops in float64, at the sizes above. "
              "bfloat16 everywhere makes the mean error " + fixed(mean[5] / mean[2], 1) +
              "x that of bfloat16 inputs alone. float16 everywhere is " +
              fixed(mean[5] / mean[6], 1) + "x better than bfloat16 everywhere, since no "
              "value comes near 65504 (lesson 27's unscaled scores would).");
        int rc = L.claim("float16 inputs beat bfloat16's (11 bits against 8)", mean[1] < mean[2]);
        if (T >= 8 && T <= 256 && E / H >= 4 && B * T * E >= 1024)  // else noise, or sums dominate
            rc |= L.claim("each further place rounded in bfloat16 adds to the mean error", grows);
        else std::puts("Not checked at these sizes (8 <= T <= 256, D >= 4, B T E >= 1024): each"
                       "\n  further place rounded in bfloat16 adds to the mean error");
        return rc | L.claim("a bfloat16 running sum is off by over 1e-3 at T = 16384",
                            worst_long > 1e-3);
    });
}
