// The checks of exercises 01-07, the articles' stages. Each runs the
// student's function and the core's on the lesson's sizes, --tiny's, odd
// sizes (T != D, Tq != Tk, H = 1) and masks; the mistakes are written out
// here in plain loops, as a student might write them.
#include <cmath>
#include <memory>
#include <stdexcept>

#include <xtensor/xmanipulation.hpp>

#include "check.hpp"
#include "mha/attend.hpp"
#include "mha/heads.hpp"
#include "mha/init.hpp"
#include "mha/linear.hpp"
#include "mha/mask.hpp"
#include "mha/scores.hpp"
#include "mha/softmax.hpp"

namespace check {

using mha::Tensor2;

namespace {

// B, Tq, Tk, E, H of a case; D = E / H.
struct Sizes {
    std::string name;
    std::size_t B, Tq, Tk, E, H;
    std::size_t D() const { return E / H; }
};

const std::vector<Sizes>& sizes() {
    static const std::vector<Sizes> s = {
        {"the lesson's sizes", 128, 64, 64, 512, 8},
        {"--tiny", 1, 5, 5, 8, 2},
        {"T != D", 2, 3, 3, 16, 2},  // D = 8
        {"Tq != Tk", 2, 3, 7, 12, 3},
        {"H = 1", 2, 4, 4, 6, 1},
    };
    return s;
}

void need(bool ok) {  // a mistake that cannot take these shapes
    if (!ok) throw std::invalid_argument("shapes");
}

Tensor4 softmax_rows(const Tensor4& s) { return mha::softmax(s); }

// Weights: the softmax of random scores, a causal mask when Tq == Tk.
Tensor4 some_weights(const Sizes& z, std::uint64_t seed) {
    Tensor4 s = randn4(z.B, z.H, z.Tq, z.Tk, seed);
    if (z.Tq == z.Tk) s = mha::apply_mask(s, mha::causal_mask(z.Tq, z.Tk));
    return softmax_rows(s);
}

// ---- 01: linear ----

mha::Linear some_layer(std::size_t in, std::size_t out, std::uint64_t seed) {
    mha::Rng rng(seed);
    mha::Linear l{Tensor2::from_shape({out, in}), mha::Tensor1::from_shape({out})};
    for (auto& w : l.weight) w = rng.normal() / std::sqrt(float(in));
    for (auto& b : l.bias) b = rng.uniform(-1.0f, 1.0f);
    return l;
}

// x W^T (+ bias) by the core; transposed = false: x W, for a square W.
Tensor3 times(const Tensor3& x, const mha::Linear& l, bool transposed, bool bias) {
    need(transposed || l.weight.shape(0) == l.weight.shape(1));
    mha::Linear w = l;
    if (!transposed) w.weight = xt::transpose(l.weight);
    if (!bias) w.bias.fill(0.0f);
    return mha::linear(x, w);
}

// ---- 02 and 06: the heads ----

// View without permute: [B, T, E]'s numbers read in order as [B, H, T, D].
Tensor4 view_split(const Tensor3& x, std::size_t H) {
    const std::size_t B = x.shape(0), T = x.shape(1), D = x.shape(2) / H;
    Tensor4 out({B, H, T, D});
    std::copy(x.begin(), x.end(), out.begin());
    return out;
}

// Column e goes to head e % H, not e / D: the view as [B, T, D, H].
Tensor4 interleaved_split(const Tensor3& x, std::size_t H) {
    const std::size_t B = x.shape(0), T = x.shape(1), D = x.shape(2) / H;
    Tensor4 out({B, H, T, D});
    for (std::size_t b = 0; b < B; ++b)
        for (std::size_t h = 0; h < H; ++h)
            for (std::size_t t = 0; t < T; ++t)
                for (std::size_t d = 0; d < D; ++d) out(b, h, t, d) = x(b, t, d * H + h);
    return out;
}

Tensor3 view_merge(const Tensor4& x) {
    Tensor3 out({x.shape(0), x.shape(2), x.shape(1) * x.shape(3)});
    std::copy(x.begin(), x.end(), out.begin());
    return out;
}

Tensor3 interleaved_merge(const Tensor4& x) {
    const std::size_t B = x.shape(0), H = x.shape(1), T = x.shape(2), D = x.shape(3);
    Tensor3 out({B, T, H * D});
    for (std::size_t b = 0; b < B; ++b)
        for (std::size_t h = 0; h < H; ++h)
            for (std::size_t t = 0; t < T; ++t)
                for (std::size_t d = 0; d < D; ++d) out(b, t, d * H + h) = x(b, h, t, d);
    return out;
}

// ---- 03: scores ----

// a [B, H, M, D] x b [B, H, N, D]^T -> [B, H, M, N], times scale.
Tensor4 products(const Tensor4& a, const Tensor4& b, float scale) {
    const std::size_t B = a.shape(0), H = a.shape(1), M = a.shape(2), N = b.shape(2);
    const std::size_t D = a.shape(3);
    Tensor4 s({B, H, M, N});
    for (std::size_t i = 0; i < B; ++i)
        for (std::size_t h = 0; h < H; ++h)
            for (std::size_t m = 0; m < M; ++m)
                for (std::size_t n = 0; n < N; ++n) {
                    float acc = 0.0f;
                    for (std::size_t d = 0; d < D; ++d) acc += a(i, h, m, d) * b(i, h, n, d);
                    s(i, h, m, n) = acc * scale;
                }
    return s;
}

// ---- 04: masks ----

using Keep = bool (*)(long i, long j, long tq, long tk);

Mask mask_where(std::size_t tq, std::size_t tk, Keep keep) {
    Mask m({1, 1, tq, tk});
    for (std::size_t i = 0; i < tq; ++i)
        for (std::size_t j = 0; j < tk; ++j)
            m(0, 0, i, j) = keep(long(i), long(j), long(tq), long(tk));
    return m;
}

// fill where the mask says so; how = 0: where keep is 0 (right), 1: where it is 1,
// 2: scores times the mask, 3: always -inf, 4: batch 0's and head 0's mask for all.
Tensor4 masked(const Tensor4& s, const Mask& mask, float fill, int how) {
    Tensor4 out = s;
    for (std::size_t b = 0; b < s.shape(0); ++b)
        for (std::size_t h = 0; h < s.shape(1); ++h)
            for (std::size_t i = 0; i < s.shape(2); ++i) {
                const bool* keep = how == 4 ? mha::mask_row(mask, 0, 0, i)
                                            : mha::mask_row(mask, b, h, i);
                for (std::size_t j = 0; j < s.shape(3); ++j) {
                    float& x = out(b, h, i, j);
                    if (how == 2) x = keep[j] ? x : 0.0f;
                    else if (how == 1 ? keep[j] : !keep[j]) x = how == 3 ? mha::kNegInf : fill;
                }
            }
    return out;
}

// ---- 05: softmax ----

// over the last axis (axis 3) or over the queries (axis 2); stable: minus the max;
// guard: a row of -inf gets zeros.
Tensor4 softmax_like(const Tensor4& s, int axis, bool stable, bool guard) {
    Tensor4 w = s;
    const std::size_t B = s.shape(0), H = s.shape(1), Tq = s.shape(2), Tk = s.shape(3);
    const std::size_t rows = axis == 3 ? Tq : Tk, n = axis == 3 ? Tk : Tq;
    for (std::size_t b = 0; b < B; ++b)
        for (std::size_t h = 0; h < H; ++h)
            for (std::size_t r = 0; r < rows; ++r) {
                auto at = [&](std::size_t j) -> float& {
                    return axis == 3 ? w(b, h, r, j) : w(b, h, j, r);
                };
                float m = -INFINITY;
                for (std::size_t j = 0; j < n; ++j) m = std::max(m, at(j));
                if (guard && m == -INFINITY) {
                    for (std::size_t j = 0; j < n; ++j) at(j) = 0.0f;
                    continue;
                }
                if (!stable) m = 0.0f;
                float sum = 0.0f;
                for (std::size_t j = 0; j < n; ++j) sum += at(j) = std::exp(at(j) - m);
                for (std::size_t j = 0; j < n; ++j) at(j) /= sum;
            }
    return w;
}

// ---- 06: attend ----

// weights [B, H, Tq, Tk] x v [B, H, Tk, D]; transposed: weights^T (Tq == Tk).
Tensor4 weighted(const Tensor4& w, const Tensor4& v, bool transposed) {
    const std::size_t B = w.shape(0), H = w.shape(1), Tq = w.shape(2), Tk = w.shape(3);
    const std::size_t D = v.shape(3);
    need(!transposed || Tq == Tk);
    Tensor4 o = xt::zeros<float>({B, H, Tq, D});
    for (std::size_t b = 0; b < B; ++b)
        for (std::size_t h = 0; h < H; ++h)
            for (std::size_t i = 0; i < Tq; ++i)
                for (std::size_t j = 0; j < Tk; ++j) {
                    const float p = transposed ? w(b, h, j, i) : w(b, h, i, j);
                    for (std::size_t d = 0; d < D; ++d) o(b, h, i, d) += p * v(b, h, j, d);
                }
    return o;
}

// ---- 07: the forward ----

struct ForwardMistake {
    bool no_scale = false, no_mask = false, view_merge = false, no_w_o = false,
         wk_for_v = false;
};

Tensor3 forward_like(const mha::MultiHeadAttention& m, const Tensor3& query,
                     const Tensor3& key, const Tensor3& value, const Mask* mask,
                     ForwardMistake f) {
    const std::size_t H = m.num_heads();
    const Tensor4 q = mha::split_heads(mha::linear(query, m.wq), H);  // [B, H, Tq, D]
    const Tensor4 k = mha::split_heads(mha::linear(key, m.wk), H);    // [B, H, Tk, D]
    const Tensor4 v = mha::split_heads(mha::linear(value, f.wk_for_v ? m.wk : m.wv), H);
    Tensor4 s = mha::scaled_scores(q, k);  // [B, H, Tq, Tk]
    if (f.no_scale) s *= std::sqrt(float(m.head_dim()));
    if (mask != nullptr && !f.no_mask) s = mha::apply_mask(s, *mask);
    const Tensor4 o = mha::attend(mha::softmax(s), v);                  // [B, H, Tq, D]
    const Tensor3 context = f.view_merge ? view_merge(o) : mha::merge_heads(o);
    return f.no_w_o ? context : mha::linear(context, m.w_o);  // [B, Tq, E]
}

const char* kViewHint =
    "view without permute: [B, T, E] read straight as [B, H, T, D] glues time steps "
    "together; view as [B, T, H, D], then permute(0, 2, 1, 3) (lesson 10)";
const char* kMergeViewHint =
    "view without permute: [B, H, T, D] read straight as [B, T, E] glues time steps "
    "together; permute(0, 2, 1, 3) to [B, T, H, D] first (lesson 10)";

}  // namespace

int linear(const LinearFn& student) {
    std::vector<Setup<LinearFn>> setups;
    struct L { std::string name; std::size_t B, T, in, out; };
    for (const L& z : {L{"the lesson's sizes", 128, 64, 512, 512}, L{"--tiny", 1, 5, 8, 8},
                       L{"in != out", 2, 3, 12, 5}, L{"one row", 1, 1, 4, 4}}) {
        const Tensor3 x = randn3(z.B, z.T, z.in, 1);
        const mha::Linear l = some_layer(z.in, z.out, 2);
        setups.push_back({z.name, "x " + shape3(z.B, z.T, z.in) + ", weight [" +
                                      std::to_string(z.out) + ", " + std::to_string(z.in) + "]",
                          [x, l](const LinearFn& f) { return Outputs{{"y", result(f(x, l))}}; }});
    }
    const LinearFn core = [](const Tensor3& x, const mha::Linear& l) { return mha::linear(x, l); };
    return run("exercise 01 linear",
               cases<LinearFn>(setups, student, core,
                               {{"the bias is missing: y = x W^T + b",
                                 [](const Tensor3& x, const mha::Linear& l) {
                                     return times(x, l, true, false);
                                 }},
                                {"W not transposed: the weight is [out, in], so y[o] = "
                                 "sum_i x[i] W[o, i] (x W^T, as nn.Linear)",
                                 [](const Tensor3& x, const mha::Linear& l) {
                                     return times(x, l, false, true);
                                 }}}),
               "each output row is x's row times W^T plus the bias; "
               "build/lessons/01_linear_projections --tiny prints them");
}

int split_heads(const SplitFn& student) {
    std::vector<Setup<SplitFn>> setups;
    for (const Sizes& z : sizes()) {
        const Tensor3 x = randn3(z.B, z.Tq, z.E, 3);
        const std::size_t H = z.H;
        setups.push_back({z.name, "x " + shape3(z.B, z.Tq, z.E) + ", H " + std::to_string(H),
                          [x, H](const SplitFn& f) {
                              return Outputs{{"heads", result(f(x, H))}};
                          }});
    }
    const SplitFn core = [](const Tensor3& x, std::size_t h) { return mha::split_heads(x, h); };
    return run("exercise 02 split_heads",
               cases<SplitFn>(setups, student, core,
                              {{kViewHint, view_split},
                               {"wrong axis: head h takes the D columns h*D .. h*D+D-1 "
                                "(view as [B, T, H, D]), not every H-th column ([B, T, D, H])",
                                interleaved_split}}),
               "out[b, h, t, d] = x[b, t, h*D + d]; "
               "build/lessons/02_split_heads --tiny prints both");
}

int scores(const ScoresFn& student) {
    std::vector<Setup<ScoresFn>> setups;
    for (const Sizes& z : sizes()) {
        const Tensor4 q = randn4(z.B, z.H, z.Tq, z.D(), 4), k = randn4(z.B, z.H, z.Tk, z.D(), 5);
        setups.push_back({z.name, "q " + shape4(z.B, z.H, z.Tq, z.D()) + ", k " +
                                      shape4(z.B, z.H, z.Tk, z.D()),
                          [q, k](const ScoresFn& f) {
                              return Outputs{{"scores", result(f(q, k))}};
                          }});
    }
    const ScoresFn core = [](const Tensor4& q, const Tensor4& k) {
        return mha::scaled_scores(q, k);
    };
    auto scale = [](float (*s)(const Tensor4&)) {
        return [s](const Tensor4& q, const Tensor4& k) { return products(q, k, s(q)); };
    };
    return run("exercise 03 scores",
               cases<ScoresFn>(setups, student, core,
                               {{"missing scale: divide by sqrt(D), D = q.shape(3)",
                                 scale([](const Tensor4&) { return 1.0f; })},
                                {"divided by D: the scale is 1 / sqrt(D)",
                                 scale([](const Tensor4& q) { return 1.0f / float(q.shape(3)); })},
                                {"divided by sqrt(E): the scale is 1 / sqrt(D), the head's "
                                 "size, D = E / H (lesson 13)",
                                 scale([](const Tensor4& q) {
                                     return 1.0f / std::sqrt(float(q.shape(1) * q.shape(3)));
                                 })},
                                {"transposed: K Q^T; a row is a query, a column a key, "
                                 "[B, H, Tq, Tk] = q [B, H, Tq, D] x k^T [B, H, D, Tk]",
                                 [](const Tensor4& q, const Tensor4& k) {
                                     return products(k, q, 1.0f / std::sqrt(float(q.shape(3))));
                                 }}}),
               "scores[b, h, i, j] = sum_d q[b, h, i, d] k[b, h, j, d] / sqrt(D)");
}

int mask(const CausalFn& causal, const ApplyMaskFn& apply) {
    std::vector<Setup<CausalFn>> first;
    for (const auto& [tq, tk] : std::vector<std::pair<std::size_t, std::size_t>>{
             {64, 64}, {5, 5}, {3, 7}, {7, 3}, {1, 1}}) {
        first.push_back({"causal_mask, Tq " + std::to_string(tq) + ", Tk " + std::to_string(tk),
                         "mask " + shape4(1, 1, tq, tk),
                         [tq = tq, tk = tk](const CausalFn& f) {
                             return Outputs{{"mask", result(f(tq, tk))}};
                         }});
    }
    auto as_fn = [](Keep keep) {
        return CausalFn(
            [keep](std::size_t tq, std::size_t tk) { return mask_where(tq, tk, keep); });
    };
    std::vector<Case> all = cases<CausalFn>(
        first, causal, [](std::size_t tq, std::size_t tk) { return mha::causal_mask(tq, tk); },
        {{"polarity: 1 = may attend (the articles' tril); 1 = masked is PyTorch's bool "
          "attn_mask (lesson 04's four conventions)",
          as_fn([](long i, long j, long, long) { return j > i; })},
         {"the diagonal: query i may attend to key i itself (j <= i)",
          as_fn([](long i, long j, long, long) { return j < i; })},
         {"transposed: row i is query i, and it sees keys j <= i (torch.tril)",
          as_fn([](long i, long j, long, long) { return j >= i; })},
         {"aligned at the bottom right: the core's mask starts at the top left, query i "
          "sees keys 0 .. i whatever Tk is",
          as_fn([](long i, long j, long tq, long tk) { return j <= i + tk - tq; })}});

    std::vector<Setup<ApplyMaskFn>> second;
    struct M { std::string name; Sizes z; int kind; float fill; };
    const float inf = mha::kNegInf;
    for (const M& c : {M{"causal, the lesson's sizes", sizes()[0], 0, inf},
                       M{"causal, --tiny", sizes()[1], 0, inf},
                       M{"padding [B, 1, 1, Tk], fill -1e9", sizes()[3], 1, -1e9f},
                       M{"a mask per head [B, H, Tq, Tk]", sizes()[2], 2, inf}}) {
        const Sizes& z = c.z;
        const Tensor4 s = randn4(z.B, z.H, z.Tq, z.Tk, 6);
        Mask m;
        if (c.kind == 0) m = mha::causal_mask(z.Tq, z.Tk);
        if (c.kind == 1) m = mha::padding_mask({z.Tk - 2, z.Tk}, z.Tk);
        if (c.kind == 2) {
            m = Mask({z.B, z.H, z.Tq, z.Tk});
            mha::Rng rng(7);
            for (auto& x : m) x = rng.uniform(0.0f, 1.0f) < 0.6f;
        }
        const float fill = c.fill;
        second.push_back({"apply_mask, " + c.name,
                          "scores " + shape4(z.B, z.H, z.Tq, z.Tk) + ", mask " +
                              mha::shape_of(m),
                          [s, m, fill](const ApplyMaskFn& f) {
                              return Outputs{{"masked scores", result(f(s, m, fill))}};
                          }});
    }
    auto how = [](int h) {
        return ApplyMaskFn([h](const Tensor4& s, const Mask& m, float fill) {
            return masked(s, m, fill, h);
        });
    };
    const std::vector<Case> more = cases<ApplyMaskFn>(
        second, apply,
        [](const Tensor4& s, const Mask& m, float fill) { return mha::apply_mask(s, m, fill); },
        {{"polarity: fill where the mask is 0 (masked_fill(mask == 0, fill))", how(1)},
         {"multiplied by the mask: a masked score must be the fill (-inf), not 0, so that "
          "exp gives 0",
          how(2)},
         {"the fill: use the one passed in (here -1e9), not always -inf", how(3)},
         {"broadcasting: an axis of size 1 is shared, else index it by b, h, i "
          "(mha::mask_row does)",
          how(4)}});
    all.insert(all.end(), more.begin(), more.end());
    return run("exercise 04 mask", all,
               "keep[i][j] = (j <= i); masked scores become the fill; "
               "build/lessons/04_mask --tiny prints both");
}

int softmax(const SoftmaxFn& student) {
    std::vector<Setup<SoftmaxFn>> setups;
    struct S { std::string name; Sizes z; int kind; };
    for (const S& c : {S{"the lesson's sizes, causal", sizes()[0], 1},
                       S{"--tiny, causal", sizes()[1], 1}, S{"Tq != Tk", sizes()[3], 0},
                       S{"H = 1", sizes()[4], 0}, S{"large scores (x 100)", sizes()[2], 2},
                       S{"a fully masked row (padding length 0)", sizes()[3], 3}}) {
        const Sizes& z = c.z;
        Tensor4 s = randn4(z.B, z.H, z.Tq, z.Tk, 8, c.kind == 2 ? 100.0f : 1.0f);
        if (c.kind == 1) s = mha::apply_mask(s, mha::causal_mask(z.Tq, z.Tk));
        if (c.kind == 3) s = mha::apply_mask(s, mha::padding_mask({z.Tk, 0}, z.Tk));
        setups.push_back({c.name, "scores " + shape4(z.B, z.H, z.Tq, z.Tk),
                          [s](const SoftmaxFn& f) { return Outputs{{"weights", result(f(s))}}; }});
    }
    return run("exercise 05 softmax",
               cases<SoftmaxFn>(
                   setups, student, softmax_rows,
                   {{"a fully masked row: its max is -inf and -inf - (-inf) is NaN; the core "
                     "gives that row zeros",
                     [](const Tensor4& s) { return softmax_like(s, 3, true, false); }},
                    {"wrong axis: each query's row (the last axis, dim=-1) sums to 1, not "
                     "each column (lesson 11)",
                     [](const Tensor4& s) { return softmax_like(s, 2, true, true); }},
                    {"not stable: subtract the row's max before exp, or exp overflows to "
                     "inf and inf / inf is NaN",
                     [](const Tensor4& s) { return softmax_like(s, 3, false, true); }}}),
               "w[i][j] = exp(s[i][j] - m) / sum_k exp(s[i][k] - m), m the row's max");
}

int attend_merge(const AttendFn& attend, const MergeFn& merge) {
    std::vector<Setup<AttendFn>> first;
    std::vector<Setup<MergeFn>> second;
    for (const Sizes& z : sizes()) {
        const Tensor4 w = some_weights(z, 9), v = randn4(z.B, z.H, z.Tk, z.D(), 10);
        first.push_back({"attend, " + z.name,
                         "weights " + shape4(z.B, z.H, z.Tq, z.Tk) + ", v " +
                             shape4(z.B, z.H, z.Tk, z.D()),
                         [w, v](const AttendFn& f) { return Outputs{{"out", result(f(w, v))}}; }});
    }
    for (const Sizes& z : sizes()) {
        const Tensor4 x = randn4(z.B, z.H, z.Tq, z.D(), 11);
        second.push_back({"merge_heads, " + z.name, "x " + shape4(z.B, z.H, z.Tq, z.D()),
                          [x](const MergeFn& f) { return Outputs{{"merged", result(f(x))}}; }});
    }
    std::vector<Case> all = cases<AttendFn>(
        first, attend, [](const Tensor4& w, const Tensor4& v) { return mha::attend(w, v); },
        {{"transposed weights: out[i] = sum_j w[i][j] v[j], row i of the weights is "
          "query i",
          [](const Tensor4& w, const Tensor4& v) { return weighted(w, v, true); }}});
    const std::vector<Case> more = cases<MergeFn>(
        second, merge, [](const Tensor4& x) { return mha::merge_heads(x); },
        {{kMergeViewHint, view_merge},
         {"wrong axis: head h goes back to columns h*D .. h*D+D-1 (E = H x D, head "
          "first), not every H-th column",
          interleaved_merge}});
    all.insert(all.end(), more.begin(), more.end());
    return run("exercise 06 attend_merge", all,
               "out[b, h, i, :] = sum_j w[b, h, i, j] v[b, h, j, :]; "
               "merged[b, t, h*D + d] = x[b, h, t, d]");
}

int forward(const ForwardFn& student) {
    std::vector<Setup<ForwardFn>> setups;
    struct F { std::string name; Sizes z; int mask; };
    for (const F& c : {F{"the lesson's sizes, causal", sizes()[0], 1},
                       F{"--tiny, no mask", sizes()[1], 0}, F{"T != D, causal", sizes()[2], 1},
                       F{"cross-attention, 10 queries over 6 keys, padding",
                         Sizes{"", 2, 10, 6, 12, 3}, 2},
                       F{"H = 1, causal", sizes()[4], 1}}) {
        const Sizes& z = c.z;
        const auto m = std::make_shared<mha::MultiHeadAttention>(z.E, z.H, mha::Init::xavier(12));
        const Tensor3 q = randn3(z.B, z.Tq, z.E, 13);
        const Tensor3 k = z.Tq == z.Tk ? q : randn3(z.B, z.Tk, z.E, 14);
        const Tensor3 v = z.Tq == z.Tk ? q : randn3(z.B, z.Tk, z.E, 15);
        auto mask = std::make_shared<Mask>();
        if (c.mask == 1) *mask = mha::causal_mask(z.Tq, z.Tk);
        if (c.mask == 2) *mask = mha::padding_mask({z.Tk, z.Tk - 2}, z.Tk);
        const std::string what = c.mask == 0 ? "" : c.mask == 1 ? ", causal" : ", padding";
        setups.push_back({c.name,
                          "query " + shape3(z.B, z.Tq, z.E) + ", key and value " +
                              shape3(z.B, z.Tk, z.E) + ", H " + std::to_string(z.H),
                          [m, q, k, v, mask, c](const ForwardFn& f) {
                              return Outputs{{"output", result(f(*m, q, k, v,
                                                                 c.mask ? mask.get() : nullptr))}};
                          }});
    }
    const ForwardFn core = [](const mha::MultiHeadAttention& m, const Tensor3& q,
                              const Tensor3& k, const Tensor3& v, const Mask* mask) {
        return m.forward_stages(q, k, v, mask).output;
    };
    auto with = [](ForwardMistake f) {
        return ForwardFn([f](const mha::MultiHeadAttention& m, const Tensor3& q,
                             const Tensor3& k, const Tensor3& v, const Mask* mask) {
            return forward_like(m, q, k, v, mask, f);
        });
    };
    ForwardMistake no_w_o, no_scale, no_mask, view, wk;
    no_w_o.no_w_o = no_scale.no_scale = no_mask.no_mask = view.view_merge = wk.wk_for_v = true;
    return run("exercise 07 forward",
               cases<ForwardFn>(
                   setups, student, core,
                   {{"the output layer is missing: return w_o(context), not the context",
                     with(no_w_o)},
                    {"missing scale: the scores are Q K^T / sqrt(D)", with(no_scale)},
                    {"the mask is not applied: apply_mask(scores, *mask) when mask is "
                     "not null",
                     with(no_mask)},
                    {kMergeViewHint, with(view)},
                    {"V from wk: the values are wv(value)", with(wk)}}),
               "the seven stages in order: wq, wk, wv; split; scores; mask; softmax; "
               "attend and merge; w_o (m.forward_stages() shows each)");
}

}  // namespace check
