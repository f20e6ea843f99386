/// @file linear.hpp
/// @brief Stage 1: the linear layer, `torch.nn.Linear` in C++.
#pragma once

#include "mha/init.hpp"
#include "mha/shape.hpp"

namespace mha {

/// @defgroup linear Stage 1: linear projections
/// @brief `y = x W^T + b`: wq, wk, wv and the output layer w_o.
/// @{

/// A linear layer stored as `torch.nn.Linear` stores it.
struct Linear {
    Tensor2 weight;  ///< `[out, in]`
    Tensor1 bias;    ///< `[out]`

    /// @return in, the input size
    std::size_t in_features() const { return weight.shape(1); }
    /// @return out, the output size
    std::size_t out_features() const { return weight.shape(0); }
};

/// A layer `in -> out` with weights from @p init and nn.Linear's default
/// bias U(-1/sqrt(in), 1/sqrt(in)), both drawn from @p rng.
/// @param in_features  input size, at least 1.
/// @param out_features output size, at least 1.
/// @param init         the weight scheme (its seed is not used here).
///                     Init::torch() describes a whole module: for one
///                     layer it draws Xavier weights, as Init::xavier().
/// @param rng          the generator to draw from.
/// @return weight `[out, in]`, bias `[out]`
Linear make_linear(std::size_t in_features, std::size_t out_features,
                   const Init& init, Rng& rng);

/// `y = x W^T + b` over the last axis, as `layer(x)` in PyTorch.
///
/// Every token is a row: x is read as `[B*T, in]`, and one matrix product
/// `[B*T, in] x [in, out]` does all of them.
/// @param x     `[B, T, in]`
/// @param layer weight `[out, in]`, bias `[out]`
/// @return      `[B, T, out]`
/// @throws std::invalid_argument when x's last size is not `in`, or the
///         bias is not `[out]`.
Tensor3 linear(const Tensor3& x, const Linear& layer);

/// @}

}  // namespace mha
