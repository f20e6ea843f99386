// libFuzzer target: a language model's folder (io/model_io.hpp). A small valid
// model (V 5, T_max 4, E 4, H 2, F 8, L 2: 30 files) is saved once; each input
// changes one of its files, then load_model() and load_block() read the
// folder, a model they return runs forward and backward once, and the
// folder is put back as it was.
//
// The input: byte 0 picks the file (of the 30, sorted by name); byte 1 the
// heads (1 to 4); byte 2 what to do: bit 0 set, remove the file; else the
// rest of the input becomes its bytes. Bits 1 to 7, when not 0, also write
// the rest to layers.{those bits}.norm1.weight.npy: a block past L, or a gap.
#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <string>
#include <vector>

#include "common.hpp"
#include "mha/io/model_io.hpp"

namespace fs = std::filesystem;

namespace {

// The valid folder's files, by name, in order: written once, restored after each input.
const std::map<std::string, std::string>& base() {
    static const std::map<std::string, std::string> files = [] {
        mha::save_model(mha::make_language_model({5, 4, 4, 2, 8, 2}, 1), "m");
        std::map<std::string, std::string> f;
        for (const auto& e : fs::directory_iterator("m")) {
            std::ifstream in(e.path(), std::ios::binary);
            f[e.path().filename().string()] = std::string(std::istreambuf_iterator<char>(in), {});
        }
        return f;
    }();
    return files;
}

void put(const std::string& name, const std::string& bytes) {
    fuzz::write("m/" + name, reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size());
}

void run_once(const mha::LanguageModel& m) {
    const mha::ModelConfig c = m.config();
    if (c.embed_dim > 64 || c.vocab > 64 || c.max_len < 3 || c.vocab < 3) return;
    const mha::Tokens ids = {{0, 1, 2}};
    const mha::ModelTrace t = mha::forward(m, ids);
    mha::backward(m, t, ids, t.logits);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    fuzz::scratch();
    const auto& files = base();
    if (size < 3) return 0;
    auto chosen = files.begin();
    std::advance(chosen, data[0] % files.size());
    const std::size_t heads = 1 + data[1] % 4;
    const bool remove = data[2] & 1;
    const int stray = data[2] >> 1;
    const std::string rest(reinterpret_cast<const char*>(data) + 3, size - 3);
    if (remove) fs::remove("m/" + chosen->first);
    else put(chosen->first, rest);
    const std::string stray_name = "layers." + std::to_string(stray) + ".norm1.weight.npy";
    if (stray != 0) put(stray_name, rest);

    fuzz::refused_or_read([&] { run_once(mha::load_model("m", heads)); });
    fuzz::refused_or_read([&] { mha::load_block("m", heads, "layers.1."); });

    put(chosen->first, chosen->second);
    if (stray != 0) {
        if (files.count(stray_name)) put(stray_name, files.at(stray_name));
        else fs::remove("m/" + stray_name);
    }
    return 0;
}
