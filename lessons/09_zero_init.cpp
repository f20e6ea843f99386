// Lesson 09 (pitfall): zero and constant initialisation.
//
// Shows: what "全零初始化会导致梯度消失" (zero init causes vanishing
// gradients) precisely means, with the hand-written backward pass:
//  1. the article's own example, only wq.weight zero: wq still gets a
//     gradient, nothing vanishes;
//  2. every weight and bias zero: the output is w_o's bias (0), and the
//     gradients of all four weight matrices are exactly 0, at every step;
//  3. a constant non-zero init: every head computes the same thing and gets
//     the same gradient, so SGD never makes the heads differ;
//  4. Xavier: the heads differ from the first step.
// Mirrors: `nn.init.zeros_(self.wq.weight)  # 全零初始化会导致梯度消失` and
// `nn.init.xavier_uniform_(self.wq.weight)`.
//
// B = batch, T = time, E = d_model, H = heads, D = head_dim.
#include <cmath>
#include <string>
#include <vector>

#include "mha/attention.hpp"
#include "mha/backward.hpp"
#include "support/lesson.hpp"

namespace {

// Frobenius norm of the rows h*D .. h*D + D-1 of g [E, E]: head h's share
// of a wq / wk / wv gradient.
double head_norm(const mha::Tensor2& g, std::size_t h, std::size_t D) {
    double s = 0;
    for (std::size_t r = h * D; r < (h + 1) * D; ++r)
        for (std::size_t c = 0; c < g.shape(1); ++c) s += double(g(r, c)) * g(r, c);
    return std::sqrt(s);
}

template <class T>
double norm(const T& g) {
    double s = 0;
    for (float x : g) s += double(x) * x;
    return std::sqrt(s);
}

// L = 0.5 |output - target|^2 averaged over the B*T tokens, so
// dL/doutput = (output - target) / (B*T). One forward, kept for backward.
mha::AttentionGrads grads(const mha::MultiHeadAttention& m, const mha::Tensor3& X,
                          const mha::Tensor3& target) {
    const float tokens = static_cast<float>(X.shape(0) * X.shape(1));
    const mha::ForwardTrace t = m.trace(X, X, X);
    const mha::Tensor3 d_out = (t.output - target) / tokens;
    return mha::backward(m, t, X, X, X, d_out);
}

void sgd(mha::MultiHeadAttention& m, const mha::AttentionGrads& g, float lr) {
    m.wq.weight -= lr * g.wq.weight;  m.wq.bias -= lr * g.wq.bias;
    m.wk.weight -= lr * g.wk.weight;  m.wk.bias -= lr * g.wk.bias;
    m.wv.weight -= lr * g.wv.weight;  m.wv.bias -= lr * g.wv.bias;
    m.w_o.weight -= lr * g.w_o.weight;  m.w_o.bias -= lr * g.w_o.bias;
}

// " 0.1234 0.1234 ..." for the first heads, and the spread max/min - 1 over
// all heads (+inf when a norm is 0 or not finite).
std::string per_head(const mha::Tensor2& g, std::size_t H, std::size_t D,
                     double& spread) {
    std::string s;
    double lo = INFINITY, hi = 0;
    for (std::size_t h = 0; h < H; ++h) {
        const double n = head_norm(g, h, D);
        if (h < 6) s += " " + lesson::fixed(n, 6);
        if (!std::isfinite(n)) lo = 0;
        lo = std::min(lo, n), hi = std::max(hi, n);
    }
    spread = lo > 0 ? hi / lo - 1 : INFINITY;
    return s + (H > 6 ? " ..." : "");
}

}  // namespace

int main(int argc, char** argv) {
    const lesson::Info info{"09_zero_init", "pitfall: zero and constant init", false, 0};
    return lesson::run(argc, argv, info, [](lesson::Lesson& L) {
        const std::size_t B = L.opt.batch, T = L.opt.time, E = L.opt.d_model;
        const std::size_t H = L.opt.heads, D = E / H;
        mha::Rng rng(L.opt.seed);
        const mha::Tensor3 X = mha::randn(B, T, E, rng);       // [B, T, E]
        const mha::Tensor3 target = mha::randn(B, T, E, rng);  // what to fit
        using lesson::fixed;
        int rc = 0;

        L.say("Every step below: the loss L = 0.5 x the mean over the B T tokens of "
              "|output - target|^2, with target a second randn(B, T, E) draw, so "
              "dL/doutput = (output - target) / (B T); the gradients come from the "
              "hand-written backward; SGD then takes w -= lr dL/dw.");

        L.section("1. The article's example: only wq.weight is zero");
        mha::MultiHeadAttention a(E, H, mha::Init::xavier(L.opt.seed));
        a.wq.weight.fill(0.0f);
        L.code("nn.init.zeros_(self.wq.weight)", "a.wq.weight.fill(0.0f);");
        const mha::AttentionGrads ga = grads(a, X, target);
        L.say("|dL/dWq| = " + fixed(norm(ga.wq.weight), 5) + ". Q is then wq's "
              "bias for every token, so all queries attend alike, but the "
              "gradient of wq is not zero: it learns its way out. Nothing "
              "vanishes here.");
        rc |= L.claim("zeroing wq alone leaves dL/dWq non-zero",
                      norm(ga.wq.weight) > 1e-6);

        L.section("2. Every weight and bias zero");
        mha::MultiHeadAttention z(E, H, mha::Init::zero(L.opt.seed));
        for (mha::Linear* l : {&z.wq, &z.wk, &z.wv, &z.w_o}) l->bias.fill(0.0f);
        const mha::Tensor3 out = z.forward(X, X, X).output;
        double biggest = 0;
        std::vector<double> dbo;  // |dL/db_o| at each step
        const float lr = 0.5f;
        for (int step = 0; step < 3; ++step) {
            const mha::AttentionGrads g = grads(z, X, target);
            dbo.push_back(norm(g.w_o.bias));
            std::printf("step %d  |dWq| %.3g  |dWk| %.3g  |dWv| %.3g  |dWo| %.3g"
                        "  |dbo| %.4f\n", step, norm(g.wq.weight), norm(g.wk.weight),
                        norm(g.wv.weight), norm(g.w_o.weight),
                        norm(g.w_o.bias));
            biggest = std::max({biggest, norm(g.wq.weight), norm(g.wk.weight),
                                norm(g.wv.weight), norm(g.w_o.weight)});
            sgd(z, g, lr);
        }
        L.say("The output is w_o.bias for every token (0 at step 0). Q, K and V are 0, so "
              "the context is 0, so dWo = dy^T context = 0, and dy W_o = 0 passes nothing "
              "further back: the four weight matrices stay 0 forever, not a vanishing "
              "gradient but an exactly zero one. Only w_o.bias learns: dL/db_o = b_o - "
              "mean(target), and b_o -= lr (b_o - mean(target)) shrinks that gap by 1 - lr:");
        L.relation("|dbo| step 2 / step 1", dbo[2] / dbo[1], "1 - lr", 1 - lr, 1e-3,
                   "The gap should shrink by exactly 1 - lr.");
        rc |= L.claim("with all zeros the output is the bias (max |out| = " +
                          fixed(double(xt::amax(xt::abs(out))()), 6) + ")",
                      xt::amax(xt::abs(out))() == 0.0f);
        rc |= L.claim("all four weight gradients are exactly 0 for 3 steps",
                      biggest == 0.0);

        L.section("3. Constant init: identical heads stay identical");
        // 1/E keeps the output near the size of the input.
        const float value = 1.0f / static_cast<float>(E);
        mha::MultiHeadAttention c(E, H, mha::Init::constant(value, L.opt.seed));
        for (mha::Linear* l : {&c.wq, &c.wk, &c.wv, &c.w_o}) l->bias.fill(0.0f);
        L.code("nn.init.constant_(w, 1 / E); nn.init.zeros_(b)",
               "mha::MultiHeadAttention c(E, H, mha::Init::constant(value, L.opt.seed));");
        L.say("Three SGD steps with lr = 0.1:");
        double worst = 0;
        for (int step = 0; step < 3; ++step) {
            const mha::AttentionGrads g = grads(c, X, target);
            double spread = 0;
            const std::string s = per_head(g.wv.weight, H, D, spread);
            std::printf("step %d  |dWv| of each head:%s\n", step, s.c_str());
            worst = std::max(worst, spread);
            sgd(c, g, 0.1f);  // lr = 0.1
        }
        // How far head h's rows of wv are from head 0's after the steps.
        double apart = 0;
        for (std::size_t h = 1; h < H; ++h)
            for (std::size_t r = 0; r < D; ++r)
                for (std::size_t col = 0; col < E; ++col)
                    apart = std::max(apart, double(std::fabs(
                        c.wv.weight(h * D + r, col) - c.wv.weight(r, col))));
        L.say("Every head has the same weights, sees the same input and gets the "
              "same gradient, so after any number of steps the heads are still "
              "copies: H heads do the work of one. Largest relative spread "
              "between the heads' gradient norms: " + fixed(worst, 7) +
              "; largest |wv of head h - wv of head 0| after 3 steps: " +
              fixed(apart, 7) + ".");
        rc |= L.claim("constant init: heads' gradients equal within 1e-4",
                      worst < 1e-4);
        rc |= L.claim("constant init: heads' weights equal within 1e-6 after 3 "
                      "steps", apart < 1e-6);

        L.section("4. Xavier: the heads differ");
        const mha::MultiHeadAttention x(E, H, mha::Init::xavier(L.opt.seed));
        double spread = 0;
        const std::string s = per_head(grads(x, X, target).wv.weight, H, D, spread);
        std::printf("step 0  |dWv| of each head:%s\n", s.c_str());
        L.say("Random weights break the symmetry: each head starts elsewhere and "
              "learns something else. Relative spread: " + fixed(spread, 3) + ".");
        if (H > 1) rc |= L.claim("Xavier: the heads' gradients differ", spread > 1e-3);
        return rc;
    });
}
