// The four layers of one forward call, packed once.
#include "mha/fast/projections.hpp"

#include <algorithm>

#include "mha/fast/blas.hpp"
#include "mha/fast/packed_gemm.hpp"
#include "mha/fast/parallel.hpp"

namespace mha::fast {

Projections::Projections(const Linear& wq, const Linear& wk, const Linear& wv,
                         const Linear& w_o, bool packed)
    : layers_{&wq, &wk, &wv, &w_o}, E_(wq.in_features()), offset_{} {
    if (!packed) return;
    std::size_t total = 0;
    for (int l = 0; l < 4; ++l) {
        offset_[l] = total;
        total += packed_floats(E_, layers_[l]->out_features());
    }
    panels_.resize(total);
    parallel_for(4, [&](std::size_t begin, std::size_t end) {
        for (std::size_t l = begin; l < end; ++l) {
            const std::size_t n = layers_[l]->out_features();
            pack_panels(layers_[l]->weight.data(), E_, true, E_, n, panels_.data() + offset_[l]);
        }
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
            const Linear& layer = *layers_[first + l];
            const std::size_t n = layer.out_features();
            to[l] = {panels_.data() + offset_[first + l], layer.bias.data(), out[l] + r0 * n, n,
                     n};
        }
        packed_linear(x + r0 * E_, E_, r1 - r0, E_, to, count);
    });
}

}  // namespace mha::fast
