// libFuzzer target: every state_dict layout mha_forward reads. The input
// picks a layout, the heads and kv heads, then gives the layout's files one
// chunk each (fuzz::next_chunk); files the input does not reach are absent.
// load_state_dict() (which finds the layout) and load_torch_mha() run on
// the folder; a module they return is also run forward once.
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "common.hpp"
#include "mha/attention.hpp"
#include "mha/io/torch_io.hpp"

namespace {

const std::vector<std::vector<std::string>> kLayouts = {
    {"in_proj_weight", "in_proj_bias", "out_proj.weight", "out_proj.bias"},
    {"wq.weight", "wq.bias", "wk.weight", "wk.bias", "wv.weight", "wv.bias", "fc_out.weight",
     "fc_out.bias"},
    {"w_q.weight", "w_q.bias", "w_k.weight", "w_k.bias", "w_v.weight", "w_v.bias",
     "w_combine.weight", "w_combine.bias"},
    {"q_proj.weight", "q_proj.bias", "k_proj.weight", "k_proj.bias", "v_proj.weight",
     "v_proj.bias", "o_proj.weight", "o_proj.bias"},
};

void run_once(const mha::MultiHeadAttention& m) {
    if (m.embed_dim() > 64) return;  // a forward of a large module proves nothing more
    mha::Rng rng(1);
    const mha::Tensor3 x = mha::randn(1, 3, m.embed_dim(), rng);
    m.forward(x, x, x);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    fuzz::scratch();
    if (size < 3) return 0;
    const auto& layout = kLayouts[data[0] % kLayouts.size()];
    const std::size_t heads = 1 + data[1] % 8, kv_heads = data[2] % 9;  // 0: as many as heads
    data += 3, size -= 3;
    std::filesystem::remove_all("sd");
    std::filesystem::create_directory("sd");
    std::string chunk;
    for (const std::string& name : layout) {
        if (!fuzz::next_chunk(data, size, chunk)) break;
        fuzz::write("sd/" + name + ".npy", reinterpret_cast<const std::uint8_t*>(chunk.data()),
                    chunk.size());
    }
    fuzz::refused_or_read([&] { run_once(mha::load_state_dict("sd", heads, kv_heads)); });
    fuzz::refused_or_read([&] { run_once(mha::load_torch_mha("sd", heads)); });
    return 0;
}
