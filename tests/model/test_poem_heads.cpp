// Tests for mha/model/poem_heads.hpp: the four head scores on hand-made
// weights over a real poem (登鸛雀樓), whose keys are listed here by hand;
// uniform weights, whose means are worked out here from the definitions;
// NaN where no query has a key; the form of 五言 and 七言 lines and broken
// ones; the memorisation score on texts where the share is known and
// against a brute-force count; and a model's scores and losses against its
// trace and cross_entropy().
#include <doctest/doctest.h>

#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

#include <xtensor/xview.hpp>

#include "mha/model/induction.hpp"
#include "mha/model/loss.hpp"
#include "mha/model/poem_heads.hpp"

namespace poem_test {

using Strings = std::vector<std::string>;

// The characters of UTF-8 text, one token each ("\n" too).
Strings chars(const std::string& text) {
    Strings out;
    for (std::size_t i = 0; i < text.size();) {
        const unsigned char c = static_cast<unsigned char>(text[i]);
        const std::size_t len = c < 0x80 ? 1 : c < 0xE0 ? 2 : c < 0xF0 ? 3 : 4;
        out.push_back(text.substr(i, len));
        i += len;
    }
    return out;
}

// "<poem>", then the body's characters: a poem's tokens.
Strings poem(const std::string& body) {
    Strings out = {"<poem>"};
    for (const std::string& c : chars(body)) out.push_back(c);
    return out;
}

// [T, T] weights with all of row q on key(q) (no key: the row is 0).
template <class Key>
mha::Tensor2 one_hot(std::size_t T, Key key) {
    mha::Tensor2 w = xt::zeros<float>({T, T});
    for (std::size_t q = 0; q < T; ++q) {
        const long k = key(q);
        if (k >= 0) w(q, std::size_t(k)) = 1.0f;
    }
    return w;
}

// [T, T] weights spread evenly over keys 0 .. q: 1/(q + 1).
mha::Tensor2 uniform(std::size_t T) {
    mha::Tensor2 w = xt::zeros<float>({T, T});
    for (std::size_t q = 0; q < T; ++q)
        for (std::size_t k = 0; k <= q; ++k) w(q, k) = 1.0f / float(q + 1);
    return w;
}

// The mean of 1/(q + 1) over @p queries: a uniform head's score.
double uniform_mean(const std::vector<std::size_t>& queries) {
    double sum = 0;
    for (std::size_t q : queries) sum += 1.0 / double(q + 1);
    return sum / double(queries.size());
}

// 登鸛雀樓: positions 0 <poem>, 1-5 白日依山盡, 6 ，, 7-11 黃河入海流, 12 。,
// 13 \n, 14-18 欲窮千里目, 19 ，, 20-24 更上一層樓, 25 。, 26 \n.
const std::string kPoem = "白日依山盡，黃河入海流。\n欲窮千里目，更上一層樓。\n";

// Each query's partner, by hand: 黃 -> 白 (6 back, over the mark), 欲 -> 黃
// (7 back, over the mark and the line end), 更 -> 欲; -1: none.
long partner_of(std::size_t q) {
    if (q >= 7 && q <= 11) return long(q) - 6;
    if (q >= 14 && q <= 18) return long(q) - 7;
    if (q >= 20 && q <= 24) return long(q) - 6;
    return -1;
}

// Each query's last mark before it, by hand: ， at 6, 。 at 12, ， at 19, 。 at 25.
long last_mark_of(std::size_t q) {
    if (q <= 6) return -1;
    if (q <= 12) return 6;
    if (q <= 19) return 12;
    if (q <= 25) return 19;
    return 25;
}

const double kTol = 1e-6;  // the weights are floats; the means of a few dozen of them

}  // namespace poem_test

using namespace poem_test;

TEST_CASE("is_mark: the 13 marks, not the line end, the poem's start or a character") {
    for (const char* m : {"，", "。", "？", "！", "；", "：", "、", ",", ".", "?", "!", ";", ":"})
        CHECK_MESSAGE(mha::is_mark(m), m);
    for (const char* t : {"\n", "<poem>", "<unk>", "白", "", "。。", "·", "-", " "})
        CHECK_FALSE_MESSAGE(mha::is_mark(t), t);
}

TEST_CASE("head_patterns: a previous-character head over a real poem") {
    const Strings s = poem(kPoem);
    REQUIRE(s.size() == 27);
    const std::size_t T = s.size();
    const mha::Tensor2 w = one_hot(T, [](std::size_t q) { return long(q) - 1; });
    const mha::HeadPatterns p = mha::head_patterns(w, s);
    CHECK(p.previous == doctest::Approx(1.0).epsilon(kTol));
    // only query 1's previous key is 0
    CHECK(p.start == doctest::Approx(1.0 / double(T - 1)).epsilon(kTol));
    // a partner is never one back
    CHECK(p.partner == doctest::Approx(0.0));
    // the last mark is one back right after each mark: queries 7, 13, 20, 26 of 7 .. 26
    CHECK(p.last_mark == doctest::Approx(4.0 / 20.0).epsilon(kTol));
}

TEST_CASE("head_patterns: a couplet's partner, 6 back in a couplet and 7 over a line end") {
    const Strings s = poem(kPoem);
    const std::size_t T = s.size();
    CHECK(s[7] == "黃");
    CHECK(s[partner_of(7)] == "白");
    CHECK(s[partner_of(14)] == "黃");  // 欲 -> 黃: the line before, over "。\n"
    CHECK(s[partner_of(24)] == "目");  // 樓 -> 目
    const mha::HeadPatterns on = mha::head_patterns(one_hot(T, partner_of), s);
    CHECK(on.partner == doctest::Approx(1.0).epsilon(kTol));
    CHECK(on.previous == doctest::Approx(0.0));
    // one key off: no weight on any partner
    const mha::HeadPatterns off = mha::head_patterns(
        one_hot(T, [](std::size_t q) { return partner_of(q) < 0 ? -1 : partner_of(q) + 1; }), s);
    CHECK(off.partner == doctest::Approx(0.0));

    // 七言: 一 -> 兩, 8 back over the mark
    const Strings seven = poem("兩個黃鸝鳴翠柳，一行白鷺上青天。\n");
    auto seven_partner = [](std::size_t q) { return q >= 9 && q <= 15 ? long(q) - 8 : -1; };
    CHECK(seven[9] == "一");
    CHECK(mha::head_patterns(one_hot(seven.size(), seven_partner), seven).partner ==
          doctest::Approx(1.0).epsilon(kTol));

    // a shorter line before: its partners stop where it does (c -> a, d -> b, e none);
    // the segment before is the one before in the sequence, over "<poem>" too
    const Strings short_line = {"<poem>", "a", "b", ",", "c", "d", "e", "<poem>", "f"};
    auto short_partner = [](std::size_t q) {
        return q == 4 ? 1L : q == 5 ? 2L : q == 8 ? 4L : -1L;
    };
    const mha::HeadPatterns sp = mha::head_patterns(one_hot(9, short_partner), short_line);
    CHECK(sp.partner == doctest::Approx(1.0).epsilon(kTol));
    CHECK(mha::head_patterns(uniform(9), short_line).partner ==
          doctest::Approx(uniform_mean({4, 5, 8})).epsilon(kTol));
}

TEST_CASE("head_patterns: the last mark and the poem's start, one-hot") {
    const Strings s = poem(kPoem);
    const std::size_t T = s.size();
    const mha::HeadPatterns m = mha::head_patterns(one_hot(T, last_mark_of), s);
    CHECK(m.last_mark == doctest::Approx(1.0).epsilon(kTol));
    // the last mark is one back at 7, 13, 20 and 26, of the 26 queries 1 .. 26
    CHECK(m.previous == doctest::Approx(4.0 / 26.0).epsilon(kTol));
    // a mark is never a partner
    CHECK(m.partner == doctest::Approx(0.0));

    const mha::HeadPatterns z = mha::head_patterns(one_hot(T, [](std::size_t) { return 0L; }), s);
    CHECK(z.start == doctest::Approx(1.0).epsilon(kTol));
    CHECK(z.previous == doctest::Approx(1.0 / 26.0).epsilon(kTol));  // query 1 only
    CHECK(z.partner == doctest::Approx(0.0));
    CHECK(z.last_mark == doctest::Approx(0.0));  // "<poem>" is no mark
}

TEST_CASE("head_patterns: a uniform causal head scores the mean of 1/(q + 1) over its queries") {
    const Strings s = poem(kPoem);
    const std::size_t T = s.size();
    std::vector<std::size_t> all, partnered, after_mark;  // each score's queries, by hand
    for (std::size_t q = 1; q < T; ++q) all.push_back(q);
    for (std::size_t q = 0; q < T; ++q)
        if (partner_of(q) >= 0) partnered.push_back(q);
    for (std::size_t q = 7; q < T; ++q) after_mark.push_back(q);  // the first mark is at 6
    REQUIRE(partnered.size() == 15);
    const mha::HeadPatterns u = mha::head_patterns(uniform(T), s);
    CHECK(u.previous == doctest::Approx(uniform_mean(all)).epsilon(kTol));
    CHECK(u.start == doctest::Approx(uniform_mean(all)).epsilon(kTol));
    CHECK(u.partner == doctest::Approx(uniform_mean(partnered)).epsilon(kTol));
    CHECK(u.last_mark == doctest::Approx(uniform_mean(after_mark)).epsilon(kTol));
    // the couplet alone: previous = (1/2 + ... + 1/14) / 13, about 0.17
    const Strings couplet = poem("白日依山盡，黃河入海流。\n");
    double sum = 0;
    for (int d = 2; d <= 14; ++d) sum += 1.0 / d;
    CHECK(mha::head_patterns(uniform(14), couplet).previous ==
          doctest::Approx(sum / 13).epsilon(kTol));
}

TEST_CASE("head_patterns: NaN where no query has the key") {
    const mha::HeadPatterns one = mha::head_patterns(xt::ones<float>({1, 1}), {"<poem>"});
    CHECK(std::isnan(one.previous));
    CHECK(std::isnan(one.partner));
    CHECK(std::isnan(one.last_mark));
    CHECK(std::isnan(one.start));
    const mha::HeadPatterns none = mha::head_patterns(mha::Tensor2::from_shape({0, 0}), {});
    CHECK(std::isnan(none.previous));
    CHECK(std::isnan(none.start));
    // one line, no mark: a previous key and the start, but no partner and no mark
    const Strings line = poem("白日依山盡");
    const mha::HeadPatterns l = mha::head_patterns(uniform(line.size()), line);
    CHECK_FALSE(std::isnan(l.previous));
    CHECK_FALSE(std::isnan(l.start));
    CHECK(std::isnan(l.partner));
    CHECK(std::isnan(l.last_mark));
    // a mark as the last token: nothing after it to look back at it
    const Strings ends = poem("白日依山盡，");
    CHECK(std::isnan(mha::head_patterns(uniform(ends.size()), ends).last_mark));
}

TEST_CASE("head_patterns: weights that are not [T, T] for the T tokens are refused") {
    const Strings s = poem("白日依");  // T = 4
    CHECK_THROWS_AS(mha::head_patterns(uniform(3), s), std::invalid_argument);
    CHECK_THROWS_AS(mha::head_patterns(xt::zeros<float>({4, 5}), s), std::invalid_argument);
    try {
        mha::head_patterns(uniform(3), s);
    } catch (const std::invalid_argument& e) {
        const std::string what = e.what();
        CHECK(what.find("[3, 3]") != std::string::npos);  // the weights' shape
        CHECK(what.find("[4, 4]") != std::string::npos);  // the shape that fits the tokens
    }
    CHECK_NOTHROW(mha::head_patterns(uniform(4), s));
}

TEST_CASE("format_score: the share of lines of 5 or 7 between marks") {
    CHECK(mha::format_score(chars("白日依山盡，黃河入海流。\n")) == 1.0);
    CHECK(mha::format_score(chars("兩個黃鸝鳴翠柳，一行白鷺上青天。\n")) == 1.0);
    CHECK(mha::format_score(poem(kPoem)) == 1.0);  // "<poem>" starts line 1, not part of it
    CHECK(mha::format_score({"白", "日", "依", "山", "<poem>", "盡", "，"}) == 0.0);  // 1, not 5
    CHECK(mha::format_score(chars("白日依山，黃河入海流。\n")) == 0.5);  // 4 and 5
    CHECK(mha::format_score(chars("白日依山盡水，黃河入海流。")) == 0.5);  // 6 and 5
    CHECK(mha::format_score(chars("白日，黃河入海流水。")) == 0.0);  // 2 and 6
    CHECK(mha::format_score(chars("abcde,fghijk.")) == 0.5);  // ASCII marks: 5 and 6
    // not lines: what no mark ends, at the end or before a line end
    CHECK(mha::format_score(chars("白日依山盡，黃河入")) == 1.0);
    CHECK(mha::format_score(chars("白日依，黃河入海流")) == 0.0);
    CHECK(mha::format_score(chars("白日依\n黃河入海流。")) == 1.0);
    // two marks in a row: no empty line between them
    CHECK(mha::format_score(chars("白日依山盡！？")) == 1.0);
    CHECK(std::isnan(mha::format_score({})));
    CHECK(std::isnan(mha::format_score(chars("白日依山盡"))));
    CHECK(std::isnan(mha::format_score(chars("，。\n"))));
}

TEST_CASE("memorisation_score: the share of 4-character windows found in the training text") {
    const Strings train = chars("白日依山盡，黃河入海流。\n");
    // 白日依山, 日依山盡, 黃河入海, 河入海流: the windows over "，" and "。\n" are skipped
    CHECK(mha::memorisation_score(train, train) == 1.0);
    CHECK(mha::memorisation_score(chars("白日依山水"), train) == 0.5);  // 日依山水 is new
    CHECK(mha::memorisation_score(chars("日依山盡黃河"), train) == 1.0 / 3.0);
    // over a mark in the training text is not in a row: 山盡黃河 is new
    CHECK(mha::memorisation_score(chars("山盡黃河"), train) == 0.0);
    // no window without a mark, a line end, "<poem>" or "<unk>"
    CHECK(std::isnan(mha::memorisation_score(chars("山盡，黃河"), train)));
    CHECK(std::isnan(mha::memorisation_score({"白", "日", "依", "<unk>"}, train)));
    CHECK(std::isnan(mha::memorisation_score({"<poem>", "白", "日", "依"}, train)));
    CHECK(std::isnan(mha::memorisation_score(chars("白日依"), train)));
    CHECK(mha::memorisation_score({"<unk>", "白", "日", "依", "山"}, train) == 1.0);
    CHECK(mha::memorisation_score(chars("黃河水"), train, 2) == 0.5);  // n = 2: 黃河, 河水
    CHECK_THROWS_AS(mha::memorisation_score(train, train, 0), std::invalid_argument);
    // a window is its tokens, not their bytes run together
    CHECK(mha::memorisation_score({"ab", "c"}, {"a", "bc"}, 2) == 0.0);
}

TEST_CASE("memorisation_score: an index of 25,000 tokens agrees with counting by hand") {
    mha::Rng rng(11);
    // 16 characters and a mark: 16^4 = 65,536 windows, about 20,000 of them in
    // the training text, so that some generated windows are found and some not
    const Strings alphabet = chars("白日依山盡黃河入海流欲窮千里目更，");
    REQUIRE(alphabet.size() == 17);
    auto random_text = [&](std::size_t n) {
        Strings t;
        for (std::size_t i = 0; i < n; ++i)
            t.push_back(alphabet[std::size_t(rng.uniform(0.0f, 17.0f)) % 17]);  // % guards rounding
        return t;
    };
    const Strings train = random_text(25000), generated = random_text(3000);
    const mha::NgramIndex index(train, 4);
    const double score = mha::memorisation_score(generated, index);
    // the same share, by comparing every window of the first 600 with every training window
    const Strings head(generated.begin(), generated.begin() + 600);
    std::size_t windows = 0, found = 0;
    for (std::size_t i = 0; i + 4 <= head.size(); ++i) {
        bool plain = true;
        for (std::size_t k = i; k < i + 4; ++k) plain = plain && head[k] != "，";
        if (!plain) continue;
        ++windows;
        bool seen = false;
        for (std::size_t j = 0; j + 4 <= train.size() && !seen; ++j)
            seen = train[j] == head[i] && train[j + 1] == head[i + 1] &&
                   train[j + 2] == head[i + 2] && train[j + 3] == head[i + 3];
        found += seen;
    }
    REQUIRE(windows > 100);
    CHECK(mha::memorisation_score(head, index) == double(found) / double(windows));
    CHECK(mha::memorisation_score(head, train) == double(found) / double(windows));
    CHECK(score > 0.1);
    CHECK(score < 0.9);
}

TEST_CASE("model_head_patterns: head_patterns of every layer x head of the trace") {
    const mha::LanguageModel m = mha::make_language_model({12, 16, 8, 2, 16, 2}, 5);
    const Strings s = poem("白日依山盡，黃河入海流。\n");  // T = 14
    mha::Tokens ids = mha::Tokens::from_shape({1, s.size()});
    for (std::size_t i = 0; i < s.size(); ++i) ids(0, i) = std::int32_t(i % 12);
    const auto scores = mha::model_head_patterns(m, ids, s);
    const mha::ModelTrace t = mha::forward(m, ids);
    REQUIRE(scores.size() == 2);
    for (std::size_t l = 0; l < 2; ++l) {
        REQUIRE(scores[l].size() == 2);
        for (std::size_t h = 0; h < 2; ++h) {
            CAPTURE(l);
            CAPTURE(h);
            const mha::Tensor2 w = xt::view(t.layers[l].attn.weights, 0, h, xt::all(), xt::all());
            const mha::HeadPatterns p = mha::head_patterns(w, s), q = scores[l][h];
            CHECK(q.previous == doctest::Approx(p.previous).epsilon(kTol));
            CHECK(q.partner == doctest::Approx(p.partner).epsilon(kTol));
            CHECK(q.last_mark == doctest::Approx(p.last_mark).epsilon(kTol));
            CHECK(q.start == doctest::Approx(p.start).epsilon(kTol));
            // the previous key's weight by hand, from the trace
            double sum = 0;
            for (std::size_t i = 1; i < s.size(); ++i) sum += w(i, i - 1);
            CHECK(q.previous == doctest::Approx(sum / double(s.size() - 1)).epsilon(kTol));
        }
    }
    CHECK_THROWS_AS(mha::model_head_patterns(m, ids, poem("白日")), std::invalid_argument);
    mha::Tokens two = mha::Tokens::from_shape({2, s.size()});
    two.fill(1);
    CHECK_THROWS_AS(mha::model_head_patterns(m, two, s), std::invalid_argument);
}

TEST_CASE("next_token_losses: -log p of each next token, and the marks apart") {
    const mha::LanguageModel m = mha::make_language_model({12, 16, 8, 2, 16, 2}, 6);
    const Strings s = poem("白日依山盡，黃河入海流。\n");  // T = 14
    const std::size_t T = s.size();
    mha::Tokens ids = mha::Tokens::from_shape({1, T});
    for (std::size_t i = 0; i < T; ++i) ids(0, i) = std::int32_t((3 * i) % 12);
    const std::vector<double> loss = mha::next_token_losses(m, ids);
    REQUIRE(loss.size() == T - 1);
    // by hand: the softmax of the full sequence's logits at i, read at token i + 1
    const mha::Tensor3 logits = mha::forward(m, ids).logits;  // [1, T, V]
    double sum = 0;
    for (std::size_t i = 0; i + 1 < T; ++i) {
        double z = 0;
        for (std::size_t v = 0; v < 12; ++v) z += std::exp(double(logits(0, i, v)));
        const double expected = std::log(z) - double(logits(0, i, std::size_t(ids(0, i + 1))));
        CAPTURE(i);
        CHECK(loss[i] == doctest::Approx(expected).epsilon(1e-5));
        sum += loss[i];
    }
    const mha::Tokens x = xt::view(ids, xt::all(), xt::range(0, T - 1));
    const mha::Tokens y = xt::view(ids, xt::all(), xt::range(1, T));
    CHECK(sum / double(T - 1) ==
          doctest::Approx(mha::cross_entropy(mha::forward(m, x).logits, y).loss).epsilon(1e-5));
    // a head zeroed changes them
    const std::vector<double> cut = mha::next_token_losses(mha::without_head(m, 0, 1), ids);
    double moved = 0;
    for (std::size_t i = 0; i + 1 < T; ++i) moved += std::fabs(cut[i] - loss[i]);
    CHECK(moved > 1e-3);
    CHECK_THROWS_AS(mha::next_token_losses(m, mha::Tokens::from_shape({1, 1})),
                    std::invalid_argument);

    // targets 6 (，), 12 (。) and 13 (\n) are marks or line ends: losses 5, 11 and 12
    std::vector<double> l(T - 1);
    for (std::size_t i = 0; i + 1 < T; ++i) l[i] = double(i);
    const mha::MarkLosses ml = mha::mark_losses(l, s);
    CHECK(ml.n_marks == 3);
    CHECK(ml.n_rest == 10);
    CHECK(ml.marks == doctest::Approx((5.0 + 11.0 + 12.0) / 3.0));
    CHECK(ml.rest == doctest::Approx((0 + 1 + 2 + 3 + 4 + 6 + 7 + 8 + 9 + 10) / 10.0));
    CHECK(std::isnan(mha::mark_losses({1.0}, {"<poem>", "白"}).marks));
    CHECK(std::isnan(mha::mark_losses({1.0}, {"<poem>", "\n"}).rest));
    CHECK_THROWS_AS(mha::mark_losses(l, poem("白日")), std::invalid_argument);
}
