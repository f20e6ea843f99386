// libFuzzer target: the .npy reader. The input is a file: its header is
// checked by npy_info(), then it is read as float (rank 1 to 4, and as the
// Tensor3 of an input), as bool and as integers, as mha_forward, the mask
// loaders and the token ids' loader do.
#include <cstdint>

#include "common.hpp"
#include "mha/io/npy.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    fuzz::scratch();
    fuzz::write("in.npy", data, size);
    fuzz::refused_or_read([] { mha::npy_info("in.npy"); });
    for (std::size_t rank = 1; rank <= 4; ++rank)
        fuzz::refused_or_read([rank] { mha::load_npy_float("in.npy", "x", rank); });
    fuzz::refused_or_read([] { mha::load_npy_tensor3("in.npy", "query [B, T, E]"); });
    for (std::size_t rank = 1; rank <= 4; ++rank)
        fuzz::refused_or_read([rank] { mha::load_npy_bool("in.npy", "mask", rank); });
    for (std::size_t rank = 1; rank <= 2; ++rank)
        fuzz::refused_or_read([rank] { mha::load_npy_int("in.npy", "ids", rank); });
    return 0;
}
