// The block, 5: repeated random tokens, the previous-token and induction
// scores of a head, the loss per position, and a model without one head.
//
// B batch, n tokens in each half, T = 2n + 1 positions (BOS first), V vocabulary, H heads.
#include "mha/model/induction.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <string>
#include <utility>

namespace mha {

namespace {

std::size_t uniform_index(Rng& rng, std::size_t count) {  // in [0, count)
    return std::size_t(rng.uniform(0.0f, float(count))) % count;  // % guards rounding
}

void require_square(const Tensor4& weights, const std::string& who) {
    if (weights.shape(2) != weights.shape(3) || weights.size() == 0) {
        fail(who + ": weights " + shape_of(weights) + " must be [B, H, T, T], none of them 0");
    }
}

}  // namespace

TokenBatch repeated_batch(std::size_t batch, std::size_t n, std::size_t vocab, Rng& rng,
                          std::size_t n_min) {
    if (batch == 0 || n == 0)
        fail("repeated_batch: B = " + std::to_string(batch) + " and n = " + std::to_string(n) +
             " must be at least 1");
    if (n + 1 > vocab)
        fail("repeated_batch: n = " + std::to_string(n) + " distinct tokens and BOS need V >= " +
             std::to_string(n + 1) + ", not " + std::to_string(vocab));
    if (n_min > n)
        fail("repeated_batch: n_min = " + std::to_string(n_min) + " is more than n = " +
             std::to_string(n));
    const std::size_t T = 2 * n + 1;
    TokenBatch t{Tokens::from_shape({batch, T}), Tokens::from_shape({batch, T})};
    std::vector<std::int32_t> s(T + 1), ids(vocab - 1);  // s: x, then the last target
    for (std::size_t b = 0; b < batch; ++b) {
        const std::size_t m = n_min == 0 ? n : n_min + uniform_index(rng, n - n_min + 1);
        const std::size_t a = uniform_index(rng, 2 * n - 2 * m + 1);  // random tokens first
        std::iota(ids.begin(), ids.end(), 1);  // every token but BOS
        for (std::size_t i = 0; i < m; ++i)  // a partial Fisher-Yates: m distinct tokens
            std::swap(ids[i], ids[i + uniform_index(rng, ids.size() - i)]);
        s[0] = kBos;
        for (std::size_t i = 1; i <= T; ++i)  // random, then the stretch over and over
            s[i] = i <= a ? 1 + std::int32_t(uniform_index(rng, vocab - 1)) : ids[(i - 1 - a) % m];
        for (std::size_t i = 0; i < T; ++i) t.x(b, i) = s[i], t.y(b, i) = s[i + 1];
    }
    return t;
}

std::vector<double> previous_token_scores(const Tensor4& weights, std::size_t queries) {
    require_square(weights, "previous_token_scores");
    const std::size_t B = weights.shape(0), H = weights.shape(1), T = weights.shape(2);
    const std::size_t q = queries == 0 ? T : queries;
    if (q < 2 || q > T) {
        fail("previous_token_scores: queries 1 .. q - 1 with q = " + std::to_string(q) +
             " of weights " + shape_of(weights) + ": q must be from 2 to T");
    }
    std::vector<double> score(H, 0.0);
    for (std::size_t h = 0; h < H; ++h) {
        for (std::size_t b = 0; b < B; ++b)
            for (std::size_t i = 1; i < q; ++i) score[h] += weights(b, h, i, i - 1);
        score[h] /= double(B * (q - 1));
    }
    return score;
}

std::vector<double> induction_scores(const Tensor4& weights, const Tokens& tokens) {
    require_square(weights, "induction_scores");
    const std::size_t B = weights.shape(0), H = weights.shape(1), T = weights.shape(2);
    if (tokens.shape(0) != B || tokens.shape(1) != T) {
        fail("induction_scores: tokens " + shape_of(tokens) + " must be [B, T] of weights " +
             shape_of(weights));
    }
    std::vector<double> score(H, 0.0);
    std::size_t queries = 0;  // those whose token occurred before
    for (std::size_t b = 0; b < B; ++b)
        for (std::size_t i = 1; i < T; ++i) {
            std::size_t j = i;  // back to the latest earlier occurrence of token i
            bool found = false;
            while (j > 0 && !found) found = tokens(b, --j) == tokens(b, i);
            if (!found) continue;
            ++queries;
            for (std::size_t h = 0; h < H; ++h) score[h] += weights(b, h, i, j + 1);
        }
    for (double& s : score) s = queries ? s / double(queries) : 0.0;
    return score;
}

std::vector<double> position_losses(const Tensor3& logits, const Tokens& targets) {
    const std::size_t B = logits.shape(0), T = logits.shape(1), V = logits.shape(2);
    if (targets.shape(0) != B || targets.shape(1) != T) {
        fail("position_losses: targets " + shape_of(targets) + " must be [B, T] of logits " +
             shape_of(logits));
    }
    std::vector<double> loss(T, 0.0);
    for (std::size_t b = 0; b < B; ++b)
        for (std::size_t i = 0; i < T; ++i) {
            const std::int32_t y = targets(b, i);
            if (y < 0 || std::size_t(y) >= V) {
                fail("position_losses: target " + std::to_string(y) + " at [" +
                     std::to_string(b) + ", " + std::to_string(i) + "] is outside [0, " +
                     std::to_string(V) + ")");
            }
            double top = logits(b, i, 0), sum = 0;  // the max first, for stability
            for (std::size_t v = 1; v < V; ++v) top = std::max(top, double(logits(b, i, v)));
            for (std::size_t v = 0; v < V; ++v) sum += std::exp(logits(b, i, v) - top);
            loss[i] += (std::log(sum) - (logits(b, i, y) - top)) / double(B);
        }
    return loss;
}

HalfLosses half_losses(const Tensor3& logits, const Tokens& targets) {
    const std::size_t T = logits.shape(1), n = T / 2;
    if (T % 2 != 1 || T < 3) fail("half_losses: T = " + std::to_string(T) + " is not 2n + 1");
    const std::vector<double> loss = position_losses(logits, targets);
    return {std::accumulate(loss.begin(), loss.begin() + n + 1, 0.0) / double(n + 1),
            std::accumulate(loss.begin() + n + 1, loss.end(), 0.0) / double(n)};
}

HeadScores score_heads(const LanguageModel& m, const TokenBatch& test) {
    const ModelTrace t = forward(m, test.x);
    HeadScores s{half_losses(t.logits, test.y), {}, {}, {}};
    for (const BlockTrace& layer : t.layers) {  // weights [B, H, T, T]
        s.prev.push_back(previous_token_scores(layer.attn.weights, test.x.shape(1) / 2 + 1));
        s.ind.push_back(induction_scores(layer.attn.weights, test.x));
        s.weights.push_back(layer.attn.weights);
    }
    return s;
}

LanguageModel without_head(const LanguageModel& m, std::size_t layer, std::size_t head) {
    if (layer >= m.layers.size() || head >= m.layers[layer].self_attn.num_heads()) {
        fail("without_head: layer " + std::to_string(layer) + ", head " +
             std::to_string(head) + " of a model with L = " + std::to_string(m.layers.size()) +
             " layers of H = " + std::to_string(m.config().num_heads) + " heads");
    }
    LanguageModel copy = m;
    Tensor2& w_o = copy.layers[layer].self_attn.w_o.weight;  // [E, E]: out x in
    const std::size_t D = copy.layers[layer].self_attn.head_dim();
    for (std::size_t r = 0; r < w_o.shape(0); ++r)
        for (std::size_t c = head * D; c < (head + 1) * D; ++c) w_o(r, c) = 0.0f;
    return copy;
}

void train_on_repeats(LanguageModel& m, const LrSchedule& lr, const TokenBatch& test,
                      std::size_t vocab, std::size_t n_min, Rng& data,
                      const std::function<void(int, const HeadScores&)>& report) {
    const std::size_t B = test.x.shape(0), n = test.x.shape(1) / 2;
    Adam adam(lr.at(1));
    ModelTrace trace;
    for (int step = 1; step <= lr.total; ++step) {
        adam.set_lr(lr.at(step));
        const TokenBatch batch = repeated_batch(B, n, vocab, data, n_min);
        train_step(m, adam, batch, trace, 1.0);
        if (step % 10 == 0 || step == lr.total) report(step, score_heads(m, test));
    }
}

InductionLog::InductionLog(const LanguageModel& m, const TokenBatch& test)
    : frames{{"before training", score_heads(m, test).weights}} {}

bool InductionLog::add(int step, const HeadScores& s) {
    steps.push_back(step), losses.push_back(s.loss), last = s;
    const std::vector<double>& top = s.ind.back();  // the last layer's heads
    if (jump != 0 || top.empty() || top[best_head(top)] < 0.5) return false;
    jump = step;
    frames.push_back({"at the jump, step " + std::to_string(step), s.weights});
    return true;
}

std::vector<double> InductionLog::repeated() const {
    std::vector<double> out;
    for (const HalfLosses& h : losses) out.push_back(h.repeated);
    return out;
}

double InductionLog::lowest_ratio() const {
    double lowest = std::numeric_limits<double>::infinity();
    for (const HalfLosses& h : losses) lowest = std::min(lowest, h.repeated / h.first);
    return lowest;
}

std::size_t best_head(const std::vector<double>& scores) {
    if (scores.empty()) fail("best_head: no scores");
    return std::size_t(std::max_element(scores.begin(), scores.end()) - scores.begin());
}

std::vector<std::size_t> top_keys(const Tensor4& weights, std::size_t b, std::size_t head) {
    require_square(weights, "top_keys");
    const std::size_t T = weights.shape(2);
    if (b >= weights.shape(0) || head >= weights.shape(1)) {
        fail("top_keys: sequence " + std::to_string(b) + ", head " + std::to_string(head) +
             " of weights " + shape_of(weights));
    }
    std::vector<std::size_t> keys(T, 0);
    for (std::size_t i = 0; i < T; ++i)
        for (std::size_t j = 1; j <= i; ++j)  // keys after i are masked: not looked at
            if (weights(b, head, i, j) > weights(b, head, i, keys[i])) keys[i] = j;
    return keys;
}

std::vector<std::string> token_letters(const Tokens& tokens, std::size_t b) {
    if (b >= tokens.shape(0)) {
        fail("token_letters: sequence " + std::to_string(b) + " of tokens " + shape_of(tokens));
    }
    std::vector<std::string> letters;
    for (std::size_t i = 0; i < tokens.shape(1); ++i) {
        const std::int32_t id = tokens(b, i);
        if (id < 0 || id > 52)
            fail("token_letters: token " + std::to_string(id) + " is outside [0, 52]");
        const char c = id == kBos ? '^' : id <= 26 ? char('a' + id - 1) : char('A' + id - 27);
        letters.push_back(std::string(1, c));
    }
    return letters;
}

}  // namespace mha
