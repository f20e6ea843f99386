// Lesson 30 (past the articles): rotary positions, RoPE.
//
// Adds: a stage between the projections and the scores: pair p of a head turns by t *
// theta^(-2p/D) at position t, so q_i . k_j depends on i - j only; run, and two conventions.
// Mirrors: Llama's apply_rotary_emb (pairs 2p, 2p+1, as llama2.c); Hugging Face's
// q * cos + rotate_half(q) * sin (pairs p, p + D/2).
//
// B = batch, T = time, E = d_model, H = heads, D = E / H, p = pair 0 .. D/2 - 1.
#include <cmath>
#include <cstdio>
#include <vector>

#include <xtensor/xview.hpp>

#include "mha/attention.hpp"
#include "mha/heads.hpp"
#include "mha/scores.hpp"
#include "support/lesson.hpp"

int main(int argc, char** argv) {
    lesson::Info info;
    info.name = "30_rope", info.summary = "rotary positions: pairs turning with position";
    info.draws = true, info.dump_mb = 71.5;
    info.flags_fit = [](const lesson::Options& o) {  // (E % H != 0: the core says so)
        if (o.time < 2) return std::string("--time must be at least 2: at T = 1 nothing turns");
        const std::size_t D = o.d_model / o.heads;  // two pairs, turning at different speeds
        return o.d_model % o.heads || (D % 2 == 0 && D >= 4) ? std::string() : "--d-model / "
               "--heads = D must be even and at least 4, not " + std::to_string(D);
    };
    return lesson::run(argc, argv, info, [](lesson::Lesson& L) {
        const std::size_t B = L.opt.batch, T = L.opt.time, E = L.opt.d_model;
        const std::size_t H = L.opt.heads, D = E / H;
        const double theta = 10000.0;
        using lesson::fixed, lesson::sci, mha::scaled_scores, mha::max_abs_diff;

        L.section("Earlier stages, by the core");
        mha::Rng rng(L.opt.seed);
        const mha::Tensor3 X = mha::randn(B, T, E, rng);  // [B, T, E]
        const mha::MultiHeadAttention m(E, H, mha::Init::xavier(L.opt.seed));
        L.dump("X0", xt::view(X, xt::range(0, 1))), L.dump_layers(m);
        SHOWN(L, const mha::Tensor4 q = mha::split_heads(mha::linear(X, m.wq), H));
        L.recap("q = split(wq(X))", "q", q, "B, H, T, D");
        const mha::Tensor4 k = mha::split_heads(mha::linear(X, m.wk), H);  // [B, H, T, D]

        L.section("1. One pair of coordinates, turning with the position");
        // pair p turns theta^(-2p/D) radians a position: p = 0 one, the last ~1/theta
        SHOWN(L, auto freq = [=](double p) { return std::pow(theta, -2 * p / D); });
        L.code("freqs = 1.0 / theta ** (torch.arange(0, D, 2) / D)  # [D/2]; * pos");
        const double x1 = q(0, 0, 0, 0), x2 = q(0, 0, 0, 1);  // pair 0 of q[0, 0, 0]
        std::puts("  pos  angle p=0       x1'       x2'     norm  angle p=D/2-1");
        double norm_drift = 0;
        for (std::size_t t = 0; t < std::min<std::size_t>(T, 8); ++t) {
            const double a = double(t) * freq(0), slow = double(t) * freq(D / 2 - 1);
            SHOWN(L, const double y1 = x1 * std::cos(a) - x2 * std::sin(a));
            const double y2 = x1 * std::sin(a) + x2 * std::cos(a);
            const double r = std::hypot(y1, y2);  // the length after the turn
            norm_drift = std::max(norm_drift, std::abs(r - std::hypot(x1, x2)));
            std::printf("%5zu %10.3f %9.4f %9.4f %8.4f %14.6f\n", t, a, y1, y2, r, slow);
        }
        L.code("x1 * cos - x2 * sin  # llama2.c: q0 * fcr - q1 * fci");
        L.say("The pair moves on a circle, its length kept: fast for p = 0, barely for "
              "the last pair. D/2 such clocks tell the position, adding nothing to x.");

        L.section("2. RoPE on every head, written out");
        // pair p: (2p, 2p + 1) interleaved (llama2.c), (p, p + D/2) rotate-half; t: offset + t
        auto rope = [&](const mha::Tensor4& x, bool half, std::size_t offset) {
            mha::Tensor4 y = x;  // [B, H, T, D]
            for (std::size_t b = 0; b < x.shape(0); ++b)
                for (std::size_t h = 0; h < x.shape(1); ++h)
                    for (std::size_t t = 0; t < x.shape(2); ++t)
                        for (std::size_t p = 0; p < D / 2; ++p) {
                            const double a = double(offset + t) * freq(p);
                            const std::size_t i = half ? p : 2 * p;
                            const std::size_t j = half ? p + D / 2 : 2 * p + 1;
                            const double u = x(b, h, t, i), v = x(b, h, t, j);
                            y(b, h, t, i) = float(u * std::cos(a) - v * std::sin(a));
                            y(b, h, t, j) = float(u * std::sin(a) + v * std::cos(a));
                        }
            return y;
        };
        SHOWN(L, const mha::Tensor4 q_rot = rope(q, false, 0));
        L.step("q turned, pairs (2p, 2p+1)", "q_rot", q_rot, "B, H, T, D",
               "q = apply_rotary_emb(q, freqs_cis)  # Meta's Llama");
        const mha::Tensor4 k_rot = rope(k, false, 0);  // [B, H, T, D]
        SHOWN(L, const mha::Tensor4 s = scaled_scores(q_rot, k_rot));
        L.step("scores of the turned q and k", "s", s, "B, H, T, T",
               "q @ k.transpose(2, 3) / math.sqrt(D)");
        const mha::Tensor4 by_core = mha::apply_rope(q, {mha::RopeStyle::interleaved});
        const double core = max_abs_diff(q_rot, by_core);  // the core's RoPE, held to it

        L.section("3. The score depends on i - j only");
        // one q and one k at every position: turned, score(i, j) is a function of i - j
        const mha::Tensor4::shape_type T_times{1, 1, T, D};  // q1, k1: [1, 1, T, D]
        const mha::Tensor4 q1 = xt::broadcast(xt::view(q, 0, 0, 0), T_times);
        const mha::Tensor4 k1 = xt::broadcast(xt::view(k, 0, 0, 0), T_times);
        const mha::Tensor4 diag = scaled_scores(rope(q1, false, 0), rope(k1, false, 0));
        L.figure("one q and one k at every position, turned: score(i, j) by i - j",
                 "rope_diagonals", {lesson::grid_of(diag, 0, 0, "scores")}, true);
        auto late = xt::range(1, T), early = xt::range(0, T - 1);  // i and i - 1
        const double spread = max_abs_diff(xt::view(diag, 0, 0, late, late),
                                           xt::view(diag, 0, 0, early, early));
        std::printf("  each diagonal: max |S(i, j) - S(i-1, j-1)| = %s\n", sci(spread).c_str());
        const mha::Tensor4 q0 = xt::view(q, xt::range(0, 1)), k0 = xt::view(k, xt::range(0, 1));
        const mha::Tensor4 s0 = xt::view(s, xt::range(0, 1));  // [1, H, T, T], sequence 0
        std::puts(" shift s  max |S(i+s, j+s) - S(i, j)|    q alone shifted");
        double shifted = 0, moved = 0;
        for (std::size_t shift : {1, 10, 100, 1000, 4096}) {
            const mha::Tensor4 q_s = rope(q0, false, shift), k_s = rope(k0, false, shift);
            SHOWN(L, const mha::Tensor4 s_s = scaled_scores(q_s, k_s));
            const mha::Tensor4 q_only = scaled_scores(q_s, rope(k0, false, 0));
            const double d = max_abs_diff(s_s, s0), o = max_abs_diff(q_only, s0);
            shifted = std::max(shifted, d), moved = std::max(moved, o);
            std::printf("%8zu %28s %18s\n", shift, sci(d).c_str(), sci(o).c_str());
        }
        L.code("rope(q, t + s) @ rope(k, t + s).transpose(2, 3) / math.sqrt(D)");
        L.say("Rotations compose and keep dot products: both turned by s, the scores "
              "stay (to float rounding, even at s = 4096); q alone turned, they move.");

        L.section("4. Two conventions, one permutation apart");
        for (std::size_t p = 0; p < std::min<std::size_t>(D / 2, 3); ++p)  // the first 3
            std::printf("  pair %zu: (%zu, %zu) interleaved, (%zu, %zu) rotate-half\n", p,
                        2 * p, 2 * p + 1, p, p + D / 2);
        const mha::Tensor4 s_half = scaled_scores(rope(q, true, 0), rope(k, true, 0));
        const double apart = max_abs_diff(s_half, s);
        std::vector<std::size_t> order;  // evens, then odds: pair p lands on (p, p + D/2)
        for (std::size_t d = 0; d < D; d += 2) order.push_back(d);  // arange(0, D, 2)
        for (std::size_t d = 1; d < D; d += 2) order.push_back(d);  // arange(1, D, 2)
        auto permute = [&](const mha::Tensor4& x) -> mha::Tensor4 {  // [B, H, T, D]
            return xt::view(x, xt::all(), xt::all(), xt::all(), xt::keep(order));
        };
        SHOWN(L, const mha::Tensor4 q_half = rope(permute(q), true, 0));
        L.step("permute q's coordinates, then rotate-half", "q_half", q_half,
               "B, H, T, D", "q[..., torch.cat([arange(0, D, 2), arange(1, D, 2)])]");
        const double moved_q = max_abs_diff(q_half, permute(q_rot));
        const mha::Tensor4 s_perm = scaled_scores(q_half, rope(permute(k), true, 0));
        const double same = max_abs_diff(s_perm, s);
        std::printf("  scores, rotate-half against interleaved: max |diff| %s;\n  with "
                    "the permutation first: %s\n", sci(apart).c_str(), sci(same).c_str());
        L.say("One rotation, reordered: converting Llama, Hugging Face permutes the "
              "rows of wq and wk so that its rotate_half gives Meta's scores.");

        int rc = L.claim("RoPE written out = apply_rope, max |diff| = " + sci(core) +
                             ", norms kept", core <= 1e-6 && norm_drift <= 1e-12);
        rc |= L.claim("S(i + s, j + s) = S(i, j) within 1e-4 up to s = 4096 (" +
                          sci(shifted) + "), the diagonals " + sci(spread),
                      shifted <= 1e-4 && spread <= 1e-4 && moved > 1e-3);
        return rc | L.claim("the conventions differ (" + sci(apart) + "), agree permuted (" +
                                sci(same) + ")", apart > 1e-3 && same < 1e-5 && moved_q < 1e-6);
    });
}
