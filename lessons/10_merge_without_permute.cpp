// Lesson 10 (pitfall): merging heads without permuting back.
//
// Shows: reshaping [B, H, T, D] straight to [B, T, E] gives the right shape
// and the wrong numbers; which check catches it; and why a test with one
// head, or one time step, would not.
// Mirrors: the handwritten-course article's
// `score.permute(0, 2, 1, 3).contiguous().view(batch, time, dimension)`,
// and what happens when the permute is left out.
//
// B = batch, T = time, E = d_model, H = heads, D = head_dim.
#include <algorithm>
#include <array>

#include <xtensor/xmanipulation.hpp>
#include <xtensor/xview.hpp>

#include "mha/attend.hpp"
#include "mha/attention.hpp"
#include "mha/heads.hpp"
#include "mha/mask.hpp"
#include "mha/reference.hpp"
#include "mha/scores.hpp"
#include "mha/softmax.hpp"
#include "support/blocks.hpp"
#include "support/lesson.hpp"

namespace {

// The bug: x.view(B, T, E) on [B, H, T, D], no permute first.
mha::Tensor3 merge_without_permute(const mha::Tensor4& x) {
    const std::array<std::size_t, 3> bte{x.shape(0), x.shape(2),
                                         x.shape(1) * x.shape(3)};
    return xt::reshape_view(x, bte);
}

}  // namespace

int main(int argc, char** argv) {
    lesson::Info info;
    info.name = "10_merge_without_permute";
    info.summary = "pitfall: view(B, T, E) without permute(0, 2, 1, 3)";
    info.draws = true, info.dump_mb = 50.3;
    return lesson::run(argc, argv, info, [](lesson::Lesson& L) {
        const std::size_t B = L.opt.batch, T = L.opt.time, E = L.opt.d_model;
        const std::size_t H = L.opt.heads;
        using lesson::fixed;
        int rc = 0;

        L.section("Earlier stages, by the core");
        mha::Rng rng(L.opt.seed);
        const mha::Tensor3 X = mha::randn(B, T, E, rng);  // [B, T, E]
        const mha::MultiHeadAttention m(E, H, mha::Init::xavier(L.opt.seed));
        const mha::Mask causal = mha::causal_mask(T, T);
        const mha::Tensor4 Q = mha::split_heads(mha::linear(X, m.wq), H);
        const mha::Tensor4 K = mha::split_heads(mha::linear(X, m.wk), H);
        const mha::Tensor4 V = mha::split_heads(mha::linear(X, m.wv), H);
        const mha::Tensor4 W = mha::softmax(mha::apply_mask(mha::scaled_scores(Q, K), causal));
        SHOWN(L, const mha::Tensor4 A = mha::attend(W, V));  // [B, H, T, D]
        // Its numbers at --tiny: the rows that each merge below lays out
        L.step("x = weights @ v", "x", A, "B, H, T, D", "");

        L.section("1. The right merge and the wrong one");
        SHOWN(L, const mha::Tensor3 right = mha::merge_heads(A));  // [B, T, E]
        L.step("x.permute(0,2,1,3).contiguous().view", "right", right, "B, T, E",
               "x.permute(0, 2, 1, 3).contiguous().view(B, T, E)");
        SHOWN(L, const mha::Tensor3 wrong = merge_without_permute(A));  // [B, T, E] too
        L.step("x.view(B, T, E)", "wrong", wrong, "B, T, E",
               "x.view(B, T, E)  # no permute");
        const double diff = mha::max_abs_diff(right, wrong);
        L.blocks("the right merge and the wrong one, h = head, t = time step", "merge",
                 {{"", lesson::head_blocks(A, "x")},
                  {"permute, then view: row t holds every head's step t",
                   {lesson::merged_from(right, H, true, "right[0]  [T, E]")}},
                  {"view alone: row 0 glues head 0's first steps together",
                   {lesson::merged_from(wrong, H, false, "wrong[0]  [T, E]")}}});
        L.say("Same shape, so nothing complains. But the memory of [B, H, T, D] "
              "holds all of head 0's time steps first: the wrong view puts head "
              "0's steps 0.." + std::to_string(H - 1) + " side by side as if they "
              "were the " + std::to_string(H) + " heads of step 0. max |right - "
              "wrong| = " + fixed(diff, 4) + ".");
        if (H > 1 && T > 1) {
            rc |= L.claim("the wrong merge gives other numbers (max |diff| = " +
                              fixed(diff, 4) + ")", diff > 1e-3);
        }

        L.section("2. Which test catches it");
        const double round_trip = mha::max_abs_diff(
            merge_without_permute(mha::split_heads(X, H)), X);
        // The oracle is plain loops in double, about 60 ms a sequence at the
        // default sizes: the first two sequences show what it catches.
        const std::size_t n = std::min<std::size_t>(B, 2);
        const mha::Tensor3 Xn = xt::view(X, xt::range(0, n));  // [n, T, E]
        L.say("Property 'split then merge is exact': merge_without_permute("
              "split_heads(X)) differs from X by " + fixed(round_trip, 4) +
              ", where the right merge gives exactly 0. The oracle comparison catches it "
              "too: the output through the wrong merge differs from reference_forward "
              "by the amount below, on the first " + std::to_string(n) + " of the " +
              std::to_string(B) + " sequences (the oracle computes in plain loops).");
        const auto first = [n](const mha::Tensor3& t) {
            return mha::Tensor3(xt::view(t, xt::range(0, n)));
        };
        const auto ref = mha::reference_forward(m, Xn, Xn, Xn, &causal);
        const double vs_oracle = mha::max_abs_diff(first(mha::linear(wrong, m.w_o)), ref.output);
        const double right_vs_oracle =
            mha::max_abs_diff(first(mha::linear(right, m.w_o)), ref.output);
        std::printf("wrong merge vs oracle: max |diff| = %.4g\n", vs_oracle);
        std::printf("right merge vs oracle: max |diff| = %.2g\n", right_vs_oracle);
        L.say("Neither test sees the bug with H = 1 or T = 1: then [B, H, T, D] "
              "and [B, T, H, D] hold their numbers in the same order. Test with "
              "several heads and several time steps.");
        const mha::Tensor4 one_head = mha::split_heads(X, 1);
        rc |= L.claim("with H = 1 the bug is invisible (max |diff| = " +
                          fixed(mha::max_abs_diff(merge_without_permute(one_head),
                                                  mha::merge_heads(one_head)), 4) + ")",
                      mha::max_abs_diff(merge_without_permute(one_head),
                                        mha::merge_heads(one_head)) == 0.0);
        rc |= L.claim("the right merge matches the oracle within 1e-5",
                      right_vs_oracle < 1e-5);
        if (H > 1 && T > 1) {
            rc |= L.claim("split-then-merge and the oracle both catch the bug",
                          round_trip > 1e-3 && vs_oracle > 1e-3);
        }
        return rc;
    });
}
