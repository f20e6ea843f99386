/// @file model_io.hpp
/// @brief A Transformer block and a language model as folders of `.npy`
///        files under PyTorch's state_dict names; their gradients; token ids.
///
/// B batch, T positions (at most T_max), V vocabulary, E embed_dim, H heads,
/// F the feed-forward's hidden size, L layers.
///
/// A folder holds one file per state_dict entry, as PyTorch writes it with
/// `for k, v in module.state_dict().items(): np.save(f"{dir}/{k}.npy", v.numpy())`.
/// A block, `nn.TransformerEncoderLayer(E, H, F, dropout=0, activation="gelu",
/// batch_first=True, norm_first=True)`, is twelve files:
///
/// | file | shape |
/// |---|---|
/// | `self_attn.in_proj_weight.npy` (wq, wk, wv stacked) | `[3E, E]` |
/// | `self_attn.in_proj_bias.npy` | `[3E]` |
/// | `self_attn.out_proj.weight.npy`, `self_attn.out_proj.bias.npy` | `[E, E]`, `[E]` |
/// | `linear1.weight.npy`, `linear1.bias.npy` | `[F, E]`, `[F]` |
/// | `linear2.weight.npy`, `linear2.bias.npy` | `[E, F]`, `[E]` |
/// | `norm1.weight.npy`, `norm1.bias.npy`, `norm2.weight.npy`, `norm2.bias.npy` | `[E]` each |
///
/// A LanguageModel is `tok_emb.weight.npy` `[V, E]`, `pos_emb.weight.npy`
/// `[T_max, E]`, each block's twelve under `layers.{i}.` (`layers.0.linear1.weight.npy`
/// ...), `norm.weight.npy`, `norm.bias.npy` `[E]`, `head.weight.npy` `[V, E]`
/// and `head.bias.npy` `[V]`. Such a folder is also a training checkpoint.
/// Gradients go under the same names with `.grad.npy`, as PyTorch's `.grad`.
#pragma once

#include <string>

#include "mha/model/language_model.hpp"

namespace mha {

/// @addtogroup io
/// @{

/// Reads a block's twelve files (see the table above); E and F come from
/// their shapes (in_proj_weight's and linear1.weight's), LayerNorm's eps is
/// PyTorch's 1e-5 (a state_dict does not hold it).
/// @param dir       the folder
/// @param num_heads H; it must divide E
/// @param prefix    put before each file's name, e.g. "layers.0."
/// @return the block with those weights
/// @throws std::invalid_argument with one line naming the file and the
///         shapes, for a file missing, unreadable or of the wrong shape.
Block load_block(const std::string& dir, std::size_t num_heads,
                 const std::string& prefix = "");

/// Writes a block as the twelve files load_block() reads.
/// @param blk    the block
/// @param dir    the folder, created if it does not exist
/// @param prefix put before each file's name, e.g. "layers.0."
/// @throws std::invalid_argument when a file cannot be written.
void save_block(const Block& blk, const std::string& dir, const std::string& prefix = "");

/// Writes a block's gradients as PyTorch's `.grad`, one file per parameter:
/// `self_attn.in_proj_weight.grad.npy` `[3E, E]` (dL/d wq, wk, wv stacked),
/// `self_attn.in_proj_bias.grad.npy` `[3E]`, ..., `norm2.bias.grad.npy` `[E]`.
/// The input's gradient (block_backward()'s result) is not among them.
/// @param g      what block_backward() filled
/// @param dir    the folder, created if it does not exist
/// @param prefix put before each file's name, e.g. "layers.0."
/// @throws std::invalid_argument when a file cannot be written.
void save_block_grads(const BlockGrads& g, const std::string& dir,
                      const std::string& prefix = "");

/// Reads a LanguageModel (a checkpoint, or a PyTorch model's state_dict):
/// V and E from `tok_emb.weight` `[V, E]`, T_max from `pos_emb.weight`
/// `[T_max, E]`, L from the `layers.{i}.` files present (L = the largest i
/// plus 1, every block from 0 to L - 1 complete), each block as load_block().
/// @param dir       the folder
/// @param num_heads H; it must divide E
/// @return the model
/// @throws std::invalid_argument with one line naming the file and the
///         shapes, for a file missing, unreadable or of the wrong shape.
LanguageModel load_model(const std::string& dir, std::size_t num_heads);

/// Writes a model as the files load_model() reads: `12 L + 6` files.
/// Files of blocks past the model's L (`layers.{i}.*.npy` with i >= L, not
/// `.grad.npy`), left by a deeper model saved there before, are removed, so
/// that load_model() reads back this model.
/// @param m   the model
/// @param dir the folder, created if it does not exist
/// @throws std::invalid_argument when a file cannot be written.
void save_model(const LanguageModel& m, const std::string& dir);

/// Writes a model's gradients as PyTorch's `.grad`: `tok_emb.weight.grad.npy`
/// `[V, E]`, `pos_emb.weight.grad.npy` `[T_max, E]` (rows past T are 0, as
/// PyTorch's), each block's as save_block_grads() under `layers.{i}.`,
/// `norm.weight.grad.npy`, `norm.bias.grad.npy`, `head.weight.grad.npy`,
/// `head.bias.grad.npy`. Gradient files of blocks past L are removed.
/// @param g   what backward() returned
/// @param dir the folder, created if it does not exist
/// @throws std::invalid_argument when a file cannot be written.
void save_model_grads(const ModelGrads& g, const std::string& dir);

/// Token ids from a `.npy` file: int64 (`torch.long`, NumPy's default) or
/// int32, `[B, T]`, as `np.save(path, idx.numpy())` writes them.
/// @param path    the file
/// @param vocab   V: every id must be in [0, V)
/// @param max_len T_max: T must be from 1 to T_max
/// @return `[B, T]`
/// @throws std::invalid_argument naming the file for another dtype (a float
///         file is refused, not rounded), another rank, no ids, T > T_max,
///         or the first id out of range and where it is.
Tokens load_tokens(const std::string& path, std::size_t vocab, std::size_t max_len);

/// @}

}  // namespace mha
