/// @file block_mask.hpp
/// @brief The block mask: each query-block x key-block tile of a mask
///        classified once per call as empty, full or partial.
#pragma once

#include <cstddef>
#include <vector>

#include "mha/mask.hpp"
#include "mha/variants/mods.hpp"

namespace mha::fast {

/// @addtogroup engine
/// @{

/// What a tile of the mask holds: no visible key (skipped under the -inf
/// fill), only visible keys (computed, no mask applied), or both (computed,
/// the mask applied inside).
enum class Tile : unsigned char { empty, partial, full };

/// Query rows per tile of the engine's block mask: the tiled forward's
/// query blocks.
inline constexpr std::size_t kTileRows = 64;
/// Keys per tile of the engine's block mask: a quarter of the tiled
/// forward's key blocks.
inline constexpr std::size_t kTileCols = 64;

/// A mask seen a tile at a time, as FlexAttention's block mask: made once
/// per call, read by every (sequence, head) that shares the mask's slice.
/// Tiles at the edges are smaller when Tq or Tk do not divide the tile.
struct BlockMask {
    std::size_t rows = kTileRows;  ///< query rows per tile
    std::size_t cols = kTileCols;  ///< keys per tile
    std::size_t q_blocks = 0;      ///< ceil(Tq / rows)
    std::size_t k_blocks = 0;      ///< ceil(Tk / cols)
    std::size_t B = 1;             ///< slices along the batch (1: shared)
    std::size_t H = 1;             ///< slices along the heads (1: shared)
    std::vector<Tile> tiles;       ///< `[B, H, q_blocks, k_blocks]`
    std::size_t empty = 0;         ///< empty tiles, over every slice
    std::size_t partial = 0;       ///< partial tiles, over every slice
    std::size_t full = 0;          ///< full tiles, over every slice

    /// @return the tiles a forward computes under the -inf fill
    ///         (partial + full), over every slice
    std::size_t computed() const { return partial + full; }
    /// @return every tile, over every slice
    std::size_t total() const { return tiles.size(); }
    /// The tile of sequence @p b, head @p h (broadcast over a slice of 1).
    /// @param b  the sequence
    /// @param h  the head
    /// @param qb the query block
    /// @param kb the key block
    /// @return   its kind
    Tile at(std::size_t b, std::size_t h, std::size_t qb, std::size_t kb) const {
        const std::size_t s = (B == 1 ? 0 : b) * H + (H == 1 ? 0 : h);
        return tiles[(s * q_blocks + qb) * k_blocks + kb];
    }
};

/// The block mask of a mask tensor, exact: every tile's booleans read once
/// (O(Tq Tk) bytes per slice, compared as bytes, 16 at a time).
/// @param mask `[B or 1, H or 1, Tq or 1, Tk]`, already checked
/// @param Tq   queries
/// @param Tk   keys
/// @param rows query rows per tile
/// @param cols keys per tile
/// @return     one slice per mask slice
BlockMask block_mask(const Mask& mask, std::size_t Tq, std::size_t Tk,
                     std::size_t rows = kTileRows, std::size_t cols = kTileCols);

/// The block mask of a mask_mod, exact: the mod asked once per element of
/// every slice (a std::function call each: for tests and lessons, not for
/// long sequences).
/// @param mod the mask_mod
/// @param B   slices along the batch: 1 when the mod ignores b
/// @param H   slices along the heads: 1 when the mod ignores h
/// @param Tq  queries
/// @param Tk  keys
/// @param rows query rows per tile
/// @param cols keys per tile
/// @return    the block mask
BlockMask block_mask(const MaskMod& mod, std::size_t B, std::size_t H, std::size_t Tq,
                     std::size_t Tk, std::size_t rows = kTileRows,
                     std::size_t cols = kTileCols);

/// The block mask of the causal limit, from each tile's corners (exact for
/// it: query i sees keys 0 .. i + @p offset, so a tile is full when its first
/// row sees its last key and empty when its last row misses its first).
/// @param Tq     queries
/// @param Tk     keys
/// @param offset keys query 0 sees past key 0 (0 for tril, L after L cached)
/// @param rows   query rows per tile
/// @param cols   keys per tile
/// @return       one slice
BlockMask causal_block_mask(std::size_t Tq, std::size_t Tk, std::size_t offset,
                            std::size_t rows = kTileRows, std::size_t cols = kTileCols);

/// Every tile full: no mask.
/// @param Tq   queries
/// @param Tk   keys
/// @param rows query rows per tile
/// @param cols keys per tile
/// @return     one slice
BlockMask full_block_mask(std::size_t Tq, std::size_t Tk, std::size_t rows = kTileRows,
                          std::size_t cols = kTileCols);

/// @}

}  // namespace mha::fast
