// Tests for mha/online_softmax.hpp: the softmax read a block at a time
// equals the plain one, whatever the block; attention in tiles equals the
// stages' scores -> mask -> softmax -> weights x V, with masks, Tq != Tk,
// T = 1, blocks that do not divide T, grouped-query heads; and its
// log-sum-exp is the one the scores give; with a score_mod (ALiBi,
// soft-capping) it equals forward_stages() given the same Mods.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <vector>

#include "mha/attend.hpp"
#include "mha/attention.hpp"
#include "mha/heads.hpp"
#include "mha/init.hpp"
#include "mha/online_softmax.hpp"
#include "mha/reference.hpp"
#include "mha/scores.hpp"
#include "mha/softmax.hpp"
#include "oracle_case.hpp"

TEST_CASE("take_block: the running max and sum of [1, 2 | 3, 4], by hand") {
    const float row[4] = {1, 2, 3, 4};
    mha::RunningSoftmax s;
    mha::take_block(s, row, 2);
    CHECK(s.max == 2.0f);
    CHECK(s.sum == doctest::Approx(std::exp(-1.0) + 1.0).epsilon(1e-7));
    mha::take_block(s, row + 2, 2);
    // the old sum against the new max 4: times e^{2 - 4}, then e^{-1} + e^0
    const double want = (std::exp(-1.0) + 1.0) * std::exp(-2.0) + std::exp(-1.0) + 1.0;
    CHECK(s.max == 4.0f);
    CHECK(s.sum == doctest::Approx(want).epsilon(1e-6));
}

TEST_CASE("online_softmax_row equals softmax_row for every block size") {
    mha::Rng rng(18);
    for (std::size_t n : {1, 2, 7, 8, 33, 300}) {
        for (std::size_t block : {std::size_t{1}, std::size_t{2}, std::size_t{3}, std::size_t{8},
                                  n, n + 5}) {
            CAPTURE(n); CAPTURE(block);
            std::vector<float> row(n);
            for (float& x : row) x = 6 * rng.normal() + 100;  // far from 0: needs the max
            if (n > 2) row[1] = mha::kNegInf;                  // one masked key
            std::vector<float> plain = row, online = row;
            mha::softmax_row(plain.data(), n);
            std::vector<mha::RunningSoftmax> steps;
            mha::online_softmax_row(online.data(), n, block, &steps);
            CHECK(steps.size() == (n + block - 1) / block);
            double worst = 0;
            for (std::size_t j = 0; j < n; ++j)
                worst = std::max(worst, std::abs(double(plain[j]) - online[j]));
            CHECK(worst < 1e-6);
            // the last state: the row's max, and the sum of e^{s - max} in double
            const float max = *std::max_element(row.begin(), row.end());
            double sum = 0;
            for (float x : row) sum += std::exp(double(x) - max);
            CHECK(steps.back().max == max);
            CHECK(steps.back().sum == doctest::Approx(sum).epsilon(1e-5));
            for (std::size_t i = 1; i < steps.size(); ++i)
                CHECK(steps[i].max >= steps[i - 1].max);  // the max only grows
        }
    }
}

TEST_CASE("online_softmax_row: a fully masked row is all 0, a NaN makes it NaN, block 0 throws") {
    std::vector<float> masked(5, mha::kNegInf);
    mha::online_softmax_row(masked.data(), 5, 2);
    for (float w : masked) CHECK(w == 0.0f);
    std::vector<float> nan = {1, 2, NAN, 4, 5};
    mha::online_softmax_row(nan.data(), 5, 2);
    for (float w : nan) CHECK(std::isnan(w));
    std::vector<float> row = {1, 2};
    CHECK_THROWS_AS(mha::online_softmax_row(row.data(), 2, 0), std::invalid_argument);
}

TEST_CASE("tiled_attention equals scores -> mask -> softmax -> weights x V, and its lse" *
          doctest::test_suite("oracle")) {
    struct Case {
        std::size_t B, H, H_kv, Tq, Tk, D, bq, bk;
    };
    const std::vector<Case> cases = {
        {1, 1, 1, 1, 1, 4, 1, 1},    {2, 2, 2, 5, 5, 8, 2, 2},    {1, 4, 2, 7, 3, 8, 3, 2},
        {2, 4, 1, 3, 9, 4, 1, 4},    {1, 2, 2, 33, 33, 16, 8, 5}, {1, 8, 4, 70, 130, 8, 64, 256},
        {3, 2, 1, 6, 6, 8, 100, 100}};
    std::uint64_t seed = 1800;
    for (const Case& c : cases) {
        for (int masked = 0; masked < 3; ++masked) {
            CAPTURE(c.H); CAPTURE(c.H_kv); CAPTURE(c.Tq); CAPTURE(c.Tk);
            CAPTURE(c.bq); CAPTURE(c.bk); CAPTURE(masked);
            mha::Rng rng(++seed);
            const mha::Tensor4 q = mha_test::randn4(c.B, c.H, c.Tq, c.D, rng);
            const mha::Tensor4 k = mha_test::randn4(c.B, c.H_kv, c.Tk, c.D, rng);
            const mha::Tensor4 v = mha_test::randn4(c.B, c.H_kv, c.Tk, c.D, rng);
            std::vector<std::size_t> lengths;  // sequence 0 all padding: rows fully masked
            for (std::size_t b = 0; b < c.B; ++b) lengths.push_back(b == 0 ? 0 : 1 + b % c.Tk);
            mha::Mask mask;
            if (masked == 1) mask = mha::causal_mask(c.Tq, c.Tk);
            if (masked == 2) mask = mha::padding_mask(lengths, c.Tk);
            const mha::Mask* mp = masked ? &mask : nullptr;
            mha::Tensor4 scores = mha::scaled_scores(q, k);  // [B, H, Tq, Tk]
            if (mp != nullptr) scores = mha::apply_mask(scores, *mp);
            const mha::Tensor4 want = mha::attend(mha::softmax(scores), v);  // [B, H, Tq, D]

            const mha::TiledAttention got =
                mha::tiled_attention(q, k, v, mp, mha::kNegInf, c.bq, c.bk);
            CHECK(mha::shape_of(got.context) == mha::shape_of(want));
            CHECK(mha::max_abs_diff(got.context, want) < 2e-6);
            // lse = max + log sum e^{s - max} per row, in double; -inf when all masked
            double worst = 0;
            for (std::size_t r = 0; r < got.lse.size(); ++r) {
                const float* s = scores.data() + r * c.Tk;
                const double max = *std::max_element(s, s + c.Tk);
                double sum = 0;
                for (std::size_t j = 0; j < c.Tk; ++j) sum += std::exp(s[j] - max);
                const double lse = max == -INFINITY ? max : max + std::log(sum);
                if (lse == -INFINITY) CHECK(got.lse.data()[r] == mha::kNegInf);
                else worst = std::max(worst, std::abs(lse - got.lse.data()[r]));
            }
            CHECK(worst < 1e-5);
        }
    }
}

TEST_CASE("tiled_attention inside the module equals the plain-loop oracle, GQA and masks" *
          doctest::test_suite("oracle")) {
    std::uint64_t seed = 1850;
    for (std::size_t H_kv : {4, 2, 1}) {
        for (int masked = 0; masked < 2; ++masked) {
            CAPTURE(H_kv); CAPTURE(masked);
            mha::Rng rng(++seed);
            const mha::MultiHeadAttention m(16, 4, H_kv, mha::Init::xavier(seed));
            const mha::Tensor3 q = mha::randn(2, 7, 16, rng), kv = mha::randn(2, 11, 16, rng);
            const mha::Mask mask = mha::combine_masks(mha::causal_mask(7, 11),
                                                      mha::padding_mask({11, 4}, 11));
            const mha::Mask* mp = masked ? &mask : nullptr;
            const mha::Stages st = m.forward_stages(q, kv, kv, mp);  // q, k, v split
            const mha::TiledAttention t =
                mha::tiled_attention(st.q, st.k, st.v, mp, mha::kNegInf, 3, 4);
            const mha::Tensor3 y = mha::linear(mha::merge_heads(t.context), m.w_o);
            CHECK(mha::max_abs_diff(y, mha::reference_forward(m, q, kv, kv, mp).output) < 2e-5);
        }
    }
}

TEST_CASE("tiled_attention with a score_mod equals forward_stages with the same Mods" *
          doctest::test_suite("oracle")) {
    // blocks that do not divide T, GQA, Tq != Tk both ways, one tile
    const std::vector<mha_test::Case> cases = {
        {1, 5, 5, 8, 2, 2, 4, 4},  {2, 9, 9, 16, 4, 2, 4, 4},  {1, 7, 3, 16, 4, 1, 2, 4},
        {2, 6, 11, 12, 3, 3, 4, 5}, {1, 13, 13, 16, 4, 2, 64, 64}};
    std::uint64_t seed = 1870;
    for (const mha_test::Case& c : cases) {
        const auto [rng, m, query, kv, g_out] = mha_test::Setup(c, ++seed);
        struct Variant {
            const char* name;
            mha::ScoreMod score_mod;
            mha::MaskMod mask_mod;
        };
        // a cap of 0.5 bends the scores of these sizes (|s| about 1)
        const Variant variants[] = {
            {"alibi", mha::alibi(c.H), {}},
            {"softcap 0.5", mha::softcap(0.5f), {}},
            {"alibi, causal", mha::alibi(c.H), mha::causal_mod()},
            {"softcap 0.5, causal", mha::softcap(0.5f), mha::causal_mod()},
            {"softcap then alibi, window 3", mha::chain(mha::softcap(0.5f), mha::alibi(c.H)),
             mha::sliding_window(3)}};
        for (const Variant& var : variants) {
            CAPTURE(c.B); CAPTURE(c.Tq); CAPTURE(c.Tk); CAPTURE(c.H); CAPTURE(c.H_kv);
            CAPTURE(c.bq); CAPTURE(c.bk); CAPTURE(var.name);
            const mha::Mods mods{var.score_mod, var.mask_mod, mha::kNegInf, {}};
            const mha::Stages st = m.forward_stages(query, kv, kv, mods);
            const mha::TiledAttention t = mha::tiled_attention(
                st.q, st.k, st.v, var.mask_mod, mha::kNegInf, c.bq, c.bk, var.score_mod);
            const mha::Tensor3 got = mha::merge_heads(t.context);  // [B, Tq, E]
            CHECK(mha::max_abs_diff(got, st.context) < 5e-6);
            // the mod matters at these sizes: without it the context differs
            const mha::TiledAttention plain = mha::tiled_attention(
                st.q, st.k, st.v, var.mask_mod, mha::kNegInf, c.bq, c.bk);
            CHECK(mha::max_abs_diff(mha::merge_heads(plain.context), st.context) > 1e-3);
        }
    }
}

TEST_CASE("tiled_attention: the fill -1e10 gives what the stages give, uniform when all masked") {
    mha::Rng rng(181);
    const mha::Tensor4 q = mha_test::randn4(2, 2, 4, 4, rng), k = mha_test::randn4(2, 2, 6, 4, rng),
                       v = mha_test::randn4(2, 2, 6, 4, rng);
    const mha::Mask pad = mha::padding_mask({0, 3}, 6);
    const mha::Tensor4 want =
        mha::attend(mha::softmax(mha::apply_mask(mha::scaled_scores(q, k), pad, -1e10f)), v);
    const mha::TiledAttention got = mha::tiled_attention(q, k, v, &pad, -1e10f, 3, 4);
    CHECK(mha::max_abs_diff(got.context, want) < 2e-6);
}

TEST_CASE("tiled_attention: shapes that do not fit, and block 0, are one line") {
    mha::Rng rng(182);
    const mha::Tensor4 q = mha_test::randn4(1, 4, 3, 8, rng), k = mha_test::randn4(1, 3, 5, 8, rng);
    CHECK_THROWS_WITH_AS(mha::tiled_attention(q, k, k, nullptr, mha::kNegInf, 2, 2),
                         "tiled_attention: q [1, 4, 3, 8], k [1, 3, 5, 8] and v [1, 3, 5, 8] "
                         "must be [B, H, Tq, D], [B, H_kv, Tk, D] twice, H_kv dividing H",
                         std::invalid_argument);
    const mha::Tensor4 k2 = mha_test::randn4(1, 2, 5, 8, rng);
    CHECK_THROWS_AS(mha::tiled_attention(q, k2, k2, nullptr, mha::kNegInf, 0, 2),
                    std::invalid_argument);
    const mha::Mask wrong = mha::causal_mask(5, 5);
    CHECK_THROWS_WITH_AS(mha::tiled_attention(q, k2, k2, &wrong, mha::kNegInf, 2, 2),
                         doctest::Contains("mask [1, 1, 5, 5]"), std::invalid_argument);
}
