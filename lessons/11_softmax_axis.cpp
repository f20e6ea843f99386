// Lesson 11 (pitfall): softmax over the wrong axis, dim = -2.
//
// Shows: with dim=-2 the columns sum to 1 instead of the rows, and under a
// causal mask the future leaks into the past: changing a later token
// changes the output of an earlier one. This settles the handwritten-course
// article's note "softmax是对矩阵的竖排做" (softmax down the columns): its
// code, nn.Softmax(dim=-1), is right, the note is not.
// Mirrors: `self.softmax = nn.Softmax(dim=-1)` and the note in section 1 of
// the handwritten-course article.
//
// B = batch, T = time, E = d_model, H = heads, D = head_dim.
#include <cmath>

#include <xtensor/xmanipulation.hpp>
#include <xtensor/xview.hpp>

#include "mha/attend.hpp"
#include "mha/attention.hpp"
#include "mha/heads.hpp"
#include "mha/mask.hpp"
#include "mha/scores.hpp"
#include "mha/softmax.hpp"
#include "support/lesson.hpp"

namespace {

// The attention of X, from the same scores, with the softmax over dim = -1
// (right) and over dim = -2 (wrong): outputs [B, T, E], weights [B, H, T, T].
struct Both {
    mha::Tensor3 right, wrong;
    mha::Tensor4 right_w, wrong_w;
};

// The wrong softmax's line goes to L, for the lesson's next code() (SHOWN).
Both attention(lesson::Lesson& L, const mha::MultiHeadAttention& m, const mha::Tensor3& X,
               const mha::Mask& mask) {
    const std::size_t H = m.num_heads();
    const mha::Tensor4 Q = mha::split_heads(mha::linear(X, m.wq), H);
    const mha::Tensor4 K = mha::split_heads(mha::linear(X, m.wk), H);
    const mha::Tensor4 V = mha::split_heads(mha::linear(X, m.wv), H);
    const mha::Tensor4 S = mha::apply_mask(mha::scaled_scores(Q, K), mask);
    Both out;
    out.right_w = mha::softmax(S);
    // softmax(S, dim=-2): transpose, softmax along the rows, transpose back
    const mha::Tensor4 St = xt::transpose(S, {0, 1, 3, 2});
    SHOWN(L, out.wrong_w = xt::transpose(mha::softmax(St), {0, 1, 3, 2}));
    out.right = mha::linear(mha::merge_heads(mha::attend(out.right_w, V)), m.w_o);
    out.wrong = mha::linear(mha::merge_heads(mha::attend(out.wrong_w, V)), m.w_o);
    return out;
}

}  // namespace

int main(int argc, char** argv) {
    lesson::Info info;
    info.name = "11_softmax_axis", info.summary = "pitfall: softmax over dim=-2";
    info.draws = true, info.dump_mb = 4.9;
    return lesson::run(argc, argv, info, [](lesson::Lesson& L) {
        const std::size_t B = L.opt.batch, T = L.opt.time, E = L.opt.d_model;
        const std::size_t H = L.opt.heads;
        using lesson::fixed;
        int rc = 0;
        mha::Rng rng(L.opt.seed);
        const mha::Tensor3 X = mha::randn(B, T, E, rng);  // [B, T, E]
        const mha::MultiHeadAttention m(E, H, mha::Init::xavier(L.opt.seed));
        const mha::Mask causal = mha::causal_mask(T, T);

        L.section("1. Rows or columns");
        const Both base = attention(L, m, X, causal);
        const mha::Tensor4 &right_w = base.right_w, &wrong_w = base.wrong_w;
        const mha::Tensor3 &right = base.right, &wrong = base.wrong;
        // With --dump: sequence 0 of each, and the weights, for lessons/pytorch/
        const auto seq0 = [](const auto& t) { return xt::view(t, xt::range(0, 1)); };
        L.dump("X0", seq0(X)), L.dump_layers(m), L.dump("right0", seq0(right));
        L.dump("right_w0", seq0(right_w)), L.dump("wrong_w0", seq0(wrong_w));
        L.dump("wrong0", seq0(wrong));
        L.code("torch.softmax(score, dim=-2)");
        const std::size_t n = std::min<std::size_t>(T, 6);
        double worst_row[2] = {0, 0};  // max |row sum - 1|, dim=-1 and dim=-2
        for (int k = 0; k < 2; ++k) {
            const mha::Tensor4& w = k == 0 ? right_w : wrong_w;
            std::string rows, cols;
            for (std::size_t i = 0; i < T; ++i) {
                double r = 0, c = 0;
                for (std::size_t j = 0; j < T; ++j) r += w(0, 0, i, j), c += w(0, 0, j, i);
                worst_row[k] = std::max(worst_row[k], std::fabs(r - 1));
                if (i < n) rows += " " + fixed(r, 2), cols += " " + fixed(c, 2);
            }
            std::printf("%s  row sums%s   column sums%s\n", k == 0 ? "dim=-1" : "dim=-2",
                        rows.c_str(), cols.c_str());
        }
        L.figure("batch 0, head 0 under the causal mask: softmax over rows, then columns",
                 "softmax_axis", {lesson::grid_of(right_w, 0, 0, "dim=-1 (rows)", &causal),
                                  lesson::grid_of(wrong_w, 0, 0, "dim=-2 (columns)", &causal)},
                 false);
        L.say("With dim=-2 each key's column sums to 1: a key shares itself out "
              "among the queries, instead of each query sharing its attention "
              "out among the keys.");

        L.section("2. The future leaks into the past");
        // Change the last token only. With the causal mask, outputs 0..T-2
        // must not move: no query may see a later key.
        mha::Tensor3 X2 = X;
        for (std::size_t e = 0; e < E; ++e) X2(0, T - 1, e) += 1.0f;
        const Both changed = attention(L, m, X2, causal);
        const mha::Tensor3 &right2 = changed.right, &wrong2 = changed.wrong;
        double leak_right = 0, leak_wrong = 0;
        for (std::size_t t = 0; t + 1 < T; ++t)
            for (std::size_t e = 0; e < E; ++e) {
                leak_right = std::max(leak_right, double(std::fabs(right2(0, t, e) - right(0, t, e))));
                leak_wrong = std::max(leak_wrong, double(std::fabs(wrong2(0, t, e) - wrong(0, t, e))));
            }
        std::printf("change of outputs 0..T-2 after changing token T-1:\n"
                    "  dim=-1: max |diff| = %.3g\n  dim=-2: max |diff| = %.3g\n",
                    leak_right, leak_wrong);
        L.say("With dim=-2, the weight of query i on key j is divided by a sum "
              "over all queries that see key j, later queries included. So the "
              "last token's query reaches back into every earlier output: the "
              "model could read the future it is meant to predict.");
        rc |= L.claim("dim=-1 rows sum to 1, dim=-2 rows do not",
                      worst_row[0] < 1e-5 && (T == 1 || worst_row[1] > 1e-3));
        rc |= L.claim("dim=-1 keeps the past unchanged (max |diff| = 0)", leak_right == 0.0);
        if (T > 1) rc |= L.claim("dim=-2 leaks the future into the past", leak_wrong > 1e-4);
        return rc;
    });
}
