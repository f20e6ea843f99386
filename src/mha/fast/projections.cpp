// The four layers of one forward call, packed once.
#include "mha/fast/projections.hpp"

#include <algorithm>

#include "mha/fast/blas.hpp"
#include "mha/fast/packed_gemm.hpp"
#include "mha/fast/parallel.hpp"

namespace mha::fast {

Projections::Projections(const Linear& wq, const Linear& wk, const Linear& wv,
                         const Linear& w_o, std::size_t E, bool packed)
    : layers_{&wq, &wk, &wv, &w_o}, E_(E), each_(packed_floats(E, E)) {
    if (!packed) return;
    panels_.resize(4 * each_);
    parallel_for(4, [&](std::size_t begin, std::size_t end) {
        for (std::size_t l = begin; l < end; ++l)
            pack_panels(layers_[l]->weight.data(), E, true, E, E, panels_.data() + l * each_);
    });
}

void Projections::run(const float* x, std::size_t rows, std::size_t first,
                      std::size_t count, float* const* out) const {
    if (panels_.empty()) {
        for (std::size_t l = 0; l < count; ++l)
            linear_rows(x, rows, *layers_[first + l], out[l]);
        return;
    }
    // Called outside a worker (a few long sequences), blocks of rows go to
    // the workers; no row's result depends on where its block starts.
    constexpr std::size_t kRows = 48;
    const std::size_t blocks = (rows + kRows - 1) / kRows;
    parallel_for(blocks, [&](std::size_t begin, std::size_t end) {
        const std::size_t r0 = begin * kRows, r1 = std::min(rows, end * kRows);
        LinearPanels to[4];
        for (std::size_t l = 0; l < count; ++l) {
            to[l] = {panels_.data() + (first + l) * each_, layers_[first + l]->bias.data(),
                     out[l] + r0 * E_};
        }
        packed_linear(x + r0 * E_, E_, r1 - r0, E_, to, count, E_, E_);
    });
}

}  // namespace mha::fast
