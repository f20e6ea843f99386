// Lesson 18 (past the articles): the online softmax, and attention in tiles.
//
// Adds: a softmax read a block at a time. Keep the running max m and the
// running sum l of e^(s - m); when a block raises the max, what was summed
// against the old max is rescaled by e^(m_old - m_new). The weighted sum
// of values takes the same rescale, so attention can walk the keys a block
// at a time and never hold the [Tq, Tk] scores: FlashAttention's forward.
// Mirrors: the articles' softmax(Q K^T / sqrt(D)) V, and PyTorch's
// attn(x, x, x, need_weights=False), which need not return the weights.
//
// B = batch, T = time, E = d_model, H = heads, D = E / H, Bq / Bk = block rows.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <vector>

#include <xtensor/xview.hpp>

#include "mha/attention.hpp"
#include "mha/heads.hpp"
#include "mha/online_softmax.hpp"
#include "mha/scores.hpp"
#include "mha/softmax.hpp"
#include "support/lesson.hpp"

int main(int argc, char** argv) {
    lesson::Info info;
    info.name = "18_online_softmax";
    info.summary = "the softmax a block at a time; attention in tiles";
    info.draws = true, info.dump_mb = 68.7;
    return lesson::run(argc, argv, info, [](lesson::Lesson& L) {
        const std::size_t B = L.opt.batch, T = L.opt.time, E = L.opt.d_model, H = L.opt.heads;
        const std::size_t D = E / H;
        using lesson::fixed;
        mha::Rng rng(L.opt.seed);

        L.section("1. One row of 8 scores, 2 at a time");
        const std::size_t n = 8, block = 2;  // keys, keys per block
        mha::Tensor2 v({n, D});              // [8, D]: the values the weights average
        for (float& x : v) x = rng.normal();
        std::vector<float> s(n);  // one query's scores against 8 keys
        for (float& x : s) x = 2 * rng.normal();
        std::printf("  s =");
        for (float x : s) std::printf(" %6.3f", x);
        std::printf("\n");
        mha::RunningSoftmax st;                    // m = -inf, l = 0
        std::vector<double> acc(D, 0.0), out(D);  // sum of e^(s - m) v, and acc / l
        lesson::svg::Grid seen{"e^(s - m) / l so far", {}, {}, "not read yet"};  // per block
        for (std::size_t j0 = 0; j0 < n; j0 += block) {
            const float old = st.max;
            SHOWN(L, mha::take_block(st, &s[j0], block));  // the new m, l
            if (j0 == 0)  // the first block's lines, beside the PyTorch
                L.code("m_new = max(m, s_b.max()); "
                       "l = l * exp(m - m_new) + exp(s_b - m_new).sum()");
            const double rescale = std::exp(old - st.max);  // old terms against the new m
            for (std::size_t d = 0; d < D; ++d) {
                SHOWN(L, acc[d] *= rescale);
                for (std::size_t c = j0; c < j0 + block; ++c)
                    acc[d] += std::exp(s[c] - st.max) * v(c, d);
                out[d] = acc[d] / st.sum;
            }
            if (j0 == 0) L.code("acc = acc * exp(m - m_new) + exp(s_b - m_new) @ v_b");
            seen.value.emplace_back(n), seen.masked.emplace_back(n);
            for (std::size_t j = 0; j < n; ++j) {
                seen.masked.back()[j] = j >= j0 + block;  // not read yet
                seen.value.back()[j] = j < j0 + block ? std::exp(s[j] - st.max) / st.sum : 0;
            }
            std::printf("  keys %zu..%zu: m = %6.3f  l = %6.3f  rescale %5.3f  o[:4] =", j0,
                        j0 + block - 1, st.max, st.sum, rescale);
            for (std::size_t d = 0; d < std::min<std::size_t>(4, D); ++d)
                std::printf(" %6.3f", out[d]);
            std::printf("\n");
        }
        L.figure("one row's weights as each block of 2 keys is read", "online_blocks", {seen},
                 false, "after block", "key");
        std::vector<float> plain = s, online = s;
        mha::softmax_row(plain.data(), n);                // all 8 at once
        mha::online_softmax_row(online.data(), n, block);  // 2 at a time
        double w_diff = 0, o_diff = 0;
        for (std::size_t j = 0; j < n; ++j)
            w_diff = std::max(w_diff, double(std::abs(plain[j] - online[j])));
        for (std::size_t d = 0; d < D; ++d) {
            double o = 0;  // the plain softmax's weights times V
            for (std::size_t j = 0; j < n; ++j) o += plain[j] * v(j, d);
            o_diff = std::max(o_diff, std::abs(o - out[d]));
        }
        L.say("The first rescale is e^(-inf) = 0: nothing came before. After the last block "
              "m is the row's max and l its sum of e^(s-m): the weights e^(s-m) / l are "
              "softmax(s) (max |diff| = " + fixed(w_diff, 7) +
              "), and acc / l is softmax(s) @ v (max |diff| = " + fixed(o_diff, 7) + ").");

        L.section("2. Attention in tiles: Bq queries by Bk keys");
        const std::size_t bq = L.opt.tiny ? 2 : 16, bk = L.opt.tiny ? 2 : 16;
        L.let("Bq", bq);
        L.let("Bk", bk);
        const mha::Tensor3 X = mha::randn(B, T, E, rng);  // [B, T, E]
        const mha::MultiHeadAttention m(E, H, mha::Init::xavier(L.opt.seed));
        SHOWN(L, const mha::Tensor4 q = mha::split_heads(mha::linear(X, m.wq), H));
        const mha::Tensor4 k = mha::split_heads(mha::linear(X, m.wk), H);
        const mha::Tensor4 vv = mha::split_heads(mha::linear(X, m.wv), H);
        L.recap("q, k, v = split(wq(X)), ...", "q", q, "B, H, T, D");
        // With --dump: sequence 0's k and v, and w_o, for lessons/pytorch/
        L.dump("k0", xt::view(k, xt::range(0, 1))), L.dump("fc_out.weight", m.w_o.weight);
        L.dump("v0", xt::view(vv, xt::range(0, 1))), L.dump("fc_out.bias", m.w_o.bias);
        const mha::Mask causal = mha::causal_mask(T, T);
        SHOWN(L, const auto t =
                     mha::tiled_attention(q, k, vv, &causal, mha::kNegInf, bq, bk));
        L.step("weights @ v, one [Bq, Bk] tile of scores at a time", "t.context", t.context,
               "B, H, T, D", "");
        SHOWN(L, const mha::Tensor3& lse = t.lse);  // [B, H, T]
        L.step("log-sum-exp per row, m + log(l)", "t.lse", lse, "B, H, T",
               "torch.logsumexp(scores, dim=-1)  # a FlashAttention-2 backward keeps it");

        L.section("3. The output from the tiles, and the engine's");
        SHOWN(L, const mha::Tensor3 y = mha::linear(mha::merge_heads(t.context), m.w_o));
        L.step("w_o(merge(context))", "y", y, "B, T, E", "");
        const mha::Tensor3 full = m.forward(X, X, X, &causal).output;  // [B, T, E]
        SHOWN(L, const mha::Tensor3 engine = m.forward_no_weights(X, X, X, &causal));
        L.step("the engine, without weights", "engine", engine, "B, T, E",
               "attn(x, x, x, attn_mask=mask, need_weights=False)[0]");
        const double tiled_diff = mha::max_abs_diff(y, full);
        const double engine_diff = mha::max_abs_diff(engine, full);
        L.say("Against forward(), which keeps every weight: these tiles max |diff| = " +
              fixed(tiled_diff, 7) + ", the engine's tiles (64 queries by 256 keys) " +
              fixed(engine_diff, 7) + ".");

        L.section("4. The scores that exist at once");
        const double all = double(B) * H * T * T * 4, tile = double(bq) * bk * 4;
        std::printf("  forward(): weights [B, H, T, T], %zu x %zu x %zu x %zu x 4 bytes = %.0f\n",
                    B, H, T, T, all);
        std::printf("  in tiles: one [Bq, Bk] = %zu x %zu x 4 bytes = %.0f, %.0f times less\n", bq,
                    bk, tile, all / tile);
        const double big = 1.0 * 8 * 16384.0 * 16384 * 4;  // B = 1, H = 8, T = 16384
        std::printf("  at B = 1, H = 8, T = 16384: %.2f GB of weights, against a [64, 256] tile\n"
                    "  of 64 KiB per core in the engine (mha_bench --long measures it)\n",
                    big / 1e9);
        L.say("The work is the same Q K^T and weights @ V, plus one rescale per row and "
              "block; what is saved is memory, and with it the time spent writing and reading "
              "the weights.");

        int rc = L.claim("the online softmax equals the plain one within 1e-6 (max |diff| = " +
                             fixed(w_diff, 7) + ")", w_diff <= 1e-6 && o_diff <= 1e-6);
        rc |= L.claim("the tiled forward equals forward() within 1e-5 (max |diff| = " +
                          fixed(std::max(tiled_diff, engine_diff), 7) + ")",
                      tiled_diff <= 1e-5 && engine_diff <= 1e-5);
        return rc;
    });
}
