// The workbook's checker, held to what it promises: each exercise checked
// against the core's own version (the solution: "all N cases pass"), and
// against the usual mistakes, written here as a student would write them,
// independently of the checker's own copies (the test expects each one's
// hint). Run as: workbook_mistakes NN [mistake ...], several mistakes in turn
// in one process, each after a line "== mistake NAME" (the checker computes
// the core's outputs once).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <map>
#include <string>

#include <xtensor/xbuilder.hpp>
#include <xtensor/xmanipulation.hpp>
#include <xtensor/xview.hpp>

#include "../../workbook/check/check.hpp"
#include "mha/attend.hpp"
#include "mha/backward.hpp"
#include "mha/heads.hpp"
#include "mha/linear.hpp"
#include "mha/mask.hpp"
#include "mha/scores.hpp"
#include "mha/softmax.hpp"

namespace {

using mha::Mask;
using mha::Tensor3;
using mha::Tensor4;
using MHA = mha::MultiHeadAttention;

// The whole forward written as a student would, with a switch per mistake.
Tensor3 forward(const MHA& m, const Tensor3& query, const Tensor3& key, const Tensor3& value,
                const Mask* mask, const std::string& bug) {
    const std::size_t H = m.num_heads(), B = query.shape(0), Tq = query.shape(1);
    const Tensor4 q = mha::split_heads(mha::linear(query, m.wq), H);
    const Tensor4 k = mha::split_heads(mha::linear(key, m.wk), H);
    const Tensor4 v = mha::split_heads(mha::linear(value, bug == "wk_for_v" ? m.wk : m.wv), H);
    Tensor4 s = mha::scaled_scores(q, k);  // [B, H, Tq, Tk]
    if (bug == "no_scale") s *= std::sqrt(float(m.head_dim()));
    if (mask != nullptr && bug != "no_mask") s = mha::apply_mask(s, *mask);
    const Tensor4 o = mha::attend(mha::softmax(s), v);  // [B, H, Tq, D]
    Tensor3 context = mha::merge_heads(o);
    if (bug == "view_merge") context = xt::reshape_view(o, {B, Tq, m.embed_dim()});
    return bug == "no_w_o" ? context : mha::linear(context, m.w_o);
}

Tensor3 decode(const MHA& m, const Tensor3& x, mha::KVCache& c, const std::string& bug) {
    const std::size_t L = c.length, H = m.num_heads();
    const Tensor4 q = mha::split_heads(mha::linear(x, m.wq), H);  // [B, H, 1, D]
    const Tensor4 k_t = mha::split_heads(mha::linear(x, m.wk), H);
    const Tensor4 v_t = mha::split_heads(mha::linear(x, m.wv), H);
    const std::size_t at = bug == "at_zero" ? 0 : L;
    if (bug != "no_append") {  // cache[:, :, at] = k_t[:, :, 0]
        xt::view(c.k, xt::all(), xt::all(), at) = xt::view(k_t, xt::all(), xt::all(), 0);
        xt::view(c.v, xt::all(), xt::all(), at) = xt::view(v_t, xt::all(), xt::all(), 0);
    }
    const std::size_t n = bug == "whole_capacity" ? c.capacity() : bug == "no_append" ? L : L + 1;
    const Tensor4 k = xt::view(c.k, xt::all(), xt::all(), xt::range(0, n));
    const Tensor4 v = xt::view(c.v, xt::all(), xt::all(), xt::range(0, n));
    if (bug != "keep_length" && bug != "no_append") ++c.length;
    return mha::linear(mha::merge_heads(mha::attend(mha::softmax(mha::scaled_scores(q, k)), v)),
                       m.w_o);
}

// Softmax over one axis of [B, H, Tq, Tk], by xtensor reductions.
Tensor4 softmax(const Tensor4& s, const std::string& bug) {
    const std::size_t axis = bug == "wrong_axis" ? 2 : 3;
    Tensor4 m = xt::amax(s, {axis}, xt::keep_dims);  // evaluated: lazy keep_dims is wrong
    if (bug == "unstable") m.fill(0.0f);
    Tensor4 e = xt::exp(s - m);
    if (bug != "unstable") e = xt::where(xt::isnan(e), 0.0f, e);  // a row of -inf
    if (bug == "no_guard") e = xt::exp(s - m);
    const Tensor4 sum = xt::sum(e, {axis}, xt::keep_dims);
    if (bug == "no_guard" || bug == "unstable") return e / sum;
    return xt::where(sum > 0.0f, e / sum, 0.0f);
}

}  // namespace

int main(int argc, char** argv) {
    const std::string n = argc > 1 ? argv[1] : "";
    std::string bug;
    std::map<std::string, std::function<int()>> run;

    run["01"] = [&] {
        return check::linear([&](const Tensor3& x, const mha::Linear& l) {
            mha::Linear w = l;
            if (bug == "no_bias") w.bias.fill(0.0f);
            if (bug == "not_transposed") w.weight = xt::transpose(l.weight);
            return mha::linear(x, w);
        });
    };
    run["02"] = [&] {
        return check::split_heads([&](const Tensor3& x, std::size_t H) -> Tensor4 {
            const std::size_t B = x.shape(0), T = x.shape(1), D = x.shape(2) / H;
            if (bug == "view_without_permute") return xt::reshape_view(x, {B, H, T, D});
            if (bug == "interleaved")  // view [B, T, D, H], permute (0, 3, 1, 2)
                return xt::transpose(xt::reshape_view(x, {B, T, D, H}), {0, 3, 1, 2});
            return mha::split_heads(x, H);
        });
    };
    run["03"] = [&] {
        return check::scores([&](const Tensor4& q, const Tensor4& k) -> Tensor4 {
            const float d = float(q.shape(3)), e = float(q.shape(1) * q.shape(3));
            const Tensor4 s = mha::scaled_scores(q, k);
            if (bug == "no_scale") return s * std::sqrt(d);
            if (bug == "by_d") return s * std::sqrt(d) / d;
            if (bug == "by_sqrt_e") return s * std::sqrt(d) / std::sqrt(e);
            if (bug == "transposed") return mha::scaled_scores(k, q);
            return s;
        });
    };
    run["04"] = [&] {
        return check::mask(
            [&](std::size_t tq, std::size_t tk) {
                Mask m = mha::causal_mask(tq, tk);
                if (bug == "torch_polarity") m = !m;
                if (bug == "no_diagonal")
                    for (std::size_t i = 0; i < std::min(tq, tk); ++i) m(0, 0, i, i) = false;
                if (bug == "bottom_right")
                    for (std::size_t i = 0; i < tq; ++i)
                        for (std::size_t j = 0; j < tk; ++j) m(0, 0, i, j) = j + tq <= i + tk;
                return m;
            },
            [&](const Tensor4& s, const Mask& m, float fill) -> Tensor4 {
                if (bug == "inverted") return mha::apply_mask(s, !m, fill);
                if (bug == "multiplied") return xt::where(m, s, 0.0f);
                if (bug == "fill_ignored") return mha::apply_mask(s, m);
                if (bug == "no_broadcast") {  // batch 0's, head 0's mask for all
                    const Mask m0 = xt::view(m, xt::range(0, 1), xt::range(0, 1));
                    return mha::apply_mask(s, m0, fill);
                }
                return mha::apply_mask(s, m, fill);
            });
    };
    run["05"] = [&] {
        return check::softmax([&](const Tensor4& s) {
            return bug.empty() ? mha::softmax(s) : softmax(s, bug);
        });
    };
    run["06"] = [&] {
        return check::attend_merge(
            [&](const Tensor4& w, const Tensor4& v) -> Tensor4 {
                if (bug == "attend_transposed")
                    return mha::attend(xt::eval(xt::transpose(w, {0, 1, 3, 2})), v);
                return mha::attend(w, v);
            },
            [&](const Tensor4& x) -> Tensor3 {
                const std::size_t B = x.shape(0), H = x.shape(1), T = x.shape(2), D = x.shape(3);
                if (bug == "merge_view") return xt::reshape_view(x, {B, T, H * D});
                if (bug == "merge_interleaved")  // [B, H, T, D] -> [B, T, D, H]
                    return xt::reshape_view(xt::eval(xt::transpose(x, {0, 2, 3, 1})),
                                            {B, T, H * D});
                return mha::merge_heads(x);
            });
    };
    run["07"] = [&] {
        return check::forward([&](const MHA& m, const Tensor3& q, const Tensor3& k,
                                  const Tensor3& v, const Mask* mask) {
            return forward(m, q, k, v, mask, bug);
        });
    };
    run["16"] = [&] {
        return check::kv_cache([&](const MHA& m, const Tensor3& x, mha::KVCache& c) {
            return decode(m, x, c, bug);
        });
    };
    run["18"] = [&] {
        return check::online_softmax([&](mha::RunningSoftmax& st, const float* s, std::size_t n) {
            if (bug.empty()) return mha::take_block(st, s, n);
            float m = st.max;
            for (std::size_t j = 0; j < n; ++j) m = std::fmax(m, s[j]);
            if (std::isinf(m) && m < 0 && bug != "no_guard") return;
            const float shift = bug == "not_relative" ? 0.0f : m;
            float l = bug == "not_rescaled" || bug == "not_relative" ? st.sum
                      : bug == "wrong_way" ? st.sum * std::exp(m - st.max)
                                           : st.sum * std::exp(st.max - m);
            for (std::size_t j = 0; j < n; ++j) l += std::exp(s[j] - shift);
            st.max = m;
            st.sum = l;
        });
    };
    run["19"] = [&] {
        return check::softmax_backward([&](const Tensor4& p, const Tensor4& dp) -> Tensor4 {
            if (bug == "no_subtraction") return p * dp;
            const std::size_t axis = bug == "wrong_axis" ? 2 : 3;
            const Tensor4 pdp = bug == "plain_sum" ? dp : Tensor4(p * dp);
            const Tensor4 dot = xt::sum(pdp, {axis}, xt::keep_dims);  // evaluated first
            if (bug == "no_p") return dp - dot;
            if (bug.empty()) return mha::softmax_backward(p, dp);
            return p * (dp - dot);
        });
    };
    const auto it = run.find(n);
    if (it == run.end()) {
        std::fprintf(stderr, "usage: workbook_mistakes NN [mistake]; no exercise '%s'\n",
                     n.c_str());
        return 2;
    }
    if (argc <= 2) return it->second();
    int rc = 0;
    for (int i = 2; i < argc; ++i) {
        bug = argv[i];
        std::printf("== mistake %s\n", bug.c_str());
        std::fflush(stdout);
        rc = std::max(rc, it->second());
    }
    return rc;
}
