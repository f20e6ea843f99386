// Heat maps and line plots as SVG text: layout, scales, ticks, colour bar.
#include "svg.hpp"

#include "text_width.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <set>
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

std::vector<double> round_ticks(double lo, double hi, int about) {
    if (!std::isfinite(lo) || !std::isfinite(hi)) return {};
    if (!(hi > lo)) hi = lo + 1;
    const double raw = (hi - lo) / std::max(1, about);
    const double p = std::pow(10.0, std::floor(std::log10(raw)));
    double step = 10 * p;
    for (double m : {1.0, 2.0, 5.0})
        if (m * p >= raw * (1 - 1e-9)) {
            step = m * p;
            break;
        }
    std::vector<double> ticks;
    const long first = long(std::floor(lo / step + 1e-9)), last = long(std::ceil(hi / step - 1e-9));
    for (long k = first; k <= last; ++k) ticks.push_back(k == 0 ? 0.0 : double(k) * step);
    return ticks;
}

std::string head_colour(std::size_t h) {
    static const char* colours[] = {"#0072b2", "#e69f00", "#009e73", "#cc79a7",
                                    "#56b4e9", "#d55e00", "#f0e442", "#555555"};
    return colours[h % 8];
}

// About how wide @p text is at font size 10, in pixels: 6 per character, 10
// (1 em) for a wide one, Chinese and full-width marks such as '，' alike.
int text_px(const std::string& text) {
    int chars = 0;  // UTF-8: a byte that starts one
    for (char c : text) chars += (static_cast<unsigned char>(c) & 0xC0) != 0x80;
    const int wide = columns(text) - chars;  // a terminal gives them 2 columns
    return 6 * (chars - wide) + 10 * wide;
}

namespace {
const char* const kAllowed = "#5ec962";  // a mask's 1, a tile computed whole

// Every picture's first line: its size, and fonts that carry the articles' Chinese.
std::string svg_open(int width, int height) {
    return "<svg xmlns='http://www.w3.org/2000/svg' width='" + std::to_string(width) +
           "' height='" + std::to_string(height) +
           "' font-family='DejaVu Sans, Noto Sans CJK SC, sans-serif' font-size='12'>\n";
}
}  // namespace

std::vector<Kind> mask_kinds() {
    return {{1, kAllowed, "1", "allowed (1): the query may attend to the key"},
            {0, "url(#hatch)", "0", "masked (0): no weight at all"}};
}

std::vector<Kind> tile_kinds() {
    return {{0, "url(#hatch)", "empty", "empty (skipped): every pair masked, not computed"},
            {1, "url(#partial)", "partial", "partial (masked inside): computed, then masked"},
            {2, kAllowed, "full", "full (computed whole): no mask applied"}};
}

std::string heatmap(const std::vector<Grid>& grids, const Style& s) {
    const std::size_t rows = grids.at(0).value.size(), cols = rows ? grids[0].value[0].size() : 0;
    const std::size_t side = std::max<std::size_t>(std::max(rows, cols), 1);
    // per_row grids to a row; the rows of grids a band apart (names, ticks, labels)
    const std::size_t per_row = s.per_row ? std::min(s.per_row, grids.size()) : grids.size();
    int cell = std::max(4, std::min(36, int(360 / side / std::max<std::size_t>(1, grids.size() / 2 + 1) + 8)));
    // each cell's number printed in it when they fit a page: 28 cells across at most
    const bool numbers = rows <= 12 && cols <= 12 && per_row * cols <= 28 && s.kinds.empty();
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
    const int gap = std::max(28, names_px + 12), left = std::max(56, 30 + names_px);
    // a page's width (about 1000 px) for a row of grids, unless numbers need the room
    if (!numbers) {
        const int room = (1000 - left - 90 - int(per_row) * gap) /
                         int(per_row * std::max<std::size_t>(cols, 1));
        cell = std::max(4, std::min(cell, room));
    }
    const int gw = int(cols) * cell, gh = int(rows) * cell;
    const int top = s.shown.empty() ? 58 : 74, bar_w = 14;
    const int bands = int((grids.size() + per_row - 1) / per_row), band = gh + 64;
    const int bar_x = left + int(per_row) * (gw + gap);
    // wide enough for the title at 15 px (about 9 px a character, 15 a wide one)
    int width = std::max(bar_x + bar_w + 70, left + text_px(s.title) * 3 / 2 + 20);
    for (const Kind& k : s.kinds)  // and for the legend's lines at 12 px
        width = std::max(width, left + 18 + text_px(k.means) * 6 / 5 + 10);
    const int legend_rows = std::max<int>(1, int(s.kinds.size()));  // a line each
    const int height = top + (bands - 1) * band + gh + 52 + 18 * (legend_rows - 1);
    auto colour = [&](double v) {
        if (s.diverging) {
            const double m = std::max(std::fabs(s.lo), std::fabs(s.hi));
            return diverging(m > 0 ? v / m : 0);
        }
        return viridis(s.hi > s.lo ? (v - s.lo) / (s.hi - s.lo) : 0);
    };
    std::ostringstream o;
    o << svg_open(width, height)
      << "<defs><pattern id='hatch' width='6' height='6' patternUnits='userSpaceOnUse' "
         "patternTransform='rotate(45)'><rect width='6' height='6' fill='#d9d9d9'/>"
         "<line x1='0' y1='0' x2='0' y2='6' stroke='#7f7f7f' stroke-width='2'/></pattern>";
    for (const Kind& k : s.kinds)  // stripes of the allowed colour and white, if used
        if (k.fill == "url(#partial)")
            o << "<pattern id='partial' width='8' height='8' patternUnits='userSpaceOnUse' "
                 "patternTransform='rotate(45)'><rect width='8' height='8' fill='"
              << kAllowed << "'/><rect width='4' height='8' fill='#ffffff'/></pattern>";
    o << "</defs>\n"
      << "<rect width='100%' height='100%' fill='white'/>\n"
      << "<text x='" << left << "' y='20' font-size='15' font-weight='bold'>"
      << escape(s.title) << "</text>\n";
    if (!s.shown.empty())
        o << "<text class='shown' x='" << left << "' y='38' font-size='11' fill='#555555'>"
          << escape(s.shown) << "</text>\n";
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
                // in a picture of kinds, the kind whose value the cell holds
                const Kind* kind = nullptr;
                for (const Kind& k : s.kinds)
                    if (double(k.value) == v) kind = &k;
                if (!s.kinds.empty() && kind == nullptr)
                    throw std::logic_error("heatmap(): cell (" + std::to_string(i) + ", " +
                                           std::to_string(j) + ") holds " + number(v) +
                                           ", the value of no kind of cell");
                const bool masked = kind == nullptr && !grid.masked.empty() && grid.masked[i][j];
                const bool nan = !kind && !masked && !std::isfinite(v);  // no colour means it
                const std::string fill = kind     ? kind->fill
                                         : masked ? "url(#hatch)"
                                         : nan    ? "#ffffff"
                                                  : colour(v);
                const int x = x0 + int(j) * cell, y = y0 + int(i) * cell;
                o << "<rect x='" << x << "' y='" << y << "' width='" << cell << "' height='"
                  << cell << "' fill='" << fill << (nan ? "' stroke='#b35806" : "")
                  << "' data-row='" << i << "' data-col='" << j << "'><title>"
                  << escape(s.row_label) << ' ' << named(grid.row_ticks, i) << ", "
                  << escape(s.col_label) << ' ' << named(grid.col_ticks, j) << ": "
                  << (kind ? escape(kind->name) : masked ? "masked" : number(v, 6))
                  << "</title></rect>\n";
                if ((numbers && cell >= 24 && !masked) || (nan && cell >= 16)) {
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
    if (!s.kinds.empty()) {  // a legend of its own: a swatch and a line a kind, no scale
        for (std::size_t k = 0; k < s.kinds.size(); ++k) {
            const int y = height - 24 - 18 * (legend_rows - 1) + 18 * int(k);
            o << "<rect class='legend' x='" << left << "' y='" << y << "' width='12' "
              << "height='12' fill='" << s.kinds[k].fill << "' data-kind='"
              << escape(s.kinds[k].name) << "'/><text class='legend' x='" << left + 18
              << "' y='" << y + 10 << "'>" << escape(s.kinds[k].means) << "</text>\n";
        }
        o << "</svg>\n";
        return o.str();
    }
    // The colour bar: 32 steps, labelled at round numbers.
    const double lo = s.diverging ? -std::max(std::fabs(s.lo), std::fabs(s.hi)) : s.lo;
    const double hi = s.diverging ? -lo : s.hi;
    for (int k = 0; k < 32; ++k) {
        const double v = hi - (hi - lo) * (k + 0.5) / 32;
        o << "<rect class='bar' x='" << bar_x << "' y='" << top + k * gh / 32 << "' width='"
          << bar_w << "' height='" << gh / 32 + 1 << "' fill='" << colour(v) << "'/>\n";
    }
    for (double v : round_ticks(lo, hi, gh < 120 ? 3 : 5)) {
        if (v < lo - 1e-9 * (hi - lo) || v > hi + 1e-9 * (hi - lo)) continue;
        const int y = top + int(std::lround((hi - v) / (hi - lo) * gh));
        o << "<line x1='" << bar_x + bar_w << "' x2='" << bar_x + bar_w + 3 << "' y1='" << y
          << "' y2='" << y << "' stroke='black'/><text class='bar-tick' x='"
          << bar_x + bar_w + 5 << "' y='" << y + 4 << "' font-size='10'>" << number(v, 6)
          << "</text>\n";
    }
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
    // the axis from one round tick to another, at or beyond the data
    const std::vector<double> yticks = round_ticks(ylo, yhi, 5);
    ylo = yticks.front(), yhi = yticks.back();
    auto fx = [&](double v) { return log2_x ? std::log2(v) : v; };
    const double xlo = fx(x.front()), xhi = fx(x.back()) > xlo ? fx(x.back()) : xlo + 1;
    auto px = [&](double v) { return left + (fx(v) - xlo) / (xhi - xlo) * w; };
    auto py = [&](double v) { return top + h - (v - ylo) / (yhi - ylo) * h; };
    static const char* colours[] = {"#21918c", "#b35806", "#3b528b", "#5ec962"};
    std::ostringstream o;
    o << svg_open(left + w + 170, top + h + 50)
      << "<rect width='100%' height='100%' fill='white'/>\n"
      << "<text x='" << left << "' y='20' font-size='15' font-weight='bold'>" << escape(title)
      << "</text>\n<path d='M" << left << ',' << top << " V" << top + h << " H" << left + w
      << "' stroke='black' fill='none'/>\n";
    for (double v : x)
        o << "<text x='" << px(v) << "' y='" << top + h + 16 << "' text-anchor='middle' "
          << "font-size='10'>" << number(v) << "</text>\n";
    for (double v : yticks)
        o << "<line x1='" << left - 4 << "' x2='" << left << "' y1='" << py(v) << "' y2='"
          << py(v) << "' stroke='black'/><text class='y-tick' x='" << left - 6 << "' y='"
          << py(v) + 4 << "' text-anchor='end' font-size='10'>" << number(v, 6) << "</text>\n";
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

std::string bar_chart(const std::string& title, const std::string& x_label,
                      const std::vector<Bar>& bars) {
    int label_w = 0, note_w = 0;  // at font size 12: 1.2 times text_px's size 10
    for (const Bar& b : bars) {
        label_w = std::max(label_w, text_px(b.label) * 6 / 5);
        note_w = std::max(note_w, text_px(number(b.value, 8) + "  " + b.note) * 6 / 5);
    }
    const int left = label_w + 20, top = 50, w = 480, row = 30, bar_h = 18;
    const int h = row * int(bars.size());
    double hi = 0;
    for (const Bar& b : bars)
        if (std::isfinite(b.value)) hi = std::max(hi, b.value);
    const std::vector<double> ticks = round_ticks(0, hi > 0 ? hi : 1, 7);
    const double xhi = ticks.back();
    auto px = [&](double v) { return left + std::max(0.0, v) / xhi * w; };
    std::ostringstream o;
    o << svg_open(std::max(left + w + 30, int(px(hi)) + note_w + 30), top + h + 50)
      << "<rect width='100%' height='100%' fill='white'/>\n"
      << "<text x='10' y='22' font-size='15' font-weight='bold'>" << escape(title)
      << "</text>\n";
    for (double v : ticks)  // grid lines behind the bars, labels under the axis
        o << "<line x1='" << px(v) << "' x2='" << px(v) << "' y1='" << top << "' y2='"
          << top + h + 4 << "' stroke='#dddddd'/><text class='x-tick' x='" << px(v)
          << "' y='" << top + h + 18 << "' text-anchor='middle' font-size='10'>" << number(v, 8)
          << "</text>\n";
    o << "<path d='M" << left << ',' << top << " V" << top + h << " H" << left + w
      << "' stroke='black' fill='none'/>\n<text x='" << left + w / 2 << "' y='" << top + h + 38
      << "' text-anchor='middle'>" << escape(x_label) << "</text>\n";
    for (std::size_t k = 0; k < bars.size(); ++k) {
        const Bar& b = bars[k];
        const int y = top + row * int(k) + (row - bar_h) / 2;
        const double end = std::isfinite(b.value) ? px(b.value) : left;
        o << "<text class='bar-label' x='" << left - 8 << "' y='" << y + bar_h - 4
          << "' text-anchor='end'>" << escape(b.label) << "</text>\n"
          << "<rect class='hbar' data-label='" << escape(b.label) << "' data-value='"
          << number(b.value, 17) << "' x='" << left << "' y='" << y << "' width='"
          << std::max(1.0, end - left) << "' height='" << bar_h << "' fill='"
          << head_colour(k) << "'><title>" << escape(b.label) << ": " << number(b.value, 17)
          << "</title></rect>\n<text class='bar-value' x='" << end + 6 << "' y='"
          << y + bar_h - 4 << "'>" << number(b.value, 8)
          << (b.note.empty() ? "" : "  ") << escape(b.note) << "</text>\n";
    }
    o << "</svg>\n";
    return o.str();
}

namespace {

// @p hex mixed with white: f = 0 white, f = 1 the colour itself.
std::string tint(const std::string& hex, double f) {
    f = std::max(0.0, std::min(1.0, f));
    char buf[8];
    int c[3];
    for (int k = 0; k < 3; ++k) {
        const int v = std::stoi(hex.substr(1 + 2 * k, 2), nullptr, 16);
        c[k] = int(std::lround(255 + (v - 255) * f));
    }
    std::snprintf(buf, sizeof buf, "#%02x%02x%02x", c[0], c[1], c[2]);
    return buf;
}

// Where each drawn column starts, left to right, with a gap where the
// tensor's columns skip (the columns not drawn); the total width last.
std::vector<int> column_x(const std::vector<std::size_t>& cols, int cell) {
    std::vector<int> x;
    int at = 0;
    for (std::size_t j = 0; j < cols.size(); ++j) {
        if (j > 0 && cols[j] != cols[j - 1] + 1) at += cell / 2 + 6;
        x.push_back(at);
        at += cell;
    }
    x.push_back(at);
    return x;
}

}  // namespace

std::string blocks(const std::string& title, const std::string& shown,
                   const std::vector<Stage>& stages) {
    // One scale for the head-coloured cells, one for the mixed ones (head -1).
    double lo = INFINITY, hi = -INFINITY, m = 0;
    std::set<int> heads;
    std::string own;  // the legend of the blocks on their own scales
    std::size_t widest = 1, tall = 0;  // in cells
    for (const Stage& st : stages) {
        std::size_t w = 0, rows = 0;
        for (const Block& b : st.blocks) {
            w += b.cols.size() + 2;
            rows = std::max(rows, b.rows.size());
            if (b.value.size() != b.rows.size() || b.head.size() != b.rows.size())
                throw std::logic_error("blocks(): " + b.name + ": rows do not match");
            for (std::size_t i = 0; i < b.rows.size(); ++i)
                for (std::size_t j = 0; j < b.cols.size(); ++j) {
                    const double v = b.value.at(i).at(j);
                    if (!std::isfinite(v)) continue;
                    if (b.head.at(i).at(j) < 0) {
                        m = std::max(m, std::fabs(v));
                    } else if (b.own_scale) {
                        heads.insert(b.head[i][j]);
                    } else {
                        lo = std::min(lo, v), hi = std::max(hi, v);
                        heads.insert(b.head[i][j]);
                    }
                }
        }
        widest = std::max(widest, w), tall += rows;
    }
    if (!(hi > lo)) hi = lo + 1;
    // cells as large as fit a page of about 1000 x 900 px, 30 px at most
    const int cell = std::max(6, std::min({30, 940 / int(widest),
                                           640 / int(std::max<std::size_t>(tall, 1))}));
    const bool numbers = cell >= 26;
    const int left = 40;
    auto fill = [&](double v, int head, double lo, double hi) {
        if (!std::isfinite(v)) return std::string("#ffffff");
        if (head < 0) return diverging(m > 0 ? v / m : 0);
        return tint(head_colour(std::size_t(head)), 0.12 + 0.88 * (v - lo) / (hi - lo));
    };
    std::ostringstream body;
    int y = shown.empty() ? 40 : 56, width = left + text_px(title) * 3 / 2 + 20;
    for (const Stage& st : stages) {
        if (!st.caption.empty()) {
            body << "<text class='caption' x='" << left << "' y='" << y + 14
                 << "' font-style='italic'>\u2193 " << escape(st.caption) << "</text>\n";
            y += 24;
        }
        int x = left + 24;
        std::size_t rows = 0;
        const int y0 = y + 32;  // under the name and the column ticks
        for (const Block& b : st.blocks) {
            const std::vector<int> cx = column_x(b.cols, cell);
            double blo = lo, bhi = hi;  // its scale
            if (b.own_scale) {
                blo = INFINITY, bhi = -INFINITY;
                for (const auto& row : b.value)
                    for (float v : row)
                        if (std::isfinite(v))
                            blo = std::min(blo, double(v)), bhi = std::max(bhi, double(v));
                if (!(bhi > blo)) bhi = blo + 1;
                own += "; " + b.name + " on its own scale (" + number(blo, 3) + " to " +
                       number(bhi, 3) + ")";
            }
            body << "<g class='grid' data-name='" << escape(b.name) << "'>\n<text x='" << x
                 << "' y='" << y + 12 << "'>" << escape(b.name) << "</text>\n";
            for (std::size_t i = 0; i < b.rows.size(); ++i) {
                const int yi = y0 + int(i) * cell;
                body << "<text class='tick' x='" << x - 4 << "' y='" << yi + cell / 2 + 4
                     << "' text-anchor='end' font-size='9'>" << b.rows[i] << "</text>\n";
                for (std::size_t j = 0; j < b.cols.size(); ++j) {
                    const double v = b.value[i][j];
                    const int h = b.head[i][j];
                    const std::string f = fill(v, h, blo, bhi);
                    const bool stepped = !b.step.empty();
                    body << "<rect x='" << x + cx[j] << "' y='" << yi << "' width='" << cell
                         << "' height='" << cell << "' fill='" << f << "' data-row='"
                         << b.rows[i] << "' data-col='" << b.cols[j] << "' data-head='" << h;
                    if (stepped) body << "' data-step='" << b.step[i][j];
                    body << "'><title>" << escape(b.row_label) << ' ' << b.rows[i] << ", "
                         << escape(b.col_label) << ' ' << b.cols[j];
                    if (h >= 0) body << ", head " << h;
                    if (stepped) body << " at step " << b.step[i][j];
                    body << ": " << number(v, 6) << "</title></rect>\n";
                    if (numbers && !stepped)
                        body << "<text x='" << x + cx[j] + cell / 2 << "' y='" << yi + cell / 2 + 3
                             << "' text-anchor='middle' font-size='8' fill='"
                             << (lightness(f) < 0.5 ? "white" : "black") << "'>" << fixed2(v)
                             << "</text>\n";
                }
                // A thick line above where the head changes from the row above.
                for (std::size_t j = 0; i > 0 && j < b.cols.size(); ++j)
                    if (b.head[i][j] != b.head[i - 1][j])
                        body << "<line x1='" << x + cx[j] << "' x2='" << x + cx[j] + cell
                             << "' y1='" << yi << "' y2='" << yi << "' stroke='black' "
                             << "stroke-width='2.5'/>\n";
                // Boundaries in the row: a thick line between heads, a thin one
                // between time steps of one head; runs of one (head, step) named.
                std::size_t run = 0;
                for (std::size_t j = 1; j <= b.cols.size(); ++j) {
                    const bool end = j == b.cols.size();
                    const bool other_head = !end && b.head[i][j] != b.head[i][j - 1];
                    const bool other_step =
                        !end && !b.step.empty() && b.step[i][j] != b.step[i][j - 1];
                    if (!end && (other_head || other_step))
                        body << "<line x1='" << x + cx[j] << "' x2='" << x + cx[j] << "' y1='"
                             << yi << "' y2='" << yi + cell << "' stroke='black' "
                             << "stroke-width='" << (other_head ? 2.5 : 1) << "'/>\n";
                    if (!b.step.empty() && (end || other_head || other_step)) {
                        // on a white label, readable on any shade
                        const std::string label = "h" + std::to_string(b.head[i][run]) +
                                                  " t" + std::to_string(b.step[i][run]);
                        const int size = std::min(11, cell - 2), mid = x + (cx[run] + cx[j]) / 2;
                        const int w = text_px(label) * size / 10 + 4;
                        body << "<rect x='" << mid - w / 2 << "' y='"
                             << yi + cell / 2 - size / 2 - 1 << "' width='" << w << "' height='" << size + 2
                             << "' rx='2' fill='white' fill-opacity='0.85'/><text class='run' x='"
                             << mid << "' y='" << yi + cell / 2 + size * 4 / 10
                             << "' text-anchor='middle' font-size='" << size << "'>" << label
                             << "</text>\n";
                        run = j;
                    }
                }
            }
            // column ticks: the first of each run of columns, and of each head
            for (std::size_t j = 0; j < b.cols.size(); ++j) {
                const bool first = j == 0 || b.cols[j] != b.cols[j - 1] + 1 ||
                                   (!b.head.empty() && b.head[0][j] != b.head[0][j - 1]);
                if (first || cell >= 20)
                    body << "<text class='tick' x='" << x + cx[j] + cell / 2 << "' y='"
                         << y0 - 4 << "' text-anchor='middle' font-size='9'>" << b.cols[j]
                         << "</text>\n";
                if (j > 0 && b.cols[j] != b.cols[j - 1] + 1)
                    body << "<text x='" << x + cx[j] - 3 - cell / 4 << "' y='" << y0 + cell / 2
                         << "' text-anchor='middle' fill='#555555'>\u2026</text>\n";
            }
            body << "<rect x='" << x << "' y='" << y0 << "' width='" << cx.back()
                 << "' height='" << int(b.rows.size()) * cell
                 << "' fill='none' stroke='#333333'/>\n</g>\n";
            x += cx.back() + cell + 28;
            rows = std::max(rows, b.rows.size());
        }
        width = std::max(width, x);
        y = y0 + int(rows) * cell + 16;
    }
    // The legend: each head's colour from small to large numbers, and the mixed scale.
    int lx = left;
    for (int h : heads) {
        if (lx + 90 > std::max(width, 400)) lx = left, y += 20;
        for (int k = 0; k < 4; ++k)
            body << "<rect class='legend' x='" << lx + 8 * k << "' y='" << y << "' width='8' "
                 << "height='12' fill='" << tint(head_colour(std::size_t(h)), 0.12 + 0.29 * k)
                 << "'/>\n";
        body << "<text class='legend' x='" << lx + 36 << "' y='" << y + 10 << "'>head " << h
             << "</text>\n";
        lx += 90;
    }
    y += 30;
    if (!heads.empty())
        body << "<text x='" << left << "' y='" << y << "' font-size='11'>each head its colour; "
             << "lighter = smaller, darker = larger (" << number(lo, 3) << " to "
             << number(hi, 3) << ")" << escape(own) << "</text>\n";
    if (m > 0) {
        y += 20;
        for (int k = 0; k < 16; ++k)
            body << "<rect class='bar' x='" << left + 6 * k << "' y='" << y - 10 << "' width='7' "
                 << "height='12' fill='" << diverging(-1 + 2 * (k + 0.5) / 16) << "'/>\n";
        body << "<text x='" << left + 104 << "' y='" << y << "' font-size='11'>no head "
             << "colour: every head mixed in; blue below 0, orange above (" << number(-m, 3)
             << " to " << number(m, 3) << ")</text>\n";
    }
    std::ostringstream o;
    o << svg_open(std::max(width, 560), y + 16) << "<rect width='100%' height='100%' fill='white'/>\n"
      << "<text x='" << left << "' y='20' font-size='15' font-weight='bold'>" << escape(title)
      << "</text>\n";
    if (!shown.empty())
        o << "<text class='shown' x='" << left << "' y='38' font-size='11' fill='#555555'>"
          << escape(shown) << "</text>\n";
    o << body.str() << "</svg>\n";
    return o.str();
}

}  // namespace lesson::svg
