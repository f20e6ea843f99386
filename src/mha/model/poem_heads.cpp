// Poems, 1: the four scores of a head over one poem, the loss at each
// character, and the form and the novelty of what a model writes.
//
// T tokens of one sequence, V vocabulary, H heads, L layers.
#include "mha/model/poem_heads.hpp"

#include <cmath>
#include <limits>
#include <string>

#include <xtensor/xview.hpp>

#include "mha/model/induction.hpp"

namespace mha {

namespace {

const double kNaN = std::numeric_limits<double>::quiet_NaN();

// A token that ends a segment: the partner and the format count inside segments only.
bool splits(const std::string& token) {
    return is_mark(token) || token == "\n" || token == "<poem>";
}

// A running mean that is NaN until it has a term.
struct Mean {
    double sum = 0;
    std::size_t count = 0;
    void add(double x) { sum += x, ++count; }
    double value() const { return count ? sum / double(count) : kNaN; }
};

// One key for a run of tokens: each token's length, then its bytes, so that
// no two different runs give the same key ("ab" + "c" vs "a" + "bc").
std::string key(const std::vector<std::string>& tokens, std::size_t at, std::size_t n) {
    std::string k;
    for (std::size_t i = at; i < at + n; ++i)
        k += std::to_string(tokens[i].size()) + ':' + tokens[i];
    return k;
}

}  // namespace

bool is_mark(const std::string& token) {
    static const std::unordered_set<std::string> marks = {
        "，", "。", "？", "！", "；", "：", "、", ",", ".", "?", "!", ";", ":"};
    return marks.count(token) == 1;
}

HeadPatterns head_patterns(const Tensor2& weights, const std::vector<std::string>& tokens) {
    const std::size_t T = tokens.size();
    if (weights.shape(0) != T || weights.shape(1) != T) {
        fail("head_patterns: weights " + shape_of(weights) + " must be [T, T] for the " +
             std::to_string(T) + " tokens, [" + std::to_string(T) + ", " + std::to_string(T) +
             "]");
    }
    // The segments in order, and the one each token is in (none: it splits).
    struct Segment {
        std::size_t start, length;
    };
    const std::size_t none = T;
    std::vector<Segment> segments;
    std::vector<std::size_t> segment_of(T, none);
    for (std::size_t i = 0; i < T; ++i) {
        if (splits(tokens[i])) continue;
        if (i == 0 || splits(tokens[i - 1])) segments.push_back({i, 0});
        segments.back().length += 1;
        segment_of[i] = segments.size() - 1;
    }
    Mean previous, partner, last_mark, start;
    std::size_t mark = T;  // the latest mark before q; T: none yet
    for (std::size_t q = 0; q < T; ++q) {
        if (q >= 1) previous.add(weights(q, q - 1));
        if (q >= 1) start.add(weights(q, 0));
        const std::size_t s = segment_of[q];
        if (s != none && s >= 1) {
            const std::size_t j = q - segments[s].start;  // q's offset in its segment
            const Segment& before = segments[s - 1];
            if (before.length > j) partner.add(weights(q, before.start + j));
        }
        if (mark < T) last_mark.add(weights(q, mark));
        if (is_mark(tokens[q])) mark = q;  // after q: the key must be before it
    }
    return {previous.value(), partner.value(), last_mark.value(), start.value()};
}

std::vector<std::vector<HeadPatterns>> model_head_patterns(
    const LanguageModel& m, const Tokens& tokens_1xT, const std::vector<std::string>& tokens) {
    if (tokens_1xT.shape(0) != 1 || tokens_1xT.shape(1) != tokens.size()) {
        fail("model_head_patterns: tokens " + shape_of(tokens_1xT) + " must be [1, T] for the " +
             std::to_string(tokens.size()) + " tokens, [1, " + std::to_string(tokens.size()) +
             "]");
    }
    const ModelTrace trace = forward(m, tokens_1xT);
    std::vector<std::vector<HeadPatterns>> scores;
    for (const BlockTrace& layer : trace.layers) {
        const Tensor4& w = layer.attn.weights;  // [1, H, T, T]
        std::vector<HeadPatterns> heads;
        for (std::size_t h = 0; h < w.shape(1); ++h) {
            const Tensor2 head = xt::view(w, 0, h, xt::all(), xt::all());  // [T, T]
            heads.push_back(head_patterns(head, tokens));
        }
        scores.push_back(heads);
    }
    return scores;
}

std::vector<double> next_token_losses(const LanguageModel& m, const Tokens& tokens) {
    const std::size_t T = tokens.shape(1);
    if (T < 2) fail("next_token_losses: tokens " + shape_of(tokens) + " need T >= 2");
    // x reads tokens 0 .. T-2, y holds their next ones 1 .. T-1
    const Tokens x = xt::view(tokens, xt::all(), xt::range(0, T - 1));  // [B, T-1]
    const Tokens y = xt::view(tokens, xt::all(), xt::range(1, T));      // [B, T-1]
    return position_losses(forward(m, x).logits, y);
}

MarkLosses mark_losses(const std::vector<double>& losses, const std::vector<std::string>& tokens) {
    if (losses.size() + 1 != tokens.size()) {
        fail("mark_losses: " + std::to_string(losses.size()) + " losses for " +
             std::to_string(tokens.size()) + " tokens: one loss per token but the first");
    }
    Mean marks, rest;
    for (std::size_t i = 0; i < losses.size(); ++i) {
        const std::string& target = tokens[i + 1];
        if (is_mark(target) || target == "\n") marks.add(losses[i]);
        else rest.add(losses[i]);
    }
    return {marks.value(), rest.value(), marks.count, rest.count};
}

double format_score(const std::vector<std::string>& tokens) {
    Mean right;  // 1 for a line of 5 or 7, 0 for any other line
    std::size_t length = 0;  // of the piece so far
    for (const std::string& t : tokens) {
        if (is_mark(t)) {
            if (length > 0) right.add(length == 5 || length == 7 ? 1.0 : 0.0);
            length = 0;
        } else if (t == "\n" || t == "<poem>") {
            length = 0;  // a piece without a mark is no line
        } else {
            ++length;
        }
    }
    return right.value();
}

NgramIndex::NgramIndex(const std::vector<std::string>& text, std::size_t n) : n_(n) {
    if (n == 0) fail("NgramIndex: n = 0; a run needs at least 1 token");
    for (std::size_t i = 0; i + n <= text.size(); ++i) runs_.insert(key(text, i, n));
}

bool NgramIndex::contains(const std::vector<std::string>& tokens, std::size_t at) const {
    return runs_.count(key(tokens, at, n_)) == 1;
}

double memorisation_score(const std::vector<std::string>& generated, const NgramIndex& training) {
    const std::size_t n = training.n();
    Mean found;
    for (std::size_t i = 0; i + n <= generated.size(); ++i) {
        bool plain = true;  // only characters: a mark or a line end is shared by every poem
        for (std::size_t k = i; k < i + n; ++k) {
            const std::string& t = generated[k];
            if (splits(t) || t == "<unk>") plain = false;
        }
        if (plain) found.add(training.contains(generated, i) ? 1.0 : 0.0);
    }
    return found.value();
}

double memorisation_score(const std::vector<std::string>& generated,
                          const std::vector<std::string>& training_text, std::size_t n) {
    return memorisation_score(generated, NgramIndex(training_text, n));
}

}  // namespace mha
