/// @file mla.hpp
/// @brief Variants: multi-head latent attention (MLA, DeepSeek-V2): K and V
///        made from a small cached latent.
///
/// B batch, T new positions, L positions cached before them, Tk keys, E
/// embed_dim, H heads (n_h), D head_dim (d_h), d_c the latent's width, d_R
/// the decoupled RoPE key's width, d_cq the query latent's width (d_c' in
/// the paper; 0 = no query compression, the query's input is then x and
/// its width E). Named as in DeepSeek-V2 (arXiv 2405.04434), section 2.1.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "mha/kv_cache.hpp"
#include "mha/shape.hpp"
#include "mha/variants/rope.hpp"

namespace mha {

/// @defgroup mla Variants: multi-head latent attention (MLA)
/// @brief A decoder caches, per token and layer, one latent
///        \f$c^{KV}_t = W^{DKV} h_t\f$ of width d_c and one rotated key
///        \f$k^R_t = \mathrm{RoPE}(W^{KR} h_t)\f$ of width d_R, shared by
///        every head: d_c + d_R numbers, against 2 H D for K and V.
///
/// Head h's key is \f$[W^{UK}_h c^{KV}_j;\ k^R_j]\f$, its value
/// \f$W^{UV}_h c^{KV}_j\f$, its query \f$[q^C_h;\ q^R_h]\f$, the scores
/// divided by \f$\sqrt{D + d_R}\f$. Because \f$q^C \cdot W^{UK}_h c =
/// (W^{UK\top}_h q^C) \cdot c\f$, \f$W^{UK}\f$ can be folded into the
/// query and \f$W^{UV}\f$ into the output layer (mla_absorb()): attention
/// then runs against the cached latent itself, never rebuilding K and V.
/// RoPE is kept out of that product (the decoupled key \f$k^R\f$): a
/// rotation between \f$q^C\f$ and \f$W^{UK}_h\f$ would depend on the key's
/// position, and no fixed matrix could be folded.
/// @{

/// The sizes of one MLA layer.
struct MlaConfig {
    std::size_t embed_dim = 0;         ///< E (d_model)
    std::size_t num_heads = 0;         ///< H (n_h)
    std::size_t head_dim = 0;          ///< D (d_h): q^C, k^C and v of each head
    std::size_t latent_dim = 0;        ///< d_c, the cached latent c^KV
    std::size_t rope_dim = 0;          ///< d_R, k^R and each head's q^R (even)
    std::size_t query_latent_dim = 0;  ///< d_cq (d_c'), 0 = queries made from x
    Rope rope;                         ///< the rotation of q^R and k^R
};

/// DeepSeek-V2's sizes (a model of 60 such layers): E 5120, n_h 128,
/// d_h 128, d_c 512, d_R 64, d_c' 1536.
/// @return the config; its weights are not made here (some 190 M per layer)
MlaConfig deepseek_v2_config();

/// An MLA layer: every projection without a bias, as DeepSeek-V2's. Weights
/// `[out, in]` as nn.Linear's; "in_q" is d_cq, or E without query compression.
struct MultiHeadLatentAttention {
    MlaConfig config;  ///< the sizes
    Tensor2 w_dq;      ///< `[d_cq, E]` query down-projection; empty when d_cq = 0
    Tensor2 w_uq;      ///< `[H*D, in_q]` the no-RoPE queries q^C
    Tensor2 w_qr;      ///< `[H*d_R, in_q]` the RoPE queries q^R
    Tensor2 w_dkv;     ///< `[d_c, E]` the latent c^KV (what is cached)
    Tensor2 w_uk;      ///< `[H*D, d_c]` keys k^C from the latent
    Tensor2 w_uv;      ///< `[H*D, d_c]` values from the latent
    Tensor2 w_kr;      ///< `[d_R, E]` the shared key k^R (cached, rotated)
    Tensor2 w_o;       ///< `[E, H*D]` the output layer
};

/// A layer of @p config's sizes, each weight Xavier uniform from one
/// generator seeded with @p seed.
/// @param config the sizes: all but d_cq at least 1, d_R even
/// @param seed   the generator's seed
/// @return       the layer
/// @throws std::invalid_argument naming the size that is 0 or odd.
MultiHeadLatentAttention make_mla(const MlaConfig& config, std::uint64_t seed = 0);

/// `nn.Linear(in, out, bias=False)(x)`: \f$x W^\top\f$ over the last axis.
/// @param x `[B, T, in]`
/// @param w `[out, in]`
/// @return  `[B, T, out]`
/// @throws std::invalid_argument when x's last size is not in.
Tensor3 linear_no_bias(const Tensor3& x, const Tensor2& w);

/// What a decoder caches of T positions: the latent and the rotated key,
/// each a single "head" that all H query heads read.
struct MlaLatent {
    Tensor4 c_kv;  ///< `[B, 1, T, d_c]`
    Tensor4 k_r;   ///< `[B, 1, T, d_R]`, turned to positions offset ..
};

/// The latent and the shared RoPE key of @p x's positions.
/// @param m      the layer
/// @param x      `[B, T, E]`
/// @param offset the position of x's first (the positions cached before)
/// @return       c_kv `[B, 1, T, d_c]`, k_r `[B, 1, T, d_R]`
MlaLatent mla_latent(const MultiHeadLatentAttention& m, const Tensor3& x,
                     std::size_t offset = 0);

/// W^UK folded into the query side, W^UV into the output layer.
struct MlaAbsorbed {
    Tensor2 w_q_lat;  ///< `[H*d_c, in_q]`: head h's rows are W^UK_h^T W^UQ_h
    Tensor2 w_o_lat;  ///< `[E, H*d_c]`: head h's columns are W^O_h W^UV_h
};

/// The absorbed weights of @p m, made once (per layer, not per token).
/// @param m the layer
/// @return  w_q_lat `[H*d_c, in_q]`, w_o_lat `[E, H*d_c]`
MlaAbsorbed mla_absorb(const MultiHeadLatentAttention& m);

/// The explicit form: K and V of every head rebuilt from the latent, then
/// the articles' stages over keys `[k^C; k^R]` of width D + d_R.
/// @param m    the layer
/// @param x    `[B, Tq, E]`
/// @param mask nullptr, or `[B or 1, H or 1, Tq, Tq]`, 0 = masked
/// @return     `[B, Tq, E]`
/// @throws std::invalid_argument naming the shapes when they do not fit.
Tensor3 mla_forward(const MultiHeadLatentAttention& m, const Tensor3& x,
                    const Mask* mask = nullptr);

/// The absorbed form: queries of width d_c + d_R per head against the
/// latent and k^R directly, the latent weighted per head, then @p a's
/// w_o_lat. Equals the explicit form to rounding.
/// @param m    the layer
/// @param a    mla_absorb(m)
/// @param x    `[B, Tq, E]`
/// @param mask nullptr, or `[B or 1, H or 1, Tq, Tq]`, 0 = masked
/// @return     `[B, Tq, E]`
Tensor3 mla_forward(const MultiHeadLatentAttention& m, const MlaAbsorbed& a,
                    const Tensor3& x, const Mask* mask = nullptr);

/// The latent cache: allocated once for @p capacity positions, written in
/// place. Per token d_c + d_R floats, whatever H and D.
struct MlaCache {
    Tensor4 c_kv;             ///< `[B, 1, capacity, d_c]`
    Tensor4 k_r;              ///< `[B, 1, capacity, d_R]`, turned
    std::size_t length = 0;   ///< L, the positions cached

    /// @return how many positions fit
    std::size_t capacity() const { return c_kv.shape(2); }
    /// @return the bytes allocated: B capacity (d_c + d_R) 4 (float)
    std::size_t allocated_bytes() const;
};

/// An empty latent cache (the layer's weights are not needed, only its sizes).
/// @param config   the sizes
/// @param batch    B, at least 1
/// @param capacity the most positions it will hold, at least 1
/// @return         length 0
MlaCache make_mla_cache(const MlaConfig& config, std::size_t batch, std::size_t capacity);

/// The next T positions, the explicit form: their latent and k^R appended
/// to the cache, K and V rebuilt from the whole cache, causal from L on.
/// @param m     the layer
/// @param x     `[B, T, E]`
/// @param cache a cache of m's sizes with room for T more
/// @return      `[B, T, E]`, what mla_forward() gives there under a causal mask
/// @throws std::invalid_argument when the cache does not fit or is full.
Tensor3 mla_extend(const MultiHeadLatentAttention& m, const Tensor3& x, MlaCache& cache);

/// The same in the absorbed form: the cache is read as it is.
/// @param m     the layer
/// @param a     mla_absorb(m)
/// @param x     `[B, T, E]`
/// @param cache a cache of m's sizes with room for T more
/// @return      `[B, T, E]`
Tensor3 mla_extend(const MultiHeadLatentAttention& m, const MlaAbsorbed& a,
                   const Tensor3& x, MlaCache& cache);

/// One row of the cache table: floats per token and layer.
struct CacheRow {
    std::string name;          ///< "MHA", "GQA n_kv 8", "MQA", "MLA"
    std::string formula;       ///< "2 n_h d_h", ...
    std::size_t by_formula;    ///< from the formula
    std::size_t by_allocation; ///< the containers' bytes / (B capacity 4)
};

/// MHA, GQA with @p n_kv kv heads, MQA and MLA for @p config's H, D, d_c,
/// d_R: each from its formula, and measured from the caches the core
/// allocates (make_cache(), make_mla_cache()) for @p batch sequences of
/// @p capacity positions.
/// @param config   the sizes
/// @param n_kv     GQA's kv heads, dividing H
/// @param batch    B of the measured caches, at least 1
/// @param capacity their positions, at least 1
/// @return         four rows, MHA first
std::vector<CacheRow> cache_per_token(const MlaConfig& config, std::size_t n_kv,
                                      std::size_t batch = 1, std::size_t capacity = 2);

/// @}

}  // namespace mha
