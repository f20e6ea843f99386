// The block, 5: prefill a prompt, decode a token at a time, sample the next.
//
// B batch, P new positions, L positions cached before them, T_max the
// longest sequence, V vocabulary, E embed_dim.
#include "mha/model/generate.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <sstream>
#include <string>

#include <xtensor/xview.hpp>

namespace mha {

namespace {

std::string str(std::size_t n) { return std::to_string(n); }

std::string num(double x) {  // as few digits as it takes: 0.5, not 0.500000
    std::ostringstream out;
    out << x;
    return out.str();
}

// Throws unless P new positions of B sequences fit the model and the cache.
void check_extend(const LanguageModel& m, const Tokens& tokens, const ModelCache& cache,
                  const std::string& who) {
    const std::size_t B = tokens.shape(0), P = tokens.shape(1), T_max = m.pos_emb.vocab();
    if (B == 0 || P == 0)
        fail(who + ": tokens " + shape_of(tokens) + " hold no token; give [B, P], P >= 1");
    if (cache.layers.size() != m.layers.size()) {
        fail(who + ": the cache has " + str(cache.layers.size()) + " layers, the model " +
             str(m.layers.size()) + ": make it with make_cache(m, " + str(B) + ")");
    }
    if (cache.layers[0].batch() != B) {
        fail(who + ": tokens " + shape_of(tokens) + " are " + str(B) + " sequences, the cache's " +
             str(cache.layers[0].batch()) + ": make it with make_cache(m, " + str(B) + ")");
    }
    const std::size_t L = cache.length();
    if (L + P > T_max) {
        fail(who + ": " + str(L) + " positions read and " + str(P) + " more make " +
             str(L + P) + ", past T_max = " + str(T_max) + " (pos_emb has " + str(T_max) +
             " rows)");
    }
}

// The P positions after the L cached ones, through the whole model.
Tensor3 extend(const LanguageModel& m, const Tokens& tokens, ModelCache& cache) {
    const std::size_t P = tokens.shape(1), L = cache.length();
    Tensor3 x = embed(m.tok_emb, tokens);  // [B, P, E], checks every id < V
    for (std::size_t i = 0; i < P; ++i)    // position L + i's row of pos_emb
        xt::view(x, xt::all(), i, xt::all()) += xt::view(m.pos_emb.weight, L + i, xt::all());
    for (std::size_t l = 0; l < m.layers.size(); ++l) {
        const Block& blk = m.layers[l];
        KVCache& kv = cache.layers[l];
        // x + attn(norm1(x)): the queries are the new positions, the keys and
        // values every position so far (the cache), so this is the causal
        // block_forward() at positions L .. L+P-1
        const Tensor3 h1 = layer_norm(x, blk.norm1);  // [B, P, E]
        const Tensor3 x1 = x + (P == 1 ? blk.self_attn.decode(h1, kv)
                                       : blk.self_attn.prefill(h1, kv));
        // x1 + ff(norm2(x1)): position-wise, the new positions need nothing else
        x = x1 + feed_forward(layer_norm(x1, blk.norm2), blk.ff);  // [B, P, E]
    }
    return linear(layer_norm(x, m.norm), m.head);  // [B, P, E] -> [B, P, V]
}

}  // namespace

ModelCache make_cache(const LanguageModel& m, std::size_t batch) {
    require_nonzero({batch}, "make_cache(model, batch) B");
    ModelCache c;
    for (const Block& blk : m.layers)  // room for T_max positions
        c.layers.push_back(make_cache(blk.self_attn, batch, m.pos_emb.vocab()));
    return c;
}

Tensor3 prefill(const LanguageModel& m, const Tokens& prompt, ModelCache& cache) {
    check_extend(m, prompt, cache, "prefill");
    return extend(m, prompt, cache);
}

Tensor3 decode(const LanguageModel& m, const Tokens& token, ModelCache& cache) {
    if (token.shape(1) != 1) {
        fail("decode: token " + shape_of(token) + " must be one per sequence, [B, 1]; "
             "prefill() takes more");
    }
    check_extend(m, token, cache, "decode");
    return extend(m, token, cache);
}

void check_sampling(const Sampling& s) {
    if (!(s.temperature >= 0) || !std::isfinite(s.temperature)) {
        fail("sampling: temperature must be a finite number >= 0 (0: greedy), got " +
             num(s.temperature));
    }
    if (s.top_k && *s.top_k == 0)
        fail("sampling: top_k must be at least 1 (none: all tokens), got 0");
}

std::int32_t sample_token(const Tensor1& logits, const Sampling& s, Rng& rng) {
    check_sampling(s);
    const std::size_t V = logits.size();
    if (V == 0) fail("sample_token: logits [0] hold no token");
    for (std::size_t j = 0; j < V; ++j)
        if (std::isnan(logits(j))) fail("sample_token: logit " + str(j) + " is NaN");
    const std::size_t top = std::max_element(logits.begin(), logits.end()) - logits.begin();
    if (!std::isfinite(logits(top))) {
        fail("sample_token: the largest logit is " + num(logits(top)) +
             "; a draw needs a finite one");
    }
    if (s.temperature == 0) return std::int32_t(top);  // greedy: the first largest
    // top-k: keep what is at least the k-th largest
    float kth = -std::numeric_limits<float>::infinity();
    if (s.top_k && *s.top_k < V) {
        std::vector<float> best(*s.top_k);  // the k largest, largest first
        std::partial_sort_copy(logits.begin(), logits.end(), best.begin(), best.end(),
                               std::greater<float>());
        kth = best.back();
    }
    // softmax(z / tau) over the kept logits, the largest subtracted first:
    // at a small tau the others' weights underflow to 0, never to inf
    std::vector<double> w(V, 0.0);  // the weights, 0 where top-k drops a token
    double sum = 0;
    for (std::size_t j = 0; j < V; ++j) {
        if (logits(j) < kth) continue;
        w[j] = std::exp((double(logits(j)) - logits(top)) / s.temperature);  // in (0, 1]
        sum += w[j];
    }
    // the first token whose running sum passes u, uniform in [0, sum)
    const double u = double(rng.uniform(0.0f, 1.0f)) * sum;
    double run = 0;
    std::size_t last = top;  // the last kept token, for a u that rounded up to sum
    for (std::size_t j = 0; j < V; ++j) {
        if (w[j] == 0) continue;
        run += w[j];
        last = j;
        if (run > u) break;
    }
    return std::int32_t(last);
}

Tokens sample_next(const Tensor3& logits, const Sampling& s, Rng& rng) {
    const std::size_t B = logits.shape(0), T = logits.shape(1);
    if (T == 0) fail("sample_next: logits " + shape_of(logits) + " have no position");
    Tokens next = Tokens::from_shape({B, 1});
    for (std::size_t b = 0; b < B; ++b)
        next(b, 0) = sample_token(xt::view(logits, b, T - 1, xt::all()), s, rng);
    return next;
}

Tokens generate(const LanguageModel& m, const Tokens& prompt, std::size_t new_tokens,
                const Sampling& s, Rng& rng) {
    check_sampling(s);
    const std::size_t B = prompt.shape(0), P = prompt.shape(1), T_max = m.pos_emb.vocab();
    if (B == 0 || P == 0)
        fail("generate: prompt " + shape_of(prompt) + " holds no token; give [B, P], P >= 1");
    if (P + new_tokens > T_max) {
        fail("generate: a prompt of " + str(P) + " tokens and " + str(new_tokens) +
             " new ones make " + str(P + new_tokens) + ", past T_max = " + str(T_max));
    }
    Tokens out = Tokens::from_shape({B, P + new_tokens});
    xt::view(out, xt::all(), xt::range(0, P)) = prompt;
    if (new_tokens == 0) return out;
    ModelCache cache = make_cache(m, B);
    Tensor3 logits = prefill(m, prompt, cache);  // [B, P, V]
    for (std::size_t i = 0; i < new_tokens; ++i) {
        const Tokens next = sample_next(logits, s, rng);  // [B, 1], position P + i
        xt::view(out, xt::all(), P + i) = xt::view(next, xt::all(), 0);
        if (i + 1 < new_tokens) logits = decode(m, next, cache);  // [B, 1, V]
    }
    return out;
}

}  // namespace mha
