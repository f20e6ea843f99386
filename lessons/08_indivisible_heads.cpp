// Lesson 08 (pitfall): a head count that does not divide d_model.
//
// Shows: the four-linear-layers article's `MultiHeadAttention(embed_dim=512,
// num_heads=7)` "报错" case running. The core refuses it with the head
// counts that fit; a silent floor, `head_dim = embed_dim // num_heads` = 73,
// would use 7 x 73 = 511 columns and quietly ignore the last one.
// Mirrors: `self.head_dim = embed_dim // num_heads` and
// `model = MultiHeadAttention(embed_dim=512, num_heads=7)`.
//
// B = batch, T = time, E = d_model, H = heads, D = head_dim.
#include <stdexcept>

#include <xtensor/xview.hpp>

#include "mha/attend.hpp"
#include "mha/attention.hpp"
#include "mha/heads.hpp"
#include "mha/scores.hpp"
#include "mha/softmax.hpp"
#include "support/lesson.hpp"

namespace {

// Attention over the first H * D columns of q, k, v only: what a floored
// head_dim computes. [B, T, E] x 3 -> [B, T, H*D]
mha::Tensor3 floored_attention(const mha::Tensor3& q, const mha::Tensor3& k,
                               const mha::Tensor3& v, std::size_t H,
                               std::size_t D) {
    const mha::Tensor3 q2 = xt::view(q, xt::all(), xt::all(), xt::range(0, H * D));
    const mha::Tensor3 k2 = xt::view(k, xt::all(), xt::all(), xt::range(0, H * D));
    const mha::Tensor3 v2 = xt::view(v, xt::all(), xt::all(), xt::range(0, H * D));
    const mha::Tensor4 w = mha::softmax(
        mha::scaled_scores(mha::split_heads(q2, H), mha::split_heads(k2, H)));
    return mha::merge_heads(mha::attend(w, mha::split_heads(v2, H)));
}

}  // namespace

int main(int argc, char** argv) {
    // The article's 7 heads by default; --heads must not divide --d-model.
    lesson::Info info;
    info.name = "08_indivisible_heads";
    info.summary = "pitfall: num_heads that does not divide d_model";
    info.dump_mb = 21.1;
    info.default_heads = 7;
    info.heads_divide = false;
    return lesson::run(argc, argv, info, [](lesson::Lesson& L) {
        const std::size_t B = L.opt.batch, T = L.opt.time, E = L.opt.d_model;
        const std::size_t bad = L.opt.heads;  // 7 unless --heads says otherwise
        int rc = 0;

        L.section("1. Ask the core for " + std::to_string(bad) + " heads");
        std::string message;
        try {
            SHOWN(L, mha::MultiHeadAttention m(E, bad));
        } catch (const std::invalid_argument& e) {
            message = e.what();
        }
        L.code("MultiHeadAttention(embed_dim=" + std::to_string(E) +
               ", num_heads=" + std::to_string(bad) + ")");
        L.say("The core says: " + message);
        std::string fit;
        for (std::size_t d : mha::divisors(E)) fit += (fit.empty() ? "" : ", ") + std::to_string(d);
        L.say("The head counts that divide " + std::to_string(E) + ": " + fit + ".");
        rc |= L.claim("the core refuses " + std::to_string(bad) + " heads",
                      message.find("not divisible") != std::string::npos);

        L.section("2. What a silent floor would do");
        const std::size_t D = E / bad, used = bad * D;
        L.say("embed_dim // num_heads = " + std::to_string(E) + " // " +
              std::to_string(bad) + " = " + std::to_string(D) + ", and " +
              std::to_string(bad) + " x " + std::to_string(D) + " = " +
              std::to_string(used) + ": " + std::to_string(E - used) +
              " of the " + std::to_string(E) + " columns of Q, K and V: part "
              "of no head. In PyTorch the article's view(batch, -1, " +
              std::to_string(bad) + ", " + std::to_string(D) + ") would then "
              "fail at the first forward, as " + std::to_string(B * T * E) +
              " numbers do not fill whole rows of " + std::to_string(used) +
              ". Code that slices to " + std::to_string(used) + " columns "
              "instead runs, and silently ignores the rest:");
        mha::Rng rng(L.opt.seed);
        const mha::Tensor3 X = mha::randn(B, T, E, rng);
        const mha::MultiHeadAttention m(E, 1, mha::Init::xavier(L.opt.seed));
        L.dump("X0", xt::view(X, xt::range(0, 1))), L.dump_layers(m);  // lessons/pytorch/
        mha::Tensor3 q = mha::linear(X, m.wq), k = mha::linear(X, m.wk);
        mha::Tensor3 v = mha::linear(X, m.wv);  // [B, T, E] each
        SHOWN(L, const mha::Tensor3 out = floored_attention(q, k, v, bad, D));
        L.let("D", D);  // the floored head_dim
        L.step("x = floored attention", "x", out, "B, T, H*D",
               "(" + std::to_string(bad) + " heads of " + std::to_string(D) + ")");
        // Change the ignored columns of q, k and v wildly.
        for (std::size_t c = used; c < E; ++c)
            for (std::size_t b = 0; b < B; ++b)
                for (std::size_t t = 0; t < T; ++t) {
                    q(b, t, c) += 100.0f;
                    k(b, t, c) -= 100.0f;
                    v(b, t, c) *= 50.0f;
                }
        const double change = mha::max_abs_diff(out, floored_attention(q, k, v, bad, D));
        L.say("Adding 100 to the ignored column of Q, and more to K and V, "
              "changes the output by max |diff| = " + lesson::fixed(change, 6) +
              ". The network would never learn from that column, and the "
              "output is " + mha::shape_of(out) + ", which w_o [" +
              std::to_string(E) + ", " + std::to_string(E) + "] cannot take.");
        rc |= L.claim("the ignored columns change nothing (max |diff| = " +
                          lesson::fixed(change, 6) + ")",
                      change == 0.0);
        rc |= L.claim("the floored output is " + std::to_string(used) +
                          " wide, not " + std::to_string(E),
                      out.shape(2) == used && used < E);
        return rc;
    });
}
