// Lesson 09 (pitfall): zero and constant initialisation.
//
// Shows what "zero init causes vanishing gradients" means, by the hand-written
// backward: 1. only wq.weight zero (the article's example): nothing vanishes; 2. all
// weights and biases zero: the four weight gradients are exactly 0 at every step;
// 3. constant init: the heads get the same gradient, so SGD never makes them
// differ; 4. Xavier: they differ. Mirrors: `nn.init.zeros_(self.wq.weight)
// # 全零初始化会导致梯度消失` and `nn.init.xavier_uniform_(self.wq.weight)`.
//
// B = batch, T = time, E = d_model, H = heads, D = head_dim.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include <xtensor/xview.hpp>

#include "mha/attention.hpp"
#include "mha/backward.hpp"
#include "support/lesson.hpp"

namespace {

// Frobenius norm (in double) of a tensor, or of a view such as head h's rows.
template <class T> double norm(const T& g) {
    double s = 0;
    for (float x : g) s += double(x) * x;
    return std::sqrt(s);
}

// The gradients of the loss the lesson states: dL/doutput = (output - target) / (B*T).
mha::AttentionGrads grads(const mha::MultiHeadAttention& m, const mha::Tensor3& X,
                          const mha::Tensor3& target) {
    const mha::ForwardTrace t = m.trace(X, X, X);  // one forward, kept for the backward
    const mha::Tensor3 d_out = (t.output - target) / float(X.shape(0) * X.shape(1));
    return mha::backward(m, t, X, X, X, d_out);
}

// The first 6 heads' norms (rows h*D.. of g) as text; spread = max/min - 1 (inf at 0).
std::string per_head(const mha::Tensor2& g, std::size_t H, std::size_t D, double& spread) {
    std::string s;
    double lo = INFINITY, hi = 0;
    for (std::size_t h = 0; h < H; ++h) {
        const double n = norm(xt::view(g, xt::range(h * D, (h + 1) * D), xt::all()));
        if (h < 6) s += " " + lesson::fixed(n, 6);
        lo = std::isfinite(n) ? std::min(lo, n) : 0.0, hi = std::max(hi, n);
    }
    spread = lo > 0 ? hi / lo - 1 : INFINITY;
    return s + (H > 6 ? " ..." : "");
}

}  // namespace

int main(int argc, char** argv) {
    lesson::Info info;
    info.name = "09_zero_init", info.summary = "pitfall: zero and constant init";
    info.default_batch = 32, info.dump_mb = 15.7;  // claims hold at any B; 8 passes of 128: 3 s
    return lesson::run(argc, argv, info, [](lesson::Lesson& L) {
        const std::size_t B = L.opt.batch, T = L.opt.time, E = L.opt.d_model;
        const std::size_t H = L.opt.heads, D = E / H;
        mha::Rng rng(L.opt.seed);
        const mha::Tensor3 X = mha::randn(B, T, E, rng);       // [B, T, E]
        const mha::Tensor3 target = mha::randn(B, T, E, rng);  // what to fit
        using lesson::fixed;
        int rc = 0;
        L.say("Each step: L = 0.5 x the mean over the B T tokens of |output - target|^2, "
              "target: another randn(B, T, E); dL/doutput = (output - target) / (B T); "
              "the hand-written backward gives the other gradients; SGD: w -= lr dL/dw.");

        L.section("1. The article's example: only wq.weight is zero");
        mha::MultiHeadAttention a(E, H, mha::Init::xavier(L.opt.seed));
        SHOWN(L, a.wq.weight.fill(0.0f));
        L.code("nn.init.zeros_(self.wq.weight)");
        const mha::AttentionGrads ga = grads(a, X, target);
        L.say("|dL/dWq| = " + fixed(norm(ga.wq.weight), 5) + ". Q is then wq's bias for every "
              "token, so all queries attend alike, but the gradient of wq is not zero: it "
              "learns its way out. Nothing vanishes here.");
        rc |= L.claim("zeroing wq alone leaves dL/dWq non-zero", norm(ga.wq.weight) > 1e-6);

        L.section("2. Every weight and bias zero");
        mha::MultiHeadAttention z(E, H, mha::Init::zero(L.opt.seed));
        for (mha::Linear* l : {&z.wq, &z.wk, &z.wv, &z.w_o}) l->bias.fill(0.0f);
        const float out_max = xt::amax(xt::abs(z.forward(X, X, X).output))();  // before any step
        double biggest = 0;
        std::vector<double> dbo;  // |dL/db_o| at each step
        const float lr = 0.5f;
        for (int step = 0; step < 3; ++step) {
            const mha::AttentionGrads g = grads(z, X, target);
            dbo.push_back(norm(g.w_o.bias));
            const double n[4] = {norm(g.wq.weight), norm(g.wk.weight), norm(g.wv.weight),
                                 norm(g.w_o.weight)};
            std::printf("step %d  |dWq| %.3g  |dWk| %.3g  |dWv| %.3g  |dWo| %.3g  |dbo| %.4f\n",
                        step, n[0], n[1], n[2], n[3], dbo.back());
            biggest = std::max(biggest, *std::max_element(n, n + 4));
            mha::Sgd{lr}.step(mha::parameters(z, g));  // w -= lr dL/dw
        }
        L.say("The output is w_o.bias for every token (0 at step 0). Q, K and V are 0, so the "
              "context is 0, so dWo = dy^T context = 0, and dy W_o = 0 passes nothing further "
              "back: the four weight matrices stay 0 forever, not a vanishing gradient but an "
              "exactly zero one. Only w_o.bias learns: dL/db_o = b_o - mean(target), and b_o "
              "-= lr (b_o - mean(target)) shrinks that gap by 1 - lr:");
        L.relation("|dbo| step 2 / step 1", dbo[2] / dbo[1], "1 - lr", 1 - lr, 1e-3,
                   "The gap should shrink by exactly 1 - lr.");
        rc |= L.claim("with all zeros the output is the bias (max |out| = " +
                          fixed(out_max, 6) + ")", out_max == 0.0f);
        rc |= L.claim("all four weight gradients are exactly 0 for 3 steps", biggest == 0.0);

        L.section("3. Constant init: identical heads stay identical");
        const float value = 1.0f / static_cast<float>(E);  // keeps the output near the input's size
        SHOWN(L, mha::MultiHeadAttention c(E, H, mha::Init::constant(value, L.opt.seed)));
        for (mha::Linear* l : {&c.wq, &c.wk, &c.wv, &c.w_o}) l->bias.fill(0.0f);
        L.code("nn.init.constant_(w, 1 / E); nn.init.zeros_(b)");
        L.say("Three SGD steps with lr = 0.1:");
        double worst = 0;
        for (int step = 0; step < 3; ++step) {
            const mha::AttentionGrads g = grads(c, X, target);
            double spread = 0;
            std::printf("step %d  |dWv| of each head:%s\n", step,
                        per_head(g.wv.weight, H, D, spread).c_str());
            worst = std::max(worst, spread);
            mha::Sgd{0.1f}.step(mha::parameters(c, g));  // lr = 0.1
        }
        double apart = 0;  // how far head h's rows of wv are from head 0's
        for (std::size_t h = 1; h < H; ++h)
            apart = std::max(apart, mha::max_abs_diff(
                xt::view(c.wv.weight, xt::range(h * D, (h + 1) * D), xt::all()),
                xt::view(c.wv.weight, xt::range(0, D), xt::all())));
        L.say("Every head has the same weights, sees the same input and gets the same "
              "gradient, so after any number of steps the heads are still copies: H heads do "
              "the work of one. Largest relative spread between the heads' gradient norms: " +
              fixed(worst, 7) + "; largest |wv of head h - wv of head 0| after 3 steps: " +
              fixed(apart, 7) + ".");
        rc |= L.claim("constant init: heads' gradients equal within 1e-4", worst < 1e-4);
        rc |= L.claim("constant init: heads' weights equal within 1e-6 after 3 steps",
                      apart < 1e-6);

        L.section("4. Xavier: the heads differ");
        const mha::MultiHeadAttention x(E, H, mha::Init::xavier(L.opt.seed));
        const mha::Tensor2 dwv = grads(x, X, target).wv.weight;  // [E, E]
        double spread = 0;
        std::printf("step 0  |dWv| of each head:%s\n", per_head(dwv, H, D, spread).c_str());
        L.dump("X", X), L.dump("target", target), L.dump_layers(x), L.dump("xavier.dWv", dwv);
        L.dump("dWq", ga.wq.weight), L.dump("zero.fc_out.bias", z.w_o.bias);  // lessons/pytorch/
        L.dump("constant.wv.weight", c.wv.weight);  // after its 3 steps, as zero.fc_out.bias
        L.say("Random weights break the symmetry: each head starts elsewhere and learns "
              "something else. Relative spread: " + fixed(spread, 3) + ".");
        if (H > 1) rc |= L.claim("Xavier: the heads' gradients differ", spread > 1e-3);
        return rc;
    });
}
