// Tests for mha/io/torch_io.hpp: the committed PyTorch parity fixtures
// (tests/data/parity, written by tests/pytorch/make_parity_fixtures.py),
// the state_dict round trip, and PyTorch's initialiser.
#include <doctest/doctest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <xtensor/xnpy.hpp>

#include "mha/io/npy.hpp"
#include "mha/io/torch_io.hpp"

namespace fs = std::filesystem;

namespace {

const fs::path kParity = fs::path(MHA_TEST_DATA) / "parity";

std::size_t num_heads_of(const fs::path& dir) {
    std::ifstream f(dir / "case.json");
    std::stringstream s;
    s << f.rdbuf();
    const std::string text = s.str(), key = "\"num_heads\": ";
    const std::size_t at = text.find(key);
    REQUIRE(at != std::string::npos);
    return std::stoul(text.substr(at + key.size()));
}

mha::Tensor3 input(const fs::path& file) {
    return mha::load_npy_tensor3(file.string(), "input [B, T, E]");
}

std::string maybe(const fs::path& file) {
    return fs::exists(file) ? file.string() : std::string();
}

}  // namespace

TEST_CASE("parity: every committed PyTorch case, output and per-head weights") {
    // Unit-scale data: 1e-5 absolute covers float rounding in both programs.
    const double tol = 1e-5;
    std::size_t cases = 0;
    for (const auto& entry : fs::directory_iterator(kParity)) {
        const fs::path dir = entry.path();
        CAPTURE(dir.filename().string());
        const std::size_t H = num_heads_of(dir);
        const mha::MultiHeadAttention m = mha::load_torch_mha(dir.string(), H);
        const mha::Tensor3 q = input(dir / "query.npy");
        const bool cross = fs::exists(dir / "key.npy");
        const mha::Tensor3 k = cross ? input(dir / "key.npy") : q;
        const mha::Tensor3 v = cross ? input(dir / "value.npy") : q;
        const mha::TorchMasks masks =
            mha::load_torch_masks(maybe(dir / "attn_mask.npy"),
                                  maybe(dir / "key_padding_mask.npy"), q.shape(0), H,
                                  q.shape(1), k.shape(1));
        const auto out = m.forward(q, k, v, masks.keep_ptr(), mha::kNegInf,
                                   masks.bias_ptr());
        const auto want_out = mha::load_npy_float(
            (dir / "expected_output.npy").string(), "expected output", 3);
        const auto want_w = mha::load_npy_float(
            (dir / "expected_attn_weights.npy").string(), "expected weights", 4);
        CHECK(mha::max_abs_diff(out.output, want_out) < tol);
        CHECK(mha::max_abs_diff(out.weights, want_w) < tol);
        ++cases;
    }
    CHECK(cases >= 12);
}

TEST_CASE("save_torch_mha and load_torch_mha round-trip exactly") {
    const fs::path dir = fs::temp_directory_path() / "mha_test_state_dict";
    fs::create_directories(dir);
    const mha::MultiHeadAttention m(12, 3, mha::Init::xavier(8));
    mha::save_torch_mha(m, dir.string());
    const mha::MultiHeadAttention back = mha::load_torch_mha(dir.string(), 3);
    CHECK(mha::max_abs_diff(back.wq.weight, m.wq.weight) == 0.0);
    CHECK(mha::max_abs_diff(back.wv.bias, m.wv.bias) == 0.0);
    CHECK(mha::max_abs_diff(back.w_o.weight, m.w_o.weight) == 0.0);
    CHECK_THROWS_WITH_AS(mha::load_torch_mha(dir.string(), 5),
                         doctest::Contains("not divisible"), std::invalid_argument);
    fs::remove(dir / "out_proj.bias.npy");
    CHECK_THROWS_WITH_AS(mha::load_torch_mha(dir.string(), 3),
                         doctest::Contains("out_proj.bias.npy: cannot open"),
                         std::invalid_argument);
    mha::save_npy((dir / "out_proj.bias.npy").string(), mha::zeros(1, 7));
    CHECK_THROWS_WITH_AS(mha::load_torch_mha(dir.string(), 3),
                         doctest::Contains("not rank 1"), std::invalid_argument);
    mha::save_npy((dir / "in_proj_weight.npy").string(), mha::zeros(12, 12));
    CHECK_THROWS_WITH_AS(mha::load_torch_mha(dir.string(), 3),
                         doctest::Contains("[3E, E]"), std::invalid_argument);
    fs::remove_all(dir);
}

TEST_CASE("masks with PyTorch's polarity, and wrong shapes refused") {
    const fs::path dir = fs::temp_directory_path() / "mha_test_masks";
    fs::create_directories(dir);
    // attn_mask bool [2, 3]: True = not allowed; key_padding_mask [1, 3].
    const xt::xtensor<bool, 2> am = {{false, true, true}, {false, false, true}};
    const xt::xtensor<bool, 2> kpm = {{false, false, true}};
    xt::dump_npy((dir / "am.npy").string(), am);
    xt::dump_npy((dir / "kpm.npy").string(), kpm);
    const auto m = mha::load_torch_masks((dir / "am.npy").string(),
                                         (dir / "kpm.npy").string(), 1, 2, 2, 3);
    REQUIRE(m.keep.has_value());
    const mha::Mask want = {{{{1, 0, 0}, {1, 1, 0}}}};
    CHECK(*m.keep == want);
    CHECK_FALSE(m.bias.has_value());
    CHECK_THROWS_WITH_AS(mha::load_torch_masks((dir / "am.npy").string(), "", 1, 2, 3, 3),
                         doctest::Contains("not [Tq, Tk] = [3, 3]"),
                         std::invalid_argument);
    CHECK_THROWS_WITH_AS(mha::load_torch_masks("", (dir / "kpm.npy").string(), 2, 2, 2, 3),
                         doctest::Contains("[B, Tk] = [2, 3]"), std::invalid_argument);
    const xt::xtensor<int, 2> ints = {{0, 1}};
    xt::dump_npy((dir / "int.npy").string(), ints);
    CHECK_THROWS_WITH_AS(mha::load_torch_masks("", (dir / "int.npy").string(), 1, 1, 1, 2),
                         doctest::Contains("must be bool"), std::invalid_argument);
    fs::remove_all(dir);
}

TEST_CASE("load_state_dict: nn.MultiheadAttention's and both articles' layouts") {
    const fs::path dir = fs::temp_directory_path() / "mha_test_layouts";
    fs::remove_all(dir);
    mha::Rng rng(8);
    const mha::MultiHeadAttention m(12, 3, mha::Init::xavier(8));
    const mha::Tensor3 x = mha::randn(2, 5, 12, rng);
    const auto want = m.forward(x, x, x).output;
    auto save = [&](const fs::path& d, const char* q, const char* k, const char* v,
                    const char* o) {
        fs::create_directories(d);
        const std::pair<const char*, const mha::Linear*> layers[] = {
            {q, &m.wq}, {k, &m.wk}, {v, &m.wv}, {o, &m.w_o}};
        for (const auto& [name, l] : layers) {
            mha::save_npy((d / (std::string(name) + ".weight.npy")).string(), l->weight);
            mha::save_npy((d / (std::string(name) + ".bias.npy")).string(), l->bias);
        }
    };
    save(dir / "four", "wq", "wk", "wv", "fc_out");
    save(dir / "hand", "w_q", "w_k", "w_v", "w_combine");
    fs::create_directories(dir / "torch");
    mha::save_torch_mha(m, (dir / "torch").string());
    for (const char* layout : {"four", "hand", "torch"}) {
        CAPTURE(layout);
        const mha::MultiHeadAttention back = mha::load_state_dict((dir / layout).string(), 3);
        CHECK(mha::max_abs_diff(back.forward(x, x, x).output, want) == 0.0);
    }
    // fc_out is w_o: a swap of two layers must show
    save(dir / "swapped", "wq", "wk", "wv", "fc_out");
    fs::copy_file(dir / "four" / "wq.weight.npy", dir / "swapped" / "fc_out.weight.npy",
                  fs::copy_options::overwrite_existing);
    const auto swapped = mha::load_state_dict((dir / "swapped").string(), 3);
    CHECK(mha::max_abs_diff(swapped.forward(x, x, x).output, want) > 1e-3);
    save(dir / "hand_too", "wq", "wk", "wv", "fc_out");
    save(dir / "hand_too", "w_q", "w_k", "w_v", "w_combine");
    CHECK_THROWS_WITH_AS(mha::load_state_dict((dir / "hand_too").string(), 3),
                         doctest::Contains("two state_dicts, wq.weight.npy and w_q.weight.npy"),
                         std::invalid_argument);
    fs::create_directories(dir / "empty");
    CHECK_THROWS_WITH_AS(mha::load_state_dict((dir / "empty").string(), 3),
                         doctest::Contains("no state_dict: no in_proj_weight.npy"),
                         std::invalid_argument);
    fs::remove(dir / "four" / "wv.bias.npy");
    CHECK_THROWS_WITH_AS(mha::load_state_dict((dir / "four").string(), 3),
                         doctest::Contains("wv.bias.npy: cannot open"), std::invalid_argument);
    mha::save_npy((dir / "four" / "wv.bias.npy").string(), mha::Tensor1::from_shape({11}));
    CHECK_THROWS_WITH_AS(mha::load_state_dict((dir / "four").string(), 3),
                         doctest::Contains("wv.bias.npy: [11], not [E] = [12]"),
                         std::invalid_argument);
    fs::remove_all(dir);
}

TEST_CASE("load_state_dict: current models' q_proj .. o_proj, grouped heads, biases optional") {
    const fs::path dir = fs::temp_directory_path() / "mha_test_current";
    fs::remove_all(dir);
    fs::create_directories(dir);
    mha::Rng rng(9);
    mha::MultiHeadAttention m(16, 4, 2, mha::Init::xavier(9));  // k_proj, v_proj [8, 16]
    m.w_o.bias.fill(0.0f);  // as Qwen: biases on q, k, v only
    const std::pair<const char*, const mha::Linear*> layers[] = {
        {"q_proj", &m.wq}, {"k_proj", &m.wk}, {"v_proj", &m.wv}, {"o_proj", &m.w_o}};
    for (const auto& [name, l] : layers) {
        mha::save_npy((dir / (std::string(name) + ".weight.npy")).string(), l->weight);
        if (l != &m.w_o) mha::save_npy((dir / (std::string(name) + ".bias.npy")).string(), l->bias);
    }
    const mha::Tensor3 x = mha::randn(2, 5, 16, rng);
    const mha::MultiHeadAttention back = mha::load_state_dict(dir.string(), 4, 2);
    CHECK(back.num_kv_heads() == 2);
    CHECK(mha::max_abs_diff(back.forward(x, x, x).output, m.forward(x, x, x).output) == 0.0);
    CHECK_THROWS_WITH_AS(mha::load_state_dict(dir.string(), 4),  // H_kv not given
                         doctest::Contains("k_proj.weight.npy: [8, 16], not [E, E] = [16, 16] "
                                           "(--num-kv-heads?)"),
                         std::invalid_argument);
    CHECK_THROWS_WITH_AS(mha::load_state_dict(dir.string(), 4, 3),
                         doctest::Contains("num_kv_heads 3 does not divide num_heads 4"),
                         std::invalid_argument);
    mha::save_npy((dir / "v_proj.bias.npy").string(), mha::Tensor1::from_shape({16}));
    CHECK_THROWS_WITH_AS(mha::load_state_dict(dir.string(), 4, 2),
                         doctest::Contains("v_proj.bias.npy: [16], not [H_kv*D] = [8]"),
                         std::invalid_argument);
    fs::remove_all(dir);
}

TEST_CASE("save_torch_mha: nn.MultiheadAttention's layout has no grouped heads") {
    CHECK_THROWS_WITH_AS(mha::save_torch_mha(mha::MultiHeadAttention(16, 4, 2), "/tmp"),
                         doctest::Contains("has 2 kv heads for 4"), std::invalid_argument);
}

TEST_CASE("load_keep_mask: the articles' polarity, bool or float, every rank") {
    const fs::path dir = fs::temp_directory_path() / "mha_test_keep";
    fs::create_directories(dir);
    const xt::xtensor<float, 2> tril = {{1, 0, 0}, {1, 1, 0}};  // torch.tril(torch.ones)
    mha::save_npy((dir / "tril.npy").string(), tril);
    const mha::Mask keep = mha::load_keep_mask((dir / "tril.npy").string(), 2, 4, 2, 3);
    const mha::Mask want = {{{{1, 0, 0}, {1, 1, 0}}}};  // 1 = may attend, kept as is
    CHECK(keep == want);
    const xt::xtensor<bool, 3> per_batch = {{{true, true, false}}, {{true, false, false}}};
    mha::save_npy((dir / "b.npy").string(), per_batch);
    const mha::Mask kb = mha::load_keep_mask((dir / "b.npy").string(), 2, 4, 1, 3);
    CHECK(mha::shape_of(kb) == "[2, 1, 1, 3]");
    CHECK(kb(1, 0, 0, 0));
    CHECK_FALSE(kb(1, 0, 0, 1));
    CHECK_THROWS_WITH_AS(mha::load_keep_mask((dir / "tril.npy").string(), 2, 4, 3, 3),
                         doctest::Contains("does not fit scores [2, 4, 3, 3]"),
                         std::invalid_argument);
    fs::remove_all(dir);
}

TEST_CASE("Init::torch: PyTorch's bounds sqrt(6 / 4E) and 1/sqrt(E), zero biases") {
    const std::size_t E = 256;
    const mha::MultiHeadAttention m(E, 8, mha::Init::torch(3));
    const double in_bound = std::sqrt(6.0 / (4.0 * E));  // 0.0765
    const double out_bound = 1.0 / std::sqrt(double(E));  // 0.0625
    for (const mha::Linear* l : {&m.wq, &m.wk, &m.wv}) {
        const double big = xt::amax(xt::abs(l->weight))();
        CHECK(big <= in_bound);
        CHECK(big > 0.99 * in_bound);  // 65536 draws reach the edge
        CHECK(xt::amax(xt::abs(l->bias))() == 0.0f);
    }
    const double big = xt::amax(xt::abs(m.w_o.weight))();
    CHECK(big <= out_bound);
    CHECK(big > 0.99 * out_bound);
    CHECK(xt::amax(xt::abs(m.w_o.bias))() == 0.0f);
    // The articles' per-matrix Xavier is sqrt(2) wider.
    const mha::MultiHeadAttention a(E, 8, mha::Init::xavier(3));
    CHECK(xt::amax(xt::abs(a.wq.weight))() > 1.3 * in_bound);
}

TEST_CASE("load_state_dict, found by fuzzing: a [0, 10^9] weight is refused before any module") {
    // A shape with a 0 holds no bytes, so the file is valid; read as E = 10^9
    // it would have asked for 4 x 10^18 floats.
    const fs::path dir = fs::temp_directory_path() / "mha_test_zero_rows";
    fs::create_directories(dir);
    std::string header = "{'descr': '<f4', 'fortran_order': False, 'shape': (0, 1000000000), }";
    header.append(64 - (10 + header.size() + 1) % 64, ' ');
    header += '\n';
    std::string bytes = std::string("\x93NUMPY\x01\x00", 8);
    bytes += char(header.size() & 0xff);
    bytes += char(header.size() >> 8);
    std::ofstream((dir / "wq.weight.npy").string(), std::ios::binary) << bytes + header;
    CHECK_THROWS_WITH_AS(mha::load_state_dict(dir.string(), 2),
                         doctest::Contains("[0, 1000000000], not [E, E] with E at least 1"),
                         std::invalid_argument);
    fs::remove_all(dir);
}
