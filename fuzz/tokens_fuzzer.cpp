// libFuzzer target: a tokens file, as mha_forward --model reads it. The
// input is the file: load_npy_int() reads it at ranks 1 to 3, load_tokens()
// checks it against a small model (V 5, T_max 4), and ids it accepts run
// through the model's forward and backward once.
#include <cstdint>

#include "common.hpp"
#include "mha/io/model_io.hpp"
#include "mha/io/npy.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    fuzz::scratch();
    static const mha::LanguageModel m = mha::make_language_model({5, 4, 4, 2, 8, 1}, 1);
    fuzz::write("ids.npy", data, size);
    for (std::size_t rank = 1; rank <= 3; ++rank)
        fuzz::refused_or_read([rank] { mha::load_npy_int("ids.npy", "ids", rank); });
    fuzz::refused_or_read([] {
        const mha::Tokens ids = mha::load_tokens("ids.npy", m.tok_emb.vocab(), m.pos_emb.vocab());
        if (ids.size() > 64) return;  // a larger batch proves nothing more
        const mha::ModelTrace t = mha::forward(m, ids);
        mha::backward(m, t, ids, t.logits);
    });
    return 0;
}
