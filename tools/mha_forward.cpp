// mha_forward: the core's MultiHeadAttention with PyTorch's weights.
//
//   mha_forward --weights DIR --num-heads H --query Q.npy
//               [--key K.npy --value V.npy] [--attn-mask M.npy]
//               [--key-padding-mask P.npy] --out DIR
//
// DIR holds nn.MultiheadAttention(E, H).state_dict() as .npy files (see the
// README). Inputs are batch-first [B, T, E] float32 (float64 is converted);
// without --key and --value it is self-attention. Masks follow PyTorch:
// True = not allowed / ignore; a float attn_mask is added to the scores.
// Writes OUT/output.npy [B, Tq, E] and OUT/attn_weights.npy [B, H, Tq, Tk],
// one set of weights per head. A query whose keys are all masked gets zero
// weights (the core's policy; PyTorch gives NaN there).
// Bad input: one line on stderr naming the file and the shapes, exit 2.
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <stdexcept>
#include <string>

#include "mha/attention.hpp"
#include "mha/io/npy.hpp"
#include "mha/io/torch_io.hpp"

namespace {

const char* const kUsage =
    "usage: mha_forward --weights DIR --num-heads H --query Q.npy "
    "[--key K.npy --value V.npy] [--attn-mask M.npy] [--key-padding-mask P.npy] "
    "--out DIR";

struct Bad : std::invalid_argument {
    using std::invalid_argument::invalid_argument;
};

std::map<std::string, std::string> parse(int argc, char** argv) {
    static const char* const known[] = {"--weights", "--num-heads", "--query",
                                        "--key", "--value", "--attn-mask",
                                        "--key-padding-mask", "--out"};
    std::map<std::string, std::string> args;
    for (int i = 1; i < argc; ++i) {
        const std::string flag = argv[i];
        if (flag == "--help" || flag == "-h") throw Bad("help");
        bool ok = false;
        for (const char* k : known) ok = ok || flag == k;
        if (!ok) throw Bad("unknown argument '" + flag + "'; " + kUsage);
        if (i + 1 >= argc || std::strncmp(argv[i + 1], "--", 2) == 0)
            throw Bad(flag + " needs a value");
        if (args.count(flag)) throw Bad(flag + " is given twice");
        args[flag] = argv[++i];
    }
    for (const char* need : {"--weights", "--num-heads", "--query", "--out"})
        if (!args.count(need)) throw Bad(std::string("missing ") + need + "; " + kUsage);
    if (args.count("--key") != args.count("--value"))
        throw Bad("--key and --value go together: give both, or neither for "
                  "self-attention");
    return args;
}

std::size_t parse_heads(const std::string& text) {
    errno = 0;
    char* end = nullptr;
    const long long v = std::strtoll(text.c_str(), &end, 10);
    if (end == text.c_str() || *end != '\0' || errno == ERANGE || v < 1 || v > 1 << 20)
        throw Bad("--num-heads must be a whole number from 1, not '" + text + "'");
    return static_cast<std::size_t>(v);
}

mha::Tensor3 load_input(const std::string& path, const std::string& what,
                        std::size_t E) {
    mha::Tensor3 x = mha::load_npy_tensor3(path, what + " [B, T, E]");
    if (x.shape(2) != E) {
        throw Bad(path + ": " + what + " has shape " + mha::shape_of(x) +
                  " but the weights have E = " + std::to_string(E) +
                  "; it must be [B, T, " + std::to_string(E) + "]");
    }
    return x;
}

void make_out_dir(const std::string& dir) {
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    if (ec || access(dir.c_str(), W_OK) != 0) {
        throw Bad("--out " + dir + ": cannot write to this folder" +
                  (ec ? " (" + ec.message() + ")" : ""));
    }
}

}  // namespace

int main(int argc, char** argv) {
    try {
        const auto args = parse(argc, argv);
        const std::size_t H = parse_heads(args.at("--num-heads"));
        const mha::MultiHeadAttention m = mha::load_torch_mha(args.at("--weights"), H);
        const std::size_t E = m.embed_dim();
        const mha::Tensor3 q = load_input(args.at("--query"), "query", E);
        const bool cross = args.count("--key") > 0;
        const mha::Tensor3 k = cross ? load_input(args.at("--key"), "key", E) : q;
        const mha::Tensor3 v = cross ? load_input(args.at("--value"), "value", E) : q;
        if (cross && (k.shape(0) != q.shape(0) || v.shape(0) != q.shape(0) ||
                      k.shape(1) != v.shape(1))) {
            throw Bad("query " + mha::shape_of(q) + ", key " + mha::shape_of(k) +
                      " and value " + mha::shape_of(v) +
                      " must share B, and key and value must share Tk");
        }
        const auto at = [&](const char* flag) {
            return args.count(flag) ? args.at(flag) : std::string();
        };
        const mha::TorchMasks masks =
            mha::load_torch_masks(at("--attn-mask"), at("--key-padding-mask"),
                                  q.shape(0), H, q.shape(1), k.shape(1));
        make_out_dir(args.at("--out"));
        const mha::AttentionOutput out =
            m.forward(q, k, v, masks.keep_ptr(), mha::kNegInf, masks.bias_ptr());
        mha::save_npy(args.at("--out") + "/output.npy", out.output);
        mha::save_npy(args.at("--out") + "/attn_weights.npy", out.weights);
        std::printf("wrote %s/output.npy %s and attn_weights.npy %s\n",
                    args.at("--out").c_str(), mha::shape_of(out.output).c_str(),
                    mha::shape_of(out.weights).c_str());
        return 0;
    } catch (const Bad& e) {
        if (std::string(e.what()) == "help") {
            std::printf("%s\n", kUsage);
            return 0;
        }
        std::fprintf(stderr, "mha_forward: %s\n", e.what());
        return 2;
    } catch (const std::invalid_argument& e) {
        std::fprintf(stderr, "mha_forward: %s\n", e.what());
        return 2;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "mha_forward: error: %s\n", e.what());
        return 1;
    }
}
