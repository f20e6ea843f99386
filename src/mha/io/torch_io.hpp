/// @file torch_io.hpp
/// @brief PyTorch interop: nn.MultiheadAttention's state_dict and masks.
#pragma once

#include <optional>
#include <string>

#include "mha/attention.hpp"

namespace mha {

/// @addtogroup io
/// @{

/// Loads `torch.nn.MultiheadAttention(E, H)` weights saved as
/// `for k, v in mha.state_dict().items(): np.save(f"{dir}/{k}.npy", v.numpy())`:
/// `in_proj_weight` `[3E, E]` (wq, wk, wv stacked), `in_proj_bias` `[3E]`,
/// `out_proj.weight` `[E, E]`, `out_proj.bias` `[E]`.
/// @param dir       the folder holding the four files
/// @param num_heads H; it must divide E
/// @return the module with PyTorch's weights
/// @throws std::invalid_argument naming the file and shapes on any mismatch.
MultiHeadAttention load_torch_mha(const std::string& dir, std::size_t num_heads);

/// Writes @p m as the four state_dict files load_torch_mha() reads.
/// @param m   the module
/// @param dir an existing, writable folder
void save_torch_mha(const MultiHeadAttention& m, const std::string& dir);

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

/// @}

}  // namespace mha
