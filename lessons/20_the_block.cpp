// Lesson 20 (past the articles): the block around attention.
//
// Adds: what a Transformer wraps around the module of lesson 07. LayerNorm,
// written out; the residual connection; the feed-forward with GELU; together
// the pre-norm block, then L blocks between embeddings and a read-out: a
// language model, the shape of GPT-2 and nanoGPT, with PyTorch's names.
// Mirrors: `nn.TransformerEncoderLayer(E, H, F, dropout=0, activation="gelu",
// batch_first=True, norm_first=True)` and its forward `x = x + self_attn(norm1(x))`,
// `x = x + linear2(gelu(linear1(norm2(x))))`.
//
// B = batch, T = time, E = d_model, H = heads, F = hidden = 4 E, V = vocabulary.
#include <cmath>
#include <string>

#include <xtensor/xnorm.hpp>
#include <xtensor/xview.hpp>

#include "mha/model/language_model.hpp"
#include "mha/model/reference_model.hpp"
#include "support/lesson.hpp"

int main(int argc, char** argv) {
    lesson::Info info;
    info.name = "20_the_block";
    info.summary = "LayerNorm, residuals, GELU: the Transformer block";
    info.dump_mb = 234.9;
    return lesson::run(argc, argv, info, [](lesson::Lesson& L) {
        const std::size_t B = L.opt.batch, T = L.opt.time, E = L.opt.d_model, H = L.opt.heads;
        const std::size_t F = 4 * E;  // the feed-forward's width, as in GPT-2 and the 2017 paper
        using lesson::fixed;
        L.let("F", F);

        L.section("1. LayerNorm, written out");
        mha::Rng rng(L.opt.seed);
        SHOWN(L, const mha::Tensor3 X = mha::randn(B, T, E, rng) * 3.0f + 1.0f);  // mean 1, std 3
        L.step("X = 3 randn(B, T, E) + 1", "X", X, "B, T, E", "x = 3 * torch.randn(B, T, E) + 1");
        const mha::Block blk(E, H, F, L.opt.seed);
        // Each position on its own: its E numbers shifted to mean 0, scaled to
        // variance 1, then times weight, plus bias (learned; 1 and 0 at first).
        mha::Tensor3 h1 = mha::Tensor3::from_shape({B, T, E});
        for (std::size_t b = 0; b < B; ++b)
            for (std::size_t t = 0; t < T; ++t) {
                double mean = 0, var = 0;
                for (std::size_t c = 0; c < E; ++c) mean += X(b, t, c) / double(E);
                for (std::size_t c = 0; c < E; ++c) var += std::pow(X(b, t, c) - mean, 2) / double(E);
                for (std::size_t c = 0; c < E; ++c) {
                    const float z = float((X(b, t, c) - mean) / std::sqrt(var + blk.norm1.eps));
                    SHOWN(L, h1(b, t, c) = z * blk.norm1.weight(c) + blk.norm1.bias(c));
                }
            }
        L.step("h1 = norm1(X)", "h1", h1, "B, T, E", "self.norm1(x)  # nn.LayerNorm(E), eps 1e-5");
        auto stats = [&](const mha::Tensor3& x) {  // position (0, 0): mean and standard deviation
            double mean = 0, var = 0;
            for (std::size_t c = 0; c < E; ++c) mean += x(0, 0, c) / double(E);
            for (std::size_t c = 0; c < E; ++c) var += std::pow(x(0, 0, c) - mean, 2) / double(E);
            return "mean " + fixed(mean, 3) + ", std " + fixed(std::sqrt(var), 3);
        };
        L.say("Position 0 before: " + stats(X) + "; after: " + stats(h1) + ". Whatever scale "
              "the stream has grown to, attention and the feed-forward read it at one scale.");
        int rc = L.check("mha::layer_norm(X, blk.norm1)",
                         mha::max_abs_diff(h1, mha::layer_norm(X, blk.norm1)), 1e-5);

        L.section("2. Attention, and the residual connection");
        mha::ForwardTrace attn;
        SHOWN(L, blk.self_attn.trace_into(attn, h1, h1, h1, mha::causal));  // lesson 07's, causal
        L.step("a = self_attn(h1, h1, h1)", "attn.output", attn.output, "B, T, E",
               "self.self_attn(x, x, x, attn_mask=causal)[0]");
        SHOWN(L, const mha::Tensor3 x1 = X + attn.output);  // [B, T, E]
        L.step("x1 = X + a", "x1", x1, "B, T, E", "x = x + self._sa_block(self.norm1(x), ...)");
        const double a_norm = double(xt::norm_l2(attn.output)());
        const double ratio = a_norm / double(xt::norm_l2(X)());
        L.say("Attention does not replace X, it adds to it: |a| / |X| = " + fixed(ratio, 3) +
              " (X has std 3 and mean 1; against what attention read, |a| / |h1| = " +
              fixed(a_norm / double(xt::norm_l2(h1)()), 3) + "). The stream carries every "
              "layer's additions, and the gradient has a path back that no layer can block "
              "(dx1/dX includes the identity).");

        L.section("3. The feed-forward: Linear, GELU, Linear, at every position");
        const mha::Tensor3 h2 = mha::layer_norm(x1, blk.norm2);  // [B, T, E]
        SHOWN(L, mha::Tensor3 hidden = mha::linear(h2, blk.ff.linear1));  // [B, T, F]
        L.step("u = linear1(norm2(x1))", "hidden", hidden, "B, T, F", "self.linear1(self.norm2(x))",
               lesson::Show::shape_only);
        for (float& u : hidden) {
            SHOWN(L, u = 0.5f * u * (1.0f + std::erf(u / std::sqrt(2.0f))));  // u Φ(u)
        }
        L.step("g = gelu(u)", "hidden", hidden, "B, T, F", "F.gelu(u)  # the erf form",
               lesson::Show::shape_only);
        std::string curve;
        for (float u : {-3.0f, -1.0f, -0.5f, 0.0f, 0.5f, 1.0f, 3.0f})
            curve += " gelu(" + fixed(u, 1) + ") = " + fixed(mha::gelu(u), 3) + (u < 3 ? "," : "");
        L.say("GELU is u times the chance that a standard normal is below u:" + curve +
              ". ReLU's shape, smooth at 0, a little below 0 for small negative u.");
        SHOWN(L, const mha::Tensor3 y = x1 + mha::linear(hidden, blk.ff.linear2));  // [B, T, E]
        L.step("y = x1 + linear2(g)", "y", y, "B, T, E", "x = x + self._ff_block(self.norm2(x))");
        L.say("Attention moved information between positions; the feed-forward computes on "
              "what each position now holds, the same weights everywhere. Its weights, 2 E F = " +
              std::to_string(2 * E * F) + ", are twice attention's 4 E^2 = " +
              std::to_string(4 * E * E) + ".");

        L.section("4. The whole block, by the core");
        mha::BlockTrace kept;
        SHOWN(L, const mha::Tensor3 fast = mha::block_forward(blk, X, true, &kept));
        L.step("y = layer(X, src_mask=causal)", "fast", fast, "B, T, E",
               "nn.TransformerEncoderLayer(E, H, F, 0, 'gelu', norm_first=True)",
               lesson::Show::shape_only);
        rc |= L.check("block_forward(), the engine's", mha::max_abs_diff(y, fast), 2e-5);
        // The oracle is plain loops in double: one sequence is enough to compare.
        const mha::Tensor3 X0 = xt::view(X, xt::range(0, 1));
        const mha::Tensor3d want = mha::reference_block(blk, xt::cast<double>(X0), true);
        double worst = 0;
        for (std::size_t i = 0; i < want.size(); ++i)
            worst = std::max(worst, std::fabs(fast.data()[i] - want.data()[i]));
        rc |= L.check("reference_block(), double, sequence 0", worst, 2e-5);

        L.section("5. A language model: L blocks between embeddings and a read-out");
        const std::string text = "attention is all you need";  // its letters are the tokens
        const std::string alphabet = " acdeilnostuy";             // the letters it uses
        const std::size_t V = alphabet.size(), n = text.size();
        mha::Tokens ids = mha::Tokens::from_shape({1, n});
        for (std::size_t i = 0; i < n; ++i) ids(0, i) = std::int32_t(alphabet.find(text[i]));
        L.let("V", V), L.let("n", n);
        L.say("Tokens: the letters of \"" + text + "\" as ids into \"" + alphabet + "\".");
        mha::LanguageModel lm = mha::make_language_model({V, 32, E, H, F, 2}, L.opt.seed);
        SHOWN(L, const mha::ModelTrace t = mha::forward(lm, ids));
        L.step("logits = head(norm(blocks(tok_emb(idx) + pos_emb(arange(n)))))", "t.logits",
               t.logits, "1, n, V", "logits = model(idx)  # two layers, causal",
               lesson::Show::shape_only);
        L.say("Its " + std::to_string(mha::parameter_count(lm)) + " parameters carry PyTorch's names (tok_emb.weight, "
              "layers.0.self_attn.in_proj_weight, layers.0.linear1.weight, ..., head.bias): "
              "tools/mha_forward --model runs a PyTorch state_dict. Untrained, its logits are "
              "noise; lesson 21 trains one and watches its heads.");
        const mha::Tensor3d logits = mha::reference_logits(lm, ids);
        worst = 0;
        for (std::size_t i = 0; i < logits.size(); ++i)
            worst = std::max(worst, std::fabs(t.logits.data()[i] - logits.data()[i]));
        rc |= L.check("reference_logits(), loops in double", worst, 1e-5);
        return rc;
    });
}
