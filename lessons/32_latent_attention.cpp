// Lesson 32 (past the articles): multi-head latent attention (DeepSeek-V2).
//
// Adds: K and V made from a latent c_kv of d_c numbers per token; with one RoPE key k_r
// of d_R shared by all heads, all a decoder caches (the kv_cache lesson's cache: 2 H D).
// Written out twice: the explicit form rebuilds each head's K and V from the latent; the
// absorbed form folds W_UK into the query and W_UV into the output layer and attends to
// the latent itself. RoPE has a key of its own so that the fold stays possible.
// Mirrors: DeepSeek-V2's attention, kv_a_proj_with_mqa, kv_b_proj, q_a_proj, q_b_proj.
//
// B = batch, T = time, E = d_model, H = heads, D = E / H, d_c = latent, d_R = RoPE key.
#include <algorithm>
#include <cmath>
#include <cstdio>

#include <xtensor/xbroadcast.hpp>
#include <xtensor/xbuilder.hpp>
#include <xtensor/xview.hpp>

#include "mha/attend.hpp"
#include "mha/heads.hpp"
#include "mha/scores.hpp"
#include "mha/softmax.hpp"
#include "mha/variants/mla.hpp"
#include "support/lesson.hpp"

int main(int argc, char** argv) {
    lesson::Info info;
    info.name = "32_latent_attention", info.dump_mb = 204.7, info.draws = true;
    info.summary = "multi-head latent attention: K and V from a small cached latent";
    return lesson::run(argc, argv, info, [](lesson::Lesson& L) {
        const std::size_t B = L.opt.batch, T = L.opt.time, E = L.opt.d_model, H = L.opt.heads;
        using lesson::fixed, lesson::sci, mha::Tensor3, mha::Tensor4;
        using mha::linear_no_bias, mha::split_heads, mha::apply_rope, mha::softmax;
        auto cat = [](const Tensor4& a, const Tensor4& b) {  // torch.cat([a, b], dim=-1)
            return Tensor4(xt::concatenate(xt::xtuple(a, b), 3)); };
        mha::MlaConfig cfg;  // DeepSeek-V2's proportions, roughly: d_R = D / 2
        cfg.embed_dim = E, cfg.num_heads = H, cfg.head_dim = E / H;
        cfg.latent_dim = std::max<std::size_t>(2, E / 4), cfg.query_latent_dim = E / 2 + E % 2;
        cfg.rope_dim = std::max<std::size_t>(2, E / H / 4 * 2);  // even: RoPE turns pairs
        const std::size_t D = cfg.head_dim, d_c = cfg.latent_dim, d_R = cfg.rope_dim;
        L.let("d_c", d_c), L.let("d_R", d_R), L.let("d_cq", cfg.query_latent_dim);
        const mha::MultiHeadLatentAttention m = mha::make_mla(cfg, L.opt.seed);
        mha::Rng rng(L.opt.seed);
        const Tensor3 X = mha::randn(B, T, E, rng);  // [B, T, E]
        const mha::Mask causal = mha::causal_mask(T, T);
        L.dump("X0", xt::view(X, xt::range(0, 1))), L.dump("w_dq", m.w_dq);  // lessons/pytorch/
        L.dump("w_uq", m.w_uq), L.dump("w_qr", m.w_qr), L.dump("w_dkv", m.w_dkv);
        L.dump("w_uk", m.w_uk), L.dump("w_uv", m.w_uv), L.dump("w_kr", m.w_kr), L.dump("w_o", m.w_o);
        L.section("1. The latent: what a decoder caches");
        SHOWN(L, const Tensor3 c = linear_no_bias(X, m.w_dkv));
        L.step("c_kv = W_DKV x, no bias", "c_kv", c, "B, T, d_c",
               "c_kv, k_pe = kv_a_proj_with_mqa(x).split([d_c, d_R], dim=-1)");
        const Tensor4 k_pe = split_heads(linear_no_bias(X, m.w_kr), 1);  // [B, 1, T, d_R]
        SHOWN(L, const Tensor4 k_r = apply_rope(k_pe, cfg.rope));
        L.step("k_r = RoPE(W_KR x): one head, shared", "k_r", k_r, "B, 1, T, d_R",
               "k_pe = rope(k_pe.view(B, T, 1, d_R).transpose(1, 2))");

        L.section("2. Queries: a part without RoPE and a part with");
        SHOWN(L, const Tensor3 c_q = linear_no_bias(X, m.w_dq));
        L.step("c_q = W_DQ x, the query's own latent", "c_q", c_q, "B, T, d_cq",
               "c_q = q_a_proj(x)", lesson::Show::shape_only);
        SHOWN(L, const Tensor4 q_c = split_heads(linear_no_bias(c_q, m.w_uq), H));
        L.step("q_c = W_UQ c_q", "q_c", q_c, "B, H, T, D",
               "q_nope = q_b_proj(c_q).view(B, T, H, D + d_R).transpose(1, 2)[..., :D]");
        const Tensor4 q_pe = split_heads(linear_no_bias(c_q, m.w_qr), H);  // [B, H, T, d_R]
        SHOWN(L, const Tensor4 q_r = apply_rope(q_pe, cfg.rope));
        L.step("q_r = RoPE(W_QR c_q)", "q_r", q_r, "B, H, T, d_R", "q_pe = rope(q[..., D:])");

        L.section("3. Explicit: every head's K and V rebuilt from the latent");
        SHOWN(L, const Tensor4 k_c = split_heads(linear_no_bias(c, m.w_uk), H));
        L.step("k_c = W_UK c_kv", "k_c", k_c, "B, H, T, D",
               "k_nope, v = kv_b_proj(c_kv).view(B, T, H, 2 * D).transpose(1, 2).split(D)",
               lesson::Show::shape_only);  // its numbers are k's first D columns below
        SHOWN(L, const Tensor4 v = split_heads(linear_no_bias(c, m.w_uv), H));
        L.step("v = W_UV c_kv", "v", v, "B, H, T, D", "(kv_b_proj's second half)",
               lesson::Show::shape_only);
        SHOWN(L, const Tensor4 k = cat(k_c, Tensor4(xt::broadcast(k_r, {B, H, T, d_R}))));
        L.step("k = [k_c; k_r], k_r copied to every head", "k", k, "B, H, T, D+d_R",
               "k = torch.cat([k_nope, k_pe.expand(B, H, T, d_R)], dim=-1)");

        L.section("4. Explicit: the articles' attention over keys of D + d_R");
        const Tensor4 q = cat(q_c, q_r);  // [B, H, T, D + d_R]: scores over sqrt(D + d_R)
        SHOWN(L, const Tensor4 w = softmax(mha::apply_mask(mha::scaled_scores(q, k), causal)));
        L.step("weights, scores over sqrt(D + d_R)", "w", w, "B, H, T, T",
               "w = softmax(q @ k.mT / math.sqrt(D + d_R) + causal, dim=-1)");
        SHOWN(L, const Tensor3 y = linear_no_bias(mha::merge_heads(mha::attend(w, v)), m.w_o));
        L.step("y = W_O merge(w v)", "y", y, "B, T, E",
               "y = o_proj((w @ v).transpose(1, 2).reshape(B, T, H * D))");

        L.section("5. Absorbed: W_UK folded into the query, W_UV into the output");
        // q_c . (W_UK,h c) = (W_UK,h^T q_c) . c, and W_O,h (W_UV,h c) = (W_O,h W_UV,h) c
        SHOWN(L, const mha::MlaAbsorbed a = mha::mla_absorb(m));
        L.step("w_q_lat: head h's rows W_UK,h^T W_UQ,h", "w_q_lat", a.w_q_lat, "H*d_c, d_cq",
               "torch.einsum('hdc,hdq->hcq', w_uk.view(H, D, d_c), w_uq.view(H, D, d_cq))");
        L.step("w_o_lat: head h's columns W_O,h W_UV,h", "w_o_lat", a.w_o_lat, "E, H*d_c",
               "torch.einsum('ehd,hdc->ehc', w_o.view(E, H, D), w_uv.view(H, D, d_c))", "");

        L.section("6. Absorbed: attention against the cached latent itself");
        SHOWN(L, const Tensor4 q_lat = split_heads(linear_no_bias(c_q, a.w_q_lat), H));
        L.step("q_lat = w_q_lat c_q: per head, d_c wide", "q_lat", q_lat, "B, H, T, d_c",
               "q_lat = torch.einsum('bhtd,hdc->bhtc', q_nope, w_uk.view(H, D, d_c))",
               lesson::Show::shape_only);
        const Tensor4 c1 = split_heads(c, 1);  // [B, 1, T, d_c]: one key head read by all H
        // one "head" [c_kv; k_r]: scaled_scores divides by its width, sqrt(d_c + d_R)
        const float to_layer = std::sqrt(float(d_c + d_R) / float(D + d_R));
        const Tensor4 q_abs = cat(q_lat, q_r), k_abs = cat(c1, k_r);  // [.., d_c + d_R]
        SHOWN(L, const Tensor4 s = mha::scaled_scores(q_abs, k_abs) * to_layer);
        L.step("scores against the cache itself", "s", s, "B, H, T, T",
               "s = (q_lat @ c_kv.mT + q_pe @ k_pe.mT) / math.sqrt(D + d_R)");
        const Tensor4 w_lat = softmax(mha::apply_mask(s, causal));  // [B, H, T, T]
        const Tensor3 ctx_lat = mha::merge_heads(mha::attend(w_lat, c1));  // [B, T, H*d_c]
        SHOWN(L, const Tensor3 y_lat = linear_no_bias(ctx_lat, a.w_o_lat));
        L.step("y_lat = w_o_lat merge(w c_kv)", "y_lat", y_lat, "B, T, E",
               "y_lat = (w @ c_kv).transpose(1, 2).reshape(B, T, H * d_c) @ w_o_lat.mT");
        const double forms = mha::max_abs_diff(y, y_lat), weights = mha::max_abs_diff(w, w_lat);
        L.say("Absorbed against explicit: weights max |diff| = " + sci(weights) +
              ", outputs max |diff| = " + sci(forms) + ". Per token the absorbed form reads " +
              std::to_string(d_c + d_R) + " cached numbers and rebuilds no K, V; the "
              "explicit one rebuilds 2 H D = " + std::to_string(2 * H * D) + " (K and V).");

        L.section("7. The cache per token, for DeepSeek-V2 (60 layers, bf16)");
        const mha::MlaConfig v2 = mha::deepseek_v2_config();  // n_h 128, d_h 128, d_c 512
        SHOWN(L, const std::vector<mha::CacheRow> rows = mha::cache_per_token(v2, 8));
        L.code("k_cache = torch.zeros(B, n_kv, T, d_h)  # and v_cache; MLA: c_kv, k_pe");
        std::puts("cache      formula    by formula   allocated  60 layers, KB   vs MLA");
        bool measured = true;
        std::vector<lesson::svg::Bar> bars;  // the table's rows, drawn with --svg
        for (const mha::CacheRow& r : rows) {
            measured = measured && r.by_allocation == r.by_formula;
            bars.push_back({r.name, double(r.by_formula), "= " + r.formula});
            std::printf("%-10s %-10s %10zu %11zu %14s %8s\n", r.name.c_str(),
                        r.formula.c_str(), r.by_formula, r.by_allocation,
                        fixed(60.0 * 2 * r.by_formula / 1024, 1).c_str(),
                        fixed(double(r.by_formula) / rows[3].by_formula, 2).c_str());
        }
        L.bars("DeepSeek-V2's cache per token and layer", "mla_cache", "floats", bars);
        L.say("Floats per token and layer, by the formula and from the bytes the core's "
              "caches allocate (1 sequence, 2 positions). MLA caches " +
              fixed(double(rows[0].by_formula) / rows[3].by_formula, 1) + " times less than "
              "MHA: as much as GQA with " + fixed(rows[3].by_formula / (2.0 * v2.head_dim), 2) +
              " kv heads, with every head's keys and values still its own.");

        int rc = L.check("mha::mla_forward",
                         mha::max_abs_diff(y, mha::mla_forward(m, X, &causal)), 1e-5);
        rc |= L.claim("the absorbed form equals the explicit one within 1e-5 (max |diff| = " +
                          sci(forms) + ")", forms < 1e-5);
        rc |= L.claim("each cache's floats per token by allocation equal the formula", measured);
        return rc;
    });
}
