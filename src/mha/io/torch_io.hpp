/// @file torch_io.hpp
/// @brief PyTorch interop: nn.MultiheadAttention's state_dict and masks.
#pragma once

#include <optional>
#include <string>

#include "mha/attention.hpp"
#include "mha/backward.hpp"

namespace mha {

/// @addtogroup io
/// @{

/// Loads `torch.nn.MultiheadAttention(E, H)` weights saved as
/// `for k, v in mha.state_dict().items(): np.save(f"{dir}/{k}.npy", v.numpy())`:
/// `in_proj_weight` `[3E, E]` (wq, wk, wv stacked), `in_proj_bias` `[3E]`,
/// `out_proj.weight` `[E, E]`, `out_proj.bias` `[E]`.
/// @param dir       the folder holding the four files
/// @param num_heads H; it must divide E
/// @param prefix    put before each file's name: "" for the module's own
///                  state_dict, "self_attn." for the attention of a
///                  Transformer block (io/model_io.hpp)
/// @return the module with PyTorch's weights
/// @throws std::invalid_argument naming the file and shapes on any mismatch.
MultiHeadAttention load_torch_mha(const std::string& dir, std::size_t num_heads,
                                  const std::string& prefix = "");

/// Loads the state_dict of any module mha_forward reads, told apart by the
/// files in @p dir, each saved as `np.save(f"{dir}/{k}.npy", v.numpy())`:
/// - `nn.MultiheadAttention`: in_proj_weight, in_proj_bias, out_proj.*
///   (load_torch_mha());
/// - the four-linear-layers article's class: wq, wk, wv, fc_out, each
///   `.weight` `[E, E]` and `.bias` `[E]`;
/// - the handwritten-course article's class: w_q, w_k, w_v, w_combine, the
///   same;
/// - the names of current models' attention (Llama, Mistral, Qwen): q_proj,
///   k_proj, v_proj, o_proj, with k_proj and v_proj `[H_kv * D, E]` under
///   grouped-query attention, and each `.bias` optional (zeros without).
/// @param dir          the folder
/// @param num_heads    H; it must divide E
/// @param num_kv_heads H_kv, dividing H; 0 means H (no grouping)
/// @return the module with those weights
/// @throws std::invalid_argument when the folder holds none of the layouts
///         or more than one (naming what it looked for), or a file is bad.
MultiHeadAttention load_state_dict(const std::string& dir, std::size_t num_heads,
                                   std::size_t num_kv_heads = 0);

/// Writes @p m as the four state_dict files load_torch_mha() reads.
/// @param m      the module, without grouped heads (H_kv = H)
/// @param dir    an existing, writable folder
/// @param prefix put before each file's name, as load_torch_mha() takes it
/// @throws std::invalid_argument for grouped heads, or a file not written.
void save_torch_mha(const MultiHeadAttention& m, const std::string& dir,
                    const std::string& prefix = "");

/// Writes the four weights' gradients as PyTorch's `.grad` of
/// nn.MultiheadAttention: `in_proj_weight.grad.npy` `[3E, E]` (dL/d wq, wk,
/// wv stacked), `in_proj_bias.grad.npy` `[3E]`, `out_proj.weight.grad.npy`
/// `[E, E]`, `out_proj.bias.grad.npy` `[E]` (the inputs' gradients are not
/// written: their names depend on the caller).
/// @param g      what backward() or backward_self_attention() returned,
///               without grouped heads
/// @param dir    an existing, writable folder
/// @param prefix put before each file's name, e.g. "self_attn."
/// @throws std::invalid_argument for grouped heads, or a file not written.
void save_torch_mha_grads(const AttentionGrads& g, const std::string& dir,
                          const std::string& prefix = "");

/// PyTorch's two masks, turned into what forward() takes.
struct TorchMasks {
    std::optional<Mask> keep;     ///< bool masks: `[B or 1, H or 1, Tq, Tk]`
    std::optional<Tensor4> bias;  ///< float attn_mask: added to the scores
    /// @return the keep-mask for forward(), or nullptr
    const Mask* keep_ptr() const { return keep ? &*keep : nullptr; }
    /// @return the score bias for forward(), or nullptr
    const Tensor4* bias_ptr() const { return bias ? &*bias : nullptr; }
};

/// Reads PyTorch's masks with PyTorch's polarity (True = not allowed):
/// `attn_mask` bool or float, `[Tq, Tk]` or `[B*H, Tq, Tk]` (a float mask is
/// added to the scores); `key_padding_mask` bool `[B, Tk]` (True = ignore).
/// An empty path means no such mask.
/// @param attn_mask_path        the attn_mask file, or ""
/// @param key_padding_mask_path the key_padding_mask file, or ""
/// @param b, h, tq, tk          the sizes the masks must fit
/// @return the bool masks combined into one keep-mask, and the float bias
/// @throws std::invalid_argument naming the file and shapes on any mismatch.
TorchMasks load_torch_masks(const std::string& attn_mask_path,
                            const std::string& key_padding_mask_path,
                            std::size_t b, std::size_t h, std::size_t tq,
                            std::size_t tk);

/// The articles' mask, 1 = may attend, from a `.npy` file (bool, or float
/// where any non-zero value may attend, as `torch.tril(torch.ones(T, T))`).
/// @param path       the file
/// @param b, h, tq, tk the sizes the mask must fit
/// @return `[1, 1, Tq, Tk]` from `[Tq, Tk]`, `[B, 1, Tq, Tk]` from
///         `[B, Tq, Tk]`, or a rank-4 mask as it is, broadcast like PyTorch
/// @throws std::invalid_argument naming the file and shapes on a mismatch.
Mask load_keep_mask(const std::string& path, std::size_t b, std::size_t h, std::size_t tq,
                    std::size_t tk);

/// @}

}  // namespace mha
