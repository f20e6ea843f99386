// Lesson 29 (past the articles): the mask gallery.
//
// Adds: the masks a current model's attention uses, each one small function
// mask_mod(b, h, q, k) -> bool: causal, a sliding window (Mistral, Gemma's
// local layers), sinks with a window (StreamingLLM, gpt-oss), prefix-LM (T5's
// prefix-LM, PaLI), packed documents, and their and / or. Each is drawn as its
// block mask: the tiles a tiled forward computes, masks inside, or skips.
// Mirrors: PyTorch's FlexAttention (torch >= 2.5), create_block_mask(mask_mod, ...).
//
// B = batch, T = time, E = d_model, H = heads, D = E / H.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "mha/attention.hpp"
#include "mha/fast/block_mask.hpp"
#include "support/lesson.hpp"

int main(int argc, char** argv) {
    lesson::Info info;
    info.name = "29_mask_gallery", info.dump_mb = 0.1, info.draws = true;
    info.summary = "every mask a mask_mod, drawn as the tiles it computes and skips";
    return lesson::run(argc, argv, info, [](lesson::Lesson& L) {
        const std::size_t B = L.opt.batch, T = L.opt.time;
        const std::size_t E = L.opt.d_model, H = L.opt.heads;
        using lesson::fixed;
        mha::Rng rng(L.opt.seed);
        const mha::Tensor3 X = mha::randn(B, T, E, rng);  // [B, T, E]

        L.section("1. A mask is a function of the positions");
        SHOWN(L, const mha::MaskMod causal = mha::causal_mod());
        L.code("def causal(b, h, q_idx, kv_idx): return q_idx >= kv_idx");
        SHOWN(L, const mha::Mask tril = mha::mask_of(causal, 1, 1, T, T));
        L.step("create_mask(causal, 1, 1, T, T)", "tril", tril, "1, 1, T, T",
               "create_mask(causal, 1, 1, T, T)");
        const bool same_tril = tril == mha::causal_mask(T, T);
        L.say("The same bools as causal_mask(T, T), the articles' torch.tril: written "
              "out only to be drawn or handed to forward(); the function is the mask.");

        L.section("2. The gallery, each mask in tiles");
        // a quarter of T (at least 2) for windows and prefixes; 3 documents
        const std::size_t W = std::max<std::size_t>(2, T / 4);
        const std::size_t S = std::max<std::size_t>(1, T / 16);
        xt::xtensor<std::int64_t, 2> ids = xt::zeros<std::int64_t>({B, T});  // [B, T]
        for (std::size_t b = 0; b < B; ++b)
            for (std::size_t t = 0; t < T; ++t) ids(b, t) = std::int64_t(3 * t / T);
        struct Variant {
            std::string name;
            mha::MaskMod mod;
        };
        const std::vector<Variant> gallery = {
            {"causal", causal},
            {"window " + std::to_string(W), mha::sliding_window(W)},
            {"sinks " + std::to_string(S) + "+" + std::to_string(W),
             mha::sinks_window(S, W)},
            {"prefix " + std::to_string(W), mha::prefix_lm(W)},
            {"documents", mha::documents(ids)},
            {"window|prefix", mha::or_masks(mha::sliding_window(W), mha::prefix_lm(W))},
        };
        SHOWN(L, const mha::MaskMod window = mha::sliding_window(W));
        L.code("def window(b, h, q, kv): return (q >= kv) & (q - kv < W)");
        // tiles of T / 8 (at least 1) so that each mask is 8 tiles a side
        const std::size_t tile = std::max<std::size_t>(1, T / 8);
        SHOWN(L, const auto tiles = mha::fast::block_mask(window, 1, 1, T, T, tile,
                                                          tile));
        L.code("block_mask = create_block_mask(window, 1, 1, T, T, BLOCK_SIZE=tile)");
        std::printf("window %zu: %zu of %zu tiles computed\n", W, tiles.computed(),
                    tiles.total());
        std::printf("tiles of %zu x %zu: '#' full, computed whole; '+' partial, masked "
                    "inside; '.' empty, skipped\n", tile, tile);
        std::vector<mha::fast::BlockMask> maps;
        std::vector<lesson::svg::Grid> drawn;  // the same tiles, for the SVG
        std::string line;  // the names, then each row of tiles, 14 columns apiece
        auto column = [&line](const std::string& text) {
            line += text + std::string(14 - text.size(), ' ');
        };
        for (const Variant& v : gallery) {
            maps.push_back(mha::fast::block_mask(v.mod, 1, 1, T, T, tile, tile));
            column(v.name);
            drawn.push_back({v.name, {}, {}});
        }
        for (std::size_t qb = 0; qb <= maps[0].q_blocks; ++qb) {
            std::printf("%s\n", line.substr(0, line.find_last_not_of(' ') + 1).c_str());
            line.clear();
            for (std::size_t i = 0; i < maps.size() && qb < maps[0].q_blocks; ++i) {
                std::string row;
                drawn[i].value.emplace_back();
                for (std::size_t kb = 0; kb < maps[i].k_blocks; ++kb) {
                    using mha::fast::Tile;
                    const Tile t = maps[i].at(0, 0, qb, kb);
                    row += t == Tile::full ? '#' : t == Tile::empty ? '.' : '+';
                    drawn[i].value.back().push_back(float(t));  // 0 empty .. 2 full
                }
                column(row);
            }
        }
        L.figure("tiles: empty, partial, full", "mask_gallery", drawn, false,
                 "query block", "key block", {}, 3, lesson::svg::tile_kinds());
        std::printf("%-14s %8s %8s %8s %8s\n", "", "keys", "full", "partial",
                    "skipped");
        for (std::size_t i = 0; i < gallery.size(); ++i) {
            const mha::Mask m = mha::mask_of(gallery[i].mod, 1, 1, T, T);  // [1, 1, T, T]
            std::size_t seen = 0;
            for (bool k : m) seen += k;
            std::printf("%-14s %7.0f%% %8zu %8zu %8zu\n", gallery[i].name.c_str(),
                        100.0 * seen / (T * T), maps[i].full, maps[i].partial,
                        maps[i].empty);
        }
        L.say("keys: the share of (query, key) pairs each mask lets through. A tiled "
              "forward pays for every tile it does not skip, full or partial.");

        L.section("3. At the engine's tiles: 64 x 64, T = 1024");
        std::printf("%-14s %10s %8s\n", "", "computed", "of");
        std::size_t causal_tiles = 0;
        for (const Variant& v : gallery) {
            if (v.name == "documents") continue;  // its ids are [B, T] at this lesson's T
            const auto bm = mha::fast::block_mask(v.mod, 1, 1, 1024, 1024);
            if (v.name == "causal") causal_tiles = bm.computed();
            std::printf("%-14s %10zu %8zu\n", v.name.c_str(), bm.computed(), bm.total());
        }
        L.say("Causal computes the 16 x 17 / 2 = 136 tiles on or below the diagonal; a window's "
              "count grows with T W, not T^2 (mha_bench --long: W = 1024 at T = 16384). Documents "
              "is left out: it needs an id per position, and the gallery's are for its T.");

        L.section("4. The engine skips them and gives the stages' numbers");
        const mha::MultiHeadAttention m(E, H, mha::Init::xavier(L.opt.seed));
        double worst = 0;
        for (const Variant& v : gallery) {
            mha::Mods mods;
            mods.mask_mod = v.mod;
            const mha::Mask mask = mha::mask_of(v.mod, B, 1, T, T);  // [B, 1, T, T]
            const mha::Tensor3 stages = m.forward_stages(X, X, X, mods).output;  // [B, T, E]
            SHOWN(L, const mha::Tensor3 tiled = m.forward_no_weights(X, X, X, &mask));
            const double diff = mha::max_abs_diff(tiled, stages);
            worst = std::max(worst, diff);
            std::printf("%-14s max |diff| = %.1e\n", v.name.c_str(), diff);
        }
        L.code("flex_attention(q, k, v, block_mask=block_mask)");

        int rc = L.claim("mask_of(causal_mod()) is causal_mask(T, T)", same_tril);
        rc |= L.claim("causal at T = 1024 in 64 x 64 tiles computes " +
                          std::to_string(causal_tiles) + " of 256 (16 x 17 / 2 = 136)",
                      causal_tiles == 136);
        rc |= L.check("the stages, every mask tiled", worst, 1e-5);
        return rc;
    });
}
