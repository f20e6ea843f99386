// libFuzzer target: a corpus file, as lesson 23 --corpus reads it. The
// input is the file: read_poems() cuts it into poems (or refuses it with
// std::invalid_argument); the poems it accepts are split, given a
// vocabulary and ids, and cut into windows, whose every id must be one of
// the vocabulary's and every window 2 to T_max + 1 ids long.
#include <cstdint>
#include <cstdlib>

#include "common.hpp"
#include "mha/io/corpus_io.hpp"
#include "mha/model/poems.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    fuzz::scratch();
    fuzz::write("corpus.txt", data, size);
    fuzz::refused_or_read([] {
        const std::vector<mha::Poem> poems = mha::read_poems("corpus.txt");
        const mha::PoemSplit s = mha::split_poems(poems);
        const mha::Vocab v = mha::build_vocab(s.train);
        for (const std::vector<std::int32_t>& w : mha::poem_windows(poems, v, 4)) {
            if (w.size() < 2 || w.size() > 5) std::abort();
            for (const std::int32_t id : w)
                if (id < 0 || std::size_t(id) >= v.size()) std::abort();
        }
    });
    return 0;
}
