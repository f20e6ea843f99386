// Lesson 12 (pitfall): the fill value, and rows with every key masked.
//
// Shows: -inf, -1e10 and -1e9 give the same weights wherever a query has at
// least one key; they part ways on a fully masked row, where the textbook
// softmax gives NaN for -inf and uniform weights for the finite fills. The
// core's policy for that row, and why. And in float16: what a cast makes of
// -1e10 and -1e9, and that PyTorch's masked_fill refuses them there.
// Mirrors: the handwritten-course article's `masked_fill(mask == 0,
// float("-inf"))` and the four-linear-layers article's
// `masked_fill(mask == 0, -1e10)`.
//
// B = batch, T = time, E = d_model, H = heads, D = head_dim.
#include <cmath>
#include <vector>

#include <xtensor/xmath.hpp>
#include <xtensor/xreducer.hpp>
#include <xtensor/xsort.hpp>
#include <xtensor/xview.hpp>

#include "mha/attention.hpp"
#include "mha/heads.hpp"
#include "mha/mask.hpp"
#include "mha/precision.hpp"
#include "mha/scores.hpp"
#include "mha/softmax.hpp"
#include "support/lesson.hpp"

namespace {

// The textbook softmax of lesson 05, with no guard: exp(s - max) / sum.
mha::Tensor4 textbook_softmax(const mha::Tensor4& s) {
    const mha::Tensor4 row_max = xt::amax(s, {3}, xt::keep_dims);
    const mha::Tensor4 e = xt::exp(s - row_max);
    const mha::Tensor4 sum = xt::sum(e, {3}, xt::keep_dims);
    return e / sum;
}

}  // namespace

int main(int argc, char** argv) {
    lesson::Info info;
    info.name = "12_fill_value";
    info.summary = "pitfall: -inf, -1e10, -1e9 and empty rows";
    info.draws = true, info.dump_mb = 0.9;
    return lesson::run(argc, argv, info, [](lesson::Lesson& L) {
        const std::size_t B = L.opt.batch, T = L.opt.time, E = L.opt.d_model;
        const std::size_t H = L.opt.heads;
        using lesson::fixed;
        int rc = 0;
        mha::Rng rng(L.opt.seed);
        const mha::Tensor3 X = mha::randn(B, T, E, rng);  // [B, T, E]
        const mha::MultiHeadAttention m(E, H, mha::Init::xavier(L.opt.seed));
        const mha::Tensor4 S =
            mha::scaled_scores(mha::split_heads(mha::linear(X, m.wq), H),
                               mha::split_heads(mha::linear(X, m.wk), H));

        L.section("1. Rows with at least one key: the fill does not matter");
        const mha::Mask causal = mha::causal_mask(T, T);
        using mha::apply_mask, mha::softmax;  // C++17: shorter lines below
        const mha::Tensor4 w_inf = softmax(apply_mask(S, causal));
        SHOWN(L, const mha::Tensor4 w_1e10 = softmax(apply_mask(S, causal, -1e10f)));
        const mha::Tensor4 w_1e9 = softmax(apply_mask(S, causal, -1e9f));
        // With --dump: sequence 0 of each, for lessons/pytorch/
        const auto seq0 = [](const mha::Tensor4& t) { return xt::view(t, xt::range(0, 1)); };
        L.dump("S0", seq0(S)), L.dump("w_inf0", seq0(w_inf));
        L.dump("w_1e10_0", seq0(w_1e10)), L.dump("w_1e9_0", seq0(w_1e9));
        L.code("energy.masked_fill(mask == 0, -1e10)");
        const double d10 = mha::max_abs_diff(w_inf, w_1e10);
        const double d9 = mha::max_abs_diff(w_inf, w_1e9);
        std::printf("causal mask: max |w(-inf) - w(-1e10)| = %.3g, "
                    "max |w(-inf) - w(-1e9)| = %.3g\n", d10, d9);
        L.say("exp(-1e9 - max) is 0 in float just as exp(-inf) is, so the three "
              "fills agree exactly.");
        SHOWN(L, const float half_1e10 = mha::round_to(-1e10f, mha::Precision::f16));
        L.code("torch.tensor(-1e10).half()  # a cast: tensor(-inf, dtype=torch.float16)");
        std::printf("as float16: -1e10 -> %g, -1e9 -> %g, -1e4 -> %g\n", half_1e10,
                    mha::round_to(-1e9f, mha::Precision::f16),
                    mha::round_to(-1e4f, mha::Precision::f16));
        L.say("A cast rounds -1e10 and -1e9 to -inf, but PyTorch 1.13 does not cast a fill: "
              "on a float16 tensor, masked_fill(mask == 0, -1e10) raises 'value cannot be "
              "converted to type at::Half without overflow', and so does -1e9. fp16 code "
              "fills -inf, -1e4 or torch.finfo(torch.float16).min = -65504 (lesson 27 "
              "has the formats, lesson 28 what low precision does to the sums).");
        rc |= L.claim("the three fills agree on causal rows", d10 == 0.0 && d9 == 0.0);

        L.section("2. A row with every key masked");
        // Sequence 0 has length 0: its queries have no key to look at.
        std::vector<std::size_t> lengths(B, T);
        lengths[0] = 0;
        const mha::Mask pad = mha::padding_mask(lengths, T);  // [B, 1, 1, T]
        const mha::Tensor4 t_inf = textbook_softmax(mha::apply_mask(S, pad));
        const mha::Tensor4 t_1e10 = textbook_softmax(mha::apply_mask(S, pad, -1e10f));
        const mha::Tensor4 c_inf = mha::softmax(mha::apply_mask(S, pad));
        L.dump("t_inf0", seq0(t_inf)), L.dump("t_1e10_0", seq0(t_1e10));
        L.dump("c_inf0", seq0(c_inf));
        std::printf("weights of sequence 0, query 0, first keys (1/T = %.4f):\n", 1.0 / T);
        const std::size_t n = std::min<std::size_t>(T, 5);
        auto row = [&](const char* what, const mha::Tensor4& w) {
            std::string s;
            for (std::size_t j = 0; j < n; ++j) s += " " + fixed(w(0, 0, 0, j), 4);
            std::printf("  %-28s%s\n", what, s.c_str());
        };
        row("textbook softmax, -inf:", t_inf);
        row("textbook softmax, -1e10:", t_1e10);
        row("core softmax, -inf:", c_inf);
        L.figure("sequence 0, head 0: every key masked", "fill_value",
                 {lesson::grid_of(t_inf, 0, 0, "textbook, -inf: NaN"),
                  lesson::grid_of(t_1e10, 0, 0, "textbook, -1e10: 1/T"),
                  lesson::grid_of(c_inf, 0, 0, "the core, -inf: 0")}, false);
        L.say("-inf: every score is -inf, the max is -inf, and -inf - (-inf) is "
              "NaN; PyTorch 1.13 gives NaN here too. -1e10: every score is -1e10, "
              "so every key weighs 1/T, the mean of all values, padding included.");
        L.say("The core's policy: such a row gets zero weights, so the query "
              "attends to nothing and its output is w_o's bias. A NaN would spread "
              "through the loss to every gradient of the batch; uniform weights "
              "would quietly average padding. Zero is finite and says 'nothing "
              "to see'. With a finite fill the core gives uniform weights, as "
              "PyTorch does.");
        rc |= L.claim("textbook softmax with -inf gives NaN on the empty row",
                      std::isnan(t_inf(0, 0, 0, 0)));
        rc |= L.claim("-1e10 gives uniform weights 1/T on the empty row",
                      std::fabs(t_1e10(0, 0, 0, 0) - 1.0 / T) < 1e-6);
        rc |= L.claim("the core gives zero weights on the empty row",
                      xt::amax(xt::abs(xt::view(c_inf, 0)))() == 0.0f);
        return rc;
    });
}
