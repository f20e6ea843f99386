// Heat maps and line plots as SVG text: layout, scales, ticks, colour bar.
#include "svg.hpp"

#include "text_width.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>
#include <stdexcept>
#include <string>

namespace lesson::svg {

namespace {

struct Rgb {
    double r, g, b;
};

// Linear interpolation between evenly spaced anchors, t in [0, 1].
std::string along(const std::vector<Rgb>& anchors, double t) {
    if (!(t >= 0)) t = 0;  // NaN too
    t = std::min(1.0, t) * double(anchors.size() - 1);
    const std::size_t i = std::min(anchors.size() - 2, static_cast<std::size_t>(t));
    const double f = t - double(i);
    auto mix = [&](double a, double b) { return int(std::lround(a + (b - a) * f)); };
    char buf[8];
    std::snprintf(buf, sizeof buf, "#%02x%02x%02x", mix(anchors[i].r, anchors[i + 1].r),
                  mix(anchors[i].g, anchors[i + 1].g), mix(anchors[i].b, anchors[i + 1].b));
    return buf;
}

// Perceived lightness of "#rrggbb", 0..1: dark cells get white digits.
double lightness(const std::string& hex) {
    const int r = std::stoi(hex.substr(1, 2), nullptr, 16);
    const int g = std::stoi(hex.substr(3, 2), nullptr, 16);
    const int b = std::stoi(hex.substr(5, 2), nullptr, 16);
    return (0.299 * r + 0.587 * g + 0.114 * b) / 255.0;
}

std::string number(double x, int digits = 4) {
    if (std::isinf(x)) return x < 0 ? "-inf" : "inf";
    if (std::isnan(x)) return "nan";
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.*g", digits, x);
    return buf;
}

// "0.42", "-1.30": two decimals, for the numbers printed in cells.
std::string fixed2(double x) {
    if (!std::isfinite(x)) return number(x);
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.2f", x);
    return buf;
}

// Every k-th position gets a tick label, k so that about 8 show.
std::size_t tick_step(std::size_t n) {
    for (std::size_t k : {1, 2, 4, 5, 8, 10, 16, 20, 32, 50, 64, 100, 128, 256, 512})
        if (n / k <= 12) return k;
    return 1024;
}

}  // namespace

std::string escape(const std::string& text) {
    std::string out;
    for (char c : text) {
        if (c == '&') out += "&amp;";
        else if (c == '<') out += "&lt;";
        else if (c == '>') out += "&gt;";
        else if (c == '\'') out += "&apos;";
        else if (c == '"') out += "&quot;";
        // XML 1.0 allows no other control character: the text would not parse
        else if (static_cast<unsigned char>(c) < 0x20 && c != '\t' && c != '\n' && c != '\r')
            out += "\uFFFD";
        else out += c;
    }
    return out;
}

std::string viridis(double t) {
    static const std::vector<Rgb> a = {{68, 1, 84},    {71, 44, 122},  {59, 82, 139},
                                       {44, 114, 142}, {33, 145, 140}, {40, 174, 128},
                                       {94, 201, 98},  {173, 220, 48}, {253, 231, 37}};
    return along(a, t);
}

std::string diverging(double t) {
    static const std::vector<Rgb> a = {
        {33, 102, 172}, {146, 197, 222}, {247, 247, 247}, {253, 184, 99}, {179, 88, 6}};
    return along(a, (t + 1) / 2);
}

// About how wide @p text is at font size 10, in pixels: 6 per character, 10
// (1 em) for a wide one, Chinese and full-width marks such as '，' alike.
int text_px(const std::string& text) {
    int chars = 0;  // UTF-8: a byte that starts one
    for (char c : text) chars += (static_cast<unsigned char>(c) & 0xC0) != 0x80;
    const int wide = columns(text) - chars;  // a terminal gives them 2 columns
    return 6 * (chars - wide) + 10 * wide;
}

std::string heatmap(const std::vector<Grid>& grids, const Style& s) {
    const std::size_t rows = grids.at(0).value.size(), cols = rows ? grids[0].value[0].size() : 0;
    const std::size_t side = std::max<std::size_t>(std::max(rows, cols), 1);
    int cell = std::max(4, std::min(36, int(360 / side / std::max<std::size_t>(1, grids.size() / 2 + 1) + 8)));
    const bool numbers = rows <= 12 && cols <= 12;
    if (numbers) cell = std::max(cell, 26);  // room for "0.42" in every cell
    int names_px = 0;  // the widest row tick label (a token), left of each grid
    for (const Grid& g : grids) {
        if ((!g.row_ticks.empty() && g.row_ticks.size() != rows) ||
            (!g.col_ticks.empty() && g.col_ticks.size() != cols))
            throw std::logic_error("heatmap(): " + std::to_string(g.row_ticks.size()) +
                                   " row and " + std::to_string(g.col_ticks.size()) +
                                   " column labels for [" + std::to_string(rows) + ", " +
                                   std::to_string(cols) + "] cells");
        for (const std::string& n : g.row_ticks) names_px = std::max(names_px, text_px(n));
    }
    // between two grids: room for the second's row names; left: the same, and the axis label
    const int gw = int(cols) * cell, gh = int(rows) * cell, gap = std::max(28, names_px + 12);
    const int left = std::max(56, 30 + names_px), top = 58, bar_w = 14;
    // per_row grids to a row; the rows of grids a band apart (names, ticks, labels)
    const std::size_t per_row = s.per_row ? std::min(s.per_row, grids.size()) : grids.size();
    const int bands = int((grids.size() + per_row - 1) / per_row), band = gh + 64;
    const int bar_x = left + int(per_row) * (gw + gap);
    // wide enough for the title at 15 px (about 9 px a character, 15 a wide one)
    const int width = std::max(bar_x + bar_w + 70, left + text_px(s.title) * 3 / 2 + 20);
    const int height = top + (bands - 1) * band + gh + 52;
    auto colour = [&](double v) {
        if (s.diverging) {
            const double m = std::max(std::fabs(s.lo), std::fabs(s.hi));
            return diverging(m > 0 ? v / m : 0);
        }
        return viridis(s.hi > s.lo ? (v - s.lo) / (s.hi - s.lo) : 0);
    };
    std::ostringstream o;
    o << "<svg xmlns='http://www.w3.org/2000/svg' width='" << width << "' height='" << height
      << "' font-family='DejaVu Sans, Noto Sans CJK SC, sans-serif' font-size='12'>\n"
      << "<defs><pattern id='hatch' width='6' height='6' patternUnits='userSpaceOnUse' "
         "patternTransform='rotate(45)'><rect width='6' height='6' fill='#d9d9d9'/>"
         "<line x1='0' y1='0' x2='0' y2='6' stroke='#7f7f7f' stroke-width='2'/></pattern></defs>\n"
      << "<rect width='100%' height='100%' fill='white'/>\n"
      << "<text x='" << left << "' y='20' font-size='15' font-weight='bold'>"
      << escape(s.title) << "</text>\n";
    const std::size_t rstep = tick_step(rows), cstep = tick_step(cols);
    for (std::size_t g = 0; g < grids.size(); ++g) {
        const Grid& grid = grids[g];
        const int x0 = left + int(g % per_row) * (gw + gap), y0 = top + int(g / per_row) * band;
        // a label per row and column when given (tokens), else every k-th index
        auto tick = [](const std::vector<std::string>& ticks, std::size_t i) {
            return ticks.empty() ? std::to_string(i) : escape(ticks[i]);
        };
        auto named = [](const std::vector<std::string>& ticks, std::size_t i) {
            return std::to_string(i) + (ticks.empty() ? "" : " (" + escape(ticks[i]) + ")");
        };
        o << "<g class='grid' data-name='" << escape(grid.name) << "'>\n";
        if (!grid.name.empty())
            o << "<text x='" << x0 << "' y='" << y0 - 18 << "'>" << escape(grid.name) << "</text>\n";
        for (std::size_t i = 0; i < rows; ++i)
            for (std::size_t j = 0; j < cols; ++j) {
                const double v = grid.value[i][j];
                const bool masked = !grid.masked.empty() && grid.masked[i][j];
                const bool nan = !masked && !std::isfinite(v);  // drawn apart: no colour means it
                const std::string fill = masked ? "url(#hatch)" : nan ? "#ffffff" : colour(v);
                const int x = x0 + int(j) * cell, y = y0 + int(i) * cell;
                o << "<rect x='" << x << "' y='" << y << "' width='" << cell << "' height='"
                  << cell << "' fill='" << fill << (nan ? "' stroke='#b35806" : "")
                  << "' data-row='" << i << "' data-col='" << j << "'><title>"
                  << escape(s.row_label) << ' ' << named(grid.row_ticks, i) << ", "
                  << escape(s.col_label) << ' ' << named(grid.col_ticks, j) << ": "
                  << (masked ? "masked" : number(v, 6)) << "</title></rect>\n";
                if ((numbers && cell >= 24 && !masked) || nan) {
                    o << "<text x='" << x + cell / 2 << "' y='" << y + cell / 2 + 4
                      << "' text-anchor='middle' font-size='9' fill='"
                      << (nan ? "#b35806" : lightness(fill) < 0.5 ? "white" : "black") << "'>"
                      << fixed2(v)
                      << "</text>\n";
                }
            }
        for (std::size_t i = 0; i < rows; i += grid.row_ticks.empty() ? rstep : 1)
            o << "<text class='tick' x='" << x0 - 4 << "' y='" << y0 + int(i) * cell + cell / 2 + 4
              << "' text-anchor='end' font-size='10'>" << tick(grid.row_ticks, i) << "</text>\n";
        for (std::size_t j = 0; j < cols; j += grid.col_ticks.empty() ? cstep : 1) {
            // a label too wide for its cell, in a smaller font
            const int px = grid.col_ticks.empty() ? 0 : text_px(grid.col_ticks[j]);
            const int size = px > cell - 2 ? std::max(6, 10 * (cell - 2) / px) : 10;
            o << "<text class='tick' x='" << x0 + int(j) * cell + cell / 2 << "' y='" << y0 - 4
              << "' text-anchor='middle' font-size='" << size << "'>" << tick(grid.col_ticks, j)
              << "</text>\n";
        }
        o << "<text x='" << x0 + gw / 2 << "' y='" << y0 + gh + 18
          << "' text-anchor='middle'>" << escape(s.col_label) << " \u2192</text>\n</g>\n";
    }
    for (int b = 0; b < bands; ++b) {
        const int mid = top + b * band + gh / 2;
        o << "<text x='16' y='" << mid << "' text-anchor='middle' transform='rotate(-90 16,"
          << mid << ")'>" << escape(s.row_label) << " \u2192</text>\n";
    }
    // The colour bar: 32 steps, its ends and middle labelled.
    const double lo = s.diverging ? -std::max(std::fabs(s.lo), std::fabs(s.hi)) : s.lo;
    const double hi = s.diverging ? -lo : s.hi;
    for (int k = 0; k < 32; ++k) {
        const double v = hi - (hi - lo) * (k + 0.5) / 32;
        o << "<rect x='" << bar_x << "' y='" << top + k * gh / 32 << "' width='" << bar_w
          << "' height='" << gh / 32 + 1 << "' fill='" << colour(v) << "'/>\n";
    }
    for (int k = 0; k <= 4; ++k)
        o << "<text x='" << bar_x + bar_w + 4 << "' y='" << top + k * gh / 4 + 4
          << "' font-size='10'>" << number(hi - (hi - lo) * k / 4, 3) << "</text>\n";
    bool any_masked = false;
    std::string legend = "masked (not a small weight: no weight at all)";
    for (const Grid& g : grids) {
        any_masked = any_masked || !g.masked.empty();
        if (!g.masked_means.empty()) legend = g.masked_means;
    }
    if (any_masked)
        o << "<rect x='" << left << "' y='" << height - 24 << "' width='12' height='12' "
             "fill='url(#hatch)'/><text x='" << left + 18 << "' y='" << height - 14
          << "'>" << escape(legend) << "</text>\n";
    o << "</svg>\n";
    return o.str();
}

std::string line_plot(const std::string& title, const std::string& x_label,
                      const std::vector<double>& x, const std::vector<Series>& series,
                      bool log2_x) {
    const int left = 70, top = 40, w = 420, h = 260;
    double ylo = INFINITY, yhi = -INFINITY;
    for (const Series& s : series)
        for (double y : s.y)
            if (std::isfinite(y)) ylo = std::min(ylo, y), yhi = std::max(yhi, y);
    if (!(yhi > ylo)) ylo -= 1, yhi += 1;
    const double pad = 0.05 * (yhi - ylo);
    ylo -= pad, yhi += pad;
    auto fx = [&](double v) { return log2_x ? std::log2(v) : v; };
    const double xlo = fx(x.front()), xhi = fx(x.back()) > xlo ? fx(x.back()) : xlo + 1;
    auto px = [&](double v) { return left + (fx(v) - xlo) / (xhi - xlo) * w; };
    auto py = [&](double v) { return top + h - (v - ylo) / (yhi - ylo) * h; };
    static const char* colours[] = {"#21918c", "#b35806", "#3b528b", "#5ec962"};
    std::ostringstream o;
    o << "<svg xmlns='http://www.w3.org/2000/svg' width='" << left + w + 170 << "' height='"
      << top + h + 50 << "' font-family='DejaVu Sans, Noto Sans CJK SC, sans-serif' "
      << "font-size='12'>\n"
      << "<rect width='100%' height='100%' fill='white'/>\n"
      << "<text x='" << left << "' y='20' font-size='15' font-weight='bold'>" << escape(title)
      << "</text>\n<path d='M" << left << ',' << top << " V" << top + h << " H" << left + w
      << "' stroke='black' fill='none'/>\n";
    for (double v : x)
        o << "<text x='" << px(v) << "' y='" << top + h + 16 << "' text-anchor='middle' "
          << "font-size='10'>" << number(v) << "</text>\n";
    for (int k = 0; k <= 4; ++k) {
        const double v = ylo + (yhi - ylo) * k / 4;
        o << "<text x='" << left - 6 << "' y='" << py(v) + 4 << "' text-anchor='end' "
          << "font-size='10'>" << number(v, 3) << "</text>\n";
    }
    o << "<text x='" << left + w / 2 << "' y='" << top + h + 36 << "' text-anchor='middle'>"
      << escape(x_label) << (log2_x ? " (log scale)" : "") << "</text>\n";
    for (std::size_t k = 0; k < series.size(); ++k) {
        const char* c = colours[k % 4];
        o << "<polyline fill='none' stroke='" << c << "' stroke-width='2' points='";
        for (std::size_t i = 0; i < x.size() && i < series[k].y.size(); ++i)
            o << px(x[i]) << ',' << py(series[k].y[i]) << ' ';
        o << "'/>\n";
        for (std::size_t i = 0; i < x.size() && i < series[k].y.size(); ++i)
            o << "<circle cx='" << px(x[i]) << "' cy='" << py(series[k].y[i]) << "' r='3' fill='"
              << c << "'><title>" << escape(series[k].name) << " at " << number(x[i]) << ": "
              << number(series[k].y[i], 6) << "</title></circle>\n";
        o << "<rect x='" << left + w + 14 << "' y='" << top + 16 * int(k) << "' width='12' "
          << "height='4' fill='" << c << "'/><text x='" << left + w + 32 << "' y='"
          << top + 16 * int(k) + 6 << "'>" << escape(series[k].name) << "</text>\n";
    }
    o << "</svg>\n";
    return o.str();
}

}  // namespace lesson::svg
