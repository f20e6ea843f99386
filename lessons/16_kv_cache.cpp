// Lesson 16 (past the articles): decoding with a KV cache.
//
// Adds: prefill() a prompt, then decode() one position at a time. Under a
// causal mask the keys and values of earlier positions never change, so a
// decoder keeps them: a new token costs its own projections and one dot
// product per cached key, where recomputing costs the whole prefix again.
// The first decode step is written out with xtensor; every step is checked
// against the full causal forward() at that position.
// Mirrors: the articles' causal forward, `output = attention(X, X, X)`, one position
// at a time; a cache as PyTorch code keeps it, `k_cache[:, :, t] = k` or `torch.cat`.
//
// B = batch, T = positions, L = cached, E = d_model, H = heads, D = E / H.
#include <algorithm>

#include <xtensor/xview.hpp>

#include "mha/attend.hpp"
#include "mha/heads.hpp"
#include "mha/kv_cache.hpp"
#include "mha/scores.hpp"
#include "mha/softmax.hpp"
#include "support/lesson.hpp"

int main(int argc, char** argv) {
    lesson::Info info;
    info.name = "16_kv_cache";
    info.summary = "prefill a prompt, then decode one position at a time";
    info.draws = true, info.dump_mb = 53.6;
    return lesson::run(argc, argv, info, [](lesson::Lesson& L) {
        const std::size_t B = L.opt.batch, T = L.opt.time, E = L.opt.d_model, H = L.opt.heads;
        using lesson::fixed;

        L.section("Earlier stages, by the core");
        mha::Rng rng(L.opt.seed);
        const mha::Tensor3 X = mha::randn(B, T, E, rng);  // [B, T, E]: the whole sequence
        const mha::MultiHeadAttention m(E, H, mha::Init::xavier(L.opt.seed));
        L.dump("X0", xt::view(X, xt::range(0, 1))), L.dump_layers(m);  // lessons/pytorch/
        const mha::Mask causal = mha::causal_mask(T, T);
        SHOWN(L, const mha::AttentionOutput all = m.forward(X, X, X, &causal));
        const mha::Tensor3& full = all.output;  // [B, T, E]
        L.recap("the causal forward, all T at once", "full", full, "B, T, E");
        L.explore("decoding: query t reads the t + 1 cached keys", "decode",
                  {{"weights", &all.weights}}, &causal);
        L.figure("the cache grows: step t's query reads the t + 1 keys cached so far",
                 "cache_growing", {lesson::grid_of(all.weights, 0, 0, "sequence 0, head 0",
                                                   &causal)}, false, "decode step t",
                 "cached key");

        L.section("1. Prefill the prompt");
        const std::size_t P = T > 8 ? T - 8 : 1;  // the prompt; the rest is decoded
        L.let("P", P);
        const mha::Tensor3 prompt = xt::view(X, xt::all(), xt::range(0, P));  // [B, P, E]
        SHOWN(L, mha::KVCache cache = mha::make_cache(m, B, T));  // room for all T
        L.step("k_cache = zeros(B, H, T, D)", "cache.k", cache.k, "B, H, T, D",
               "k_cache = torch.zeros(B, H, T, D)  # allocated once");
        SHOWN(L, const mha::Tensor3 y = m.prefill(prompt, cache));  // [B, P, E]
        L.step("prefill(prompt)", "y", y, "B, P, E", "k_cache[:, :, :P] = k  # and v");
        L.say("cache.length = " + std::to_string(cache.length) + ": K and V of the prompt.");

        L.section("2. One decode step, written out");
        const std::size_t t0 = P;                                             // decoded
        const mha::Tensor3 x_t = xt::view(X, xt::all(), xt::range(t0, t0 + 1));  // [B, 1, E]
        mha::KVCache mine = cache;  // a copy, so that the core's decode starts where it did
        const mha::Tensor4 q = mha::split_heads(mha::linear(x_t, m.wq), H);  // [B, H, 1, D]
        const mha::Tensor4 k = mha::split_heads(mha::linear(x_t, m.wk), H);  // [B, H, 1, D]
        const mha::Tensor4 v = mha::split_heads(mha::linear(x_t, m.wv), H);
        // the written slot: position t0 of every (sequence, head)
        SHOWN(L, xt::view(mine.k, xt::all(), xt::all(), xt::range(t0, t0 + 1)) = k);
        xt::view(mine.v, xt::all(), xt::all(), xt::range(t0, t0 + 1)) = v;
        L.step("k_cache[:, :, t] = k", "k", k, "B, H, 1, D", "k_cache[:, :, t:t+1] = k");
        L.let("L", t0);
        const mha::Tensor4 keys = xt::view(mine.k, xt::all(), xt::all(), xt::range(0, t0 + 1));
        const mha::Tensor4 vals = xt::view(mine.v, xt::all(), xt::all(), xt::range(0, t0 + 1));
        SHOWN(L, const mha::Tensor4 w = mha::softmax(mha::scaled_scores(q, keys)));
        L.step("softmax(q @ k_cache.T / sqrt(D))", "w", w, "B, H, 1, L+1",
               "(q @ k_cache[:, :, :t+1].transpose(2, 3) / math.sqrt(D)).softmax(-1)");
        using mha::attend, mha::linear, mha::merge_heads;  // C++17: a shorter line
        SHOWN(L, const mha::Tensor3 y_t = linear(merge_heads(attend(w, vals)), m.w_o));
        L.step("w_o(merge(w @ v_cache))", "y_t", y_t, "B, 1, E", "");
        L.say("No mask: position t sees positions 0..t, all of which are in the cache.");

        L.section("3. Decode the rest, each step against the whole forward");
        double worst = 0;
        for (std::size_t t = P; t < T; ++t) {
            const mha::Tensor3 in = xt::view(X, xt::all(), xt::range(t, t + 1));  // [B, 1, E]
            SHOWN(L, const mha::Tensor3 out = m.decode(in, cache));  // [B, 1, E]
            const mha::Tensor3 want = xt::view(full, xt::all(), xt::range(t, t + 1));
            const double d = mha::max_abs_diff(out, want);
            worst = std::max(worst, d);
            if (t == P) worst = std::max(worst, mha::max_abs_diff(out, y_t));
            std::printf("  position %4zu: cache K [%zu, %zu, %zu, %zu], max |diff| against "
                        "forward() %.1e\n", t, B, H, cache.length, E / H, d);
        }
        L.say("m.decode() is section 2's step in one call, written into the cache at its "
              "length. PyTorch code often grows the cache instead, a new tensor every step:");
        L.code("k_cache = torch.cat([k_cache, k], dim=2)"
               "  # v_cache alike; then as in 2.");

        L.section("4. What a step costs at B = 1, with and without the cache");
        // Per new token at cache length n: with the cache, 4 projections of one row
        // (8 E^2) and 2 products over n keys (4 n E); recomputing, the causal forward of
        // n positions, counting only the n (n + 1) / 2 scores a query may see (lesson 15).
        std::printf("%6s %14s %14s %12s %12s\n", "T", "cache FLOPs", "recompute", "cache s",
                    "recompute s");
        const mha::MultiHeadAttention one(E, H, mha::Init::xavier(L.opt.seed));
        mha::Rng r(1);
        double measured = 0, counted = 0;
        for (std::size_t n = 1; n <= 2048; n *= 2) {
            const mha::Tensor3 seq = mha::randn(1, n, E, r);  // [1, n, E]: one sequence
            const mha::Mask c = mha::causal_mask(n, n);
            mha::KVCache kv = mha::make_cache(one, 1, n);
            if (n > 1) one.prefill(xt::view(seq, xt::all(), xt::range(0, n - 1)), kv);
            const mha::Tensor3 last = xt::view(seq, xt::all(), xt::range(n - 1, n));
            const double with = lesson::median_seconds([&] {
                kv.length = n - 1;  // the same step each time: the last position again
                one.decode(last, kv);
            });
            const double without = lesson::median_seconds([&] { one.forward(seq, seq, seq, &c); });
            const double f_with = 8.0 * E * E + 4.0 * n * E;
            const double f_without = 8.0 * n * E * E + 2.0 * n * (n + 1) * E;
            std::printf("%6zu %14.3g %14.3g %12.6f %12.6f%s\n", n, f_with, f_without, with,
                        without, std::min(with, without) < 2e-5 ? "  (microseconds)" : "");
            if (n == 2048) measured = without / with, counted = f_without / f_with;
        }
        L.say("With the cache a step costs 8 E^2 + 4 T E; recomputing, T (8 E^2 + 2 (T + 1) E): "
              "between T/2 and T times as much, " + fixed(counted, 0) + " times at T = 2048. "
              "Measured there, recomputing took " + fixed(measured, 0) + " times as long: a "
              "cached step is so small that what every call costs anyway (four layers on one "
              "row, starting the work on each core) is much of it.");

        L.section("5. What the cache holds in memory");
        const double mine_bytes = double(cache.bytes());
        // K and V, per layer, per sequence, per kv head, per position, D numbers
        const double big = 2.0 * 32 * 1 * 32 * 4096 * 128;
        std::printf("this cache: 2 x B %zu x H %zu x T %zu x D %zu x 4 bytes = %.0f bytes\n", B,
                    H, cache.length, E / H, mine_bytes);
        std::printf("a 32-layer model, 32 heads of D = 128, T = 4096, B = 1:\n"
                    "  2 x 32 x 32 x 4096 x 128 numbers = %.3g: %.2f GB in float16, %.2f GB "
                    "in float32\n", big, big * 2 / 1e9, big * 4 / 1e9);
        L.say("Grouped-query attention (lesson 17) divides it: its cache holds H_kv heads.");

        int rc = L.claim("every decoded position equals forward() within 1e-5 (max |diff| = " +
                             fixed(worst, 7) + ")", worst <= 1e-5);
        rc |= L.claim("the cache holds 2 B H T D floats",
                      mine_bytes == 2.0 * B * H * T * (E / H) * 4);
        return rc;
    });
}
