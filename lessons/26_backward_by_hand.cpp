// Lesson 26 (past the articles): the backward of attention, by hand.
//
// Adds: every stage's gradient, in the articles' order run backwards (the sections keep
// the forward's numbers). A stage needs only its own forward and the gradient the stage
// after it hands back, so each is checked on its own: a central finite difference in
// double of sum(up * stage(x)) beside it. Mirrors: `loss.backward()` on the articles'
// module. B = batch, T = time, E = d_model, H = heads, D = head_dim = E / H.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <string>

#include <xtensor/xmath.hpp>
#include <xtensor/xbuilder.hpp>
#include <xtensor/xview.hpp>

#include "mha/attention.hpp"
#include "mha/backward.hpp"
#include "mha/heads.hpp"
#include "mha/mask.hpp"
#include "support/grad_check.hpp"
#include "support/lesson.hpp"

using lesson::D2, lesson::D3, lesson::D4, lesson::sci;  // Dn: xt::xtensor<double, n>
using lesson::dbl, lesson::each_head, lesson::over_rows, lesson::rows_times, lesson::worst_fd;

int main(int argc, char** argv) {
    lesson::Info info;
    info.name = "26_backward_by_hand";
    info.summary = "the gradient of every stage, checked by finite differences";
    info.default_batch = 4, info.default_time = 12, info.default_d_model = 32;
    info.default_heads = 4, info.dump_mb = 0.1;
    return lesson::run(argc, argv, info, [](lesson::Lesson& L) {
        const std::size_t B = L.opt.batch, T = L.opt.time, E = L.opt.d_model, H = L.opt.heads;
        double worst = 0;  // over every finite difference
        auto fd_line = [&](const char* what, double w) {
            std::printf("    finite difference, double: worst %.1e of max |%s|\n", w, what);
            worst = std::max(worst, w);
        };

        L.section("The forward, by the core, and the loss");
        mha::Rng rng(L.opt.seed);
        const mha::Tensor3 X = mha::randn(B, T, E, rng), G = mha::randn(B, T, E, rng);
        const mha::MultiHeadAttention m(E, H, mha::Init::xavier(L.opt.seed));
        L.dump("X", X), L.dump("G", G), L.dump_layers(m);  // for lessons/pytorch/
        const mha::Mask causal = mha::causal_mask(T, T);
        SHOWN(L, const mha::Stages s = m.forward_stages(X, X, X, &causal));
        L.recap("output = attention(X, X, X, causal)", "s.output", s.output, "B, T, E");
        L.say("The loss is sum(output * G) for a fixed random G [B, T, E], so dloss/doutput "
              "= G: any loss hands the backward such a tensor. The PyTorch lines name the "
              "tensor whose .grad a step computes (after t.retain_grad(), loss.backward()).");

        L.section("7) The output layer: output = context Wo^T + bo");
        SHOWN(L, const mha::Tensor3 dC = rows_times(G, m.w_o.weight));  // dout Wo
        L.step("dcontext = dout Wo", "dC", dC, "B, T, E",
               "dC, = torch.autograd.grad(loss, context, retain_graph=True)");
        fd_line("dC", worst_fd(dbl(s.context), dbl(G), [&](const D3& c) {
            return D3(rows_times(c, D2(xt::transpose(dbl(m.w_o.weight))))); }, dbl(dC)));
        SHOWN(L, const mha::Tensor2 dWo = over_rows(G, s.context));  // dout^T context
        L.step("dWo = dout^T context", "dWo", dWo, "E, E", "self.fc_out.weight.grad");
        fd_line("dWo", worst_fd(dbl(m.w_o.weight), dbl(G), [&](const D2& w) {
            return D3(rows_times(dbl(s.context), D2(xt::transpose(w)))); }, dbl(dWo)));

        L.section("6) The merge: context = merge(A)");
        SHOWN(L, const mha::Tensor4 dA = mha::split_heads(dC, H));  // a merge's gradient
        L.step("dattended = split(dcontext)", "dA", dA, "B, H, T, D",
               "dA, = torch.autograd.grad(loss, x_before_merge)  # [B, H, T, D]");
        const D4 A = dbl(mha::split_heads(s.context, H));
        fd_line("dA", worst_fd(A, dbl(dC), [&](const D4& a) {
            const D4 by_time = xt::transpose(a, {0, 2, 1, 3});  // [B, T, H, D]
            return D3(xt::reshape_view(by_time, std::array<std::size_t, 3>{B, T, E}));
        }, dbl(dA)));

        L.section("5) Weights x V: A = P v");
        SHOWN(L, const mha::Tensor4 dP = each_head(dA, s.v, false, true));  // dA v^T
        L.step("dweights = dattended v^T", "dP", dP, "B, H, Tq, Tk", "attention.grad");
        fd_line("dP", worst_fd(dbl(s.weights), dbl(dA), [&](const D4& p) {
            return each_head(p, dbl(s.v), false, false); }, dbl(dP)));
        SHOWN(L, const mha::Tensor4 dv = each_head(s.weights, dA, true, false));
        L.step("dv = weights^T dattended", "dv", dv, "B, H, Tk, D", "V.grad  # split");
        fd_line("dv", worst_fd(dbl(s.v), dbl(dA), [&](const D4& v) {
            return each_head(dbl(s.weights), v, false, false); }, dbl(dv)));

        L.section("4) The softmax, on one row, then on all");
        const std::size_t i = std::min<std::size_t>(T, 5) - 1;  // sees keys 0..i
        mha::Tensor2 J({i + 1, i + 1});  // [i+1, i+1]: dp_j / ds_k = p_j (delta_jk - p_k)
        for (std::size_t j = 0; j <= i; ++j)
            for (std::size_t k = 0; k <= i; ++k)
                J(j, k) = s.weights(0, 0, i, j) * ((j == k) - s.weights(0, 0, i, k));
        L.table("J = diag(p) - p p^T, batch 0, head 0, query " + std::to_string(i), J, {}, 3);
        double row_gap = 0;  // J dp against the row form below, on that row
        // [B, H, T, 1], evaluated first (lesson 14)
        const mha::Tensor4 rowdot = xt::sum(dP * s.weights, {3}, xt::keep_dims);
        SHOWN(L, const mha::Tensor4 dS = s.weights * (dP - rowdot));  // P (dP - sum dP P)
        for (std::size_t j = 0; j <= i; ++j) {
            double Jdp = 0;
            for (std::size_t k = 0; k <= i; ++k) Jdp += J(j, k) * dP(0, 0, i, k);
            row_gap = std::max(row_gap, std::fabs(Jdp - dS(0, 0, i, j)));
        }
        L.say("J is symmetric, so dS = J dP row by row; written out, J dP = p (dP - sum_k "
              "p_k dP_k): one product and a sum per row, never the [T, T] matrix. On query " +
              std::to_string(i) + " the two differ by at most " + sci(row_gap) + ". A masked "
              "score is the fill, a constant: its weight is 0, so P * (...) gives it 0 too.");
        L.step("dscore = P * (dP - rowsum(dP * P))", "dS", dS, "B, H, Tq, Tk", "score.grad");
        fd_line("dS", worst_fd(dbl(s.scores), dbl(dP), [&](const D4& sc) {
            const D4 top = xt::amax(sc, {3}, xt::keep_dims);  // evaluated: lesson 14
            const D4 e = xt::exp(sc - top);
            const D4 sum = xt::sum(e, {3}, xt::keep_dims);
            return D4(e / sum); }, dbl(dS)));

        L.section("3) The scale and Q K^T: S = q k^T / sqrt(D)");
        const float scale = 1.0f / std::sqrt(float(m.head_dim()));
        SHOWN(L, const mha::Tensor4 dq = each_head(dS, s.k, false, false) * scale);
        L.step("dq = scale dS k", "dq", dq, "B, H, Tq, D", "Q.grad  # split");
        fd_line("dq", worst_fd(dbl(s.q), dbl(dS), [&](const D4& q) {
            return D4(each_head(q, dbl(s.k), false, true) * double(scale)); }, dbl(dq)));
        SHOWN(L, const mha::Tensor4 dk = each_head(dS, s.q, true, false) * scale);
        L.step("dk = scale dS^T q", "dk", dk, "B, H, Tk, D", "K.grad  # split");
        fd_line("dk", worst_fd(dbl(s.k), dbl(dS), [&](const D4& k) {
            return D4(each_head(dbl(s.q), k, false, true) * double(scale)); }, dbl(dk)));

        L.section("2) The split, 1) the projections: Q = X Wq^T + bq, and K, V");
        SHOWN(L, const mha::Tensor3 dQ = mha::merge_heads(dq));  // a split's gradient
        const mha::Tensor3 dK = mha::merge_heads(dk), dV = mha::merge_heads(dv);
        SHOWN(L, const mha::Tensor2 dWq = over_rows(dQ, X));  // dQ^T X
        L.step("dWq = dQ^T X", "dWq", dWq, "E, E", "self.w_q.weight.grad");
        fd_line("dWq", worst_fd(dbl(m.wq.weight), dbl(dQ), [&](const D2& w) {
            return D3(rows_times(dbl(X), D2(xt::transpose(w)))); }, dbl(dWq)));
        // X is read thrice: dX = dQ Wq + dK Wk + dV Wv, one product as PyTorch's in_proj
        const mha::Tensor3 dQKV = xt::concatenate(xt::xtuple(dQ, dK, dV), 2);  // [B,T,3E]
        const mha::Tensor2 W = xt::concatenate(xt::xtuple(m.wq.weight, m.wk.weight,
                                                          m.wv.weight), 0);  // [3E, E]
        SHOWN(L, const mha::Tensor3 dX = rows_times(dQKV, W));
        L.step("dX = [dQ dK dV] [Wq; Wk; Wv]", "dX", dX, "B, T, E", "X.grad");
        fd_line("dX", worst_fd(dbl(X), dbl(dQKV), [&](const D3& x) {
            return D3(rows_times(x, D2(xt::transpose(dbl(W))))); }, dbl(dX)));

        L.section("The same gradients from the core's backward_stages()");
        SHOWN(L, const auto g = mha::backward_stages(m, X, X, X, G, &causal));
        L.code("loss.backward()");
        const double core = std::max({mha::max_abs_diff(dX, g.query + g.key + g.value),
                                      mha::max_abs_diff(dWq, g.wq.weight),
                                      mha::max_abs_diff(dWo, g.w_o.weight)});
        int rc = L.check("mha::backward_stages(): dX, dWq, dWo", core, 1e-5);
        rc |= L.claim("every finite difference within 1e-4 of max |grad| (worst " +
                      sci(worst) + ")", worst <= 1e-4);
        return rc | L.claim("dS = J dP on query " + std::to_string(i), row_gap <= 1e-6);
    });
}
