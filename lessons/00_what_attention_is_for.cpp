// Lesson 00: what attention is for, over six words a student can read.
//
// Adds: attention as a lookup that is soft: a query scores every key (q . k), the
// softmax turns the scores into weights, the output mixes the values by them. Each q, k,
// v is made by hand from named features; two heads ask two questions; wq, wk, wv last.
// Mirrors: the handwritten-course article's comment under `self.w_q`; attention(X, X, X).
//
// T = words (6), E = features (12: what a word is, where it is), H = heads (2), D = 6.
#include <cmath>

#include <xtensor-blas/xlinalg.hpp>
#include <xtensor/xbuilder.hpp>
#include <xtensor/xview.hpp>

#include "mha/attention.hpp"
#include "support/lesson.hpp"

enum Feature { noun, verb, animal, place, article, prep };  // what a word is
using Strings = std::vector<std::string>;
struct Lookup { mha::Tensor2 scores, weights, out; };  // [Tq, Tk], [Tq, Tk], [Tq, D]

// Every query against every key at once: row i of q k^T holds q_i . k_j for each j.
// With print, each line goes out beside the article's PyTorch (section 2).
static Lookup attend(lesson::Lesson& L, const mha::Tensor2& q, const mha::Tensor2& k,
                     const mha::Tensor2& v, bool print = false) {
    Lookup a;
    SHOWN(L, a.scores = xt::linalg::dot(q, xt::transpose(k)));  // [Tq, D] x [D, Tk]
    if (print) L.code("scores = q @ k.T  # 问他（key）哪些数据是跟我匹配的上的");
    a.weights = a.scores;
    for (std::size_t i = 0; i < q.shape(0); ++i) {  // each query's e^s / sum e^s
        auto w = xt::row(a.weights, i);  // less the max only so that e^s cannot overflow
        SHOWN(L, w = xt::exp(w - xt::amax(w)()); w /= xt::sum(w)());
    }
    if (print) L.code("weights = scores.softmax(-1)  # 匹配上之后，加权");
    SHOWN(L, a.out = xt::linalg::dot(a.weights, v));  // [Tq, Tk] x [Tk, D] -> [Tq, D]
    if (print) L.code("out = weights @ v  # key所对应的value值进行加权组合");
    return a;
}

int main(int argc, char** argv) {
    lesson::Info info;
    info.name = "00_what_attention_is_for";
    info.summary = "a lookup that is soft, over six words";
    info.draws = true, info.dump_mb = 0.01, info.default_heads = 2, info.fixed_sizes = true;
    info.default_batch = 1, info.default_time = 6, info.default_d_model = 12;
    return lesson::run(argc, argv, info, [](lesson::Lesson& L) {
        const std::size_t T = L.opt.time, E = L.opt.d_model, D = E / L.opt.heads;
        using lesson::fixed;
        const Strings words{"the", "cat", "sat", "on", "the", "mat"};
        const Strings what{"noun", "verb", "animal", "place", "article", "prep"};
        Strings features = what, twice = what;  // x's columns (what, where), out's
        for (std::size_t p = 0; p < T; ++p) features.push_back("pos" + std::to_string(p));
        twice.insert(twice.end(), what.begin(), what.end());

        L.section("1. Six words, and what each one is");
        const std::vector<std::vector<Feature>> has{
            {article}, {noun, animal}, {verb}, {prep}, {article}, {noun, place}};
        SHOWN(L, mha::Tensor2 x = xt::zeros<float>({T, E}));  // [T, E]
        xt::view(x, xt::all(), xt::range(D, E)) = xt::eye<float>(T);  // pos0 ... pos5
        for (std::size_t i = 0; i < T; ++i)
            for (Feature f : has[i]) x(i, f) = 1;
        L.table("x: 1 where a word has the feature", x, {words, features}, 0);
        L.step("x = the words' features", "x", x, "T, E", "x = torch.tensor(features)",
               lesson::Show::shape_only);
        L.say("Nothing is learned: a 1 says the word has the feature (prep: "
              "preposition). The two 'the's differ only in where they stand.");

        L.section("2. Under self.w_q, the handwritten-course article: a soft lookup");
        std::printf(  // its comment, verbatim
            "  简单来说就是去寻找一些query去跟key，问他（key）哪些数据是跟我匹配的上的，\n"
            "  匹配上之后，key所对应的value值进行加权组合，最终得到attention的输出\n");
        L.say("  (Simply put: queries ask the keys which data match me; once matched, "
              "the keys' values are combined by weight, giving attention's output.)");
        const mha::Tensor2 keys = xt::view(x, xt::all(), xt::range(0, D));  // [T, D]
        mha::Tensor2 q = xt::zeros<float>({std::size_t(1), D});  // [1, D]: one question
        q(0, noun) = q(0, animal) = 1;  // what a kitten is: asked of what each word is
        const Lookup one = attend(L, q, keys, keys, true);  // values: what each word is
        L.table("out: a mix of what the words are", one.out, {{"out"}, what}, 3);
        L.say("A dictionary has no key 'kitten'; a soft lookup needs none. cat shares "
              "two features with a kitten's q (noun 1, animal 1), mat one: cat gets " +
              fixed(one.weights(0, 1)) + ", mat " + fixed(one.weights(0, 5)) + ", "
              "every other word " + fixed(one.weights(0, 0)) + ".");

        L.section("3. One key made to match better");
        mha::Tensor2 louder = keys;  // [T, D]
        xt::row(louder, 1) *= 2;     // cat's key says noun, animal twice as loud
        const Lookup two = attend(L, q, louder, keys);
        const mha::Tensor2 rows = xt::concatenate(  // [4, T]
            xt::xtuple(one.scores, one.weights, two.scores, two.weights));
        L.table("q against every key, before and after cat's key is doubled", rows,
                {{"score", "weight", "score after", "weight after"}, words}, 3);
        L.say("What cat wins, the others lose in proportion: mat's weight over the first "
              "'the''s is " + fixed(one.weights(0, 5) / one.weights(0, 0)) + " before, " +
              fixed(two.weights(0, 5) / two.weights(0, 0)) + " after (e^(1 - 0)).");

        L.section("4. Two heads: two questions of the same words, one output");
        const std::pair<Feature, Feature> rule[] = {{article, noun}, {noun, verb},
            {verb, noun}, {verb, animal}, {prep, noun}, {prep, place}};  // (kind, asks)
        mha::Tensor2 q0 = xt::zeros<float>({T, D});  // [T, D]; 2, not 1: sharper
        for (auto [kind, asks] : rule) xt::col(q0, asks) += 2 * xt::col(x, kind);
        const mha::Tensor2 where = xt::view(x, xt::all(), xt::range(D, E));  // [T, D]
        const mha::Tensor2 q1 = 4 * xt::eye<float>({T, D}, -1);  // [T, D]: i asks pos i-1
        const Lookup h0 = attend(L, q0, keys, keys), h1 = attend(L, q1, where, keys);
        mha::Tensor4 weights = xt::zeros<float>({std::size_t(1), std::size_t(2), T, T});
        for (int h = 0; h < 2; ++h) xt::view(weights, 0, h) = (h ? h1 : h0).weights;
        L.heads("what each word reads", "00_two_heads", weights, {words, words});
        mha::Tensor2 out = xt::concatenate(xt::xtuple(h0.out, h1.out), 1);  // [T, E]
        L.table("out: head 0's answer, then head 1's, side by side", out, {words, twice});
        L.say("Head 0 asks by what a word is: an article wants a noun, a noun its "
              "verb, the verb an animal, the preposition a place. Head 1 asks by "
              "where, for the word just before (" + fixed(h1.weights(2, 1)) + "); the "
              "first 'the' has none: 1/6 = " + fixed(h1.weights(0, 0)) + " each, a "
              "mix, never 'nothing'. Keys find a word, values say what it is: for sat, "
              "head 0's answer is an animal (" + fixed(out(2, animal)) + ") and so is "
              "head 1's (" + fixed(out(2, D + animal)) + ").");

        L.section("5. Where wq, wk, wv come in");
        mha::MultiHeadAttention m(E, 2, mha::Init::zero());  // lessons 01-07's module
        for (auto [kind, asks] : rule) m.wq.weight(asks, kind) = 2;            // q0
        for (std::size_t p = 1; p < T; ++p) m.wq.weight(D + p - 1, D + p) = 4;  // q1
        m.wq.weight *= std::sqrt(float(D));  // the core divides by sqrt(D): lesson 03
        m.wk.weight = xt::eye<float>(E);     // a key is the word itself: what, then where
        for (std::size_t f = 0; f < D; ++f)  // each head's value: what the word is
            m.wv.weight(f, f) = m.wv.weight(D + f, f) = 1;
        m.w_o.weight = xt::eye<float>(E);  // the heads side by side, as they are
        for (mha::Linear* l : {&m.wq, &m.wk, &m.wv, &m.w_o}) l->bias.fill(0);
        const mha::Tensor3 X = xt::view(x, xt::newaxis());  // [1, T, E]
        SHOWN(L, const mha::AttentionOutput a = m.forward(X, X, X));
        L.step("attention(X, X, X)", "weights", a.weights, "B, H, Tq, Tk",
               "output = attention(X, X, X)", lesson::Show::shape_only);
        L.say("Q = x wq^T, K = x wk^T, V = x wv^T: three matrices give each word x its "
              "roles. Each head reads D = E / 2 = 6 columns (head 0 the what, head 1 the "
              "where), and the module divides scores by sqrt(6), so wq is sqrt(6) larger. "
              "Set by hand, they give our two heads (checked below); in a model they start "
              "random and are learned (lesson 19). Lesson 01 starts there.");
        float off = 0;  // the largest |row sum - 1| of any weights above
        for (const Lookup* l : {&one, &two, &h0, &h1})
            off = std::max(off, xt::amax(xt::abs(xt::sum(l->weights, {1}) - 1))());
        int rc = L.claim("every row of weights sums to 1 within 1e-6 (max |sum - 1| = " +
                         fixed(off * 1e7, 1) + "e-7)", off <= 1e-6);
        rc |= L.claim("cat's weight rose when its key matched better (" +
                      fixed(one.weights(0, 1)) + " -> " + fixed(two.weights(0, 1)) + ")",
                      two.weights(0, 1) > one.weights(0, 1));
        const double diff = std::max(xt::amax(xt::abs(xt::view(a.output, 0) - out))(),
                                     xt::amax(xt::abs(a.weights - weights))());
        return rc | L.check("the module: output and weights", diff, 1e-6);
    });
}
