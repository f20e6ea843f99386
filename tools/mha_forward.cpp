// mha_forward: the core's MultiHeadAttention on weights saved from PyTorch.
//
//   mha_forward --weights DIR --num-heads H --query Q.npy --out DIR [...]
//
// DIR holds a state_dict saved as .npy files (see --help): that of
// nn.MultiheadAttention, or of either article's class. Inputs are batch-
// first [B, T, E] float32 (float64 is converted); without --key and
// --value it is self-attention. Masks come in PyTorch's polarity (True = not
// allowed; a float attn_mask is added to the scores) or the articles' (1 =
// may attend). Writes OUT/output.npy [B, Tq, E] and OUT/attn_weights.npy
// [B, H, Tq, Tk], one set of weights per head (only output.npy with
// --no-weights or --incremental). With --grad-output G.npy (dL/d output)
// it also writes every gradient under PyTorch's names, for torch.autograd
// to compare with; with --no-weights too, through the FlashAttention-2
// backward (no [Tq, Tk] weights in either pass). A query whose keys are all
// masked under -inf gets zero weights (the core's policy; PyTorch gives NaN).
// The variants of today's models (--window, --sinks, --prefix, --documents,
// --alibi, --softcap, --rope) are mha/variants' mask_mods, score_mods, RoPE;
// --grad-output takes them all, through the engine's call (mha::fast::Call:
// --softcap in its tiles, --rope on q and k with R^T on dq and dk).
//
//   mha_forward --block --weights DIR --num-heads H --query X.npy --out DIR
//   mha_forward --model DIR --num-heads H --tokens IDS.npy --out DIR [--layer-weights]
//
// run a pre-norm Transformer block (nn.TransformerEncoderLayer with
// norm_first) on X, or a language model of such blocks on token ids, from
// state_dicts under PyTorch's names (io/model_io.hpp): OUT/output.npy
// [B, T, E] or OUT/logits.npy [B, T, V], and with --grad-output every
// parameter's gradient. With --layer-weights the model also writes each
// layer's attention weights, OUT/layer{i}.weights.npy [B, H, T, T].
// Bad input: one line on stderr naming the file and the shapes, exit 2.
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>

#include <xtensor/xbuilder.hpp>
#include <xtensor/xview.hpp>

#include "mha/attention.hpp"
#include "mha/backward.hpp"
#include "mha/fast/backward.hpp"
#include "mha/kv_cache.hpp"
#include "mha/io/model_io.hpp"
#include "mha/io/npy.hpp"
#include "mha/io/torch_io.hpp"
#include "mha/variants/mods.hpp"
#include "mha/variants/rolling_cache.hpp"
#include "mha/variants/rope.hpp"

namespace {

const char* const kUsage = R"(usage: mha_forward --weights DIR --num-heads H --query Q.npy --out DIR
                   [--key K.npy --value V.npy] [masks] [--fill F] [more]
       mha_forward --block --weights DIR --num-heads H --query X.npy --out DIR
       mha_forward --model DIR --num-heads H --tokens IDS.npy --out DIR
  --weights DIR   a state_dict, one .npy file per entry: nn.MultiheadAttention's
                    (in_proj_weight, in_proj_bias, out_proj.*), the articles'
                    (wq, wk, wv, fc_out; w_q, w_k, w_v, w_combine), current
                    models' (q_proj ... o_proj; .bias optional); with --block,
                    nn.TransformerEncoderLayer(norm_first=True, "gelu")'s
  --num-heads H   heads; H must divide E
  --query Q.npy   [B, Tq, E], batch first, float32 (or float64)
  --key K.npy --value V.npy  [B, Tk, E] each, for cross-attention
  --out DIR       gets output.npy [B, Tq, E], attn_weights.npy [B, H, Tq, Tk]
  --model DIR     a language model's (tok_emb, pos_emb, layers.{i}., norm, head)
  --tokens IDS.npy  its input, int64 [B, T], T <= T_max: logits.npy [B, T, V]
  --layer-weights   and each layer's attention weights: layer{i}.weights.npy [B, H, T, T]
masks, PyTorch's polarity (True = may not attend):
  --attn-mask M.npy         bool [Tq, Tk] or [B*H, Tq, Tk]; or float, added
  --key-padding-mask P.npy  bool [B, Tk], True = ignore that key
masks, the articles' polarity (1 = may attend):
  --keep-mask M.npy  bool or float, [Tq, Tk], [B, Tq, Tk] or rank 4
  --causal           torch.tril: query i sees keys 0..i (so does --model)
  --fill F           masked scores: -inf (default), or -1e10 as an article
more:
  --num-kv-heads G   grouped-query attention: G key/value heads, G divides H
  --no-weights       need_weights=False: tiled, no attn_weights.npy (tiled backward too)
  --incremental      via a KV cache, causal (with --window: S + W slots); output.npy only
  --grad-output G.npy  dL/d output (or logits): also every gradient as PyTorch
                     names it (in_proj_weight.grad.npy ..., query.grad.npy)

variants (docs: variants page), self-attention:
  --window W       sliding window: query i sees keys i-W+1 .. i (Mistral, Gemma)
  --sinks S        with --window: keys 0..S-1 stay visible too (StreamingLLM)
  --prefix P       prefix-LM: keys 0..P-1 seen by every query, causal after them
  --documents IDS.npy  int64 [B, T], packed documents: own document, causally
  --alibi          ALiBi: score - m_h (i - j), m_h = 2^(-8h/H) (BLOOM, MPT)
  --softcap C      C tanh(score / C) before ALiBi and the masks (Gemma 2: 50); with
                   --no-weights or --grad-output it runs in the engine's tiles
  --rope interleaved|half  RoPE on q and k: pairs (2p, 2p+1) as llama2.c, or
                   (p, p+D/2) as Hugging Face (cached turned by --incremental);
                   with --grad-output, dq and dk turned back (R^T) after the tiles
  --rope-theta X   RoPE's base (10000)
)";

struct Bad : std::invalid_argument {
    using std::invalid_argument::invalid_argument;
};

// Flags that take a value, and those that do not.
const char* const kValued[] = {"--weights", "--num-heads", "--query", "--key", "--value",
                               "--attn-mask", "--key-padding-mask", "--keep-mask",
                               "--fill", "--out", "--num-kv-heads", "--grad-output",
                               "--model", "--tokens", "--window", "--sinks", "--prefix",
                               "--softcap", "--rope", "--rope-theta", "--documents"};
const char* const kSwitches[] = {"--causal", "--no-weights", "--incremental", "--block",
                                 "--layer-weights", "--alibi"};

// What the block and the model take besides their inputs; anything else
// given with them makes no sense there.
const char* const kOnlyAttention[] = {"--key", "--value", "--attn-mask", "--key-padding-mask",
                                      "--keep-mask", "--fill", "--num-kv-heads", "--no-weights",
                                      "--incremental", "--window", "--sinks", "--prefix",
                                      "--alibi", "--softcap", "--rope", "--rope-theta",
                                      "--documents"};
// The variants that number the positions of one sequence: they mean nothing
// across two (cross-attention).
const char* const kPositional[] = {"--window", "--sinks", "--prefix", "--documents", "--alibi",
                                   "--rope"};

std::map<std::string, std::string> parse(int argc, char** argv) {
    std::map<std::string, std::string> args;
    for (int i = 1; i < argc; ++i) {
        const std::string flag = argv[i];
        if (flag == "--help" || flag == "-h") throw Bad("help");
        bool valued = false, on_off = false;
        for (const char* k : kValued) valued = valued || flag == k;
        for (const char* k : kSwitches) on_off = on_off || flag == k;
        if (!valued && !on_off) throw Bad("unknown argument '" + flag + "' (try --help)");
        if (args.count(flag)) throw Bad(flag + " is given twice");
        if (on_off) {
            args[flag] = "";
            continue;
        }
        if (i + 1 >= argc || std::strncmp(argv[i + 1], "--", 2) == 0)
            throw Bad(flag + " needs a value");
        args[flag] = argv[++i];
    }
    if (args.count("--block") && args.count("--model"))
        throw Bad("--block and --model are two programs: give one of them");
    if (args.count("--tokens") && !args.count("--model"))
        throw Bad("--tokens goes with --model DIR (a language model's input)");
    if (args.count("--layer-weights") && !args.count("--model"))
        throw Bad("--layer-weights goes with --model DIR (its layers' attention weights)");
    if (args.count("--block") || args.count("--model")) {
        const std::string mode = args.count("--block") ? "--block" : "--model";
        for (const char* flag : kOnlyAttention)
            if (args.count(flag)) throw Bad(mode + " takes no " + flag + " (that is attention's)");
    }
    if (args.count("--model")) {
        if (args.count("--weights")) throw Bad("--model DIR is the weights: no --weights");
        if (args.count("--query")) throw Bad("--model reads --tokens, not --query");
        if (args.count("--causal")) throw Bad("--model is causal in every block: no --causal");
        for (const char* need : {"--num-heads", "--tokens", "--out"})
            if (!args.count(need)) throw Bad(std::string("missing ") + need + " (try --help)");
        return args;
    }
    for (const char* need : {"--weights", "--num-heads", "--query", "--out"})
        if (!args.count(need)) throw Bad(std::string("missing ") + need + " (try --help)");
    if (args.count("--key") != args.count("--value"))
        throw Bad("--key and --value go together: both, or neither for self-attention");
    if (args.count("--grad-output") && args.count("--incremental"))
        throw Bad("--grad-output: the backward runs without the cache: no --incremental");
    if (args.count("--sinks") && !args.count("--window"))
        throw Bad("--sinks S keeps the first S keys beside a window: give --window W too");
    for (const char* flag : {"--causal", "--window", "--documents"})
        if (args.count("--prefix") && args.count(flag))
            throw Bad(std::string("--prefix P is causal after the prefix: no ") + flag);
    if (args.count("--rope-theta") && !args.count("--rope"))
        throw Bad("--rope-theta goes with --rope interleaved|half");
    for (const char* flag : kPositional)
        if (args.count(flag) && args.count("--key"))
            throw Bad(std::string(flag) + " numbers one sequence's positions: no --key, --value");
    if (args.count("--incremental")) {
        for (const char* flag : {"--prefix", "--documents", "--alibi", "--softcap"})
            if (args.count(flag))
                throw Bad(std::string("--incremental has no ") + flag +
                          " (it takes --rope, --window, --sinks)");
        if (args.count("--key")) throw Bad("--incremental is self-attention: no --key, --value");
        for (const char* mask : {"--attn-mask", "--key-padding-mask", "--keep-mask"})
            if (args.count(mask))
                throw Bad(std::string("--incremental is causal by construction: no ") + mask);
    }
    return args;
}

std::size_t parse_heads(const std::string& flag, const std::string& text) {
    errno = 0;
    char* end = nullptr;
    const long long v = std::strtoll(text.c_str(), &end, 10);
    if (end == text.c_str() || *end != '\0' || errno == ERANGE || v < 1 || v > 1 << 20)
        throw Bad(flag + " must be a whole number from 1, not '" + text + "'");
    return static_cast<std::size_t>(v);
}

float parse_fill(const std::string& text) {
    if (text == "-inf") return mha::kNegInf;
    errno = 0;
    char* end = nullptr;
    const float v = std::strtof(text.c_str(), &end);
    if (end == text.c_str() || *end != '\0' || errno == ERANGE || !std::isfinite(v) || v >= 0)
        throw Bad("--fill must be -inf or a negative number such as -1e10, not '" + text + "'");
    return v;
}

// --softcap C, --rope-theta X: a finite number above 0.
double parse_positive(const std::string& flag, const std::string& text) {
    errno = 0;
    char* end = nullptr;
    const double v = std::strtod(text.c_str(), &end);
    if (end == text.c_str() || *end != '\0' || errno == ERANGE || !std::isfinite(v) || v <= 0)
        throw Bad(flag + " must be a number above 0, not '" + text + "'");
    return v;
}

std::optional<mha::Rope> parse_rope(const std::map<std::string, std::string>& args) {
    if (!args.count("--rope")) return std::nullopt;
    const std::string style = args.at("--rope");
    if (style != "interleaved" && style != "half")
        throw Bad("--rope must be interleaved (llama2.c) or half (Hugging Face), not '" +
                  style + "'");
    mha::Rope r;
    r.style = style == "half" ? mha::RopeStyle::half : mha::RopeStyle::interleaved;
    if (args.count("--rope-theta"))
        r.theta = parse_positive("--rope-theta", args.at("--rope-theta"));
    return r;
}

mha::Tensor3 load_input(const std::string& path, const std::string& what, std::size_t E) {
    mha::Tensor3 x = mha::load_npy_tensor3(path, what + " [B, T, E]");
    if (x.shape(2) != E) {
        throw Bad(path + ": " + what + " has shape " + mha::shape_of(x) +
                  " but the weights have E = " + std::to_string(E));
    }
    return x;
}

// Self-attention one position at a time: each decode() step attends to the
// positions before it through the cache, which is what a causal mask does.
// With RoPE the cache holds the keys turned.
// With --window W (and --sinks S) the cache is the rolling one of S + W
// slots (variants/rolling_cache.hpp), which never grows.
mha::Tensor3 incremental(const mha::MultiHeadAttention& m, const mha::Tensor3& x,
                         const std::optional<mha::Rope>& rope, std::size_t window,
                         std::size_t sinks) {
    const std::size_t B = x.shape(0), T = x.shape(1), E = x.shape(2);
    if (window > 0) {
        mha::RollingCache rolling = mha::make_rolling_cache(m, B, sinks, window, rope);
        return mha::decode_rolling(m, x, rolling);  // [B, T, E], a position at a time
    }
    mha::KVCache cache = rope ? mha::make_cache(m, B, T, *rope)  // K, V [B, H_kv, T, D]
                              : mha::make_cache(m, B, T);
    mha::Tensor3 y = mha::Tensor3::from_shape({B, T, E});
    for (std::size_t t = 0; t < T; ++t) {
        const mha::Tensor3 x_t = xt::view(x, xt::all(), xt::range(t, t + 1));  // [B, 1, E]
        xt::view(y, xt::all(), xt::range(t, t + 1)) = m.decode(x_t, cache);
    }
    return y;
}

// What loss.backward() leaves in .grad, under PyTorch's names: with as many
// kv heads as heads, nn.MultiheadAttention's (wq, wk, wv stacked into
// in_proj), else q_proj ... o_proj. Self-attention's one input gets the sum.
void save_grads(const std::string& out, const mha::AttentionGrads& g, bool grouped,
                bool cross) {
    auto save = [&](const std::string& name, const auto& t) {
        mha::save_npy(out + "/" + name + ".grad.npy", t);
    };
    if (grouped) {
        save("q_proj.weight", g.wq.weight), save("q_proj.bias", g.wq.bias);
        save("k_proj.weight", g.wk.weight), save("k_proj.bias", g.wk.bias);
        save("v_proj.weight", g.wv.weight), save("v_proj.bias", g.wv.bias);
        save("o_proj.weight", g.w_o.weight), save("o_proj.bias", g.w_o.bias);
    } else {
        mha::save_torch_mha_grads(g, out);  // in_proj_weight.grad.npy [3E, E] ...
    }
    if (cross) {
        save("query", g.query), save("key", g.key), save("value", g.value);
    } else {
        save("query", g.input);  // backward_self_attention()'s dL/dX
    }
}

void make_out_dir(const std::string& dir) {
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    if (ec || access(dir.c_str(), W_OK) != 0)
        throw Bad("--out " + dir + ": cannot write to this folder");
}

// --grad-output's file, which must have the shape of what it differentiates.
mha::Tensor3 load_grad_output(const std::string& path, const std::string& what,
                              const mha::Tensor3::shape_type& shape) {
    const mha::Tensor3 g = mha::load_npy_tensor3(path, "grad-output");
    if (g.shape() != shape) {
        throw Bad(path + ": grad-output is " + mha::shape_of(g) + ", the " + what + " = " +
                  mha::shape_str(shape));
    }
    return g;
}

using Args = std::map<std::string, std::string>;

// --block: x + attn(norm1(x)), then x + ff(norm2(x)), and with --grad-output
// its backward (block.hpp).
int run_block(const Args& args) {
    const std::size_t H = parse_heads("--num-heads", args.at("--num-heads"));
    const mha::Block blk = mha::load_block(args.at("--weights"), H);
    const mha::Tensor3 x = load_input(args.at("--query"), "query", blk.self_attn.embed_dim());
    const bool causal = args.count("--causal") > 0;
    const std::string out = args.at("--out");
    if (!args.count("--grad-output")) {
        make_out_dir(out);
        const mha::Tensor3 y = mha::block_forward(blk, x, causal);  // [B, T, E]
        mha::save_npy(out + "/output.npy", y);
        std::printf("wrote %s/output.npy %s\n", out.c_str(), mha::shape_of(y).c_str());
        return 0;
    }
    const mha::Tensor3 g_out =
        load_grad_output(args.at("--grad-output"), "output [B, T, E]", x.shape());
    make_out_dir(out);
    mha::BlockTrace t;
    const mha::Tensor3 y = mha::block_forward(blk, x, causal, &t);
    mha::BlockGrads g;
    const mha::Tensor3 dx = mha::block_backward(blk, t, g_out, causal, g);  // [B, T, E]
    mha::save_npy(out + "/output.npy", y);
    mha::save_npy(out + "/query.grad.npy", dx);
    mha::save_block_grads(g, out);
    std::printf("wrote %s/output.npy %s, query.grad.npy, 12 *.grad.npy\n", out.c_str(),
                mha::shape_of(y).c_str());
    return 0;
}

// --model: tokens to logits through the causal blocks, and with
// --grad-output the backward from dL/d logits (language_model.hpp).
int run_model(const Args& args) {
    const std::size_t H = parse_heads("--num-heads", args.at("--num-heads"));
    const mha::LanguageModel m = mha::load_model(args.at("--model"), H);
    const mha::Tokens tokens =
        mha::load_tokens(args.at("--tokens"), m.tok_emb.vocab(), m.pos_emb.vocab());
    const std::string out = args.at("--out");
    const mha::Tensor3::shape_type logits_shape{tokens.shape(0), tokens.shape(1),
                                                m.tok_emb.vocab()};
    const mha::Tensor3 g_out =
        args.count("--grad-output")
            ? load_grad_output(args.at("--grad-output"), "logits [B, T, V]", logits_shape)
            : mha::Tensor3();
    make_out_dir(out);
    const mha::ModelTrace t = mha::forward(m, tokens);  // logits [B, T, V]
    mha::save_npy(out + "/logits.npy", t.logits);
    if (args.count("--layer-weights")) {
        for (std::size_t l = 0; l < t.layers.size(); ++l)  // [B, H, T, T] each
            mha::save_npy(out + "/layer" + std::to_string(l) + ".weights.npy",
                          t.layers[l].attn.weights);
        std::printf("wrote %s/layer0..%zu.weights.npy %s\n", out.c_str(), t.layers.size() - 1,
                    mha::shape_of(t.layers[0].attn.weights).c_str());
    }
    if (!args.count("--grad-output")) {
        std::printf("wrote %s/logits.npy %s\n", out.c_str(), mha::shape_of(t.logits).c_str());
        return 0;
    }
    mha::save_model_grads(mha::backward(m, t, tokens, g_out), out);
    std::printf("wrote %s/logits.npy %s and %zu *.grad.npy\n", out.c_str(),
                mha::shape_of(t.logits).c_str(), 12 * m.layers.size() + 6);
    return 0;
}

}  // namespace

// The whole program; main() below calls it, and so does the fuzz target of
// its flags (fuzz/forward_flags_fuzzer.cpp, built with MHA_FORWARD_NO_MAIN).
int mha_forward_main(int argc, char** argv) {
    try {
        const auto args = parse(argc, argv);
        if (args.count("--block")) return run_block(args);
        if (args.count("--model")) return run_model(args);
        const auto at = [&](const char* flag) {
            return args.count(flag) ? args.at(flag) : std::string();
        };
        const std::size_t H = parse_heads("--num-heads", args.at("--num-heads"));
        const std::size_t H_kv =
            args.count("--num-kv-heads") ? parse_heads("--num-kv-heads", at("--num-kv-heads")) : H;
        const float fill = args.count("--fill") ? parse_fill(args.at("--fill")) : mha::kNegInf;
        const mha::MultiHeadAttention m = mha::load_state_dict(args.at("--weights"), H, H_kv);
        const std::size_t E = m.embed_dim();
        const mha::Tensor3 q = load_input(args.at("--query"), "query", E);
        const bool cross = args.count("--key") > 0;
        const mha::Tensor3 k = cross ? load_input(args.at("--key"), "key", E) : q;
        const mha::Tensor3 v = cross ? load_input(args.at("--value"), "value", E) : q;
        if (cross && (k.shape(0) != q.shape(0) || v.shape(0) != q.shape(0) ||
                      k.shape(1) != v.shape(1))) {
            throw Bad("query " + mha::shape_of(q) + ", key " + mha::shape_of(k) +
                      " and value " + mha::shape_of(v) + " must share B; key and value, Tk");
        }
        const std::size_t B = q.shape(0), Tq = q.shape(1), Tk = k.shape(1);
        mha::TorchMasks masks = mha::load_torch_masks(at("--attn-mask"),
                                                      at("--key-padding-mask"), B, H, Tq, Tk);
        // The articles' masks join PyTorch's: a key must pass all of them.
        std::optional<mha::Mask> keep = masks.keep;
        auto add = [&keep](const mha::Mask& more) {
            keep = keep ? mha::combine_masks(*keep, more) : more;
        };
        if (args.count("--keep-mask")) add(mha::load_keep_mask(at("--keep-mask"), B, H, Tq, Tk));
        // The variants' masks and ALiBi as tensors, so that every path below
        // (the engine, the tiles, the backward) takes them
        // (--window W alone is sinks_window(0, W), the same mask as sliding_window(W))
        const std::size_t W = args.count("--window") ? parse_heads("--window", at("--window")) : 0;
        const std::size_t S = args.count("--sinks") ? parse_heads("--sinks", at("--sinks")) : 0;
        if (W > 0) add(mha::mask_of(mha::sinks_window(S, W), 1, 1, Tq, Tk));  // [1, 1, Tq, Tk]
        if (args.count("--prefix"))
            add(mha::mask_of(mha::prefix_lm(parse_heads("--prefix", at("--prefix"))), 1, 1, Tq,
                             Tk));
        if (args.count("--documents")) {
            const xt::xtensor<std::int64_t, 2> ids =
                mha::load_npy_int(at("--documents"), "documents [B, T]", 2);
            if (ids.shape(0) != B || ids.shape(1) != Tq) {
                throw Bad(at("--documents") + ": documents " + mha::shape_of(ids) +
                          " do not fit the query's [B, T] = [" + std::to_string(B) + ", " +
                          std::to_string(Tq) + "]");
            }
            add(mha::mask_of(mha::documents(ids), B, 1, Tq, Tk));  // [B, 1, T, T]
        }
        if (args.count("--alibi")) {
            const mha::Tensor4 zero = xt::zeros<float>({std::size_t(1), H, Tq, Tk});
            const mha::Tensor4 alibi = mha::apply_score_mod(zero, mha::alibi(H));  // [1, H, Tq, Tk]
            if (masks.bias) {
                mha::Tensor4 sum = *masks.bias + alibi;
                masks.bias = std::move(sum);
            } else {
                masks.bias = alibi;
            }
        }
        const std::optional<mha::Rope> rope = parse_rope(args);
        const double cap =  // 0: no soft-capping
            args.count("--softcap") ? parse_positive("--softcap", at("--softcap")) : 0.0;
        // --causal alone needs no [Tq, Tk] mask: the engine works it out
        const bool only_causal = args.count("--causal") && !keep && !masks.bias;
        if (args.count("--causal") && !only_causal) add(mha::causal_mask(Tq, Tk));
        make_out_dir(args.at("--out"));
        const std::string out = args.at("--out");
        const bool no_weights = args.count("--no-weights") > 0;
        const bool grad = args.count("--grad-output") > 0;
        const mha::Tensor3 g_out =
            grad ? load_grad_output(at("--grad-output"), "output [B, Tq, E]", q.shape())
                 : mha::Tensor3();
        // The teaching stages with the mods: RoPE, and the weights of a
        // soft-capped call (the cap, then the bias, then the masks)
        auto stage_mods = [&] {
            if (only_causal && !keep) add(mha::causal_mask(Tq, Tk));
            mha::Mods mods;
            mods.fill = fill;
            mods.rope = rope;
            if (keep) mods.mask_mod = mha::mask_mod_of(*keep);
            if (masks.bias) mods.score_mod = mha::bias_mod_of(*masks.bias);
            if (cap > 0) {
                const mha::ScoreMod capped = mha::softcap(float(cap));
                mods.score_mod = masks.bias ? mha::chain(capped, mods.score_mod) : capped;
            }
            return mods;
        };
        if ((rope || cap > 0) && !no_weights && !grad && !args.count("--incremental")) {
            // RoPE or soft-capped weights: the stages (the engine's tiles keep none)
            const mha::Stages s = m.forward_stages(q, k, v, stage_mods());
            mha::save_npy(out + "/output.npy", s.output);
            mha::save_npy(out + "/attn_weights.npy", s.weights);
            std::printf("wrote %s/output.npy %s and attn_weights.npy %s\n", out.c_str(),
                        mha::shape_of(s.output).c_str(), mha::shape_of(s.weights).c_str());
            return 0;
        }
        if (args.count("--incremental") || (no_weights && !args.count("--grad-output"))) {
            // the engine's tiles, RoPE and the cap in its call
            const mha::fast::Call call{q, k, v, keep ? &*keep : nullptr, fill, masks.bias_ptr(),
                                       false, only_causal, float(cap), rope ? &*rope : nullptr};
            mha::ForwardTrace t;
            if (!args.count("--incremental")) mha::fast::forward(m, call, t, false);
            const mha::Tensor3 y = args.count("--incremental") ? incremental(m, q, rope, W, S)
                                                               : std::move(t.output);
            mha::save_npy(out + "/output.npy", y);
            std::printf("wrote %s/output.npy %s (no weights asked for)\n", out.c_str(),
                        mha::shape_of(y).c_str());
            return 0;
        }
        if (grad) {
            // self-attention, causal, no weights: no [T, T] tensor of any kind
            const bool tiles_only = only_causal && !cross && no_weights;
            if (only_causal && !tiles_only) add(mha::causal_mask(Tq, Tk));  // the tensor
            const mha::Mask* mask = keep ? &*keep : nullptr;
            // The engine's call: without weights, the trace keeps each row's
            // log-sum-exp instead, and the backward runs the FlashAttention-2
            // tiles; soft-capping (C) runs there only, its weights (if asked)
            // from the stages; RoPE turns q and k after the projections, and
            // dq, dk back (R^T) before them
            const bool tiled = no_weights || cap > 0;
            const mha::fast::Call call{q, k, v, mask, fill, masks.bias_ptr(), !tiled, tiles_only,
                                       float(cap), rope ? &*rope : nullptr};
            mha::ForwardTrace t;
            mha::fast::forward(m, call, t, true);
            const mha::AttentionGrads g = mha::fast::backward(m, call, t, g_out, !cross);
            mha::save_npy(out + "/output.npy", t.output);
            if (!no_weights) {
                const mha::Tensor4 w =  // [B, H, Tq, Tk]
                    cap > 0 ? m.forward_stages(q, k, v, stage_mods()).weights : t.weights;
                mha::save_npy(out + "/attn_weights.npy", w);
            }
            save_grads(out, g, H_kv != H, cross);
            if (no_weights) {
                std::printf("wrote %s/output.npy %s and *.grad.npy (no weights asked for)\n",
                            out.c_str(), mha::shape_of(t.output).c_str());
            } else {
                std::printf("wrote %s/output.npy %s, attn_weights.npy %s, *.grad.npy\n",
                            out.c_str(), mha::shape_of(t.output).c_str(),
                            mha::shape_str(mha::Tensor4::shape_type{B, H, Tq, Tk}).c_str());
            }
            return 0;
        }
        const mha::AttentionOutput o =
            only_causal ? m.forward(q, k, v, mha::causal)
                        : m.forward(q, k, v, keep ? &*keep : nullptr, fill, masks.bias_ptr());
        mha::save_npy(out + "/output.npy", o.output);
        mha::save_npy(out + "/attn_weights.npy", o.weights);
        std::printf("wrote %s/output.npy %s and attn_weights.npy %s\n", out.c_str(),
                    mha::shape_of(o.output).c_str(), mha::shape_of(o.weights).c_str());
        return 0;
    } catch (const Bad& e) {
        if (std::string(e.what()) == "help") {
            std::printf("%s", kUsage);
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

#ifndef MHA_FORWARD_NO_MAIN
int main(int argc, char** argv) { return mha_forward_main(argc, argv); }
#endif
