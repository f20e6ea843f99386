// A block and a language model as folders of .npy files under PyTorch's
// state_dict names. The attention of a block is an nn.MultiheadAttention
// state_dict with the prefix "self_attn." (torch_io.cpp reads and writes it);
// the rest is one file per tensor, each checked against the shape the sizes
// read so far give.
//
// B batch, T positions, V vocabulary, E embed_dim, F hidden, L layers.
#include "mha/io/model_io.hpp"

#include <algorithm>
#include <array>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "mha/io/npy.hpp"
#include "mha/io/torch_io.hpp"

namespace mha {

namespace {

namespace fs = std::filesystem;

// "[F, E] = [32, 8]", or "[F, E]" while a size is still unknown (0).
template <std::size_t N>
std::string expected(const std::string& symbols, const std::array<std::size_t, N>& dims) {
    const bool known = std::find(dims.begin(), dims.end(), 0) == dims.end();
    return known ? symbols + " = " + shape_str(dims) : symbols;
}

// The file STEM + NAME + ".npy", present, of rank N and, where DIMS holds no
// 0, of exactly that shape; SYMBOLS names the sizes ("[F, E]").
template <std::size_t N>
Tensor<N> load_tensor(const std::string& stem, const std::string& name,
                      const std::string& symbols, const std::array<std::size_t, N>& dims) {
    const std::string path = stem + name + ".npy";
    if (!file_exists(path))
        fail(path + ": missing (want " + expected(symbols, dims) + ")");
    const xt::xarray<float> a = load_npy_float(path, name + " " + symbols, N);
    for (std::size_t d = 0; d < N; ++d) {
        if (a.shape(d) == 0 || (dims[d] != 0 && a.shape(d) != dims[d])) {
            fail(path + ": " + shape_of(a) + ", not " + expected(symbols, dims) +
                 (dims[d] == 0 ? " with sizes from 1" : ""));
        }
    }
    std::array<std::size_t, N> shape{};
    std::copy(a.shape().begin(), a.shape().end(), shape.begin());
    Tensor<N> t = Tensor<N>::from_shape(shape);
    std::copy(a.begin(), a.end(), t.begin());
    return t;
}

// Where to write: DIR, created if needed.
std::string folder(const std::string& dir) {
    std::error_code ec;
    fs::create_directories(dir, ec);
    if (ec || !fs::is_directory(dir)) fail(dir + ": cannot create this folder");
    return dir + "/";
}

// The block's tensors past attention, by name: a Block and a BlockGrads
// hold them under the same members.
template <class BlockOrGrads, class F>
void each_tensor(BlockOrGrads& b, F f) {
    f("linear1.weight", b.ff.linear1.weight), f("linear1.bias", b.ff.linear1.bias);
    f("linear2.weight", b.ff.linear2.weight), f("linear2.bias", b.ff.linear2.bias);
    f("norm1.weight", b.norm1.weight), f("norm1.bias", b.norm1.bias);
    f("norm2.weight", b.norm2.weight), f("norm2.bias", b.norm2.bias);
}

// i for a file "layers.{i}.<name>.npy" (a gradient when it ends in
// ".grad.npy"), or -1 for any other file.
long layer_of(const std::string& file, bool grads) {
    const std::string head = "layers.", npy = ".npy", grad = ".grad.npy";
    const bool is_grad = file.size() > grad.size() &&
                         file.compare(file.size() - grad.size(), grad.size(), grad) == 0;
    if (file.rfind(head, 0) != 0 || is_grad != grads || file.size() <= npy.size() ||
        file.compare(file.size() - npy.size(), npy.size(), npy) != 0) {
        return -1;
    }
    std::size_t at = head.size();
    long i = 0;
    while (at < file.size() && file[at] >= '0' && file[at] <= '9' && at - head.size() < 6)
        i = i * 10 + (file[at++] - '0');
    return at > head.size() && at < file.size() && file[at] == '.' ? i : -1;
}

// The folder's files of blocks, weights or gradients, by layer index.
std::vector<std::pair<long, fs::path>> layer_files(const std::string& dir, bool grads) {
    std::vector<std::pair<long, fs::path>> files;
    std::error_code ec;
    for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
        const long i = layer_of(it->path().filename().string(), grads);
        if (i >= 0) files.emplace_back(i, it->path());
    }
    if (ec) fail(dir + ": cannot list this folder (" + ec.message() + ")");
    return files;
}

// What a deeper model saved in DIR before left: its blocks past L.
void remove_layers_from(const std::string& dir, std::size_t L, bool grads) {
    for (const auto& [i, path] : layer_files(dir, grads)) {
        std::error_code ec;
        if (static_cast<std::size_t>(i) >= L && !fs::remove(path, ec)) {
            fail(path.string() + ": cannot remove this file of a deeper model");
        }
    }
}

// The block under DIR/PREFIX. MODEL_E is the E it must have (0: any, read from
// its in_proj_weight), E_FROM where that E comes from, for the message.
Block load_block_at(const std::string& dir, const std::string& prefix, std::size_t num_heads,
                    std::size_t model_E, const std::string& E_from) {
    const std::string stem = dir + "/" + prefix;
    // 1. attention: E from in_proj_weight [3E, E], peeked at for the messages
    std::size_t E = model_E;
    const std::string in_w = stem + "self_attn.in_proj_weight.npy";
    if (E == 0 && file_exists(in_w)) {
        const NpyInfo info = npy_info(in_w);
        if (info.shape.size() == 2 && info.shape[0] == 3 * info.shape[1]) E = info.shape[1];
    }
    const std::array<std::size_t, 2> ee{E, E}, e3e{3 * E, E};
    const std::array<std::size_t, 1> e{E}, e3{3 * E};
    const std::string attn[4][2] = {{"in_proj_weight", expected("[3E, E]", e3e)},
                                    {"in_proj_bias", expected("[3E]", e3)},
                                    {"out_proj.weight", expected("[E, E]", ee)},
                                    {"out_proj.bias", expected("[E]", e)}};
    for (const auto& [name, shape] : attn) {
        const std::string path = stem + "self_attn." + name + ".npy";
        if (!file_exists(path)) fail(path + ": missing (want " + shape + ")");
    }
    MultiHeadAttention self_attn = load_torch_mha(dir, num_heads, prefix + "self_attn.");
    if (model_E != 0 && self_attn.embed_dim() != model_E) {
        fail(in_w + ": [" + std::to_string(3 * self_attn.embed_dim()) + ", " +
             std::to_string(self_attn.embed_dim()) + "], not [3E, E] = " +
             shape_str(e3e) + " (E from " + E_from + ")");
    }
    E = self_attn.embed_dim();
    // 2. the feed-forward: F from linear1.weight [F, E]
    const Tensor2 w1 = load_tensor<2>(stem, "linear1.weight", "[F, E]", {0, E});
    const std::size_t F = w1.shape(0);
    Block blk(E, num_heads, F, 0);
    blk.self_attn = std::move(self_attn);
    blk.ff.linear1.weight = w1;
    blk.ff.linear1.bias = load_tensor<1>(stem, "linear1.bias", "[F]", {F});
    blk.ff.linear2.weight = load_tensor<2>(stem, "linear2.weight", "[E, F]", {E, F});
    blk.ff.linear2.bias = load_tensor<1>(stem, "linear2.bias", "[E]", {E});
    // 3. the two norms
    for (LayerNorm* n : {&blk.norm1, &blk.norm2}) {
        const std::string name = n == &blk.norm1 ? "norm1" : "norm2";
        n->weight = load_tensor<1>(stem, name + ".weight", "[E]", {E});
        n->bias = load_tensor<1>(stem, name + ".bias", "[E]", {E});
    }
    return blk;
}

}  // namespace

Block load_block(const std::string& dir, std::size_t num_heads, const std::string& prefix) {
    return load_block_at(dir, prefix, num_heads, 0, "");
}

void save_block(const Block& blk, const std::string& dir, const std::string& prefix) {
    const std::string stem = folder(dir) + prefix;
    save_torch_mha(blk.self_attn, dir, prefix + "self_attn.");
    each_tensor(blk, [&](const char* name, const auto& t) { save_npy(stem + name + ".npy", t); });
}

void save_block_grads(const BlockGrads& g, const std::string& dir, const std::string& prefix) {
    const std::string stem = folder(dir) + prefix;
    save_torch_mha_grads(g.self_attn, dir, prefix + "self_attn.");
    each_tensor(g, [&](const char* name, const auto& t) {
        save_npy(stem + name + ".grad.npy", t);
    });
}

LanguageModel load_model(const std::string& dir, std::size_t num_heads) {
    if (!fs::is_directory(dir)) fail(dir + ": no such folder (a model's state_dict)");
    const std::string stem = dir + "/";
    LanguageModel m;
    // 1. the two tables: V, E, T_max
    m.tok_emb.weight = load_tensor<2>(stem, "tok_emb.weight", "[V, E]", {0, 0});
    const std::size_t V = m.tok_emb.vocab(), E = m.tok_emb.dim();
    m.pos_emb.weight = load_tensor<2>(stem, "pos_emb.weight", "[T_max, E]", {0, E});
    // 2. the blocks: L from the files layers.{i}.* present
    long last = -1;
    for (const auto& [i, path] : layer_files(dir, false)) last = std::max(last, i);
    if (last < 0) {
        fail(stem + "layers.0.self_attn.in_proj_weight.npy: missing (no layers.{i}.* files; "
             "a model has at least one block)");
    }
    const std::string from = "tok_emb.weight " + shape_of(m.tok_emb.weight);
    for (long i = 0; i <= last; ++i) {
        m.layers.push_back(
            load_block_at(dir, "layers." + std::to_string(i) + ".", num_heads, E, from));
    }
    // 3. the final norm and the read-out
    m.norm.weight = load_tensor<1>(stem, "norm.weight", "[E]", {E});
    m.norm.bias = load_tensor<1>(stem, "norm.bias", "[E]", {E});
    m.head.weight = load_tensor<2>(stem, "head.weight", "[V, E]", {V, E});
    m.head.bias = load_tensor<1>(stem, "head.bias", "[V]", {V});
    return m;
}

void save_model(const LanguageModel& m, const std::string& dir) {
    const std::string stem = folder(dir);
    save_npy(stem + "tok_emb.weight.npy", m.tok_emb.weight);
    save_npy(stem + "pos_emb.weight.npy", m.pos_emb.weight);
    for (std::size_t l = 0; l < m.layers.size(); ++l)
        save_block(m.layers[l], dir, "layers." + std::to_string(l) + ".");
    remove_layers_from(dir, m.layers.size(), false);
    save_npy(stem + "norm.weight.npy", m.norm.weight);
    save_npy(stem + "norm.bias.npy", m.norm.bias);
    save_npy(stem + "head.weight.npy", m.head.weight);
    save_npy(stem + "head.bias.npy", m.head.bias);
}

void save_model_grads(const ModelGrads& g, const std::string& dir) {
    const std::string stem = folder(dir);
    save_npy(stem + "tok_emb.weight.grad.npy", g.tok_emb);
    save_npy(stem + "pos_emb.weight.grad.npy", g.pos_emb);
    for (std::size_t l = 0; l < g.layers.size(); ++l)
        save_block_grads(g.layers[l], dir, "layers." + std::to_string(l) + ".");
    remove_layers_from(dir, g.layers.size(), true);
    save_npy(stem + "norm.weight.grad.npy", g.norm.weight);
    save_npy(stem + "norm.bias.grad.npy", g.norm.bias);
    save_npy(stem + "head.weight.grad.npy", g.head.weight);
    save_npy(stem + "head.bias.grad.npy", g.head.bias);
}

Tokens load_tokens(const std::string& path, std::size_t vocab, std::size_t max_len) {
    if (vocab == 0) fail("load_tokens: V = 0: no token id fits");
    const xt::xarray<std::int64_t> ids = load_npy_int(path, "tokens [B, T]", 2);
    const std::size_t B = ids.shape(0), T = ids.shape(1);
    if (B == 0 || T == 0) fail(path + ": tokens " + shape_of(ids) + " hold no ids");
    if (T > max_len) {
        fail(path + ": tokens " + shape_of(ids) + " have T = " + std::to_string(T) +
             " > T_max = " + std::to_string(max_len) + " (pos_emb's rows)");
    }
    Tokens tokens = Tokens::from_shape({B, T});
    for (std::size_t b = 0; b < B; ++b)
        for (std::size_t t = 0; t < T; ++t) {
            const std::int64_t id = ids(b, t);
            // checked before the narrowing: 2^32 + 3 must not become 3
            if (id < 0 || static_cast<std::uint64_t>(id) >= vocab) {
                fail(path + ": token " + std::to_string(id) + " at [" + std::to_string(b) +
                     ", " + std::to_string(t) + "] is outside [0, V - 1] = [0, " +
                     std::to_string(vocab - 1) + "]");
            }
            tokens(b, t) = static_cast<std::int32_t>(id);
        }
    return tokens;
}

}  // namespace mha
