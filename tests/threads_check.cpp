// The same answer with any number of workers, and with the packed kernels
// on or off: this program computes a fixed set of results (forward with
// and without masks, grouped heads, cross-attention, the tiled path past one
// tile, the backward, 30 train_step()s of lesson 19's model) and writes
// them; tests/threads.cmake runs it under MHA_THREADS = 1, 2, 3 and
// MHA_PACKED = 1, 0 and compares the files.
//
//   threads_check write FILE
//   threads_check compare A B TOLERANCE   (0: the same bits; else the
//                                          largest |a - b| / max |a| per block)
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "mha/backward.hpp"
#include "mha/model/train.hpp"

namespace {

struct Block {
    std::string name;
    std::vector<float> v;
};

template <class T>
Block block(const std::string& name, const T& t) {
    return {name, std::vector<float>(t.begin(), t.end())};
}

std::vector<Block> compute() {
    std::vector<Block> out;
    mha::Rng rng(7);
    const mha::Tensor3 x = mha::randn(3, 37, 48, rng), kv = mha::randn(3, 20, 48, rng);
    const mha::MultiHeadAttention m(48, 4, mha::Init::xavier(1));
    const mha::MultiHeadAttention g(48, 4, 2, mha::Init::xavier(2));
    const mha::Mask causal = mha::causal_mask(37, 37);
    const mha::Mask pad = mha::padding_mask({20, 11, 0}, 20);
    const auto f1 = m.forward(x, x, x, &causal);
    out.push_back(block("forward causal, output", f1.output));
    out.push_back(block("forward causal, weights", f1.weights));
    out.push_back(block("forward unmasked", m.forward(x, x, x).output));
    out.push_back(block("forward cross, padded", m.forward(x, kv, kv, &pad).output));
    out.push_back(block("forward grouped heads", g.forward(x, x, x, mha::causal).output));
    // 200 sequences of 40: 17 chunks, which the engine spreads over 2 and 3
    // workers (its chunk boundaries then depend on the worker count)
    const mha::MultiHeadAttention wide(64, 4, mha::Init::xavier(5));
    const mha::Tensor3 many = mha::randn(200, 40, 64, rng), many_dy = mha::randn(200, 40, 64, rng);
    const mha::Mask causal40 = mha::causal_mask(40, 40);
    out.push_back(block("forward, 17 chunks", wide.forward(many, many, many, &causal40).output));
    const mha::AttentionGrads gw = mha::backward(wide, many, many, many, many_dy, &causal40);
    out.push_back(block("backward, 17 chunks, dWv", gw.wv.weight));
    out.push_back(block("backward, 17 chunks, d value", gw.value));
    // E = 512, where the packed kernels and BLAS add in other orders
    const mha::MultiHeadAttention big(512, 8, mha::Init::xavier(6));
    const mha::Tensor3 xb = mha::randn(24, 64, 512, rng);
    const mha::Mask causal64 = mha::causal_mask(64, 64);
    out.push_back(block("forward, E 512", big.forward(xb, xb, xb, &causal64).output));
    const mha::Tensor3 long_x = mha::randn(1, 300, 48, rng);
    out.push_back(block("no weights, 300 > one tile",
                        m.forward_no_weights(long_x, long_x, long_x, mha::causal)));
    const mha::Tensor3 dy = mha::randn(3, 37, 48, rng);
    const mha::AttentionGrads gr = mha::backward(m, x, x, x, dy, &causal);
    out.push_back(block("backward dWq", gr.wq.weight));
    out.push_back(block("backward dW_o", gr.w_o.weight));
    out.push_back(block("backward d query", gr.query));
    out.push_back(block("backward d key", gr.key));
    const mha::AttentionGrads gg = mha::backward(g, x, x, x, dy, &causal);
    out.push_back(block("backward grouped dWk", gg.wk.weight));
    // the FlashAttention-2 backward from a trace without weights, 5 tiles of 64
    const mha::Tensor3 long_dy = mha::randn(1, 300, 48, rng);
    const mha::ForwardTrace lt = m.trace_no_weights(long_x, long_x, long_x, mha::causal);
    const mha::AttentionGrads gt =
        mha::backward_self_attention(m, lt, long_x, long_dy, mha::causal);
    out.push_back(block("tiled backward dWk", gt.wk.weight));
    out.push_back(block("tiled backward dX", gt.input));
    mha::SequenceModel s(10, 8, 32, 2, mha::Init::xavier(3));
    mha::Adam adam(0.05f);
    mha::Rng data(4);
    mha::SequenceTrace trace;
    Block losses{"training losses, 30 steps", {}};
    for (int step = 0; step < 30; ++step) {
        const mha::TokenBatch b = mha::reverse_batch(64, 8, 10, data);
        losses.v.push_back(static_cast<float>(mha::train_step(s, adam, b, trace).loss));
    }
    out.push_back(losses);
    out.push_back(block("training, wq after 30 steps", s.attn.wq.weight));
    return out;
}

void write(const std::string& path, const std::vector<Block>& blocks) {
    std::ofstream f(path, std::ios::binary);
    for (const Block& b : blocks) {
        const std::size_t n = b.v.size(), len = b.name.size();
        f.write(reinterpret_cast<const char*>(&len), sizeof len);
        f.write(b.name.data(), static_cast<std::streamsize>(len));
        f.write(reinterpret_cast<const char*>(&n), sizeof n);
        f.write(reinterpret_cast<const char*>(b.v.data()), static_cast<std::streamsize>(n * 4));
    }
    if (!f) throw std::runtime_error("cannot write " + path);
}

std::vector<Block> read(const std::string& path) {
    std::ifstream f(path, std::ios::binary);
    if (!f) throw std::runtime_error("cannot read " + path);
    std::vector<Block> out;
    std::size_t len = 0, n = 0;
    while (f.read(reinterpret_cast<char*>(&len), sizeof len)) {
        Block b;
        b.name.resize(len);
        f.read(&b.name[0], static_cast<std::streamsize>(len));
        f.read(reinterpret_cast<char*>(&n), sizeof n);
        b.v.resize(n);
        f.read(reinterpret_cast<char*>(b.v.data()), static_cast<std::streamsize>(n * 4));
        out.push_back(std::move(b));
    }
    return out;
}

}  // namespace

int main(int argc, char** argv) {
    try {
        const std::string mode = argc > 1 ? argv[1] : "";
        if (mode == "write" && argc == 3) {
            write(argv[2], compute());
            return 0;
        }
        if (mode != "compare" || argc != 5) {
            std::fprintf(stderr, "usage: threads_check write FILE | compare A B TOLERANCE\n");
            return 2;
        }
        const std::vector<Block> a = read(argv[2]), b = read(argv[3]);
        const double tol = std::atof(argv[4]);
        if (a.size() != b.size() || a.empty()) {
            std::fprintf(stderr, "threads_check: %zu blocks against %zu\n", a.size(), b.size());
            return 1;
        }
        int rc = 0;
        for (std::size_t k = 0; k < a.size(); ++k) {
            double worst = 0, top = 0;
            bool same = a[k].v.size() == b[k].v.size();
            for (std::size_t i = 0; same && i < a[k].v.size(); ++i) {
                same = same && std::memcmp(&a[k].v[i], &b[k].v[i], 4) == 0;
                worst = std::fmax(worst, std::fabs(double(a[k].v[i]) - b[k].v[i]));
                top = std::fmax(top, std::fabs(double(a[k].v[i])));
            }
            const double rel = top > 0 ? worst / top : worst;
            const bool ok = tol == 0 ? same : a[k].v.size() == b[k].v.size() && rel <= tol;
            std::printf("%-6s %-32s %s, max |diff| / max |value| = %.2e\n", ok ? "ok" : "FAILED",
                        a[k].name.c_str(), same ? "the same bits" : "differs", rel);
            rc |= ok ? 0 : 1;
        }
        return rc;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "threads_check: %s\n", e.what());
        return 1;
    }
}
