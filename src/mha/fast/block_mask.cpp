// The block mask: every query-block x key-block tile of a mask classified
// once per call as empty, full or partial, so that the tiled forward skips
// the empty tiles and masks only inside the partial ones.
//
// Tq / Tk = queries / keys; a tile is rows x cols of them.
#include "mha/fast/block_mask.hpp"

#include <algorithm>

#include "mha/fast/parallel.hpp"

namespace mha::fast {

namespace {

// The sizes of a block mask of B x H slices, its tiles not yet classified.
BlockMask sized(std::size_t B, std::size_t H, std::size_t Tq, std::size_t Tk,
                std::size_t rows, std::size_t cols) {
    require_nonzero({B, H, Tq, Tk, rows, cols}, "block mask [B, H, Tq, Tk] and its tile");
    BlockMask bm;
    bm.rows = rows, bm.cols = cols;
    bm.q_blocks = (Tq + rows - 1) / rows;
    bm.k_blocks = (Tk + cols - 1) / cols;
    bm.B = B, bm.H = H;
    bm.tiles.assign(B * H * bm.q_blocks * bm.k_blocks, Tile::empty);
    return bm;
}

// The kind of a tile from whether some and whether all of its keys are seen.
Tile kind(bool any, bool all) { return all ? Tile::full : any ? Tile::partial : Tile::empty; }

void count(BlockMask& bm) {
    bm.empty = bm.partial = bm.full = 0;
    for (Tile t : bm.tiles) {
        if (t == Tile::empty) ++bm.empty;
        else if (t == Tile::partial) ++bm.partial;
        else ++bm.full;
    }
}

}  // namespace

BlockMask block_mask(const Mask& mask, std::size_t Tq, std::size_t Tk, std::size_t rows,
                     std::size_t cols) {
    BlockMask bm = sized(mask.shape(0), mask.shape(1), Tq, Tk, rows, cols);
    const std::size_t per_slice = bm.q_blocks;
    // One row of tiles (a query block across all keys) per item, over the cores
    parallel_for(bm.B * bm.H * per_slice, [&](std::size_t begin, std::size_t end) {
        for (std::size_t item = begin; item < end; ++item) {
            const std::size_t s = item / per_slice, qb = item % per_slice;
            const std::size_t b = s / bm.H, h = s % bm.H;
            const std::size_t i0 = qb * rows, i1 = std::min(Tq, i0 + rows);
            Tile* out = &bm.tiles[item * bm.k_blocks];
            for (std::size_t kb = 0; kb < bm.k_blocks; ++kb) {
                const std::size_t j0 = kb * cols, n = std::min(Tk, j0 + cols) - j0;
                // the bools read as bytes: OR and AND of each, no branch
                unsigned char any = 0, all = 1;
                for (std::size_t i = i0; i < i1; ++i) {
                    const auto* keep =
                        reinterpret_cast<const unsigned char*>(mask_row(mask, b, h, i)) + j0;
                    for (std::size_t j = 0; j < n; ++j) any |= keep[j], all &= keep[j];
                }
                out[kb] = kind(any != 0, all != 0);
            }
        }
    });
    count(bm);
    return bm;
}

BlockMask block_mask(const MaskMod& mod, std::size_t B, std::size_t H, std::size_t Tq,
                     std::size_t Tk, std::size_t rows, std::size_t cols) {
    BlockMask bm = sized(B, H, Tq, Tk, rows, cols);
    for (std::size_t b = 0; b < B; ++b)
        for (std::size_t h = 0; h < H; ++h)
            for (std::size_t qb = 0; qb < bm.q_blocks; ++qb)
                for (std::size_t kb = 0; kb < bm.k_blocks; ++kb) {
                    bool any = false, all = true;
                    for (std::size_t i = qb * rows; i < std::min(Tq, (qb + 1) * rows); ++i)
                        for (std::size_t j = kb * cols; j < std::min(Tk, (kb + 1) * cols);
                             ++j) {
                            const bool seen = mod(b, h, i, j);
                            any = any || seen;
                            all = all && seen;
                        }
                    bm.tiles[((b * H + h) * bm.q_blocks + qb) * bm.k_blocks + kb] =
                        kind(any, all);
                }
    count(bm);
    return bm;
}

BlockMask causal_block_mask(std::size_t Tq, std::size_t Tk, std::size_t offset,
                            std::size_t rows, std::size_t cols) {
    BlockMask bm = sized(1, 1, Tq, Tk, rows, cols);
    for (std::size_t qb = 0; qb < bm.q_blocks; ++qb) {
        const std::size_t i0 = qb * rows, i1 = std::min(Tq, i0 + rows) - 1;  // first, last row
        for (std::size_t kb = 0; kb < bm.k_blocks; ++kb) {
            const std::size_t j0 = kb * cols, j1 = std::min(Tk, j0 + cols) - 1;
            // query i sees key j iff j <= i + offset: the rows' limits grow
            // with i, so the corners decide
            bm.tiles[qb * bm.k_blocks + kb] = kind(j0 <= i1 + offset, j1 <= i0 + offset);
        }
    }
    count(bm);
    return bm;
}

BlockMask full_block_mask(std::size_t Tq, std::size_t Tk, std::size_t rows, std::size_t cols) {
    BlockMask bm = sized(1, 1, Tq, Tk, rows, cols);
    std::fill(bm.tiles.begin(), bm.tiles.end(), Tile::full);
    count(bm);
    return bm;
}

}  // namespace mha::fast
