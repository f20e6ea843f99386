// Tests for mha/io/model_io.hpp: a block and a language model written and
// read back exactly under PyTorch's names, L found from the files, every
// missing or misshapen file refused by name and shapes, token ids checked.
// (Their numbers against PyTorch: tests/pytorch/check_block.py, check_model.py.)
#include <doctest/doctest.h>

#include <cstdint>
#include <filesystem>
#include <string>

#include <xtensor/xnpy.hpp>
#include <xtensor/xview.hpp>

#include "mha/io/model_io.hpp"
#include "mha/io/npy.hpp"

namespace fs = std::filesystem;

namespace {

// A folder of its own for each test case: ctest runs cases in parallel (a
// name of its own: the unity build joins this file with test_npy.cpp).
struct ModelDir {
    fs::path path;
    explicit ModelDir(const std::string& name)
        : path(fs::temp_directory_path() / ("mha_test_model_io_" + name)) {
        fs::remove_all(path);
        fs::create_directories(path);
    }
    ~ModelDir() { fs::remove_all(path); }
    std::string str() const { return path.string(); }
    std::string file(const std::string& name) const { return (path / name).string(); }
};

// V 10, T_max 6, E 8, H 2, F 16: small enough to read a message about.
mha::LanguageModel small_model(std::size_t layers, std::uint64_t seed = 3) {
    return mha::make_language_model({10, 6, 8, 2, 16, layers}, seed);
}

double model_diff(const mha::LanguageModel& a, const mha::LanguageModel& b) {
    double d = std::max(mha::max_abs_diff(a.tok_emb.weight, b.tok_emb.weight),
                        mha::max_abs_diff(a.head.bias, b.head.bias));
    for (std::size_t l = 0; l < a.layers.size(); ++l) {
        const mha::Block &x = a.layers[l], &y = b.layers[l];
        for (auto [p, q] : {std::pair{&x.self_attn.wk.weight, &y.self_attn.wk.weight},
                            std::pair{&x.ff.linear2.weight, &y.ff.linear2.weight}})
            d = std::max(d, mha::max_abs_diff(*p, *q));
        d = std::max(d, mha::max_abs_diff(x.self_attn.wv.bias, y.self_attn.wv.bias));
        d = std::max(d, mha::max_abs_diff(x.norm2.bias, y.norm2.bias));
    }
    return d;
}

void save_ids(const std::string& path, const xt::xtensor<std::int64_t, 2>& ids) {
    xt::dump_npy(path, ids);
}

}  // namespace

TEST_CASE("model_io: save_model and load_model round-trip, L from the files") {
    ModelDir d("round_trip");
    mha::LanguageModel m = small_model(3);
    for (float& w : m.layers[2].norm1.bias) w = 0.25f;  // not the init's zeros
    mha::save_model(m, d.str());
    CHECK(fs::exists(d.path / "layers.2.self_attn.in_proj_weight.npy"));
    CHECK(fs::exists(d.path / "layers.0.linear1.weight.npy"));
    CHECK(mha::shape_str(mha::npy_info(d.file("layers.1.linear2.weight.npy")).shape) ==
          "[8, 16]");
    const mha::LanguageModel back = mha::load_model(d.str(), 2);
    const mha::ModelConfig c = back.config();
    CHECK(c.vocab == 10);
    CHECK(c.max_len == 6);
    CHECK(c.embed_dim == 8);
    CHECK(c.num_heads == 2);
    CHECK(c.hidden == 16);
    CHECK(c.layers == 3);
    CHECK(model_diff(m, back) == 0.0);
    CHECK(back.layers[2].norm1.bias(0) == 0.25f);
    const mha::Tokens ids = {{1, 2, 3, 9}, {0, 0, 4, 5}};
    CHECK(mha::max_abs_diff(mha::forward(m, ids).logits, mha::forward(back, ids).logits) == 0.0);
}

TEST_CASE("model_io: a shallower model saved over a deeper one reads back as itself") {
    ModelDir d("shallower");
    mha::save_model(small_model(3), d.str());
    const mha::LanguageModel one = small_model(1, 9);
    mha::save_model(one, d.str());
    CHECK_FALSE(fs::exists(d.path / "layers.1.self_attn.in_proj_weight.npy"));
    CHECK(mha::load_model(d.str(), 2).layers.size() == 1);
    CHECK(model_diff(one, mha::load_model(d.str(), 2)) == 0.0);
}

TEST_CASE("model_io: a block under a prefix, as in_proj stacks wq, wk, wv") {
    ModelDir d("block");
    const mha::Block blk(12, 3, 20, 7);
    mha::save_block(blk, d.str(), "layers.4.");
    const auto in_w = mha::load_npy_float(d.file("layers.4.self_attn.in_proj_weight.npy"),
                                          "in_proj_weight", 2);
    CHECK(mha::shape_of(in_w) == "[36, 12]");
    CHECK(mha::max_abs_diff(xt::view(in_w, xt::range(12, 24)), blk.self_attn.wk.weight) == 0.0);
    const mha::Block back = mha::load_block(d.str(), 3, "layers.4.");
    CHECK(back.ff.linear1.out_features() == 20);
    CHECK(mha::max_abs_diff(back.self_attn.wv.weight, blk.self_attn.wv.weight) == 0.0);
    CHECK(mha::max_abs_diff(back.ff.linear1.bias, blk.ff.linear1.bias) == 0.0);
    CHECK(mha::max_abs_diff(back.norm2.weight, blk.norm2.weight) == 0.0);
    CHECK_THROWS_WITH_AS(mha::load_block(d.str(), 5, "layers.4."),
                         doctest::Contains("not divisible"), std::invalid_argument);
    CHECK_THROWS_WITH_AS(mha::load_block(d.str(), 3),
                         doctest::Contains("self_attn.in_proj_weight.npy: missing (want [3E, E])"),
                         std::invalid_argument);
}

TEST_CASE("model_io: gradients under PyTorch's names, in_proj's three parts stacked") {
    ModelDir d("grads");
    const mha::LanguageModel m = small_model(2);
    const mha::Tokens ids = {{1, 2, 3}};
    const mha::ModelTrace t = mha::forward(m, ids);
    const mha::Tensor3 g_logits = xt::ones<float>(t.logits.shape());
    const mha::ModelGrads g = mha::backward(m, t, ids, g_logits);
    mha::save_model_grads(g, d.str());
    for (const char* name : {"tok_emb.weight", "pos_emb.weight", "layers.1.norm2.bias",
                             "layers.0.self_attn.out_proj.bias", "norm.weight", "head.bias"})
        CHECK_MESSAGE(fs::exists(d.path / (std::string(name) + ".grad.npy")), name);
    const auto in_w = mha::load_npy_float(d.file("layers.1.self_attn.in_proj_weight.grad.npy"),
                                          "grad", 2);
    CHECK(mha::shape_of(in_w) == "[24, 8]");
    CHECK(mha::max_abs_diff(xt::view(in_w, xt::range(16, 24)), g.layers[1].self_attn.wv.weight) ==
          0.0);
    const auto pos = mha::load_npy_float(d.file("pos_emb.weight.grad.npy"), "grad", 2);
    CHECK(mha::shape_of(pos) == "[6, 8]");  // [T_max, E], rows past T = 3 zero
    CHECK(mha::max_abs_diff(xt::view(pos, xt::range(3, 6)), mha::zeros(3, 8)) == 0.0);
    // weights and gradients may share a folder: L counts the weights only
    mha::save_model(small_model(1), d.str());
    CHECK(mha::load_model(d.str(), 2).layers.size() == 1);
}

TEST_CASE("model_io: every missing or misshapen file named, with the shapes") {
    ModelDir d("bad");
    mha::save_model(small_model(2), d.str());
    auto refused = [&](const std::string& message) {
        CHECK_THROWS_WITH_AS(mha::load_model(d.str(), 2), doctest::Contains(message.c_str()),
                             std::invalid_argument);
    };
    SUBCASE("a block's file missing") {
        fs::remove(d.path / "layers.1.linear2.bias.npy");
        refused("layers.1.linear2.bias.npy: missing (want [E] = [8])");
    }
    SUBCASE("an attention file missing") {
        fs::remove(d.path / "layers.0.self_attn.out_proj.weight.npy");
        refused("layers.0.self_attn.out_proj.weight.npy: missing (want [E, E] = [8, 8])");
    }
    SUBCASE("a gap in the layers") {
        fs::rename(d.path / "layers.1.norm1.bias.npy", d.path / "layers.3.norm1.bias.npy");
        refused("layers.1.norm1.bias.npy: missing (want [E] = [8])");
    }
    SUBCASE("no layers") {
        for (const auto& e : fs::directory_iterator(d.path))
            if (e.path().filename().string().rfind("layers.", 0) == 0) fs::remove(e.path());
        refused("layers.0.self_attn.in_proj_weight.npy: missing (no layers.{i}.* files");
    }
    SUBCASE("the head's E") {
        mha::save_npy(d.file("head.weight.npy"), mha::zeros(10, 9));
        refused("head.weight.npy: [10, 9], not [V, E] = [10, 8]");
    }
    SUBCASE("the feed-forward's F") {
        mha::save_npy(d.file("layers.0.linear2.weight.npy"), mha::zeros(8, 15));
        refused("layers.0.linear2.weight.npy: [8, 15], not [E, F] = [8, 16]");
    }
    SUBCASE("a block of another E") {
        mha::save_block(mha::Block(4, 2, 16, 1), d.str(), "layers.1.");
        refused("layers.1.self_attn.in_proj_weight.npy: [12, 4], not [3E, E] = [24, 8] "
                "(E from tok_emb.weight [10, 8])");
    }
    SUBCASE("a rank") {
        mha::save_npy(d.file("norm.bias.npy"), mha::zeros(1, 8));
        refused("norm.bias.npy: norm.bias [E] has shape [1, 8], not rank 1");
    }
    SUBCASE("an empty table") {
        mha::save_npy(d.file("pos_emb.weight.npy"), mha::Tensor2(xt::zeros<float>({0, 8})));
        refused("pos_emb.weight.npy: [0, 8], not [T_max, E] with sizes from 1");
    }
    SUBCASE("no folder") {
        CHECK_THROWS_WITH_AS(mha::load_model(d.file("nope"), 2),
                             doctest::Contains("nope: no such folder"), std::invalid_argument);
    }
}

TEST_CASE("model_io: token ids, int64 or int32, each checked before it is narrowed") {
    ModelDir d("tokens");
    save_ids(d.file("ids.npy"), {{1, 2, 9}, {0, 0, 4}});
    const mha::Tokens t = mha::load_tokens(d.file("ids.npy"), 10, 6);
    CHECK(mha::shape_str(t.shape()) == "[2, 3]");
    CHECK(t(0, 2) == 9);
    const xt::xtensor<std::int32_t, 2> i32 = {{3, 4}};
    xt::dump_npy(d.file("i32.npy"), i32);
    CHECK(mha::load_tokens(d.file("i32.npy"), 10, 6)(0, 1) == 4);
    auto refused = [&](const std::string& file, const std::string& message) {
        CHECK_THROWS_WITH_AS(mha::load_tokens(d.file(file), 10, 6), doctest::Contains(message.c_str()),
                             std::invalid_argument);
    };
    save_ids(d.file("big.npy"), {{1, 10}});
    refused("big.npy", "big.npy: token 10 at [0, 1] is outside [0, V - 1] = [0, 9]");
    save_ids(d.file("neg.npy"), {{-1}});
    refused("neg.npy", "token -1 at [0, 0]");
    save_ids(d.file("wrap.npy"), {{(std::int64_t(1) << 32) + 3}});  // would narrow to 3
    refused("wrap.npy", "token 4294967299 at [0, 0]");
    save_ids(d.file("long.npy"), xt::zeros<std::int64_t>({1, 7}));
    refused("long.npy", "long.npy: tokens [1, 7] have T = 7 > T_max = 6 (pos_emb's rows)");
    save_ids(d.file("none.npy"), xt::zeros<std::int64_t>({0, 3}));
    refused("none.npy", "tokens [0, 3] hold no ids");
    mha::save_npy(d.file("float.npy"), mha::zeros(1, 3));
    refused("float.npy", "tokens [B, T] must be int64 or int32, not float32");
    xt::dump_npy(d.file("rank1.npy"), xt::xtensor<std::int64_t, 1>{1, 2});
    refused("rank1.npy", "tokens [B, T] has shape [2], not rank 2");
}
