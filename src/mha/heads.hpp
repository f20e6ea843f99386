/// @file heads.hpp
/// @brief Stage 2: split the embedding into heads, and merge them back.
#pragma once

#include "mha/shape.hpp"

namespace mha {

/// @defgroup heads Stage 2: split and merge heads
/// @brief `view` + `permute(0, 2, 1, 3)` and back.
/// @{

/// `D = E / H`, or a clear error when H does not divide E.
/// @param embed_dim E (d_model), at least 1.
/// @param num_heads H, at least 1.
/// @return D, the size of each head
/// @throws std::invalid_argument naming the nearest head counts that divide
///         E when H does not: "embed_dim 512 is not divisible by num_heads 7;
///         try 4 or 8".
/// @warning PyTorch's `embed_dim // num_heads` floors silently: 512 // 7 is
///          73, and 7 x 73 = 511. See \ref lesson08.
std::size_t head_dim_for(std::size_t embed_dim, std::size_t num_heads);

/// `x.view(B, T, H, D).permute(0, 2, 1, 3).contiguous()`.
///
/// Head h owns the columns `h*D .. h*D + D-1` of the embedding.
/// @param x         `[B, T, E]`
/// @param num_heads H, which must divide E
/// @return          `[B, H, T, D]`, a contiguous copy
Tensor4 split_heads(const Tensor3& x, std::size_t num_heads);

/// `x.permute(0, 2, 1, 3).contiguous().view(B, T, H * D)`: the inverse of
/// split_heads, exactly.
/// @param x `[B, H, T, D]`
/// @return  `[B, T, E]` with E = H * D
/// @warning reshaping `[B, H, T, D]` straight to `[B, T, E]`, without the
///          permute, gives the right shape and the wrong numbers. See
///          \ref lesson10.
Tensor3 merge_heads(const Tensor4& x);

/// @}

}  // namespace mha
