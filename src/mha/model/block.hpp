/// @file block.hpp
/// @brief The block, 3: the pre-norm Transformer block around attention.
///
/// B batch, T positions, E embed_dim, H heads, F hidden.
#pragma once
#include <cstdint>

#include "mha/backward.hpp"
#include "mha/init.hpp"
#include "mha/model/feed_forward.hpp"
#include "mha/model/layer_norm.hpp"

namespace mha {

/// @addtogroup block
/// @{

/// One pre-norm block, as `nn.TransformerEncoderLayer(E, H, F, dropout=0,
/// activation="gelu", batch_first=True, norm_first=True)`:
/// \f$x_1 = x + \mathrm{attn}(\mathrm{norm_1}(x))\f$, then
/// \f$y = x_1 + \mathrm{ff}(\mathrm{norm_2}(x_1))\f$.
/// The two `x +` are the residual connections: each sub-layer adds what it
/// found to the stream instead of replacing it, so a gradient always has the
/// identity path back. No dropout (the lessons train without it).
/// PyTorch's names: `self_attn.in_proj_weight` is wq, wk, wv stacked
/// `[3E, E]`, `self_attn.out_proj` is w_o, `linear1`, `linear2` are ff's,
/// `norm1`, `norm2` (io/model_io.hpp reads and writes them).
struct Block {
    MultiHeadAttention self_attn;  ///< E, H
    FeedForward ff;                ///< E -> F -> E
    LayerNorm norm1;               ///< before attention, E
    LayerNorm norm2;               ///< before the feed-forward, E
    /// @param embed_dim E, @param num_heads H dividing E, @param hidden F
    /// @param seed the weights' seed: attention as nn.MultiheadAttention
    ///        initialises itself, the feed-forward as nn.Linear, norms 1 and 0
    Block(std::size_t embed_dim, std::size_t num_heads, std::size_t hidden,
          std::uint64_t seed);
};

/// Dropout while training, as `nn.Dropout(p)`: each entry of a branch's
/// output is zeroed with probability p and the rest are scaled by
/// 1 / (1 - p), so that the expected value is unchanged. A unit can no longer
/// count on any one other unit being there, which is what keeps a model of
/// a small text from learning its windows by heart.
struct Dropout {
    float p = 0;         ///< the share dropped, in [0, 1); 0 is no dropout
    Rng* rng = nullptr;  ///< draws the masks (needed when p > 0)
};

/// A dropout mask: 0 with probability d.p, else 1 / (1 - d.p), one
/// uniform draw per entry in memory order (so the same Rng gives the same
/// mask on any thread count).
/// @param shape the mask's shape, that of the tensor it multiplies
/// @param d     the rate and the generator
/// @return      the mask
/// @throws std::invalid_argument for p outside [0, 1) or p > 0 with no Rng.
Tensor3 dropout_mask(const std::array<std::size_t, 3>& shape, const Dropout& d);

/// What the forward keeps for the backward.
struct BlockTrace {
    NormTrace n1;            ///< norm1's
    Tensor3 h1;              ///< norm1(x), attention's input `[B, T, E]`
    ForwardTrace attn;       ///< attention's, weights `[B, H, T, T]` (or its lse)
    Tensor3 drop1;           ///< dropout's mask on attn(h1) `[B, T, E]`; empty: none
    Tensor3 x1;              ///< x + attn(h1) (times drop1) `[B, T, E]`
    NormTrace n2;            ///< norm2's
    Tensor3 h2;              ///< norm2(x1), the feed-forward's input `[B, T, E]`
    FeedForwardTrace ff;     ///< the feed-forward's
    Tensor3 drop2;           ///< dropout's mask on ff(h2) `[B, T, E]`; empty: none
};

/// Every gradient of one block.
struct BlockGrads {
    AttentionGrads self_attn;  ///< wq, wk, wv, w_o
    FeedForwardGrads ff;       ///< linear1, linear2
    NormGrad norm1;            ///< norm1's weight and bias
    NormGrad norm2;            ///< norm2's weight and bias
};

/// The forward.
/// @param blk    the block
/// @param x      `[B, T, E]`
/// @param causal whether query i sees only keys 0..i
/// @param keep   nullptr, or where block_backward()'s inputs go
/// @param keep_weights false: attention keeps its log-sum-exp instead of its
///        weights (trace_no_weights()), and block_backward() then runs the
///        tiled backward: no `[B, H, T, T]` is held
/// @param drop   dropout on each branch's output before it joins the
///        residual (training only; p = 0 is the plain block, bit for bit)
/// @return       `[B, T, E]`
/// @throws std::invalid_argument when x's last size is not E.
Tensor3 block_forward(const Block& blk, const Tensor3& x, bool causal,
                      BlockTrace* keep = nullptr, bool keep_weights = true,
                      const Dropout& drop = {});

/// The backward, the forward in reverse: the feed-forward's branch adds to
/// the residual's dy, then the attention branch's to that.
/// @param blk    the block
/// @param t      what block_forward() kept
/// @param dy     dL/dy `[B, T, E]`
/// @param causal as in the forward
/// @param g      gets every parameter's gradient
/// @return       dL/dx `[B, T, E]`
Tensor3 block_backward(const Block& blk, const BlockTrace& t, const Tensor3& dy, bool causal,
                       BlockGrads& g);

/// The block's parameters and gradients, named as in PyTorch where one
/// tensor is one tensor (`norm1.weight`, `linear1.bias`) and
/// `self_attn.wq.weight` etc. for the parts of in_proj.
/// @param blk    the block, updated through the result
/// @param g      its gradients, which must outlive the result
/// @param prefix put before each name, e.g. "layers.0."
/// @return       sixteen parameters
std::vector<Parameter> parameters(Block& blk, const BlockGrads& g,
                                  const std::string& prefix = "");

/// @}

}  // namespace mha
