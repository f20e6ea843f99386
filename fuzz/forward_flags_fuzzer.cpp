// libFuzzer target: mha_forward as a whole (tools/mha_forward.cpp), its flags
// from the input (fuzz/argv.hpp), in a scratch folder that holds a small
// state_dict in two layouts (w/, cur/ with two kv heads), inputs and masks
// for the flags to name: x.npy [2, 5, 6], k.npy [2, 4, 6], m55.npy bool
// [5, 5], pad.npy bool [2, 5], f55.npy float [5, 5], bad.npy (not .npy); and
// for --block and --model a block E 6, H 3, F 8 (blk/), a language model V 5,
// T_max 5, E 6, H 3, F 8, L 1 (lm/), token ids int64 [2, 5] (ids.npy) and
// dL/d logits [2, 5, 5] (gl.npy).
#include <cstdint>
#include <filesystem>

#include <xtensor/xnpy.hpp>

#include "argv.hpp"
#include "common.hpp"
#include "mha/attention.hpp"
#include "mha/io/model_io.hpp"
#include "mha/io/npy.hpp"
#include "mha/io/torch_io.hpp"

int mha_forward_main(int argc, char** argv);

namespace {

bool prepare() {
    fuzz::scratch();
    std::filesystem::create_directories("w");
    std::filesystem::create_directories("cur");
    const mha::MultiHeadAttention m(6, 3, mha::Init::xavier(1));
    mha::save_torch_mha(m, "w");
    const mha::MultiHeadAttention g(6, 3, 1, mha::Init::xavier(2));
    const mha::Linear* layers[4] = {&g.wq, &g.wk, &g.wv, &g.w_o};
    const char* names[4] = {"q_proj", "k_proj", "v_proj", "o_proj"};
    for (int l = 0; l < 4; ++l) {
        mha::save_npy(std::string("cur/") + names[l] + ".weight.npy", layers[l]->weight);
        if (l < 3) mha::save_npy(std::string("cur/") + names[l] + ".bias.npy", layers[l]->bias);
    }
    mha::Rng rng(3);
    mha::save_npy("x.npy", mha::randn(2, 5, 6, rng));
    mha::save_npy("k.npy", mha::randn(2, 4, 6, rng));
    xt::xtensor<bool, 2> tril = xt::zeros<bool>({5, 5}), pad = xt::zeros<bool>({2, 5});
    for (std::size_t i = 0; i < 5; ++i)
        for (std::size_t j = i + 1; j < 5; ++j) tril(i, j) = true;
    pad(1, 4) = true;
    mha::save_npy("m55.npy", tril);
    mha::save_npy("pad.npy", pad);
    mha::save_npy("f55.npy", mha::Tensor2(xt::zeros<float>({5, 5})));
    std::ofstream("bad.npy") << "not a .npy file";
    mha::save_block(mha::Block(6, 3, 8, 4), "blk");
    mha::save_model(mha::make_language_model({5, 5, 6, 3, 8, 1}, 5), "lm");
    const xt::xtensor<std::int64_t, 2> ids = {{0, 1, 2, 3, 4}, {4, 4, 0, 1, 2}};
    xt::dump_npy("ids.npy", ids);
    mha::save_npy("gl.npy", mha::randn(2, 5, 5, rng));
    return true;  // (scripts/fuzz.sh closes its stdout and stderr: -close_fd_mask=3)
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    static const bool ready = prepare();
    if (!ready) return 0;
    fuzz::Argv a("mha_forward", data, size);
    mha_forward_main(a.argc(), a.argv());
    return 0;
}
