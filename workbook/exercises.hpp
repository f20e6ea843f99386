// The workbook's exercises: what each file in workbook/ defines. A file
// that does not match its declaration here does not compile, so the
// signature is fixed; the body is yours.
//
// B batch, T time (Tq queries, Tk keys), E embed_dim, H heads, D = E / H.
#pragma once

#include <cstddef>

#include <xtensor/xbuilder.hpp>

#include "mha/attention.hpp"
#include "mha/kv_cache.hpp"
#include "mha/linear.hpp"
#include "mha/online_softmax.hpp"
#include "mha/shape.hpp"

namespace workbook {

using mha::Mask;
using mha::Tensor1;
using mha::Tensor2;
using mha::Tensor3;
using mha::Tensor4;

Tensor3 linear(const Tensor3& x, const mha::Linear& layer);           // 01
Tensor4 split_heads(const Tensor3& x, std::size_t num_heads);         // 02
Tensor4 scaled_scores(const Tensor4& q, const Tensor4& k);            // 03
Mask causal_mask(std::size_t tq, std::size_t tk);                     // 04
Tensor4 apply_mask(const Tensor4& scores, const Mask& mask, float fill);  // 04
Tensor4 softmax(const Tensor4& scores);                               // 05
Tensor4 attend(const Tensor4& weights, const Tensor4& v);             // 06
Tensor3 merge_heads(const Tensor4& x);                                // 06
Tensor3 forward(const mha::MultiHeadAttention& m, const Tensor3& query,  // 07
                const Tensor3& key, const Tensor3& value, const Mask* mask);
Tensor3 decode_step(const mha::MultiHeadAttention& m, const Tensor3& x_t,  // 16
                    mha::KVCache& cache);
void take_block(mha::RunningSoftmax& state, const float* block, std::size_t n);  // 18
Tensor4 softmax_backward(const Tensor4& weights, const Tensor4& d_weights);      // 19

}  // namespace workbook
