// libFuzzer target: a vocab.json, as a checkpoint's folder holds it. The
// input is the file: load_vocab() reads it (or refuses it with
// std::invalid_argument); a vocabulary it accepts is written back with
// save_vocab() and read again, which must give the same tokens, and every
// token's id must be its index.
#include <cstdint>
#include <cstdlib>

#include "common.hpp"
#include "mha/io/corpus_io.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    fuzz::scratch();
    fuzz::write("vocab.json", data, size);
    fuzz::refused_or_read([] {
        const mha::Vocab v = mha::load_vocab("vocab.json");
        for (std::size_t k = 0; k < v.size(); ++k)
            if (v.id(v.tokens()[k]) != std::int32_t(k)) std::abort();
        mha::save_vocab(v, "again.json");
        if (mha::load_vocab("again.json").tokens() != v.tokens()) std::abort();
    });
    return 0;
}
