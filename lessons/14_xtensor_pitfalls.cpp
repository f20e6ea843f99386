// Lesson 14 (pitfall): four traps of C++ and xtensor 0.24.3.
//
//  1. A lazy keep_dims reducer inside a broadcasting expression reads past
//     the tensor and gives wrong values: the textbook softmax one-liner is
//     wrong, and on large tensors it crashes.
//  2. `auto` holds a lazy expression, not a result: it re-evaluates.
//  3. xt::linalg::dot is numpy.dot, not torch.matmul: it does not batch.
//  4. xt::xtensor<float, 1> b({n}) is the one number n, not n zeros.
// Mirrors: `torch.softmax(score, dim=-1)`, `Q @ K.transpose(2, 3)` and
// `torch.matmul`, which PyTorch batches for you.
//
// B = batch, T = time, H = heads, D = head_dim.
#include <array>
#include <cmath>
#include <vector>

#include <xtensor-blas/xlinalg.hpp>
#include <xtensor/xadapt.hpp>
#include <xtensor/xmath.hpp>
#include <xtensor/xrandom.hpp>
#include <xtensor/xreducer.hpp>
#include <xtensor/xsort.hpp>

#include "mha/attention.hpp"
#include "mha/heads.hpp"
#include "mha/scores.hpp"
#include "mha/softmax.hpp"
#include "support/lesson.hpp"

int main(int argc, char** argv) {
    lesson::Info info;
    info.name = "14_xtensor_pitfalls";
    info.summary = "pitfall: four traps of xtensor 0.24.3";
    info.dump_mb = 0.0003;
    return lesson::run(argc, argv, info, [](lesson::Lesson& L) {
        const std::size_t B = L.opt.batch, T = L.opt.time, E = L.opt.d_model;
        const std::size_t H = L.opt.heads;
        using lesson::fixed;
        int rc = 0;
        mha::Rng rng(L.opt.seed);
        const mha::Tensor3 X = mha::randn(B, T, E, rng);
        const mha::MultiHeadAttention m(E, H, mha::Init::xavier(L.opt.seed));
        const mha::Tensor4 S =
            mha::scaled_scores(mha::split_heads(mha::linear(X, m.wq), H),
                               mha::split_heads(mha::linear(X, m.wk), H));

        L.section("1. A lazy reducer inside a broadcast");
        // The one-liner reads outside the tensor (AddressSanitizer calls it a
        // heap-buffer-overflow; on [16, 8, 64, 64] scores it crashed here).
        // So we run it on one small [1, 1, n, n] block of scores that sits at
        // the start of a zero-filled buffer 16 times its size: what it reads
        // past the end is then our zeros, and the wrong numbers repeat.
        const std::size_t n = std::min<std::size_t>(T, 4);
        std::vector<float> buffer(16 * n * n, 0.0f);
        for (std::size_t i = 0; i < n; ++i)
            for (std::size_t j = 0; j < n; ++j) buffer[i * n + j] = S(0, 0, i, j);
        const std::array<std::size_t, 4> shape{1, 1, n, n};
        const auto s = xt::adapt(buffer.data(), n * n, xt::no_ownership(), shape);
        // The trap: max and sum stay lazy inside the broadcast.
        const mha::Tensor4 lazy =
            xt::exp(s - xt::amax(s, {3}, xt::keep_dims)) /
            xt::sum(xt::exp(s - xt::amax(s, {3}, xt::keep_dims)), {3}, xt::keep_dims);
        // The fix: evaluate each reducer into a container first.
        SHOWN(L, const mha::Tensor4 row_max = xt::amax(s, {3}, xt::keep_dims));
        const mha::Tensor4 e = xt::exp(s - row_max);
        const mha::Tensor4 sum = xt::sum(e, {3}, xt::keep_dims);
        const mha::Tensor4 right = e / sum;
        L.sketch("torch.softmax(S, dim=-1)",
                 "exp(S - amax(S, {3}, keep_dims)) / sum(exp(...), {3}, keep_dims)");
        L.let("n", n);
        L.dump("s", s);  // with --dump: the block of scores, for lessons/pytorch/
        L.step("lazy one-liner", "lazy", lazy, "1, 1, n, n", "", "");
        L.step("reducers evaluated first", "right", right, "1, 1, n, n", "(the same softmax)");
        std::string l = "lazy one-liner, row 0: ", r = "evaluated first, row 0:";
        double lazy_sum = 0;
        for (std::size_t j = 0; j < n; ++j) {
            lazy_sum += lazy(0, 0, 0, j);
            l += " " + fixed(lazy(0, 0, 0, j), 4);
            r += " " + fixed(right(0, 0, 0, j), 4);
        }
        std::printf("%s   (row sum %.4g)\n%s   (row sum 1)\n", l.c_str(), lazy_sum,
                    r.c_str());
        const double wrong_by = mha::max_abs_diff(lazy, right);
        L.say("Same formula, other numbers: max |diff| = " + fixed(wrong_by, 4) +
              ". The lazy reducer is stepped through once per element of the "
              "broadcast and walks off its own tensor. Evaluate reducers into a "
              "container (or xt::eval) before they meet a broadcast; the core's "
              "softmax works a row at a time and has no such temporaries.");
        if (n > 1) rc |= L.claim("the lazy one-liner is wrong", wrong_by > 1e-3);
        const mha::Tensor4 block = s;
        rc |= L.claim("evaluated first, it matches mha::softmax",
                      mha::max_abs_diff(right, mha::softmax(block)) < 1e-6);

        L.section("2. auto keeps the recipe, not the result");
        xt::xtensor<float, 1> x = {1.0f, 2.0f, 3.0f};
        auto doubled = x * 2.0f;  // a lazy expression that refers to x
        const float before = doubled(0);
        x(0) = 100.0f;
        std::printf("auto doubled = x * 2;  doubled(0) = %.0f, then x(0) = 100 and "
                    "doubled(0) = %.0f\n", before, doubled(0));
        auto draw = xt::random::rand<float>({3});  // a generator, drawn on reading
        const xt::xtensor<float, 1> a = draw, b = draw;
        std::printf("auto draw = xt::random::rand<float>({3}); read twice: %.4f, %.4f\n",
                    a(0), b(0));
        L.say("Store results in a container (xt::xtensor<float, N> y = ...). An "
              "auto that outlives what it refers to dangles.");
        rc |= L.claim("the auto expression changed under our feet", doubled(0) != before);
        rc |= L.claim("the auto generator gave two different draws", a(0) != b(0));

        L.section("3. xt::linalg::dot does not batch");
        const auto q = xt::xtensor<float, 4>::from_shape({2, 2, 3, 4});
        const auto kt = xt::xtensor<float, 4>::from_shape({2, 2, 4, 3});
        const auto prod = xt::linalg::dot(xt::ones_like(q), xt::ones_like(kt));
        std::printf("dot(q [2, 2, 3, 4], k^T [2, 2, 4, 3]).shape = %s, not [2, 2, 3, 3]\n",
                    mha::shape_of(prod).c_str());
        L.say("torch.matmul treats leading axes as batches; numpy.dot, and so "
              "xt::linalg::dot, pairs every block with every block. Loop over "
              "(b, h) as lesson 03 does, or call mha::scaled_scores.");
        rc |= L.claim("dot of two 4-D tensors has rank 6", prod.dimension() == 6);

        L.section("4. A one-element tensor where n zeros were meant");
        const std::size_t len = 5;
        const xt::xtensor<float, 1> oops({len});  // {5.0f}: the values ctor
        const auto bias = xt::xtensor<float, 1>::from_shape({len});  // 5 numbers
        std::printf("xtensor<float, 1> b({5}): size %zu, b(0) = %.0f;  "
                    "from_shape({5}): size %zu\n", oops.size(), oops(0), bias.size());
        L.say("For rank 1 the braces are read as values, not as a shape. Use "
              "from_shape, or a std::array shape, for a bias of length n.");
        rc |= L.claim("b({5}) holds one number", oops.size() == 1 && bias.size() == len);
        return rc;
    });
}
