// Lesson 19 (past the articles): heads that learn.
//
// Task: reverse T tokens. The answer at i is the token at T-1-i and attention is the
// only path between positions, so a head that solves it must weigh the anti-diagonal.
// Trained with our own gradients (no autograd), the pattern forms; from zero init
// the loss stays stuck. Mirrors: `readout(attn(emb(x) + pe))`,
// `F.cross_entropy(logits.view(-1, V), y.view(-1))`, `torch.optim.Adam`.
// B = sequences per step, T = tokens, V = vocabulary, E = d_model, H = heads.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "mha/model/train.hpp"
#include "support/lesson.hpp"

int main(int argc, char** argv) {
    lesson::Info info;
    info.name = "19_heads_learn", info.summary = "train one attention layer to reverse a sequence";
    info.draws = true, info.dump_mb = 0.2, info.default_heads = 2;
    info.default_batch = 64, info.default_time = 8, info.default_d_model = 32, info.tiny_batch = 16;
    info.extra = {{"--steps", "N", "training steps", 600, 4, 100000},
                  {"--lr", "R", "Adam's learning rate", 0.05, 1e-6, 1, false},
                  {"--vocab", "V", "tokens in the vocabulary", 10, 2, 1000}};
    return lesson::run(argc, argv, info, [](lesson::Lesson& L) {
        const std::size_t B = L.opt.batch, T = L.opt.time, E = L.opt.d_model, H = L.opt.heads;
        const std::size_t V = std::size_t(L.opt.extra.at("--vocab"));
        const int steps = int(L.opt.extra.at("--steps"));
        const float lr = float(L.opt.extra.at("--lr"));
        const double guess = std::log(double(V));  // the loss of a uniform guess
        using lesson::fixed, lesson::fixed_list;
        L.let("V", V);

        L.section("1. The task and the model");
        mha::Rng data(L.opt.seed);
        mha::TokenBatch d = mha::reverse_batch(B, T, V, data);
        mha::Tokens &x = d.x, &y = d.y;
        const std::vector<double> x0(x.begin(), x.begin() + T), y0(y.begin(), y.begin() + T);
        L.say("x =" + fixed_list(x0, 0, 16) + "   ->   y =" + fixed_list(y0, 0, 16));
        SHOWN(L, mha::SequenceModel m(V, T, E, H, mha::Init::xavier(L.opt.seed)));
        L.step("pe", "m.positions", m.positions, "T, E",
               "pe[p, 2i] = sin(p / 10000**(2i/E)); pe[p, 2i+1] = cos(...)");
        SHOWN(L, mha::SequenceTrace t = mha::forward(m, x));
        L.step("logits = readout(attn(x, x, x))", "t.logits", t.logits, "B, T, V",
               "logits = readout(attn(emb(x) + pe))", lesson::Show::shape_only);
        mha::CrossEntropy ce = mha::cross_entropy(t.logits, y);
        L.say("Loss before training: " + fixed(ce.loss, 4) + " (a uniform guess: ln V = " +
              fixed(guess, 4) + "). The answer at i must be read from key T-1-i.");
        const mha::Tensor4 before = t.attn.weights;
        L.dump("weights.before", before);

        L.section("2. Step 1, one Adam update by hand");
        const mha::SequenceGrads g = mha::backward(m, t, x, ce.d_logits);
        mha::Adam adam(lr);
        const float w0 = m.attn.wq.weight(0, 0), g0 = g.attn.wq.weight(0, 0);
        SHOWN(L, adam.step(mha::parameters(m, g)));
        L.code("loss.backward(); opt.step()");
        const float m1 = adam.first_moment(1)[0], v1 = adam.second_moment(1)[0];
        std::printf("wq.weight[0, 0] = %.6f, its gradient g = %.4e\n"
                    "m = 0.1 g = %.4e,  v = 0.001 g^2 = %.4e\n"
                    "m_hat = m / (1 - 0.9) = %.4e,  v_hat = v / (1 - 0.999) = %.4e\n"
                    "w - lr m_hat / (sqrt(v_hat) + 1e-8) = %.6f (lr = %g)\n", w0, g0, m1, v1,
                    m1 / 0.1, v1 / 0.001, m.attn.wq.weight(0, 0), lr);
        L.say("At step 1, m_hat / sqrt(v_hat) = g / |g|: every weight moves by lr, "
              "whatever the size of its gradient.");

        L.section("3. Training: loss, accuracy, weight on the anti-diagonal per head");
        std::vector<double> losses{ce.loss};
        const std::vector<double> marks{0.25, 0.5, 0.9};  // on the anti-diagonal; chance: 1/T
        std::vector<std::pair<int, mha::Tensor4>> frames;  // (step, weights [B, H, T, T])
        std::string solved;  // when accuracy first passed 90%
        for (int step = 2; step <= steps; ++step) {
            d = mha::reverse_batch(B, T, V, data);  // a fresh batch every step
            const mha::StepReport r = mha::train_step(m, adam, d, t);  // section 2, by the core
            losses.push_back(r.loss);
            const std::vector<double> on = mha::anti_diagonal_weights(t.attn.weights);  // per head
            while (frames.size() < marks.size() &&
                   *std::max_element(on.begin(), on.end()) > marks[frames.size()])
                frames.emplace_back(step, t.attn.weights);
            if (solved.empty() && r.correct > 0.9 * B * T)
                solved = "Accuracy first passed 90% at step " + std::to_string(step) +
                         ", the heads' weight on the pattern then:" + fixed_list(on, 2) + ".";
            if (step % std::max(1, steps / 12) == 0 || step == steps)
                std::printf("step %5d  loss %.4f  accuracy %5.1f%%  on pattern:%s\n", step, r.loss,
                            100.0 * r.correct / double(B * T), fixed_list(on, 2).c_str());
        }
        std::printf("loss %s\n", lesson::sparkline(losses).c_str());
        if (!solved.empty()) L.say(solved);
        std::vector<std::pair<std::string, const mha::Tensor4*>> shown{{"before training", &before}};
        for (auto& [step, w] : frames) shown.push_back({"step " + std::to_string(step), &w});
        shown.push_back({"step " + std::to_string(steps), &t.attn.weights});
        L.explore("the heads learning to reverse", "training", shown);
        L.dump("weights.end", t.attn.weights);

        L.section("4. The heads' weights as they form (mean over a batch)");
        L.heads("before training", "19_weights_before", before);
        for (std::size_t i = 0; i < marks.size(); ++i) {
            const std::string past = fixed(marks[i], 2), file = "past_" + past.substr(2);
            if (i == 1) L.section("5. The heads' weights as they form, continued");
            if (i >= frames.size())
                L.say("(No head passed " + past + " in " + std::to_string(steps) + " steps.)");
            else
                L.heads("step " + std::to_string(frames[i].first) + ", a head past " + past,
                        "19_weights_" + file, frames[i].second),
                    L.dump("weights." + file, frames[i].second);
        }
        L.section("6. The heads' weights at the end");
        L.heads("step " + std::to_string(steps), "19_weights_end", t.attn.weights);
        L.say("Row i is query i: the head that learned the task weighs key T-1-i, where the "
              "answer is (section 8 measures it).");

        L.section("7. The same training from zero init");
        mha::SequenceModel z(V, T, E, H, mha::Init::zero(L.opt.seed));
        for (mha::Linear* l : {&z.attn.wq, &z.attn.wk, &z.attn.wv, &z.attn.w_o}) l->bias.fill(0);
        mha::Adam adam_z(lr);
        mha::Rng data_z(L.opt.seed);
        std::vector<double> zero_losses;
        for (int step = 1; step <= steps; ++step) {
            d = mha::reverse_batch(B, T, V, data_z);
            zero_losses.push_back(mha::train_step(z, adam_z, d, t).loss);
        }
        double biggest = 0;  // of |w|: Adam moves a w by about lr at any gradient that is not 0
        for (const mha::Linear* l : {&z.attn.wq, &z.attn.wk, &z.attn.wv, &z.attn.w_o})
            biggest = std::max(biggest, double(xt::amax(xt::abs(l->weight))()));
        std::printf("loss %s\n", lesson::sparkline(zero_losses).c_str());
        L.say("Zero weights make V = 0 and the context 0, so dW_o = dy^T context = 0 and d context "
              "= dy W_o = 0: nothing reaches the attention layer. The output is w_o.bias "
              "everywhere, at best a uniform guess, give or take a batch's noise.");
        int rc = L.claim("zero init: the four weight matrices stay exactly 0", biggest == 0.0);
        rc |= L.claim("zero init: the loss ends within 5% of ln V: " +
                      fixed(zero_losses.back(), 4) + " against " + fixed(guess, 4),
                      std::fabs(zero_losses.back() / guess - 1) < 0.05);

        L.section("8. Fresh sequences");
        mha::Rng fresh(L.opt.seed + 1000);
        d = mha::reverse_batch(1000, T, V, fresh);
        t = mha::forward(m, x);
        ce = mha::cross_entropy(t.logits, y);
        const double acc = 100.0 * ce.correct / double(1000 * T);
        const std::vector<double> on = mha::anti_diagonal_weights(t.attn.weights);  // per head
        const std::size_t best = std::max_element(on.begin(), on.end()) - on.begin();
        rc |= L.claim("the trained layer reverses at least 99% of fresh tokens", acc >= 99.0);
        rc |= L.claim("one head puts more than 0.9 of its weight on the anti-diagonal",
                      on[best] > 0.9);
        std::printf("accuracy on 1000 fresh sequences: %.1f%%\nweight on the expected "
                    "pattern: %.2f (head %zu)\n", acc, on[best], best);
        return rc;
    });
}
