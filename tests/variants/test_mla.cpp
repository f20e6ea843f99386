// Tests for mha/variants/mla.hpp: multi-head latent attention. The explicit
// form equals the paper's equations written as loops; the absorbed form
// (W^UK folded into the query, W^UV into the output) equals the explicit
// one; decoding from the latent cache equals the causal forward at every
// step; RoPE on the up-projected key breaks the absorption (why the
// decoupled key exists); the cache per token, from the formula and from
// the bytes the containers hold, for DeepSeek-V2's sizes.
//
// B = batch, T = positions, E = embed_dim, H = heads, D = head_dim,
// d_c = latent, d_R = RoPE key, d_cq = query latent (0: none).
#include <doctest/doctest.h>

#include <cmath>
#include <stdexcept>
#include <vector>

#include <xtensor-blas/xlinalg.hpp>
#include <xtensor/xview.hpp>

#include "mha/heads.hpp"
#include "mha/scores.hpp"
#include "mha/variants/mla.hpp"

namespace {

mha::MlaConfig config(std::size_t E, std::size_t H, std::size_t D, std::size_t d_c,
                      std::size_t d_R, std::size_t d_cq,
                      mha::RopeStyle style = mha::RopeStyle::interleaved) {
    mha::MlaConfig c;
    c.embed_dim = E, c.num_heads = H, c.head_dim = D;
    c.latent_dim = d_c, c.rope_dim = d_R, c.query_latent_dim = d_cq;
    c.rope.style = style;
    return c;
}

// Sizes with and without query compression, D != E / H, d_c above and below D.
const mha::MlaConfig kConfigs[] = {
    config(8, 2, 4, 4, 2, 0),
    config(32, 4, 8, 16, 4, 12, mha::RopeStyle::half),
    config(48, 3, 20, 8, 6, 0),
    config(64, 8, 16, 32, 8, 24),
};

mha::Tensor3 positions(const mha::Tensor3& x, std::size_t from, std::size_t to) {
    return xt::view(x, xt::all(), xt::range(from, to));
}

// Rows [row0, row0 + n) of W [out, in] times v [in], in double.
std::vector<double> matvec(const mha::Tensor2& w, std::size_t row0, std::size_t n,
                           const std::vector<double>& v) {
    std::vector<double> y(n, 0.0);
    for (std::size_t r = 0; r < n; ++r)
        for (std::size_t i = 0; i < v.size(); ++i) y[r] += double(w(row0 + r, i)) * v[i];
    return y;
}

std::vector<double> rotated(const std::vector<double>& v, std::size_t pos, const mha::Rope& r) {
    std::vector<float> f(v.begin(), v.end());
    mha::rope_rotate(f.data(), f.size(), pos, r);
    return {f.begin(), f.end()};
}

double dot(const std::vector<double>& a, const std::vector<double>& b) {
    double s = 0;
    for (std::size_t i = 0; i < a.size(); ++i) s += a[i] * b[i];
    return s;
}

// The oracle: DeepSeek-V2's equations (9)-(19), one token and one head at a
// time in plain loops, with every head's key and value written out.
mha::Tensor3 mla_loops(const mha::MultiHeadLatentAttention& m, const mha::Tensor3& x,
                       bool causal) {
    const mha::MlaConfig& c = m.config;
    const std::size_t B = x.shape(0), T = x.shape(1), E = c.embed_dim, H = c.num_heads;
    const std::size_t D = c.head_dim, d_c = c.latent_dim, d_R = c.rope_dim;
    mha::Tensor3 out({B, T, E});
    for (std::size_t b = 0; b < B; ++b) {
        std::vector<std::vector<double>> q_c(T * H), q_r(T * H), k_c(T * H), v(T * H), k_r(T);
        for (std::size_t t = 0; t < T; ++t) {
            std::vector<double> h_t(E);
            for (std::size_t e = 0; e < E; ++e) h_t[e] = x(b, t, e);
            const auto c_kv = matvec(m.w_dkv, 0, d_c, h_t);                // (9)
            k_r[t] = rotated(matvec(m.w_kr, 0, d_R, h_t), t, c.rope);      // (14)
            const auto c_q = c.query_latent_dim
                                 ? matvec(m.w_dq, 0, c.query_latent_dim, h_t)  // (12)
                                 : h_t;
            for (std::size_t h = 0; h < H; ++h) {
                k_c[t * H + h] = matvec(m.w_uk, h * D, D, c_kv);             // (10)
                v[t * H + h] = matvec(m.w_uv, h * D, D, c_kv);               // (11)
                q_c[t * H + h] = matvec(m.w_uq, h * D, D, c_q);              // (13)
                q_r[t * H + h] = rotated(matvec(m.w_qr, h * d_R, d_R, c_q), t, c.rope);
            }
        }
        for (std::size_t i = 0; i < T; ++i) {
            std::vector<double> o(H * D, 0.0);  // the heads side by side
            for (std::size_t h = 0; h < H; ++h) {
                const std::size_t last = causal ? i : T - 1;
                std::vector<double> s(last + 1);
                double top = -1e300, sum = 0;
                for (std::size_t j = 0; j <= last; ++j) {  // (17): [q^C; q^R] . [k^C; k^R]
                    s[j] = (dot(q_c[i * H + h], k_c[j * H + h]) + dot(q_r[i * H + h], k_r[j])) /
                           std::sqrt(double(D + d_R));
                    top = std::max(top, s[j]);
                }
                for (double& sj : s) sum += (sj = std::exp(sj - top));
                for (std::size_t j = 0; j <= last; ++j)
                    for (std::size_t d = 0; d < D; ++d) o[h * D + d] += s[j] / sum * v[j * H + h][d];
            }
            const auto u = matvec(m.w_o, 0, E, o);  // (19)
            for (std::size_t e = 0; e < E; ++e) out(b, i, e) = float(u[e]);
        }
    }
    return out;
}

// q [B, H, T, D] with head h multiplied by W^UK_h^T: [B, H, T, d_c], the
// query side of the absorption done on a query that is already made.
mha::Tensor4 fold_uk(const mha::MultiHeadLatentAttention& m, const mha::Tensor4& q) {
    const std::size_t B = q.shape(0), H = q.shape(1), T = q.shape(2), D = q.shape(3);
    mha::Tensor4 out({B, H, T, m.config.latent_dim});
    for (std::size_t b = 0; b < B; ++b)
        for (std::size_t h = 0; h < H; ++h) {
            const mha::Tensor2 qh = xt::view(q, b, h);  // [T, D]
            const mha::Tensor2 uk = xt::view(m.w_uk, xt::range(h * D, h * D + D), xt::all());
            xt::view(out, b, h) = xt::linalg::dot(qh, uk);  // [T, D] x [D, d_c]
        }
    return out;
}

}  // namespace

TEST_CASE("MLA: the explicit form equals the paper's equations written as loops") {
    std::uint64_t seed = 3600;
    for (const mha::MlaConfig& c : kConfigs) {
        CAPTURE(c.embed_dim); CAPTURE(c.query_latent_dim);
        const mha::MultiHeadLatentAttention m = mha::make_mla(c, ++seed);
        mha::Rng rng(seed);
        const mha::Tensor3 x = mha::randn(2, 7, c.embed_dim, rng);  // [B, T, E]
        const mha::Mask causal = mha::causal_mask(7, 7);
        CHECK(mha::max_abs_diff(mha::mla_forward(m, x, &causal), mla_loops(m, x, true)) < 1e-5);
        CHECK(mha::max_abs_diff(mha::mla_forward(m, x), mla_loops(m, x, false)) < 1e-5);
        // the mask matters: a causal output differs from the full one
        CHECK(mha::max_abs_diff(mha::mla_forward(m, x, &causal), mha::mla_forward(m, x)) > 1e-3);
    }
}

TEST_CASE("MLA: the absorbed form equals the explicit one within 1e-5") {
    std::uint64_t seed = 3610;
    for (const mha::MlaConfig& c : kConfigs) {
        CAPTURE(c.embed_dim); CAPTURE(c.query_latent_dim);
        const mha::MultiHeadLatentAttention m = mha::make_mla(c, ++seed);
        const mha::MlaAbsorbed a = mha::mla_absorb(m);
        const std::size_t H = c.num_heads, d_c = c.latent_dim;
        const std::size_t in_q = c.query_latent_dim ? c.query_latent_dim : c.embed_dim;
        CHECK(mha::shape_of(a.w_q_lat) == mha::shape_str(std::vector<std::size_t>{H * d_c, in_q}));
        CHECK(mha::shape_of(a.w_o_lat) ==
              mha::shape_str(std::vector<std::size_t>{c.embed_dim, H * d_c}));
        mha::Rng rng(seed);
        for (std::size_t T : {1, 6, 33}) {
            CAPTURE(T);
            const mha::Tensor3 x = mha::randn(3, T, c.embed_dim, rng);  // [B, T, E]
            const mha::Mask causal = mha::causal_mask(T, T);
            const mha::Tensor3 y = mha::mla_forward(m, x, &causal);  // [B, T, E]
            CHECK(mha::max_abs_diff(mha::mla_forward(m, a, x, &causal), y) < 1e-5);
            CHECK(mha::max_abs_diff(mha::mla_forward(m, a, x), mha::mla_forward(m, x)) < 1e-5);
        }
    }
}

TEST_CASE("MLA: decoding from the latent cache equals the causal forward at every step") {
    std::uint64_t seed = 3620;
    for (const mha::MlaConfig& c : kConfigs) {
        CAPTURE(c.embed_dim); CAPTURE(c.query_latent_dim);
        const mha::MultiHeadLatentAttention m = mha::make_mla(c, ++seed);
        const mha::MlaAbsorbed a = mha::mla_absorb(m);
        mha::Rng rng(seed);
        const std::size_t B = 2, prompt = 4, T = 11;
        const mha::Tensor3 x = mha::randn(B, T, c.embed_dim, rng);  // [B, T, E]
        const mha::Mask causal = mha::causal_mask(T, T);
        const mha::Tensor3 want = mha::mla_forward(m, x, &causal);  // [B, T, E]
        for (int absorbed = 0; absorbed < 2; ++absorbed) {
            CAPTURE(absorbed);
            mha::MlaCache cache = mha::make_mla_cache(c, B, T);
            auto extend = [&](const mha::Tensor3& part) {
                return absorbed ? mha::mla_extend(m, a, part, cache)
                                : mha::mla_extend(m, part, cache);
            };
            const mha::Tensor3 first = extend(positions(x, 0, prompt));
            CHECK(mha::max_abs_diff(first, positions(want, 0, prompt)) < 1e-5);
            for (std::size_t t = prompt; t < T; ++t) {
                CAPTURE(t);
                const mha::Tensor3 y = extend(positions(x, t, t + 1));  // [B, 1, E]
                CHECK(cache.length == t + 1);
                CHECK(mha::max_abs_diff(y, positions(want, t, t + 1)) < 1e-5);
            }
            // what the cache holds: the latent and k^R, turned, of every position
            const mha::MlaLatent whole = mha::mla_latent(m, x);
            CHECK(mha::max_abs_diff(cache.c_kv, whole.c_kv) < 1e-6);
            CHECK(mha::max_abs_diff(cache.k_r, whole.k_r) < 1e-6);
            CHECK(cache.allocated_bytes() == B * T * (c.latent_dim + c.rope_dim) * sizeof(float));
            CHECK_THROWS_AS(extend(positions(x, 0, 1)), std::invalid_argument);  // full
        }
    }
}

TEST_CASE("MLA: RoPE on the up-projected key breaks the absorption") {
    // Suppose RoPE turned k^C = W^UK_h c_j itself (no decoupled key). The
    // score is then R_i q . R_j W^UK_h c_j = q . R_(j-i) W^UK_h c_j: the
    // matrix between q and the cached latent depends on the key's position,
    // so no fixed W^UK_h^T can be folded into the query. Tried anyway, it
    // is right only for the key at position 0 (R_0 = I).
    const mha::MlaConfig c = config(32, 4, 8, 16, 4, 0);
    const mha::MultiHeadLatentAttention m = mha::make_mla(c, 3630);
    mha::Rng rng(3631);
    const std::size_t T = 9, H = c.num_heads;
    const mha::Tensor3 x = mha::randn(2, T, c.embed_dim, rng);               // [B, T, E]
    const mha::Tensor4 q_c = mha::split_heads(mha::linear_no_bias(x, m.w_uq), H);  // [B,H,T,D]
    const mha::Tensor4 latent = mha::mla_latent(m, x).c_kv;                  // [B,1,T,d_c]
    const mha::Tensor3 c_kv = xt::view(latent, xt::all(), 0);                // [B, T, d_c]
    const mha::Tensor4 k_c = mha::split_heads(mha::linear_no_bias(c_kv, m.w_uk), H);  // [B,H,T,D]
    // scaled_scores divides by sqrt(d_c) against the latent: bring it to sqrt(D)
    const double to_d = std::sqrt(double(c.latent_dim) / double(c.head_dim));

    // Without RoPE the fold is exact: q . W^UK c = (W^UK^T q) . c
    const mha::Tensor4 plain = mha::scaled_scores(q_c, k_c);  // [B, H, T, T]
    const mha::Tensor4 plain_folded = mha::scaled_scores(fold_uk(m, q_c), latent) * to_d;
    CHECK(mha::max_abs_diff(plain, plain_folded) < 1e-5);

    // RoPE on q^C and on the up-projected key: the explicit form
    const mha::Tensor4 q_rot = mha::apply_rope(q_c, c.rope);                 // [B, H, T, D]
    const mha::Tensor4 rot = mha::scaled_scores(q_rot, mha::apply_rope(k_c, c.rope));
    // attempt 1: fold W^UK into the turned query, read the latent as cached
    const mha::Tensor4 folded = mha::scaled_scores(fold_uk(m, q_rot), latent) * to_d;
    // attempt 2: turn the latent itself, in its own d_c coordinates
    const mha::Tensor4 turned_latent = mha::scaled_scores(mha::apply_rope(fold_uk(m, q_c), c.rope),
                                                          mha::apply_rope(latent, c.rope)) * to_d;
    double max_score = 0;
    for (float s : rot) max_score = std::max(max_score, double(std::fabs(s)));
    CAPTURE(max_score);
    auto keys = [](const mha::Tensor4& s, std::size_t from, std::size_t to) {
        return mha::Tensor4(xt::view(s, xt::all(), xt::all(), xt::all(), xt::range(from, to)));
    };
    // Key 0 is not turned (R_0 = I): there attempt 1 still holds.
    CHECK(mha::max_abs_diff(keys(rot, 0, 1), keys(folded, 0, 1)) < 1e-5);
    // Everywhere else both attempts miss by more than 10% of the largest score.
    CHECK(mha::max_abs_diff(keys(rot, 1, T), keys(folded, 1, T)) > 0.1 * max_score);
    CHECK(mha::max_abs_diff(rot, turned_latent) > 0.1 * max_score);

    // The decoupled key keeps it exact at every position (the layer's own scores).
    const mha::MlaAbsorbed a = mha::mla_absorb(m);
    const mha::Mask causal = mha::causal_mask(T, T);
    CHECK(mha::max_abs_diff(mha::mla_forward(m, a, x, &causal), mha::mla_forward(m, x, &causal)) <
          1e-5);
}

TEST_CASE("MLA: the cache per token for DeepSeek-V2, from the formula and the allocation") {
    const mha::MlaConfig v2 = mha::deepseek_v2_config();  // n_h 128, d_h 128, d_c 512, d_R 64
    const std::size_t n_h = v2.num_heads, d_h = v2.head_dim, n_kv = 8;
    CHECK(n_h == 128); CHECK(d_h == 128); CHECK(v2.latent_dim == 512); CHECK(v2.rope_dim == 64);
    for (auto [B, cap] : {std::pair<std::size_t, std::size_t>{1, 2}, {2, 3}, {3, 1}}) {
        CAPTURE(B); CAPTURE(cap);
        const std::vector<mha::CacheRow> rows = mha::cache_per_token(v2, n_kv, B, cap);
        REQUIRE(rows.size() == 4);
        const std::size_t want[4] = {2 * n_h * d_h, 2 * n_kv * d_h, 2 * d_h,
                                     v2.latent_dim + v2.rope_dim};
        for (std::size_t r = 0; r < 4; ++r) {
            CAPTURE(rows[r].name);
            CHECK(rows[r].by_formula == want[r]);
            CHECK(rows[r].by_allocation == rows[r].by_formula);  // measured = formula
        }
    }
    // The paper's comparison: MLA's cache is that of GQA with 2.25 groups
    // ((d_c + d_R) = 9/2 d_h), and 128 * 128 * 2 / 576 = 56.9 times MHA's.
    CHECK(double(v2.latent_dim + v2.rope_dim) / (2.0 * d_h) == 2.25);
    CHECK(double(2 * n_h * d_h) / (v2.latent_dim + v2.rope_dim) == doctest::Approx(56.89).epsilon(1e-3));
}

TEST_CASE("MLA: bad sizes and a mis-shaped cache are one clear line") {
    mha::MlaConfig odd = config(8, 2, 4, 4, 3, 0);  // d_R odd: RoPE turns pairs
    CHECK_THROWS_WITH_AS(mha::make_mla(odd), doctest::Contains("odd"), std::invalid_argument);
    mha::MlaConfig zero = config(8, 2, 4, 0, 2, 0);
    CHECK_THROWS_WITH_AS(mha::make_mla(zero), doctest::Contains("d_c"), std::invalid_argument);
    const mha::MultiHeadLatentAttention m = mha::make_mla(kConfigs[0], 1);
    mha::Rng rng(1);
    const mha::Tensor3 x = mha::randn(2, 3, 8, rng);
    mha::MlaCache wrong_b = mha::make_mla_cache(kConfigs[0], 1, 5);
    CHECK_THROWS_WITH_AS(mha::mla_extend(m, x, wrong_b), doctest::Contains("make_mla_cache"),
                         std::invalid_argument);
    const mha::Tensor3 wide = mha::randn(2, 3, 9, rng);  // E = 9 against the layer's 8
    CHECK_THROWS_WITH_AS(mha::mla_forward(m, wide), doctest::Contains("[2, 3, 9]"),
                         std::invalid_argument);
    CHECK_THROWS_AS(mha::cache_per_token(kConfigs[0], 3), std::invalid_argument);  // 3 does not divide H = 2
}
