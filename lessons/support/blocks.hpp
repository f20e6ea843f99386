// The pictures of lessons 02, 06, 07 and 10: a sequence's numbers as blocks
// coloured by the head they belong to (svg::blocks), built from the tensors.
//
// At the articles' sizes a picture of every number would be megabytes, so
// each draws a readable part of sequence 0: every number at --tiny, else
// the first 6 time steps and the first 4 columns of each of the first 8
// heads. The picture says which (shown_of().text).
#pragma once

#include <string>
#include <vector>

#include "mha/shape.hpp"
#include "svg.hpp"

namespace lesson {

/// Which time steps and which of the E columns a blocks picture draws.
struct Shown {
    std::vector<std::size_t> rows, cols;  // indices into T and into E
    std::string text;                     // "every number" or what part
};

/// What to draw of sequences of @p T steps of @p E = @p H x D numbers.
Shown shown_of(std::size_t T, std::size_t E, std::size_t H);

/// Sequence 0 of @p t `[B, T, E]`, each column in the colour of the head it
/// goes to (column e to head e / D), named @p name.
svg::Block by_head(const mha::Tensor3& t, std::size_t H, const std::string& name);

/// Sequence 0 of @p t `[B, H, T, D]`, a block `[T, D]` per head in its
/// colour, named "@p name[0, h]".
std::vector<svg::Block> head_blocks(const mha::Tensor4& t, const std::string& name);

/// Sequence 0 of @p merged `[B, T, E]`, made from @p H heads `[B, H, T, D]`
/// by a merge that @p permuted first (the right one) or not (the bug): each
/// cell in the colour of the head its number came from, and each run of one
/// head and one time step named "h0 t1".
svg::Block merged_from(const mha::Tensor3& merged, std::size_t H, bool permuted,
                       const std::string& name);

/// A linear layer's weight `[E_out, E_in]` drawn as W^T `[E_in, E_out]`, the
/// matrix x is multiplied by: row k in the colour of the head whose column
/// k of x it reads, on its own scale (weights are smaller than x's numbers).
svg::Block weight_by_head(const mha::Tensor2& weight, std::size_t H, const std::string& name);

/// Sequence 0 of @p t `[B, T, E]` on the diverging scale: numbers of no one
/// head (an output that mixes them all).
svg::Block mixed(const mha::Tensor3& t, std::size_t H, const std::string& name);

}  // namespace lesson
