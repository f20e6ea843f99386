/// @file projections.hpp
/// @brief The four layers as the engine's forward applies them: packed once
///        per call, then run on one chunk of rows after another.
#pragma once

#include <cstddef>

#include "mha/fast/memory.hpp"
#include "mha/linear.hpp"

namespace mha::fast {

/// @addtogroup engine
/// @{

/// wq, wk, wv and w_o for one forward call. With the packed kernels each
/// weight is packed into panels once, here, and every chunk's rows go
/// through packed_linear(), which adds the bias as it stores each tile.
/// Without them each layer is one BLAS call per chunk (linear_rows()).
class Projections {
public:
    /// @param wq, wk, wv, w_o the module's layers, checked: each reads E
    ///        numbers; wk and wv write H_kv * D, wq and w_o write E
    /// @param packed use the packed kernels (packed_products_on())
    Projections(const Linear& wq, const Linear& wk, const Linear& wv, const Linear& w_o,
                bool packed);

    /// `out[l] = x W^T + b` for the layers first .. first+count-1 (0 wq,
    /// 1 wk, 2 wv, 3 w_o), all reading the same rows of x: Q, K and V of
    /// self-attention are one pass over x.
    /// @param x     `[rows, E]`, contiguous
    /// @param rows  how many rows
    /// @param first the first layer
    /// @param count how many layers, from @p first
    /// @param out   @p count outputs, each `[rows, its layer's out]`, overwritten
    void run(const float* x, std::size_t rows, std::size_t first, std::size_t count,
             float* const* out) const;

private:
    const Linear* layers_[4];
    std::size_t E_;           // every layer's input size
    std::size_t offset_[4];   // where each layer's panels start in panels_
    Buffer panels_;           // the four packed weights, or empty: BLAS
};

/// @}

}  // namespace mha::fast
