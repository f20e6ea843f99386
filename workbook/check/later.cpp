// The checks of the exercises past the articles: the KV cache's decode step
// (lesson 16), the online softmax's update (lesson 18), the softmax's
// backward (lesson 19's training runs on it).
#include <cmath>
#include <memory>
#include <stdexcept>
#include <vector>

#include <xtensor/xview.hpp>

#include "check.hpp"
#include "mha/attend.hpp"
#include "mha/backward.hpp"
#include "mha/heads.hpp"
#include "mha/init.hpp"
#include "mha/linear.hpp"
#include "mha/mask.hpp"
#include "mha/scores.hpp"
#include "mha/softmax.hpp"

namespace check {

namespace {

// ---- 16: the decode step ----

struct StepMistake {
    bool no_append = false, whole_capacity = false, at_zero = false, keep_length = false;
};

Tensor3 step_like(const mha::MultiHeadAttention& m, const Tensor3& x, mha::KVCache& c,
                  StepMistake f) {
    const std::size_t L = c.length, H = m.num_heads();
    const Tensor4 q = mha::split_heads(mha::linear(x, m.wq), H);  // [B, H, 1, D]
    const Tensor4 k = mha::split_heads(mha::linear(x, m.wk), H);
    const Tensor4 v = mha::split_heads(mha::linear(x, m.wv), H);
    if (f.no_append && L == 0) throw std::invalid_argument("no keys");
    const std::size_t at = f.at_zero ? 0 : L;
    if (!f.no_append) {
        xt::view(c.k, xt::all(), xt::all(), xt::range(at, at + 1)) = k;
        xt::view(c.v, xt::all(), xt::all(), xt::range(at, at + 1)) = v;
    }
    const std::size_t n = f.whole_capacity ? c.capacity() : f.no_append ? L : L + 1;
    const Tensor4 keys = xt::view(c.k, xt::all(), xt::all(), xt::range(0, n));
    const Tensor4 values = xt::view(c.v, xt::all(), xt::all(), xt::range(0, n));
    const Tensor4 w = mha::softmax(mha::scaled_scores(q, keys));  // [B, H, 1, n]
    if (!f.keep_length && !f.no_append) c.length = L + 1;
    return mha::linear(mha::merge_heads(mha::attend(w, values)), m.w_o);  // [B, 1, E]
}

// ---- 18: the online softmax ----

// how: 0 right, 1 the old sum kept as it was, 2 rescaled by e^{new - old},
// 3 no guard for a block of -inf, 4 the sum of e^s, not e^{s - max}
void take_like(mha::RunningSoftmax& st, const float* s, std::size_t n, int how) {
    float m = st.max;
    for (std::size_t j = 0; j < n; ++j) m = std::max(m, s[j]);
    if (how != 3 && m == -INFINITY) return;
    float sum = how == 1 ? st.sum
                : how == 2 ? st.sum * std::exp(m - st.max)
                : how == 4 ? st.sum
                           : st.sum * std::exp(st.max - m);
    for (std::size_t j = 0; j < n; ++j) sum += std::exp(s[j] - (how == 4 ? 0.0f : m));
    st = {m, sum};
}

// ---- 19: the softmax's backward ----

// how: 1 P dP (no subtraction), 2 the sum over the queries (axis 2),
// 3 dP - sum (no P in front), 4 the sum of dP alone (no P inside)
Tensor4 softmax_back_like(const Tensor4& p, const Tensor4& dp, int how) {
    const std::size_t B = p.shape(0), H = p.shape(1), Tq = p.shape(2), Tk = p.shape(3);
    Tensor4 ds(p.shape());
    std::vector<float> dots;  // one per row (per column for how 2)
    for (std::size_t b = 0; b < B; ++b)
        for (std::size_t h = 0; h < H; ++h) {
            dots.assign(how == 2 ? Tk : Tq, 0.0f);
            for (std::size_t i = 0; i < Tq; ++i)
                for (std::size_t j = 0; j < Tk; ++j)
                    dots[how == 2 ? j : i] += (how == 4 ? 1.0f : p(b, h, i, j)) * dp(b, h, i, j);
            for (std::size_t i = 0; i < Tq; ++i)
                for (std::size_t j = 0; j < Tk; ++j) {
                    const float x = dp(b, h, i, j), dot = dots[how == 2 ? j : i];
                    ds(b, h, i, j) = how == 1   ? p(b, h, i, j) * x
                                     : how == 3 ? x - dot
                                                : p(b, h, i, j) * (x - dot);
                }
        }
    return ds;
}

}  // namespace

int kv_cache(const DecodeFn& student) {
    std::vector<Setup<DecodeFn>> setups;
    struct K { std::string name; std::size_t B, E, H, L, steps; };
    for (const K& z : {K{"the lesson's sizes, step 64", 1, 512, 8, 63, 1},
                       K{"--tiny, the first step (empty cache)", 1, 8, 2, 0, 1},
                       K{"--tiny, after 4 cached", 1, 8, 2, 4, 1},
                       K{"T != D, three steps in a row", 2, 16, 2, 3, 3},
                       K{"H = 1, two steps", 2, 6, 1, 2, 2}}) {
        const auto m = std::make_shared<mha::MultiHeadAttention>(z.E, z.H, mha::Init::xavier(16));
        const std::size_t capacity = z.L + z.steps + 2;  // room to spare
        mha::KVCache cache = mha::make_cache(*m, z.B, capacity);
        if (z.L > 0) mha::extend_stages(*m, randn3(z.B, z.L, z.E, 17), cache);  // the prompt
        std::vector<Tensor3> xs;
        for (std::size_t s = 0; s < z.steps; ++s) xs.push_back(randn3(z.B, 1, z.E, 18 + s));
        setups.push_back(
            {z.name,
             "x_t " + shape3(z.B, 1, z.E) + ", cache k and v " +
                 shape4(z.B, z.H, capacity, z.E / z.H) + ", length L = " + std::to_string(z.L),
             [m, cache, xs](const DecodeFn& f) {
                 mha::KVCache c = cache;
                 Outputs out;
                 for (std::size_t s = 0; s < xs.size(); ++s)
                     out.push_back({"output of step " + std::to_string(s + 1),
                                    result(f(*m, xs[s], c))});
                 out.push_back({"cache.length", number(float(c.length))});
                 out.push_back({"cache.k", result(c.k)});
                 out.push_back({"cache.v", result(c.v)});
                 return out;
             }});
    }
    auto with = [](StepMistake f) {
        return DecodeFn([f](const mha::MultiHeadAttention& m, const Tensor3& x,
                            mha::KVCache& c) { return step_like(m, x, c, f); });
    };
    StepMistake none, whole, zero, keep;
    none.no_append = whole.whole_capacity = zero.at_zero = keep.keep_length = true;
    return run("exercise 16 kv_cache",
               cases<DecodeFn>(
                   setups, student,
                   [](const mha::MultiHeadAttention& m, const Tensor3& x, mha::KVCache& c) {
                       return mha::extend_stages(m, x, c);
                   },
                   {{"not appended: write k and v at position L first; the new position "
                     "attends to itself too (keys 0 .. L)",
                     with(none)},
                    {"the whole capacity: attend over the L + 1 positions filled, not the "
                     "zeros beyond them",
                     with(whole)},
                    {"written at position 0: the new k and v go to position L = "
                     "cache.length",
                     with(zero)},
                    {"cache.length not advanced: add 1 after appending", with(keep)}}),
               "q, k, v of x_t; k, v into the cache at position L; attend over positions "
               "0 .. L; w_o; length L + 1");
}

int online_softmax(const TakeBlockFn& student) {
    std::vector<Setup<TakeBlockFn>> setups;
    struct O { std::string name; std::vector<float> row; std::size_t block; };
    const float inf = INFINITY;
    std::vector<float> lesson(8);
    mha::Rng rng(19);
    for (float& x : lesson) x = rng.normal();
    for (const O& c : {O{"the lesson's row", lesson, 2},
                       O{"the max grows in every block", {0, 1, 2, 3, 4, 5}, 2},
                       O{"the first block holds the max", {5, 4, 3, 2, 1, 0}, 2},
                       O{"blocks of 3, a tail of 1", {1, -2, 3, 0.5f, 4, -1, 2}, 3},
                       O{"a masked first block", {-inf, -inf, 1, 2, 0, 3}, 2},
                       O{"every key masked", {-inf, -inf, -inf, -inf}, 2},
                       O{"large scores", {500, 510, 490, 520}, 2}}) {
        const std::vector<float> row = c.row;
        const std::size_t block = c.block;
        setups.push_back(
            {c.name, "a row of " + std::to_string(row.size()) + " in blocks of " +
                         std::to_string(block),
             [row, block](const TakeBlockFn& f) {
                 mha::RunningSoftmax st;
                 std::vector<float> states;  // [blocks, 2]: (max, sum) after each block
                 for (std::size_t j = 0; j < row.size(); j += block) {
                     f(st, row.data() + j, std::min(block, row.size() - j));
                     states.push_back(st.max);
                     states.push_back(st.sum);
                 }
                 Result r{{states.size() / 2, 2}, states};
                 return Outputs{{"states", r}};
             }});
    }
    auto how = [](int h) {
        return TakeBlockFn([h](mha::RunningSoftmax& st, const float* s, std::size_t n) {
            take_like(st, s, n, h);
        });
    };
    return run("exercise 18 online_softmax",
               cases<TakeBlockFn>(
                   setups, student,
                   [](mha::RunningSoftmax& st, const float* s, std::size_t n) {
                       mha::take_block(st, s, n);
                   },
                   {{"the old sum not rescaled: its terms were e^(s - old max); against the "
                     "new max multiply it by e^(old max - new max)",
                     how(1)},
                    {"rescaled the wrong way: e^(old max - new max), which is <= 1", how(2)},
                    {"a block of -inf: the max stays -inf and -inf - (-inf) is NaN; leave "
                     "the state as it is",
                     how(3)},
                    {"not relative to the max: e^s overflows for large scores; the sum is "
                     "of e^(s - max)",
                     how(4)}}),
               "new max m = max(old max, the block's); sum = old sum e^(old max - m) + "
               "sum_j e^(s_j - m)");
}

int softmax_backward(const SoftmaxBackwardFn& student) {
    std::vector<Setup<SoftmaxBackwardFn>> setups;
    struct S { std::string name; std::size_t B, H, Tq, Tk; bool causal; };
    for (const S& z : {S{"the lesson's sizes, causal", 128, 8, 64, 64, true},
                       S{"--tiny, causal", 1, 2, 5, 5, true}, S{"Tq != Tk", 2, 3, 3, 7, false},
                       S{"H = 1", 2, 1, 4, 4, false}}) {
        Tensor4 s = randn4(z.B, z.H, z.Tq, z.Tk, 20);
        if (z.causal) s = mha::apply_mask(s, mha::causal_mask(z.Tq, z.Tk));
        const Tensor4 p = mha::softmax(s), dp = randn4(z.B, z.H, z.Tq, z.Tk, 21);
        setups.push_back({z.name,
                          "weights and d_weights " + shape4(z.B, z.H, z.Tq, z.Tk),
                          [p, dp](const SoftmaxBackwardFn& f) {
                              return Outputs{{"d_scores", result(f(p, dp))}};
                          }});
    }
    auto how = [](int h) {
        return SoftmaxBackwardFn(
            [h](const Tensor4& p, const Tensor4& dp) { return softmax_back_like(p, dp, h); });
    };
    return run("exercise 19 softmax_backward",
               cases<SoftmaxBackwardFn>(
                   setups, student,
                   [](const Tensor4& p, const Tensor4& dp) { return mha::softmax_backward(p, dp); },
                   {{"the subtraction is missing: a score moves every weight of its row "
                     "(they sum to 1), so dS_j = P_j (dP_j - sum_k P_k dP_k)",
                     how(1)},
                    {"wrong axis: the sum runs over the keys of one query's row, as the "
                     "softmax did",
                     how(2)},
                    {"P_j in front is missing: dS_j = P_j (dP_j - sum_k P_k dP_k)", how(3)},
                    {"the sum weighs each dP_k by P_k: sum_k P_k dP_k", how(4)}}),
               "dS[i][j] = P[i][j] (dP[i][j] - sum_k P[i][k] dP[i][k]), row by row");
}

}  // namespace check
