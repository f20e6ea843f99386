// make_bad_npy DIR [CASE]: writes the odd .npy files that mha_forward must
// refuse (or read correctly), for the mha_forward.npy.* tests. The good ones
// are [2, 5, 12] float32 inputs for the causal_and_padding parity case
// (E = 12). With CASE (that parity case's folder) it also writes its
// weights as nn.MultiheadAttention saves them (DIR/mha) and in each
// article's state_dict layout (DIR/four_linear, DIR/handwritten) and in
// current models' names (DIR/current: q_proj, k_proj, v_proj, o_proj); a
// grouped-query module with one kv head in those names without biases
// (DIR/gqa: k_proj [4, 12]), a folder
// with two layouts (DIR/both), one with none (DIR/none), a [5, 5] tril
// keep-mask as float (DIR/tril.npy), one of the wrong size (DIR/tril_4.npy),
// tril and the case's key padding as one [2, 5, 5] keep-mask
// (DIR/tril_padded.npy: what --causal --key-padding-mask must give),
// a bool [4, 4] attn_mask (DIR/mask_4x4.npy), a rank-4 input (rank4.npy) and
// a rank-5 file (rank5.npy). For --block and --model (io/model_io.hpp): a
// block E 12, H 3, F 20 (DIR/block), a language model V 10, T_max 6, E 12,
// H 3, F 20, L 2 (DIR/model), each also with a file missing (*_missing) and
// one misshapen (*_bad); token ids int64 [2, 5] (tokens.npy) and dL/d logits
// [2, 5, 10] (grad_logits.npy); ids 10 and -1 (tokens_big, tokens_neg), T 7
// (tokens_long), float32 ids (tokens_float), int64 [5] (tokens_rank1).
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include <xtensor/xnpy.hpp>
#include <xtensor/xview.hpp>

#include "mha/init.hpp"
#include "mha/io/model_io.hpp"
#include "mha/io/npy.hpp"
#include "mha/io/torch_io.hpp"

namespace {

std::string bytes_of(const std::string& path) {
    std::ifstream f(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(f), {});
}

void write(const std::string& path, const std::string& bytes) {
    std::ofstream(path, std::ios::binary) << bytes;
}

// The module's layers under the four state_dict names of an article's class.
void save_linears(const mha::MultiHeadAttention& m, const std::string& dir,
                  const char* const names[4], bool biases = true) {
    std::filesystem::create_directories(dir);
    const mha::Linear* layers[4] = {&m.wq, &m.wk, &m.wv, &m.w_o};
    for (int l = 0; l < 4; ++l) {
        mha::save_npy(dir + "/" + names[l] + ".weight.npy", layers[l]->weight);
        if (biases) mha::save_npy(dir + "/" + names[l] + ".bias.npy", layers[l]->bias);
    }
}

}  // namespace

int main(int argc, char** argv) {
    if (argc != 2 && argc != 3) {
        std::fprintf(stderr, "usage: make_bad_npy DIR [CASE]\n");
        return 2;
    }
    const std::string dir = argv[1];
    std::filesystem::create_directories(dir);
    mha::Rng rng(5);
    const mha::Tensor3 x = mha::randn(2, 5, 12, rng);
    mha::save_npy(dir + "/good.npy", x);
    const std::string good = bytes_of(dir + "/good.npy");
    write(dir + "/truncated.npy", good.substr(0, good.size() - 100));
    write(dir + "/magic.npy", "\x89PNG" + good.substr(4));
    write(dir + "/empty.npy", "");
    const xt::xtensor<int, 3> ints = xt::xtensor<int, 3>::from_shape({2, 5, 12});
    xt::dump_npy(dir + "/int32.npy", ints);
    const xt::xtensor<bool, 3> flags = xt::xtensor<bool, 3>::from_shape({2, 5, 12});
    xt::dump_npy(dir + "/bool.npy", flags);
    mha::save_npy(dir + "/rank2.npy", mha::zeros(10, 12));
    mha::save_npy(dir + "/wrong_e.npy", mha::randn(2, 5, 7, rng));
    // The same numbers as good.npy, as float64, and in Fortran order.
    const xt::xtensor<double, 3> d = xt::cast<double>(x);
    xt::dump_npy(dir + "/float64.npy", d);
    const xt::xtensor<float, 3, xt::layout_type::column_major> f = x;
    xt::dump_npy(dir + "/fortran.npy", f);
    std::printf("wrote 10 files to %s\n", dir.c_str());
    if (argc == 3) {
        const mha::MultiHeadAttention m = mha::load_torch_mha(argv[2], 3);
        std::filesystem::create_directories(dir + "/mha");
        mha::save_torch_mha(m, dir + "/mha");
        mha::save_npy(dir + "/rank4.npy", mha::Tensor4::from_shape({2, 3, 5, 5}));
        mha::save_npy(dir + "/rank5.npy", xt::xtensor<float, 5>::from_shape({1, 1, 1, 5, 5}));
        const xt::xtensor<bool, 2> mask_4x4 = xt::xtensor<bool, 2>::from_shape({4, 4});
        mha::save_npy(dir + "/mask_4x4.npy", mask_4x4);
        const char* const four[4] = {"wq", "wk", "wv", "fc_out"};
        const char* const hand[4] = {"w_q", "w_k", "w_v", "w_combine"};
        save_linears(m, dir + "/four_linear", four);
        save_linears(m, dir + "/handwritten", hand);
        const char* const current[4] = {"q_proj", "k_proj", "v_proj", "o_proj"};
        save_linears(m, dir + "/current", current);
        const mha::MultiHeadAttention gqa(12, 3, 1, mha::Init::xavier(7));
        save_linears(gqa, dir + "/gqa", current, false);
        save_linears(m, dir + "/both", four);
        save_linears(m, dir + "/both", hand);
        std::filesystem::create_directories(dir + "/none");
        const mha::Mask tril = mha::causal_mask(5, 5);
        const xt::xtensor<float, 2> ones = xt::cast<float>(xt::view(tril, 0, 0));
        mha::save_npy(dir + "/tril.npy", ones);
        const xt::xtensor<float, 2> small = xt::cast<float>(xt::view(mha::causal_mask(4, 4), 0, 0));
        mha::save_npy(dir + "/tril_4.npy", small);
        const std::string padding = std::string(argv[2]) + "/key_padding_mask.npy";
        const mha::Mask padded = mha::combine_masks(
            *mha::load_torch_masks("", padding, 2, 3, 5, 5).keep, tril);  // [2, 1, 5, 5]
        const xt::xtensor<bool, 3> keep3 = xt::view(padded, xt::all(), 0);  // [2, 5, 5]
        mha::save_npy(dir + "/tril_padded.npy", keep3);
        std::printf("and the state_dict layouts and keep-masks\n");
        // --block and --model: good folders, then one file gone, one misshapen
        const mha::Block blk(12, 3, 20, 4);
        const mha::LanguageModel lm = mha::make_language_model({10, 6, 12, 3, 20, 2}, 5);
        for (const char* suffix : {"", "_missing", "_bad"}) {
            mha::save_block(blk, dir + "/block" + suffix);
            mha::save_model(lm, dir + "/model" + suffix);
        }
        std::filesystem::remove(dir + "/block_missing/linear1.bias.npy");
        mha::save_npy(dir + "/block_bad/linear2.weight.npy", mha::zeros(12, 19));
        std::filesystem::remove(dir + "/model_missing/layers.1.norm2.weight.npy");
        mha::save_npy(dir + "/model_bad/head.weight.npy", mha::zeros(10, 13));
        const xt::xtensor<std::int64_t, 2> ids = {{1, 2, 3, 4, 5}, {9, 0, 0, 7, 1}};
        xt::dump_npy(dir + "/tokens.npy", ids);
        mha::save_npy(dir + "/grad_logits.npy", mha::randn(2, 5, 10, rng));
        xt::xtensor<std::int64_t, 2> big = ids, neg = ids;
        big(1, 4) = 10;
        neg(0, 2) = -1;
        xt::dump_npy(dir + "/tokens_big.npy", big);
        xt::dump_npy(dir + "/tokens_neg.npy", neg);
        xt::dump_npy(dir + "/tokens_long.npy", xt::xtensor<std::int64_t, 2>(xt::zeros<std::int64_t>({1, 7})));
        mha::save_npy(dir + "/tokens_float.npy", mha::zeros(2, 5));
        xt::dump_npy(dir + "/tokens_rank1.npy", xt::xtensor<std::int64_t, 1>{1, 2, 3, 4, 5});
        std::printf("and a block's and a model's folders, token ids\n");
    }
    return 0;
}
