// Lesson 00: what attention is for, over six words a student can read.
//
// Adds: attention as a lookup that is soft. A query scores every key (q . k), the
// softmax turns the scores into weights that sum to 1, the output mixes the values by
// them. Each q, k, v is made by hand from named features, so one sees why a query
// matches a key; two heads ask two questions; last, wq, wk, wv turn out to make them.
// Mirrors: the handwritten-course article's comment under `self.w_q` (queries ask the
// keys which match them; their values are combined by weight), `attention(X, X, X)`.
//
// T = words (6), E = features per word (12: six say what it is, six where),
// H = heads (2), D = E / H (6): head 0 reads what a word is, head 1 where it is.
#include <cmath>
#include <map>

#include <xtensor-blas/xlinalg.hpp>
#include <xtensor/xbuilder.hpp>
#include <xtensor/xview.hpp>

#include "mha/attention.hpp"
#include "support/lesson.hpp"

namespace {

enum Feature { noun, verb, animal, place, article, prep };  // what a word is

struct Lookup {
    mha::Tensor2 scores, weights, out;  // [Tq, Tk], [Tq, Tk], [Tq, D]
};

// Every query against every key at once: row i of q k^T holds q_i . k_j for each j.
Lookup attend(const mha::Tensor2& q, const mha::Tensor2& k, const mha::Tensor2& v) {
    Lookup a;
    a.scores = xt::linalg::dot(q, xt::transpose(k));  // [Tq, D] x [D, Tk] -> [Tq, Tk]
    a.weights = a.scores;
    for (std::size_t i = 0; i < q.shape(0); ++i) {  // each query's e^s / sum e^s
        auto w = xt::row(a.weights, i);
        w = xt::exp(w - xt::amax(w)());  // less the max only so that e^s cannot overflow
        w /= xt::sum(w)();
    }
    a.out = xt::linalg::dot(a.weights, v);  // [Tq, Tk] x [Tk, D] -> [Tq, D]
    return a;
}

}  // namespace

int main(int argc, char** argv) {
    lesson::Info info{"00_what_attention_is_for", "a lookup that is soft, over six words",
                      true, 0.01, 2};
    info.default_batch = 1, info.default_time = 6, info.default_d_model = 12;
    info.fixed_sizes = true;
    return lesson::run(argc, argv, info, [](lesson::Lesson& L) {
        const std::size_t T = L.opt.time, E = L.opt.d_model, D = E / L.opt.heads;  // 6 12 6
        using lesson::fixed;
        const std::vector<std::string> words{"the", "cat", "sat", "on", "the", "mat"};
        const std::vector<std::string> what{"noun", "verb", "animal", "place", "article",
                                            "prep"};
        std::vector<std::string> features = what, twice = what;  // x's columns, out's
        for (std::size_t p = 0; p < T; ++p) features.push_back("pos" + std::to_string(p));
        twice.insert(twice.end(), what.begin(), what.end());
        const lesson::Names by_word{words, words};

        L.section("1. Six words, and what each one is");
        const std::vector<std::vector<Feature>> has{
            {article}, {noun, animal}, {verb}, {prep}, {article}, {noun, place}};
        mha::Tensor2 x = xt::zeros<float>({T, E});  // [T, E]
        for (std::size_t i = 0; i < T; ++i) {
            for (Feature f : has[i]) x(i, f) = 1;
            x(i, D + i) = 1;  // pos0 ... pos5: where the word stands
        }
        L.table("x: 1 where a word has the feature (prep: preposition)", x,
                {words, features}, 0);
        L.step("x = the words' features", "x", x, "T, E", "x = torch.tensor(features)",
               "mha::Tensor2 x = xt::zeros<float>({T, E});", lesson::Show::shape_only);
        L.say("A 1 says the word has the feature; nothing is learned. The two 'the's differ "
              "only in where they stand.");

        L.section("2. A lookup that is hard: a dictionary");
        const std::map<std::string, std::string> meaning{{"cat", "an animal"},
                                                         {"mat", "a place"}};
        for (const std::string word : {"cat", "kitten"})  // the exact key, or nothing
            std::printf("  meaning[\"%s\"] -> %s\n", word.c_str(),
                        meaning.count(word) ? meaning.at(word).c_str() : "KeyError");
        L.say("A dictionary answers only a key it holds: no 'kitten', though a kitten is much "
              "like a cat. Attention makes the lookup soft: a query matches every key a little "
              "and gets a mix of all the values, more of those whose keys match better.");

        L.section("3. The article's comment: queries ask the keys");
        L.say("The handwritten-course article, under self.w_q:");
        std::printf(
            "  简单来说就是去寻找一些query去跟key，问他（key）哪些数据是跟我匹配的上的，\n"
            "  匹配上之后，key所对应的value值进行加权组合，最终得到attention的输出\n");
        L.say("  (Simply put: queries go to the keys and ask them which data match me; once "
              "matched, the values that belong to those keys are combined with weights, and "
              "that finally gives attention's output.)");
        L.say("Clause by clause, what section 4 runs:");
        std::printf(
            "  问他（key）哪些数据是跟我匹配的上的   score = q . k, for every key k\n"
            "  key所对应的value值进行加权组合        weight = e^score / (sum of e^score)\n"
            "                                        out = sum of weight x value\n"
            "  最终得到attention的输出               out\n");

        L.section("4. A lookup that is soft, run on the words");
        const mha::Tensor2 keys = xt::view(x, xt::all(), xt::range(0, D));  // [T, D]: what
        mha::Tensor2 q = xt::zeros<float>({std::size_t(1), D});  // [1, D]: one question
        q(0, noun) = q(0, animal) = 1;  // what a kitten is: asked of what each word is
        const Lookup one = attend(q, keys, keys);  // the values: what each word is, too
        mha::Tensor2 row = xt::concatenate(xt::xtuple(one.scores, one.weights));  // [2, T]
        L.table("q = noun 1, animal 1 (a kitten's) against every key", row,
                {{"score", "weight"}, words}, 3);
        L.table("out: a mix of what the words are", one.out, {{"out"}, what}, 3);
        L.code("scores = q @ k.T", "a.scores = xt::linalg::dot(q, xt::transpose(k));");
        L.code("weights = scores.softmax(-1)",
               "w = xt::exp(w - xt::amax(w)()); w /= xt::sum(w)();");
        L.code("out = weights @ v", "a.out = xt::linalg::dot(a.weights, v);");
        L.say("cat shares two features with the question, mat one: cat gets " +
              fixed(one.weights(0, 1)) + ", mat " + fixed(one.weights(0, 5)) + ", every "
              "word something. The answer is mostly a cat (animal " +
              fixed(one.out(0, animal)) + "), a little a mat (place " +
              fixed(one.out(0, place)) + ").");

        L.section("5. One key made to match better");
        mha::Tensor2 louder = keys;  // [T, D]
        xt::row(louder, 1) *= 2;     // cat's key says noun, animal twice as loud
        const Lookup two = attend(q, louder, keys);
        row = xt::concatenate(xt::xtuple(one.scores, one.weights, two.scores, two.weights));
        L.table("cat's key doubled: the row before and after", row,
                {{"score", "weight", "score after", "weight after"}, words}, 3);
        L.say("cat's weight goes from " + fixed(one.weights(0, 1)) + " to " +
              fixed(two.weights(0, 1)) + ". The weights still sum to 1: what cat wins, the "
              "others lose, each in proportion (mat's weight over the first 'the''s is " +
              fixed(one.weights(0, 5) / one.weights(0, 0)) + " before, " +
              fixed(two.weights(0, 5) / two.weights(0, 0)) + " after: e^(1 - 0)).");

        L.section("6. Head 0 asks: which word goes with me?");
        // A word asks by its kind: an article for a noun, a noun for its verb, the verb for
        // an animal noun (who sat?), the preposition for a place noun (on what?).
        const std::pair<Feature, Feature> rule[] = {{article, noun}, {noun, verb},
            {verb, noun}, {verb, animal}, {prep, noun}, {prep, place}};  // (kind, asks)
        mha::Tensor2 q0 = xt::zeros<float>({T, D});  // [T, D]
        for (auto [kind, asks] : rule)  // 2, asked loudly: the softmax picks more sharply
            for (std::size_t i = 0; i < T; ++i) q0(i, asks) += 2 * x(i, kind);
        const Lookup h0 = attend(q0, keys, keys);
        L.table("q, head 0: what each word asks for", q0, {words, what}, 0);
        L.table("weights, head 0 (query down, key across)", h0.weights, by_word);
        L.say("sat finds cat (" + fixed(h0.weights(2, 1)) + "), on finds mat (" +
              fixed(h0.weights(3, 5)) + "), cat and mat their verb (" +
              fixed(h0.weights(1, 2)) + "). The two 'the's ask the same and get the same: "
              "cat and mat alike.");

        L.section("7. Head 1 asks: which word is just before me?");
        const mha::Tensor2 where = xt::view(x, xt::all(), xt::range(D, E));  // [T, D]: pos
        mha::Tensor2 q1 = xt::zeros<float>({T, D});  // [T, D]
        for (std::size_t i = 1; i < T; ++i) q1(i, i - 1) = 4;  // word i asks for pos i-1
        const Lookup h1 = attend(q1, where, keys);  // found by where, it gives what
        L.table("weights, head 1 (query down, key across)", h1.weights, by_word);
        L.say("The key is how a word is found, the value what it gives: head 1 finds the "
              "word before (" + fixed(h1.weights(2, 1)) + ") by its position and gives what "
              "it is. The first 'the' has none: its query is 0, every weight 1/6 = " +
              fixed(h1.weights(0, 0)) + ". Attention always answers with a mix, never "
              "'nothing'.");

        L.section("8. Two heads: two questions of the same words");
        mha::Tensor4 weights = xt::zeros<float>({std::size_t(1), std::size_t(2), T, T});
        for (std::size_t h = 0; h < 2; ++h) xt::view(weights, 0, h) = (h ? h1 : h0).weights;
        L.step("weights, one grid per head", "weights", weights, "B, H, Tq, Tk",
               "weights = (q @ k.transpose(-2, -1)).softmax(-1)",
               "xt::view(weights, 0, h) = (h ? h1 : h0).weights;", lesson::Show::shape_only);
        L.heads("what each word reads", "00_two_heads", weights, by_word);
        L.say("Head 0 looks at kinds of words: its columns are the nouns and the verb. Head 1 "
              "looks at places: its pattern is the diagonal just below the main one.");

        L.section("9. One output: both answers side by side");
        const mha::Tensor2 out = xt::concatenate(xt::xtuple(h0.out, h1.out), 1);  // [T, E]
        L.table("out: head 0's answer, then head 1's, side by side", out, {words, twice});
        L.say("sat: its noun is an animal (" + fixed(out(2, animal)) + "), and so is the "
              "word before it (" + fixed(out(2, D + animal)) + "). The 'the's, alike in "
              "head 0, differ in head 1: the second follows a preposition (" +
              fixed(out(4, D + prep)) + "), the first nothing (a mix of all six words).");

        L.section("10. Where wq, wk, wv come in");
        // Lessons 01-07's module with its layers set by hand, biases 0. wq [out, in]: head
        // 0's block is section 6's rule, head 1's moves a position back by one.
        mha::MultiHeadAttention m(E, 2, mha::Init::zero());
        for (auto [kind, asks] : rule) m.wq.weight(asks, kind) = 2;
        for (std::size_t p = 1; p < T; ++p) m.wq.weight(D + p - 1, D + p) = 4;
        const mha::Tensor2 block =  // [D, D]
            xt::view(m.wq.weight, xt::range(0, D), xt::range(0, D));
        L.table("wq, head 0's block [out, in]: a word of the kind across asks for what is "
                "down", block, {what, what}, 0);
        m.wq.weight *= std::sqrt(float(D));  // the core divides scores by sqrt(D): lesson 03
        m.wk.weight = xt::eye<float>(E);     // a key is the word itself: what, then where
        for (std::size_t f = 0; f < D; ++f)  // each head's value: what the word is
            m.wv.weight(f, f) = m.wv.weight(D + f, f) = 1;
        m.w_o.weight = xt::eye<float>(E);  // the heads side by side, as they are
        for (mha::Linear* l : {&m.wq, &m.wk, &m.wv, &m.w_o}) l->bias.fill(0);
        L.dump_layers(m);
        const mha::Tensor3 X = xt::view(x, xt::newaxis(), xt::all(), xt::all());  // [1, T, E]
        const mha::AttentionOutput a = m.forward(X, X, X);
        L.code("output = attention(X, X, X)",
               "const mha::AttentionOutput a = m.forward(X, X, X);");
        L.say("Each q, k, v above was made by hand. In a model a word comes in as one vector "
              "x, and three matrices give it its three roles: Q = x wq^T, K = x wk^T, V = x "
              "wv^T. Ours are such matrices (wq's head 1 block has 4 at [pos p-1, pos p], wk "
              "is the identity, wv copies what a word is to both heads), and lessons 01-07's "
              "module on them gives our two heads (checked below). In a model nobody writes "
              "them: they start random and training finds them (lesson 19 watches it). "
              "Lesson 01 starts there.");

        double off = 0;  // the largest |row sum - 1| of any weights above
        for (const Lookup* l : {&one, &two, &h0, &h1})
            off = std::max(off, double(xt::amax(xt::abs(xt::sum(l->weights, {1}) - 1))()));
        int rc = L.claim("every row of weights sums to 1 within 1e-6 (max |sum - 1| = " +
                         fixed(off * 1e7, 1) + "e-7)", off <= 1e-6);
        rc |= L.claim("cat's weight rose when its key matched better (" +
                      fixed(one.weights(0, 1)) + " -> " + fixed(two.weights(0, 1)) + ")",
                      two.weights(0, 1) > one.weights(0, 1));
        const double diff =
            std::max(double(xt::amax(xt::abs(xt::view(a.output, 0) - out))()),
                     double(xt::amax(xt::abs(a.weights - weights))()));
        return rc | L.check("the module: output and weights", diff, 1e-6);
    });
}
