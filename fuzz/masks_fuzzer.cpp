// libFuzzer target: the mask loaders. The input gives the sizes B, H, Tq, Tk
// (1 to 8 each), then three files, one chunk each: PyTorch's attn_mask, its
// key_padding_mask, and the articles' keep-mask. The masks read are then
// used as a forward would use them.
#include <cstdint>
#include <string>

#include "common.hpp"
#include "mha/attention.hpp"
#include "mha/io/torch_io.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    fuzz::scratch();
    if (size < 4) return 0;
    const std::size_t b = 1 + data[0] % 8, h = 1 + data[1] % 8, tq = 1 + data[2] % 8,
                      tk = 1 + data[3] % 8;
    data += 4, size -= 4;
    std::string chunk;
    const char* files[] = {"attn_mask.npy", "key_padding_mask.npy", "keep_mask.npy"};
    bool present[3] = {false, false, false};
    for (int k = 0; k < 3 && fuzz::next_chunk(data, size, chunk); ++k) {
        fuzz::write(files[k], reinterpret_cast<const std::uint8_t*>(chunk.data()), chunk.size());
        present[k] = true;
    }
    const mha::MultiHeadAttention m(4 * h, h, mha::Init::xavier(0));
    mha::Rng rng(2);
    const mha::Tensor3 q = mha::randn(b, tq, 4 * h, rng), k = mha::randn(b, tk, 4 * h, rng);
    fuzz::refused_or_read([&] {
        const mha::TorchMasks t = mha::load_torch_masks(present[0] ? files[0] : "",
                                                        present[1] ? files[1] : "", b, h, tq, tk);
        m.forward(q, k, k, t.keep_ptr(), mha::kNegInf, t.bias_ptr());
    });
    if (present[2]) {
        fuzz::refused_or_read([&] {
            const mha::Mask keep = mha::load_keep_mask(files[2], b, h, tq, tk);
            m.forward(q, k, k, &keep);
        });
    }
    return 0;
}
