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

/// How the grids are drawn: their common title, axes and scale.
struct Style {
    std::string title;                     // lesson, tensor and shape
    std::string row_label = "query";       // down the left side
    std::string col_label = "key";         // along the bottom
    bool diverging = false;                // centred at 0, for scores and gradients
    double lo = 0, hi = 1;                 // the scale's ends (diverging: -m .. m)
    std::size_t per_row = 0;               // grids in a row, then the next row; 0: all
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

/// @p text with &, <, > and quotes escaped for XML.
std::string escape(const std::string& text);

}  // namespace lesson::svg
