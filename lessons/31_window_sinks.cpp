// Lesson 31 (past the articles): a sliding window with sinks, decoded in a fixed cache.
//
// Adds: decoding under sinks_window(S, W), where position t sees keys 0..S-1 and
// t-W+1..t. A decoder keeps only those: S + W slots, the sinks for good and a ring of W
// overwritten in turn, so its cache never grows. One step written out, every step
// against the masked forward, the bytes against lesson 16's cache.
// Mirrors: Mistral's rolling buffer, cache_k[:, pos % W] = k; StreamingLLM's sinks.
//
// B = batch, T = positions, E = d_model, H = heads, H_kv = kv heads, D = E / H,
// S = sinks, W = window, n = filled slots.
#include <algorithm>
#include <cstdio>

#include <xtensor/xview.hpp>

#include "mha/attend.hpp"
#include "mha/heads.hpp"
#include "mha/kv_cache.hpp"
#include "mha/scores.hpp"
#include "mha/softmax.hpp"
#include "mha/variants/rolling_cache.hpp"
#include "support/lesson.hpp"

int main(int argc, char** argv) {
    lesson::Info info;
    info.name = "31_window_sinks";
    info.summary = "a sliding window with sinks, decoded in a cache of S + W slots";
    info.draws = true, info.dump_mb = 0.9, info.default_heads = 4;
    info.default_batch = 2, info.default_time = 1024, info.default_d_model = 64;
    info.extra = {{"--sinks", "S", "positions every query sees", 4, 0, 4096, true, 1},
                  {"--window", "W", "last positions a query sees", 32, 1, 1e6, true, 2}};
    info.flags_fit = [](const lesson::Options& o) {  // (E % H != 0: the core says so)
        const std::size_t D = o.d_model / o.heads;  // RoPE turns pairs of coordinates
        return o.d_model % o.heads || D % 2 == 0 ? std::string() : "--d-model / --heads = D "
               "must be even (RoPE turns pairs), not " + std::to_string(D);
    };
    return lesson::run(argc, argv, info, [](lesson::Lesson& L) {
        const std::size_t B = L.opt.batch, T = L.opt.time, E = L.opt.d_model;
        const std::size_t H = L.opt.heads, H_kv = H % 2 == 0 ? H / 2 : H, D = E / H;
        const std::size_t S = std::size_t(L.opt.extra.at("--sinks"));
        const std::size_t W = std::size_t(L.opt.extra.at("--window"));
        using lesson::sci, mha::linear, mha::split_heads, mha::apply_rope,
            mha::attend, mha::merge_heads;  // C++17: shorter lines
        L.let("S", S), L.let("W", W), L.let("H_kv", H_kv);
        auto at = [](auto& t, std::size_t a, std::size_t b) {  // positions a..b-1
            return xt::view(t, xt::all(), xt::range(a, b));
        };

        L.section("Earlier stages, by the core");
        std::printf("S = %zu sinks, window W = %zu, H_kv = %zu kv heads; RoPE\n", S, W,
                    H_kv);
        mha::Rng rng(L.opt.seed);
        const mha::Tensor3 X = mha::randn(B, T, E, rng);  // [B, T, E]: the whole sequence
        const mha::MultiHeadAttention m(E, H, H_kv, mha::Init::xavier(L.opt.seed));
        L.dump("X0", xt::view(X, xt::range(0, 1))), L.dump_layers(m);
        const mha::Rope rope{mha::RopeStyle::half, 10000.0};  // keys are cached turned
        SHOWN(L, const mha::Mods mods{{}, mha::sinks_window(S, W), mha::kNegInf, rope});
        L.code("keep = (j <= i) & ((j < S) | (j > i - W))  # and RoPE on q, k");
        SHOWN(L, const mha::Stages full = m.forward_stages(X, X, X, mods));
        L.recap("the masked forward, all T", "full.output", full.output, "B, T, E");
        const std::size_t r = 12;  // the first positions, drawn whatever T
        std::vector<std::vector<float>> grid(r, std::vector<float>(r));
        for (std::size_t i = 0; i < r; ++i)  // the mask_mod, asked cell by cell
            for (std::size_t j = 0; j < r; ++j) grid[i][j] = mods.mask_mod(0, 0, i, j);
        L.mask_picture("sinks S + window W, 1 = may attend, positions 0..11",
                       "sinks_window_mask", grid, "query", "key");

        L.section("1. A cache of S + W slots, allocated once");
        SHOWN(L, mha::RollingCache cache = mha::make_rolling_cache(m, B, S, W, rope));
        L.step("k_cache = zeros(B, H_kv, S + W, D)", "cache.k", cache.k,
               "B, H_kv, S+W, D", "k_cache = torch.zeros(B, H_kv, S + W, D)",
               lesson::Show::shape_only);

        L.section(T > S + W ? "2. One step written out: the first position that reuses a slot"
                            : "2. One step written out: the last position (T <= S + W)");
        const std::size_t t0 = std::min(T - 1, S + W);
        if (t0 > 0) mha::decode_rolling(m, at(X, 0, t0), cache);  // positions 0..t0-1
        mha::RollingCache mine = cache;  // a copy: the core's step starts where it did
        SHOWN(L, const std::size_t slot = t0 < S ? t0 : S + (t0 - S) % W);
        L.code("slot = t if t < S else S + (t - S) % W");
        if (slot < mine.length())  // T > S + W: a slot is reused
            std::printf("  t0 = %zu goes to slot %zu, over position %zu = t0 - W\n", t0,
                        slot, mine.position[slot]);
        else
            std::printf("  T = %zu <= S + W = %zu: no slot is reused; t0 = T - 1 = %zu fills "
                        "slot %zu\n", T, S + W, t0, slot);
        const mha::Tensor3 x_t = at(X, t0, t0 + 1);  // [B, 1, E]
        const mha::Tensor4 q = apply_rope(split_heads(linear(x_t, m.wq), H), rope, t0);
        const mha::Tensor4 k_raw = split_heads(linear(x_t, m.wk), H_kv);  // [B,H_kv,1,D]
        const mha::Tensor4 v = split_heads(linear(x_t, m.wv), H_kv);      // [B,H_kv,1,D]
        SHOWN(L, const mha::Tensor4 k = apply_rope(k_raw, rope, t0));
        L.step("k = rope(split(wk(x_t)), t0)", "k", k, "B, H_kv, 1, D",
               "k = rotate(k_proj(x_t).view(B, 1, H_kv, D).transpose(1, 2), t)");
        SHOWN(L, xt::view(mine.k, xt::all(), xt::all(), xt::range(slot, slot + 1)) = k);
        xt::view(mine.v, xt::all(), xt::all(), xt::range(slot, slot + 1)) = v;
        mine.position[slot] = t0, mine.seen = t0 + 1;
        L.code("k_cache[:, :, slot] = k  # turned by its position t, not its slot");
        const std::size_t n = mine.length();  // the filled slots
        L.let("n", n);
        const mha::Tensor4 keys = xt::view(mine.k, xt::all(), xt::all(), xt::range(0, n));
        const mha::Tensor4 vals = xt::view(mine.v, xt::all(), xt::all(), xt::range(0, n));
        SHOWN(L, const mha::Tensor4 w = mha::softmax(mha::scaled_scores(q, keys)));
        L.step("softmax(q @ k_cache.T / sqrt(D)), no mask", "w", w, "B, H, 1, n",
               "(q @ k_cache.transpose(2, 3) / math.sqrt(D)).softmax(-1)");
        SHOWN(L, const mha::Tensor3 y_t = linear(merge_heads(attend(w, vals)), m.w_o));
        L.step("w_o(merge(w @ v_cache))", "y_t", y_t, "B, 1, E",
               "o_proj(merge(w @ v_cache))");
        double worst = mha::max_abs_diff(y_t, mha::decode_rolling(m, x_t, cache));
        L.say("No mask: the n filled slots hold what t0 may see, out of order, which a "
              "softmax does not mind. Against decode_rolling(): " + sci(worst) + ".");

        L.section("3. Decode all T positions, each against the masked forward");
        mha::RollingCache rolling = mha::make_rolling_cache(m, B, S, W, rope);
        mha::KVCache grown = mha::make_cache(m, B, T, rope);  // lesson 16's: its bytes
        const float* storage = rolling.k.data();
        const std::size_t per = 2 * B * H_kv * D * 4;  // bytes of K and V of one position
        std::printf("%10s %15s %15s %20s\n", "positions", "rolling bytes", "full bytes",
                    "its |diff| at t");
        bool bytes_ok = true;
        for (std::size_t t = 0; t < T; ++t) {
            const mha::Tensor3 x = at(X, t, t + 1);  // [B, 1, E]
            SHOWN(L, const mha::Tensor3 y = mha::decode_rolling(m, x, rolling));
            m.decode(x, grown);
            const double d = mha::max_abs_diff(y, at(full.output, t, t + 1));
            worst = std::max(worst, d);
            bytes_ok = bytes_ok && rolling.bytes() == std::min(t + 1, S + W) * per &&
                       grown.bytes() == (t + 1) * per;
            if (T <= 16 || ((t + 1) & t) == 0 || t + 1 == T)  // powers of two, and T
                std::printf("%10zu %15zu %15zu %20s\n", t + 1, rolling.bytes(),
                            grown.bytes(), sci(d).c_str());
        }
        L.code("k_cache[:, :, slot] = k; v_cache[:, :, slot] = v  # then as in 2.");

        int rc = L.claim("every decoded position equals the masked forward within 1e-5 "
                         "(max |diff| = " + sci(worst) + ")", worst <= 1e-5);
        rc |= L.claim("the cache never grew: " + std::to_string(S + W) + " slots, the "
                      "same storage after " + std::to_string(T) + " steps",
                      rolling.capacity() == S + W && rolling.k.data() == storage);
        rc |= L.claim("bytes: 2 B H_kv min(t, S+W) D 4; full: 2 B H_kv t D 4", bytes_ok);
        return rc;
    });
}
