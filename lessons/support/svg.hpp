// Pictures a class can read on a projector: heat maps of one matrix or of
// every head at once, written as SVG by the lessons' --svg.
//
// Each cell carries its value in a <title> (what a mouse shows, and what
// the tests read back), and data-row / data-col attributes. Masked cells
// are hatched grey, never a colour of the scale, so "masked" and "near
// zero" cannot be confused. Weights take viridis (dark to yellow: it reads
// in greyscale and for red-green colour blindness); scores and gradients a
// diverging blue-white-orange scale centred at 0.
#pragma once

#include <string>
#include <vector>

namespace lesson::svg {

/// One matrix to draw: rows x cols values, and which cells are masked.
struct Grid {
    std::string name;                       // "head 0", above the grid
    std::vector<std::vector<float>> value;  // [rows][cols]
    std::vector<std::vector<bool>> masked;  // empty, or [rows][cols]
    std::string masked_means = {};          // the legend of hatched cells, if not "masked"
    // Labels of the rows and columns (tokens, say), every one drawn; empty:
    // the indices 0, 1, ..., every k-th.
    std::vector<std::string> row_ticks = {}, col_ticks = {};
};

/// A kind of cell in a picture of kinds, not of a scale (a mask's allowed and
/// masked cells, a block mask's tiles): the cells that hold @c value, drawn in
/// @c fill, with @c name in their <title> and a legend line @c means.
struct Kind {
    float value;        // 1, say
    std::string fill;   // "#rrggbb", "url(#hatch)" (masked) or "url(#partial)" (striped)
    std::string name;   // "1", "full"
    std::string means;  // "allowed (1): the query may attend to the key"
};

/// A mask's two kinds: 1 "allowed (1)", one colour; 0 "masked (0)", hatched.
std::vector<Kind> mask_kinds();
/// A block mask's three kinds of tile, the values of mha::fast::Tile: 0 "empty
/// (skipped)", hatched; 1 "partial (masked inside)", striped with the allowed
/// colour; 2 "full (computed whole)", the allowed colour.
std::vector<Kind> tile_kinds();

/// How the grids are drawn: their common title, axes and scale.
struct Style {
    std::string title;                     // lesson, tensor and shape
    std::string row_label = "query";       // down the left side
    std::string col_label = "key";         // along the bottom
    bool diverging = false;                // centred at 0, for scores and gradients
    double lo = 0, hi = 1;                 // the scale's ends (diverging: -m .. m)
    std::size_t per_row = 0;               // grids in a row, then the next row; 0: all
    // Not empty: a picture of kinds (mask_kinds(), tile_kinds()), every cell
    // holding one kind's value, drawn in its fill, with a legend of the kinds
    // in place of the colour bar and no numbers in the cells.
    std::vector<Kind> kinds = {};
    std::string shown = {};                // what part is drawn, when not all: under the title
};

/// The colour of @p t in [0, 1] on viridis, "#rrggbb".
std::string viridis(double t);
/// The colour of @p t in [-1, 1] on the diverging scale, "#rrggbb".
std::string diverging(double t);

/// The SVG text of @p grids side by side (small multiples, one shared
/// scale), @p style.per_row to a row, with tick labels, the colour bar and,
/// when a grid has at most 12 rows and columns, each cell's value printed in it.
std::string heatmap(const std::vector<Grid>& grids, const Style& style);

/// The SVG text of a line plot: each series's y against x (log2 x axis when
/// @p log2_x), with axes, ticks and a legend.
struct Series {
    std::string name;
    std::vector<double> y;
};
std::string line_plot(const std::string& title, const std::string& x_label,
                      const std::vector<double>& x, const std::vector<Series>& series,
                      bool log2_x);

/// One bar of a bar_chart(): @p label at its left, @p value to scale and
/// written after its end, then @p note.
struct Bar {
    std::string label;       // "MHA"
    double value = 0;        // the bar's length, on a linear scale from 0
    std::string note = {};   // after the value: "= 2 n_h d_h", say
};
/// The SVG text of horizontal @p bars top to bottom on one linear scale from
/// 0 (round ticks along the bottom, @p x_label under them), each bar's value
/// written after its end, so that a bar a few pixels long still reads. Each
/// bar is a rect of class "hbar" with data-label and data-value attributes,
/// "label: value" in its <title>.
std::string bar_chart(const std::string& title, const std::string& x_label,
                      const std::vector<Bar>& bars);

/// Tick values at round numbers (steps of 1, 2 or 5 times a power of 10),
/// about @p about of them, covering [lo, hi]: the first at or below @p lo,
/// the last at or above @p hi.
std::vector<double> round_ticks(double lo, double hi, int about = 5);

/// The colour of head @p h, "#rrggbb": 8 colours told apart in colour
/// blindness (Okabe and Ito's, grey for black), then again from the first.
std::string head_colour(std::size_t h);

/// One matrix of a blocks() picture: each cell in the colour of the head its
/// number belongs to, lighter for smaller numbers, or, with head -1, on the
/// diverging scale (a number every head made, such as an output).
struct Block {
    std::string name;                       // above it: "Q[0]  [T, E]"
    std::vector<std::vector<float>> value;  // [rows][cols] as drawn
    std::vector<std::vector<int>> head;     // [rows][cols]: each cell's head, or -1
    // The tensor's index of each row and column drawn (a subset: gaps show as "...").
    std::vector<std::size_t> rows, cols;
    std::string row_label = "t", col_label = "e";
    // Empty, or [rows][cols]: the time step each number was computed at. Then
    // each run of cells of one head and step in a row is labelled "h0 t1".
    std::vector<std::vector<int>> step = {};
    // Lighter to darker on its own scale, not the others' (a weight matrix,
    // whose numbers are of another size than the activations').
    bool own_scale = false;
};

/// One row of a blocks() picture: @p caption (the operation that made it from
/// the row above), then its blocks side by side.
struct Stage {
    std::string caption;
    std::vector<Block> blocks;
};

/// The SVG text of @p stages, top to bottom: the head boundaries drawn as
/// lines, a legend of the heads' colours, and @p shown (which rows and columns
/// are drawn) under @p title. Each cell carries data-row, data-col, data-head
/// (and data-step) and its number in a <title>.
std::string blocks(const std::string& title, const std::string& shown,
                   const std::vector<Stage>& stages);

/// @p text with &, <, > and quotes escaped for XML.
std::string escape(const std::string& text);

}  // namespace lesson::svg
