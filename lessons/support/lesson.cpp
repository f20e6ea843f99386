// The lesson frame: flags, printing, pictures, --dump, --predict, checks.
#include "lesson.hpp"
#include "text_width.hpp"
#include "svg.hpp"
#include "blocks.hpp"

#include "mha/fast/memory.hpp"
#include "mha/heads.hpp"
#include "mha/mask.hpp"
#include "mha/io/npy.hpp"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include <unistd.h>

namespace lesson {

namespace {

constexpr int kWidth = 90;  // what a projector and a docs listing hold

// Thrown for a bad flag: run() prints it as one line and exits 2.
struct BadFlag : std::runtime_error {
    using std::runtime_error::runtime_error;
};

std::size_t parse_size(const std::string& flag, const char* text, std::size_t max,
                       std::size_t min = 1) {
    if (text == nullptr) throw BadFlag(flag + " needs a value");
    errno = 0;
    char* end = nullptr;
    const long long v = std::strtoll(text, &end, 10);
    if (end == text || *end != '\0' || errno == ERANGE) {
        throw BadFlag(flag + " takes a whole number, not '" + text + "'");
    }
    if (v < static_cast<long long>(min) || static_cast<unsigned long long>(v) > max) {
        throw BadFlag(flag + " must be between " + std::to_string(min) + " and " +
                      std::to_string(max) + ", not " + text);
    }
    return static_cast<std::size_t>(v);
}

const Extra* find_extra(const Info& info, const std::string& flag) {
    for (const Extra& x : info.extra)
        if (x.flag == flag) return &x;
    return nullptr;
}

const TextFlag* find_text(const Info& info, const std::string& flag) {
    for (const TextFlag& t : info.text)
        if (t.flag == flag) return &t;
    return nullptr;
}

double parse_extra(const Extra& x, const char* text) {
    if (text == nullptr) throw BadFlag(x.flag + " needs a value");
    if (x.whole) {
        return static_cast<double>(
            parse_size(x.flag, text, std::size_t(x.max), std::size_t(x.min)));
    }
    errno = 0;
    char* end = nullptr;
    const double v = std::strtod(text, &end);
    if (end == text || *end != '\0' || errno == ERANGE || !std::isfinite(v)) {
        throw BadFlag(x.flag + " takes a number, not '" + text + "'");
    }
    if (v < x.min || v > x.max) {
        char range[96];
        std::snprintf(range, sizeof range, " must be between %g and %g, not ", x.min, x.max);
        throw BadFlag(x.flag + range + text);
    }
    return v;
}

std::string megabytes(double mb) {
    char buf[32];
    std::snprintf(buf, sizeof buf, mb < 10 ? "%.1f" : "%.0f", mb);
    return buf;
}

std::string dump_help(const Info& info) {
    if (info.dump_mb == 0) return "this lesson shows no tensor: it saves nothing";
    const std::string mb = info.dump_mb < 0.1 ? "under 0.1" : megabytes(info.dump_mb);
    return "also save every tensor shown as DIR/" + info.name + "/NAME.npy, a name\n"
           "               shown again as NAME.2.npy (" + mb + " MB at the default sizes)";
}

void usage(const Info& info) {
    std::string own, own_help;
    std::size_t line = 9;  // the columns of own's last line, after its indent
    const auto add = [&](const std::string& item) {  // wrapped at 80 columns
        if (line + item.size() > 80) own += "\n         ", line = 9;
        own += item, line += item.size();
    };
    for (const Extra& x : info.extra) {
        add(" [" + x.flag + " " + x.meta + "]");
        char line[160], tiny[48] = "";
        if (x.tiny_value != 0) std::snprintf(tiny, sizeof tiny, "; %g at --tiny", x.tiny_value);
        std::snprintf(line, sizeof line, "  %-12s %s (default %g%s)\n",
                      (x.flag + " " + x.meta).c_str(), x.help.c_str(), x.value, tiny);
        own_help += line;
    }
    for (const TextFlag& t : info.text) {
        const std::string name = t.meta.empty() ? t.flag : t.flag + " " + t.meta;
        add(" [" + name + "]");
        own_help += "  " + (name.size() < 12 ? name + std::string(12 - name.size(), ' ') : name) +
                    " " + t.help + "\n";
    }
    // the flags every lesson takes, last in both usages
    const std::string tail =
        "  --pause      wait for Enter between sections, for class\n"
        "  --predict    before each shape, ask for it; score the answers at the end\n"
        "  --svg DIR    " + std::string(info.draws ? "also write the pictures as SVG files in DIR"
                                                   : "(this lesson draws no picture)") +
        "\n  --dump DIR   " + dump_help(info) + "\n  --help       this text\n";
    if (info.fixed_sizes) {  // its data set the sizes: no size flags to list
        std::printf(
            "%s: %s\n\n"
            "usage: %s [--tiny] [--pause] [--predict]\n"
            "          [--svg DIR] [--dump DIR] [--help]%s\n\n"
            "  --tiny       changes nothing: the sizes are the lesson's own (batch %zu,\n"
            "               time %zu, d_model %zu, %zu heads), and it always prints the numbers;\n"
            "               --batch, --time, --d-model, --heads and --seed change nothing\n"
            "%s%s",
            info.name.c_str(), info.summary.c_str(), info.name.c_str(), own.c_str(),
            info.default_batch, info.default_time, info.default_d_model, info.default_heads,
            own_help.c_str(), tail.c_str());
        return;
    }
    std::printf(
        "%s: %s\n\n"
        "usage: %s [--tiny] [--batch B] [--time T] [--d-model E] [--heads H]\n"
        "          [--seed S] [--pause] [--predict] [--svg DIR] [--dump DIR] [--help]\n"
        "         %s\n\n"
        "  --tiny       batch %zu, time %zu, d_model %zu, %zu heads; prints the numbers\n"
        "  --batch B    batch size (default %zu)\n"
        "  --time T     sequence length (default %zu)\n"
        "  --d-model E  embedding size d_model (default %zu)\n"
        "  --heads H    number of heads; %s (default %zu)\n"
        "%s"
        "  --seed S     seed for the data and the weights (default 0)\n"
        "%s",
        info.name.c_str(), info.summary.c_str(), info.name.c_str(), own.c_str(),
        info.tiny_batch, info.tiny_time, info.tiny_d_model,
        info.heads_divide ? std::size_t{2} : std::size_t{3},
        info.default_batch, info.default_time, info.default_d_model,
        info.heads_divide ? "must divide d_model" : "one that does not divide d_model",
        info.default_heads, own_help.c_str(), tail.c_str());
}

// A folder flag's value: created if missing, and it must be writable.
std::string folder(const std::string& flag, const char* value) {
    if (value == nullptr) throw BadFlag(flag + " needs a folder");
    std::error_code ec;
    std::filesystem::create_directories(value, ec);
    if (ec || access(value, W_OK) != 0) {
        throw BadFlag(flag + ": cannot write to the folder '" + value + "'");
    }
    return value;
}

Options parse(int argc, char** argv, const Info& info, bool& help) {
    Options o;
    o.heads = info.default_heads;
    o.batch = info.default_batch, o.time = info.default_time, o.d_model = info.default_d_model;
    for (const Extra& x : info.extra) o.extra[x.flag] = x.value;
    std::set<std::string> own;  // the lesson's own flags on the command line
    bool sized = false;
    std::string given;  // the size flags (and --seed) given: "--time, --seed"
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        const char* next = i + 1 < argc ? argv[i + 1] : nullptr;
        auto value = [&](std::size_t max) {
            ++i;
            sized = true;
            if (given.find(a) == std::string::npos) given += (given.empty() ? "" : ", ") + a;
            return parse_size(a, next, max);
        };
        if (a == "--help" || a == "-h") help = true;
        else if (a == "--tiny") o.tiny = true;
        else if (a == "--pause") o.pause = true;
        else if (a == "--predict") o.predict = true;
        else if (a == "--batch") o.batch = value(4096);
        else if (a == "--time") o.time = value(4096);
        else if (a == "--d-model") o.d_model = value(8192);
        else if (a == "--heads") o.heads = value(8192);
        else if (a == "--seed") {
            o.seed = parse_size(a, next, 1ULL << 62, 0), ++i;
            if (given.find(a) == std::string::npos) given += (given.empty() ? "" : ", ") + a;
        }
        else if (a == "--svg") o.svg_dir = folder(a, next), ++i;
        else if (a == "--dump") o.dump_dir = folder(a, next), ++i;
        else if (const Extra* x = find_extra(info, a)) o.extra[a] = parse_extra(*x, next), ++i, own.insert(a);
        else if (const TextFlag* t = find_text(info, a)) {
            if (t->meta.empty()) o.text[a] = "1";
            else if (next == nullptr) throw BadFlag(a + " needs " + t->meta);
            else o.text[a] = next, ++i;
        }
        else throw BadFlag("unknown flag '" + a + "' (try --help)");
    }
    if (o.tiny && sized) throw BadFlag("--tiny sets the sizes: give it alone, or the sizes alone");
    if (o.tiny && !info.fixed_sizes) {
        // T = 5 against D = 4: a student who swaps time and head_dim is caught.
        o.batch = info.tiny_batch, o.time = info.tiny_time, o.d_model = info.tiny_d_model;
        for (const Extra& x : info.extra)  // a lesson's own default at --tiny, unless given
            if (x.tiny_value != 0 && own.count(x.flag) == 0) o.extra[x.flag] = x.tiny_value;
        o.heads = info.heads_divide ? 2 : 3;
    }
    // About ten [B, T, E] tensors and three [B, H, T, T] live at once.
    const double bytes = 4.0 * (10.0 * o.batch * o.time * o.d_model +
                                3.0 * o.batch * o.heads * o.time * o.time);
    if (bytes > 4e9) {
        char gb[32];
        std::snprintf(gb, sizeof gb, "%.0f", bytes / 1e9);
        throw BadFlag(std::string("these sizes need about ") + gb + " GB, over the 4 GB limit");
    }
    if (o.heads > o.d_model) {
        throw BadFlag("--heads " + std::to_string(o.heads) + " is more than --d-model " +
                      std::to_string(o.d_model) + ": give at most " +
                      std::to_string(o.d_model));
    }
    if (info.heads_divide) {
        mha::head_dim_for(o.d_model, o.heads);  // names the heads that fit
    } else if (o.d_model % o.heads == 0) {
        throw BadFlag("--heads " + std::to_string(o.heads) + " divides --d-model " +
                      std::to_string(o.d_model) + ": pick one that does not");
    }
    // Last, so that a size wrong anyway gets the message every lesson gives.
    if (info.fixed_sizes) {
        o.batch = info.default_batch, o.time = info.default_time;
        o.d_model = info.default_d_model, o.heads = info.default_heads, o.seed = 0;
        o.ignored = given;
    }
    if (info.sizes_unless && !info.sizes_unless(o)) {  // the sizes are sizes_from's
        o.batch = info.default_batch, o.time = info.default_time;
        o.d_model = info.default_d_model, o.heads = info.default_heads;
        for (const char* f : {"--batch", "--time", "--d-model", "--heads"})
            if (given.find(f) != std::string::npos)
                o.ignored += (o.ignored.empty() ? "" : ", ") + std::string(f);
    }
    return o;
}

std::string fmt(float x, bool flag) {
    char buf[32];
    if (flag) return x != 0.0f ? "1" : "0";
    if (std::isinf(x)) return x < 0 ? "-inf" : "inf";
    std::snprintf(buf, sizeof buf, "%.3f", x);
    return buf;
}

// At --tiny, the numbers: one [rows, cols] matrix per leading index, side
// by side as many as fit in kWidth (the heads of a [B, H, T, D] in a row),
// so that a section shows more tensors on one screen.
void print_numbers(const Values& v) {
    const std::size_t rank = v.shape.size();
    const std::size_t cols = rank >= 1 ? v.shape[rank - 1] : 1;
    const std::size_t rows = rank >= 2 ? v.shape[rank - 2] : 1;
    const std::size_t blocks = v.data.size() / (rows * cols);
    // Every number as wide as the widest: weights in [0, 1] take 5 columns.
    const std::size_t gap = 5;
    std::size_t cell = 2;
    for (float x : v.data) cell = std::max(cell, fmt(x, v.flags).size());
    // A block is as wide as its numbers, or as its label "[0, 1, :, :]" less
    // the two columns the label starts to the left of them.
    const std::size_t width = std::max(cols * (cell + 1) - 1, 3 * rank + 1);
    const std::size_t across =
        rank > 2 ? std::max<std::size_t>(1, (kWidth - 6 + gap) / (width + gap)) : 1;
    for (std::size_t first = 0; first < blocks; first += across) {
        const std::size_t last = std::min(blocks, first + across);
        if (rank > 2) {
            std::string labels;
            for (std::size_t blk = first; blk < last; ++blk) {
                std::string label = "[";
                for (std::size_t d = 0, r = blk, n = 1; d + 2 < rank; ++d) {
                    n = 1;  // the index of axis d: blk in mixed radix
                    for (std::size_t e = d + 1; e + 2 < rank; ++e) n *= v.shape[e];
                    label += std::to_string(r / n) + ", ";
                    r %= n;
                }
                label += ":, :]";
                const std::size_t at = 4 + (blk - first) * (width + gap);
                labels += std::string(at > labels.size() ? at - labels.size() : 1, ' ') + label;
            }
            std::printf("%s\n", labels.c_str());
        }
        for (std::size_t i = 0; i < rows; ++i) {
            std::string line = "      ";
            for (std::size_t blk = first; blk < last; ++blk) {
                if (blk > first) line.resize(6 + (blk - first) * (width + gap), ' ');
                for (std::size_t j = 0; j < cols; ++j) {
                    const std::string s = fmt(v.data[(blk * rows + i) * cols + j], v.flags);
                    line += std::string(s.size() < cell ? cell - s.size() : 0, ' ') + s;
                    if (j + 1 < cols) line += ' ';
                }
            }
            std::printf("%s\n", line.c_str());
        }
    }
}

// One cell's glyph, repeated to fill the cell.
const char* shade(float x) {
    if (!(x > 0.0f)) return " ";
    if (x < 0.1f) return "\u2591";  // light
    if (x < 0.3f) return "\u2592";  // medium
    if (x < 0.6f) return "\u2593";  // dark
    return "\u2588";                // full
}

std::string repeat(const char* glyph, std::size_t n) {
    std::string s;
    for (std::size_t k = 0; k < n; ++k) s += glyph;
    return s;
}

// @p text padded with spaces to @p width columns, on the right (or the left).
std::string pad(const std::string& text, std::size_t width, bool right = false) {
    const std::size_t n = static_cast<std::size_t>(columns(text));
    const std::string fill(n < width ? width - n : 0, ' ');
    return right ? fill + text : text + fill;
}

// Names must be one per row and column, or none.
void check_names(const Names& names, std::size_t rows, std::size_t cols, const std::string& what) {
    if ((!names.rows.empty() && names.rows.size() != rows) ||
        (!names.cols.empty() && names.cols.size() != cols))
        throw std::logic_error(what + ": " + std::to_string(names.rows.size()) + " row and " +
                               std::to_string(names.cols.size()) + " column names for [" +
                               std::to_string(rows) + ", " + std::to_string(cols) + "]");
}

// "B, H, T, D" -> {"B", "H", "T", "D"}; spaces dropped.
std::vector<std::string> axes(const std::string& dims) {
    std::vector<std::string> out(1);
    for (char c : dims) {
        if (c == ',') out.emplace_back();
        else if (c != ' ') out.back() += c;
    }
    return out;
}

// The whole numbers in a student's answer, whatever separates them.
std::vector<std::size_t> numbers_in(const std::string& line) {
    std::vector<std::size_t> out;
    std::size_t n = 0;
    bool in = false;
    for (char c : line + ' ') {
        if (std::isdigit(static_cast<unsigned char>(c))) {
            n = n * 10 + std::size_t(c - '0'), in = true;
            if (n > (std::size_t(1) << 40)) n = std::size_t(1) << 40;  // no overflow
        } else if (in) {
            out.push_back(n), n = 0, in = false;
        }
    }
    return out;
}

const char* meaning(const std::string& symbol) {
    static const std::map<std::string, const char*> words = {
        {"B", "sequences"}, {"T", "time steps"}, {"Tq", "queries"}, {"Tk", "keys"},
        {"E", "numbers per token"}, {"H", "heads"}, {"D", "numbers per head"},
        {"L", "positions cached"}, {"H_kv", "key/value heads"},
        {"Bq", "queries per block"}, {"Bk", "keys per block"}, {"V", "tokens in the vocabulary"}};
    const auto it = words.find(symbol);
    return it != words.end() ? it->second : "";
}

std::string sizes_str(const std::vector<std::size_t>& v, const char* sep = ", ") {
    std::string s;
    for (std::size_t i = 0; i < v.size(); ++i) s += (i ? sep : "") + std::to_string(v[i]);
    return s;
}

// "permute(0, 2, 1, 3)", or "transpose(2, 3)" when it swaps the last two axes.
std::string permute_str(const std::vector<std::size_t>& p) {
    const std::size_t n = p.size();
    bool last_two = n >= 2 && p[n - 2] == n - 1 && p[n - 1] == n - 2;
    for (std::size_t i = 0; last_two && i + 2 < n; ++i) last_two = p[i] == i;
    if (last_two) return "transpose(" + std::to_string(n - 2) + ", " + std::to_string(n - 1) + ")";
    return "permute(" + sizes_str(p) + ")";
}

// Axes of @p want, a run per size of @p got, whose products give got's sizes:
// the runs that a merge (or, swapped, a split) turns one into the other.
// Empty when there are none.
std::vector<std::pair<std::size_t, std::size_t>> runs(const std::vector<std::size_t>& want,
                                                      const std::vector<std::size_t>& got) {
    std::vector<std::pair<std::size_t, std::size_t>> out;
    std::size_t i = 0;
    for (std::size_t g : got) {
        if (i == want.size()) return {};
        std::size_t first = i, product = want[i++];
        while (product < g && i < want.size()) product *= want[i++];
        if (product != g) return {};
        out.emplace_back(first, i);
    }
    if (i != want.size()) return {};
    return out;
}

// What a wrong answer @p got to the shape @p want of tensor @p name, axes
// @p named, got wrong, in a sentence: which axes are swapped and what gives
// that shape (the step's own @p torch when it is that operation), which size
// is off and whose size it is, which axes are merged or split, or which are
// missing. A '\n' parts the sentence where it may wrap (not inside permute()).
std::string explain(const std::vector<std::size_t>& got, const std::vector<std::size_t>& want,
                    const std::vector<std::string>& named,
                    const std::map<std::string, std::size_t>& sizes, const std::string& name,
                    const std::string& torch) {
    const std::size_t n = want.size();
    auto joined = [&](const std::vector<std::size_t>& axes) {
        std::string s;
        for (std::size_t k = 0; k < axes.size(); ++k)
            s += (k == 0 ? "" : k + 1 == axes.size() ? " and " : ", ") + named[axes[k]];
        return s;
    };
    if (got.empty()) return "your answer holds no sizes.";
    if (got.size() != n) {
        std::vector<std::size_t> ones, kept;  // size-1 axes left out?
        for (std::size_t d = 0; d < n; ++d) (want[d] == 1 ? ones : kept).push_back(d);
        std::vector<std::size_t> rest;
        for (std::size_t d : kept) rest.push_back(want[d]);
        if (got.size() < n && rest == got)
            return "you left out " + joined(ones) + " = 1: an axis of size 1 is still an axis.";
        const bool merged = got.size() < n;
        const auto r = merged ? runs(want, got) : runs(got, want);
        for (std::size_t k = 0; k < r.size(); ++k) {
            if (r[k].second - r[k].first < 2) continue;
            std::vector<std::size_t> parts(r[k].second - r[k].first), axes;
            for (std::size_t d = r[k].first; d < r[k].second; ++d)
                parts[d - r[k].first] = merged ? want[d] : got[d];
            if (merged) {
                for (std::size_t d = r[k].first; d < r[k].second; ++d) axes.push_back(d);
                return "your " + std::to_string(got[k]) + " is " + joined(axes) + " merged (" +
                       sizes_str(parts, " x ") + "): here they are separate axes.";
            }
            return "your " + sizes_str(parts) + " split " + named[k] + " = " +
                   std::to_string(want[k]) + " into " + std::to_string(parts.size()) +
                   " axes: here it is one.";
        }
        std::vector<std::size_t> all(n);
        for (std::size_t d = 0; d < n; ++d) all[d] = d;
        return "you gave " + std::to_string(got.size()) + (got.size() == 1 ? " size" : " sizes") +
               " for " + std::to_string(n) + " axes, " + joined(all) + ".";
    }
    std::vector<std::size_t> off;
    for (std::size_t d = 0; d < n; ++d)
        if (got[d] != want[d]) off.push_back(d);
    std::vector<std::size_t> a = got, b = want;
    std::sort(a.begin(), a.end()), std::sort(b.begin(), b.end());
    if (a == b) {
        // got = want.permute(q): q[i] is the axis of want that got has at i
        std::vector<std::size_t> q(n);
        std::vector<bool> used(n);
        for (std::size_t d = 0; d < n; ++d)
            if (got[d] == want[d]) q[d] = d, used[d] = true;
        for (std::size_t d : off)
            for (std::size_t e = 0; e < n; ++e)
                if (!used[e] && want[e] == got[d]) {
                    q[d] = e, used[e] = true;
                    break;
                }
        std::vector<std::size_t> back(n);  // want = got.permute(back)
        for (std::size_t d = 0; d < n; ++d) back[q[d]] = d;
        const std::string what = off.size() == 2 ? "your " + joined(off) + " are swapped"
                                                 : "the right sizes in another order";
        if (torch.find(permute_str(back)) != std::string::npos)
            return what + ":\nthat is the shape before " + permute_str(back) + ".";
        return what + ":\nthat is the shape of " + name + "." + permute_str(q) + ".";
    }
    std::vector<std::string> others = named;  // whose size the student gave: this
    for (const auto& kv : sizes) others.push_back(kv.first);  // step's axes first
    std::string why;
    for (std::size_t k = 0; k < off.size(); ++k) {
        const std::size_t d = off[k];
        why += (k == 0 ? "" : "; ") + named[d] + " is " + std::to_string(want[d]) + ", not " +
               std::to_string(got[d]);
        for (const std::string& other : others) {
            const auto it = sizes.find(other);
            if (sizes.count(named[d]) && it != sizes.end() && it->second == got[d]) {
                why += " (" + std::to_string(got[d]) + " is " + other + ")";
                break;
            }
        }
    }
    return why + ".";
}

}  // namespace

Lesson::Lesson(const Options& o, const Info& i) : opt(o), info(i) {
    symbols_ = {{"B", o.batch}, {"T", o.time}, {"Tq", o.time}, {"Tk", o.time},
                {"E", o.d_model}, {"H", o.heads}};
    if (o.d_model % o.heads == 0) symbols_["D"] = o.d_model / o.heads;
    asking_ = o.predict;
}

void Lesson::let(const std::string& symbol, std::size_t value) { symbols_[symbol] = value; }

void Lesson::section(const std::string& title) {
    if (opt.pause && sections_ > 0) {
        std::printf("(press Enter)");
        std::fflush(stdout);
        std::string ignored;
        if (!std::getline(std::cin, ignored)) std::printf("\n");
    }
    if (opt.pause && isatty(STDOUT_FILENO)) {
        std::printf("\033[H\033[2J");  // a clean screen, which keeps what the class is seeing
        print_header();
    }
    ++sections_;
    std::printf("\n== %s %s\n", title.c_str(),
                std::string(std::max(3, kWidth - 4 - columns(title)), '=').c_str());
}

void Lesson::print_header() const {
    std::printf("%s: %s\n", info.name.c_str(), info.summary.c_str());
    if (info.fixed_sizes) {
        std::printf("sizes: batch B = %zu, time T = %zu, d_model E = %zu, heads H = %zu, "
                    "set by %s\n", opt.batch, opt.time, opt.d_model, opt.heads,
                    info.sizes_from.c_str());
        if (!opt.ignored.empty())
            std::printf("(%s: no effect, the sizes are set by %s)\n", opt.ignored.c_str(),
                        info.sizes_from == "its words" ? "its words" : info.sizes_from.c_str());
    } else {
        std::printf("sizes: batch B = %zu, time T = %zu, d_model E = %zu, heads H = %zu, "
                    "seed %llu\n", opt.batch, opt.time, opt.d_model, opt.heads,
                    static_cast<unsigned long long>(opt.seed));
        if (!opt.ignored.empty())  // sizes_unless said no
            std::printf("(%s: no effect without %s, the sizes are set by %s)\n",
                        opt.ignored.c_str(), info.sizes_unless_flag.c_str(),
                        info.sizes_from.c_str());
    }
    if (!opt.svg_dir.empty() && !info.draws)
        std::printf("(this lesson draws no picture: --svg writes nothing)\n");
}

void Lesson::say(const std::string& text) {
    // Leading spaces indent every line; words, with a bracketed shape such as
    // "[128, 8, 64, 64]" kept as one.
    const std::string indent(text.find_first_not_of(' ') == std::string::npos
                                 ? 0 : text.find_first_not_of(' '), ' ');
    std::vector<std::string> words;
    std::istringstream in(text);
    int depth = 0;
    for (std::string w; in >> w;) {
        if (depth > 0) words.back() += " " + w;
        else words.push_back(w);
        for (char c : w) depth += c == '[' ? 1 : c == ']' ? -1 : 0;
        depth = std::max(depth, 0);
    }
    std::string line;
    for (const std::string& word : words) {
        if (!line.empty() && columns(line) + 1 + columns(word) > kWidth - 2) {
            std::printf("%s\n", line.c_str());
            line.clear();
        }
        line += (line.empty() ? indent : " ") + word;
    }
    if (!line.empty()) std::printf("%s\n", line.c_str());
}

void Lesson::code(const std::string& torch, const std::string& cpp) {
    std::printf("    PyTorch: %s\n    C++    : %s\n", torch.c_str(), cpp.c_str());
}

std::string Lesson::take_shown(const std::string& what) {
    if (shown_ == nullptr)
        throw std::logic_error("the lesson's step '" + what + "' gives no C++ line and "
                               "no SHOWN() statement comes before it");
    const std::string cpp = shown_;
    shown_ = nullptr;
    return cpp;
}

void Lesson::sketch(const std::string& torch, const std::string& cpp) {
    std::printf("    PyTorch: %s\n    C++ sketch: %s\n", torch.c_str(), cpp.c_str());
}

std::string fixed(double x, int digits) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.*f", digits, x);
    return buf;
}

std::string sci(double x, int digits) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.*e", digits, x);
    return buf;
}

double median_seconds(const std::function<void()>& f, int runs) {
    f();  // warm-up
    std::vector<double> t;
    for (int r = 0; r < runs; ++r) {
        const auto t0 = std::chrono::steady_clock::now();
        f();
        t.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    }
    std::sort(t.begin(), t.end());
    return t[t.size() / 2];
}

double milliseconds(const std::function<void()>& f) {
    const auto t0 = std::chrono::steady_clock::now();
    f();
    return 1e3 * std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

std::string Lesson::with_sizes(const std::string& dims) const {
    std::string out;
    std::set<std::string> said;
    for (std::string axis : axes(dims)) {
        for (char& c : axis) c = c == '+' ? '*' : c;  // every symbol of the axis
        std::istringstream factors(axis);
        for (std::string part; std::getline(factors, part, '*');) {
            const auto it = symbols_.find(part);
            if (it == symbols_.end() || !said.insert(part).second) continue;
            out += (out.empty() ? "" : ", ") + part + " = " + std::to_string(it->second);
            if (*meaning(part)) out += std::string(" ") + meaning(part);
        }
    }
    return out;
}

void Lesson::step_values(const std::string& lhs, const std::string& name, const Values& v,
                         const std::string& dims, const std::string& torch,
                         const std::string& cpp, bool numbers) {
    // The dims must give the shape: a lesson that names its axes wrongly
    // stops here, so that what it teaches is what it computed. An axis is
    // a sum of products of sizes and numbers: B*T, L+1.
    const std::vector<std::string> named = axes(dims);
    bool fits = named.size() == v.shape.size();
    for (std::size_t d = 0; fits && d < named.size(); ++d) {
        std::size_t size = 0;
        std::istringstream terms(named[d]);
        for (std::string term; std::getline(terms, term, '+');) {
            std::size_t product = 1;
            std::istringstream factors(term);
            for (std::string f; std::getline(factors, f, '*');) {
                const auto it = symbols_.find(f);
                const bool number = !f.empty() && std::isdigit(static_cast<unsigned char>(f[0]));
                if (it == symbols_.end() && !number) throw std::logic_error("unknown size " + f);
                product *= it != symbols_.end() ? it->second : std::stoul(f);
            }
            size += product;
        }
        fits = size == v.shape[d];
    }
    if (!fits) {
        throw std::logic_error(name + " is " + mha::shape_str(v.shape) + ", not [" + dims +
                               "] = [" + with_sizes(dims) + "]");
    }
    if (asking_) ask_shape(lhs, name, v, dims, torch);
    const std::string right = name + ".shape = " + mha::shape_str(v.shape) + " = [" + dims + "]";
    if (columns(lhs) + 2 + columns(right) <= kWidth) {
        std::printf("%s%s%s\n", lhs.c_str(),
                    std::string(kWidth - columns(lhs) - columns(right), ' ').c_str(),
                    right.c_str());
    } else {
        std::printf("%s\n%*s\n", lhs.c_str(), kWidth, right.c_str());
    }
    if (!torch.empty()) std::printf("    PyTorch: %s\n", torch.c_str());
    if (!cpp.empty()) std::printf("    C++    : %s\n", cpp.c_str());
    if (numbers) print_numbers(v);
    if (dumping()) write_dump(name, v);
}

void Lesson::ask_shape(const std::string& lhs, const std::string& name, const Values& v,
                       const std::string& dims, const std::string& torch) {
    std::printf("%s\n  your prediction, the shape of %s: ", lhs.c_str(), name.c_str());
    std::fflush(stdout);
    std::string answer;
    const bool typed = isatty(STDIN_FILENO);  // else echo it, as a terminal would
    if (!std::getline(std::cin, answer)) {
        asking_ = false;
        std::printf("\n  (no more answers: the shapes are shown from here on)\n");
        return;
    }
    ++asked_;
    if (!typed) std::printf("%s\n", answer.c_str());
    const std::vector<std::size_t> got = numbers_in(answer);
    if (got == v.shape) {
        ++right_;
        std::printf("  right\n");
        return;
    }
    const std::string why = explain(got, v.shape, axes(dims), symbols_, name, torch);
    const std::size_t cut = why.find('\n');
    if (cut == std::string::npos) {
        say("  not quite: " + why);
    } else if (columns(why) + 13 <= kWidth - 2) {  // "  not quite: " and the sentence
        say("  not quite: " + why.substr(0, cut) + " " + why.substr(cut + 1));
    } else {
        say("  not quite: " + why.substr(0, cut));
        std::printf("  %s\n", why.substr(cut + 1).c_str());
    }
    say("  It is " + mha::shape_str(v.shape) + " = [" + dims + "], with " + with_sizes(dims) +
        ".");
}

std::string Lesson::predictions() const {
    if (!opt.predict) return "";
    return "predicted " + std::to_string(right_) + " of " + std::to_string(asked_) +
           " shapes right";
}

void Lesson::write_dump(const std::string& name, const Values& v) {
    // A name shown again (q after view, then after permute) gets its turn:
    // q.npy, q.2.npy, ...
    std::string file = name;
    for (int n = 2; !dumped_.insert(file).second; ++n) file = name + "." + std::to_string(n);
    const std::string dir = opt.dump_dir + "/" + info.name;
    if (dumped_.size() == 1) {
        std::filesystem::create_directories(dir);
        std::printf("    (--dump: the tensors go to %s/)\n", dir.c_str());
    }
    const std::string path = dir + "/" + file + ".npy";
    if (v.flags) {
        std::vector<char> flags(v.data.begin(), v.data.end());
        mha::save_npy_bool(path, reinterpret_cast<const bool*>(flags.data()), v.shape);
    } else {
        mha::save_npy_float(path, v.data.data(), v.shape);
    }
}

bool Lesson::relation(const std::string& lhs_name, double lhs, const std::string& rhs_name,
                      double rhs, double tolerance, const std::string& why_not) {
    const double ratio = lhs / rhs;
    const bool holds = std::fabs(ratio - 1.0) <= tolerance;
    std::printf("  %s = %.4g against %s = %.4g: ratio %.3f, %swithin %g%%\n",
                lhs_name.c_str(), lhs, rhs_name.c_str(), rhs, ratio, holds ? "" : "not ",
                100 * tolerance);
    if (!holds) say(why_not);
    return holds;
}

void Lesson::picture(const std::string& title, const std::string& file,
                     const std::vector<std::vector<float>>& m,
                     const std::string& row_label, const std::string& col_label,
                     const std::vector<std::vector<bool>>& masked, bool diverging,
                     const Names& names) {
    terminal(title, m, row_label, col_label, masked, diverging, names);
    if (opt.svg_dir.empty()) return;
    const std::size_t rows = m.size(), cols = rows ? m[0].size() : 0;
    write_svg(file, {svg::Grid{"", m, masked}},
              title + "  [" + std::to_string(rows) + ", " + std::to_string(cols) + "]",
              row_label, col_label, diverging, names);
}

void Lesson::mask_picture(const std::string& title, const std::string& file,
                          const std::vector<std::vector<float>>& m,
                          const std::string& row_label, const std::string& col_label) {
    terminal(title, m, row_label, col_label, {}, false, {}, true);
    if (opt.svg_dir.empty()) return;
    const std::size_t rows = m.size(), cols = rows ? m[0].size() : 0;
    write_svg(file, {svg::Grid{"", m, {}}},
              title + "  [" + std::to_string(rows) + ", " + std::to_string(cols) + "]",
              row_label, col_label, false, {}, 0, svg::mask_kinds());
}

void Lesson::blocks(const std::string& title, const std::string& file,
                    const std::vector<svg::Stage>& stages) {
    if (opt.svg_dir.empty()) return;
    const std::string path = opt.svg_dir + "/" + file + ".svg";
    std::ofstream out(path);
    if (!out) throw std::runtime_error("cannot write " + path);
    out << svg::blocks(info.name + ": " + title,
                       shown_of(opt.time, opt.d_model, opt.heads).text, stages);
    std::printf("  wrote %s\n", path.c_str());
}

void Lesson::terminal(const std::string& title, const std::vector<std::vector<float>>& m,
                      const std::string& row_label, const std::string& col_label,
                      const std::vector<std::vector<bool>>& masked, bool diverging,
                      const Names& names, bool mask) {
    const std::size_t rows = m.size(), cols = rows ? m[0].size() : 0;
    check_names(names, rows, cols, "picture " + title);
    // 18 rows at most: with a step above it and the title and sizes lines
    // that --pause repeats, a section still fits a screen of 30.
    const std::size_t shown = std::min<std::size_t>(rows, 18);
    const std::size_t shown_cols = std::min<std::size_t>(cols, 18);
    std::printf("%s  (%s down, %s across%s)\n", title.c_str(), row_label.c_str(),
                col_label.c_str(),
                shown < rows || shown_cols < cols ? "; first cells only" : "");
    // With names: a header of column names, each row after its name, and the
    // cells as wide as the widest column name, a space apart.
    std::size_t name_w = 0, cell = 2;
    for (const std::string& n : names.rows) name_w = std::max<std::size_t>(name_w, columns(n));
    for (const std::string& n : names.cols) cell = std::max<std::size_t>(cell, columns(n));
    const std::string gap = names.cols.empty() ? "" : " ";
    const std::string margin = "  " + std::string(name_w ? name_w + 1 : 0, ' ');
    if (!names.cols.empty()) {
        std::string line = margin;
        for (std::size_t j = 0; j < shown_cols; ++j) line += pad(names.cols[j], cell) + gap;
        while (!line.empty() && line.back() == ' ') line.pop_back();
        std::printf("%s\n", line.c_str());
    }
    for (std::size_t i = 0; i < shown; ++i) {
        std::string line = names.rows.empty() ? margin : "  " + pad(names.rows[i], name_w) + " ";
        for (std::size_t j = 0; j < shown_cols; ++j) {
            if (j > 0) line += gap;
            // a mask's 1 full, its 0 dotted as a masked weight is
            const bool hidden = mask ? !(m[i][j] >= 0.5f) : !masked.empty() && masked[i][j];
            line += hidden ? repeat("\u00b7", cell)
                    : mask ? repeat("\u2588", cell)
                           : repeat(shade(diverging ? std::fabs(m[i][j]) : m[i][j]), cell);
        }
        std::printf("%s|\n", line.c_str());
    }
    if (mask)  // a legend of its own, in the SVG's words, not the weights' scale
        std::printf("  key: \u2588\u2588 allowed (1)   \u00b7\u00b7 masked (0)\n");
    else
        std::printf("  key: '  ' 0   \u2591 <.1   \u2592 <.3   \u2593 <.6   \u2588 >=.6%s%s\n",
                    diverging ? " (of |value|)" : "",
                    masked.empty() ? "" : "   \u00b7\u00b7 masked");
}

void Lesson::write_svg(const std::string& file, const std::vector<svg::Grid>& grids,
                       const std::string& title, const std::string& row_label,
                       const std::string& col_label, bool diverging, const Names& names,
                       std::size_t per_row, const std::vector<svg::Kind>& kinds) {
    svg::Style st{info.name + ": " + title, row_label, col_label, diverging, 0, 0, per_row,
                  kinds};
    // At most 1600 cells in all (some 250 KB): the first rows and columns of
    // each grid, in its proportions, the picture then saying what it shows.
    std::size_t rows = grids.at(0).value.size(), cols = rows ? grids[0].value[0].size() : 0;
    const std::size_t all_rows = rows, all_cols = cols, cells = rows * cols * grids.size();
    if (cells > 1600) {
        const double f = std::sqrt(1600.0 / double(cells));
        // a round count: a multiple of 8, or of 4 below 16
        auto cut = [f](std::size_t n) {
            const std::size_t k = std::max<std::size_t>(1, std::size_t(double(n) * f));
            return k >= 16 ? k / 8 * 8 : k >= 8 ? k / 4 * 4 : k;
        };
        rows = cut(rows), cols = cut(cols);
    }
    if (rows < all_rows || cols < all_cols)
        st.shown = "shown: " + row_label + " 0-" + std::to_string(rows - 1) + " of " +
                   std::to_string(all_rows) + ", " + col_label + " 0-" +
                   std::to_string(cols - 1) + " of " + std::to_string(all_cols) +
                   (grids.size() > 1 ? ", of each" : "");
    std::vector<svg::Grid> named = grids;  // cut to the rows and columns drawn
    for (svg::Grid& g : named) {
        g.value.resize(rows);
        for (auto& r : g.value) r.resize(cols);
        if (!g.masked.empty()) {
            g.masked.resize(rows);
            for (auto& r : g.masked) r.resize(cols);
        }
        if (g.row_ticks.empty()) g.row_ticks = names.rows;
        if (g.col_ticks.empty()) g.col_ticks = names.cols;
        if (!g.row_ticks.empty()) g.row_ticks.resize(rows);
        if (!g.col_ticks.empty()) g.col_ticks.resize(cols);
    }
    for (const svg::Grid& g : named)
        for (std::size_t i = 0; i < g.value.size(); ++i)
            for (std::size_t j = 0; j < g.value[i].size(); ++j) {
                if (!g.masked.empty() && g.masked[i][j]) continue;
                const double v = g.value[i][j];
                if (std::isfinite(v)) st.lo = std::min(st.lo, v), st.hi = std::max(st.hi, v);
            }
    if (!(st.hi > st.lo)) st.hi = st.lo + 1;
    const std::string path = opt.svg_dir + "/" + file + ".svg";
    std::ofstream out(path);
    if (!out) throw std::runtime_error("cannot write " + path);
    out << svg::heatmap(named, st);
    std::printf("  wrote %s\n", path.c_str());
}

namespace {

std::string json_string(const std::string& t) {
    std::string q = "\"";
    for (char c : t) q += c == '"' || c == '\\' ? std::string("\\") + c : std::string(1, c);
    return q + "\"";
}

}  // namespace

std::string Lesson::dataset_head(const std::string& title, const std::string& kind) const {
    return "{\"lesson\":" + json_string(info.name) + ",\"title\":" + json_string(title) +
           ",\"kind\":" + json_string(kind) + ",\"sizes\":" +
           json_string("B " + std::to_string(opt.batch) + ", T " + std::to_string(opt.time) +
                       ", E " + std::to_string(opt.d_model) + ", H " +
                       std::to_string(opt.heads) + (opt.tiny ? " (--tiny)" : ""));
}

void Lesson::add_dataset(const std::string& json) {
    explored_.push_back(json);
    const std::string dir = opt.dump_dir + "/" + info.name;
    std::filesystem::create_directories(dir);
    std::ofstream js(dir + "/explorer.js");
    for (const std::string& d : explored_)
        js << "(window.MHA_DATA = window.MHA_DATA || []).push(" << d << ");\n";
    if (!js) throw std::runtime_error("cannot write " + dir + "/explorer.js");
}

void Lesson::explore(const std::string& title, const std::string& kind,
                     const std::vector<std::pair<std::string, const mha::Tensor4*>>& frames,
                     const mha::Mask* mask) {
    if (!dumping() || frames.empty()) return;
    const mha::Tensor4& first = *frames[0].second;
    const std::size_t B = first.shape(0), H = first.shape(1), Tq = first.shape(2),
                      Tk = first.shape(3);
    std::ostringstream o;
    o << dataset_head(title, kind) << ",\"heads\":" << H << ",\"rows\":" << Tq
      << ",\"cols\":" << Tk << ",\"frames\":[";
    const bool mean = kind == "training";
    for (std::size_t f = 0; f < frames.size(); ++f) {
        const mha::Tensor4& w = *frames[f].second;
        if (w.shape() != first.shape())
            throw std::invalid_argument("explore(): frames of different shapes");
        o << (f ? "," : "") << "{\"label\":" << json_string(frames[f].first) << ",\"w\":[";
        char num[32];
        for (std::size_t h = 0; h < H; ++h)
            for (std::size_t i = 0; i < Tq; ++i)
                for (std::size_t j = 0; j < Tk; ++j) {
                    double v = 0;
                    for (std::size_t b = 0; b < (mean ? B : 1); ++b) v += w(b, h, i, j);
                    std::snprintf(num, sizeof num, "%.6g", mean ? v / B : v);
                    o << (h + i + j ? "," : "") << num;
                }
        o << "]}";
    }
    o << "],\"masked\":";
    if (mask == nullptr) {
        o << "null";
    } else {
        o << "[";
        for (std::size_t h = 0; h < H; ++h)
            for (std::size_t i = 0; i < Tq; ++i)
                for (std::size_t j = 0; j < Tk; ++j)
                    o << (h + i + j ? "," : "") << (mha::mask_row(*mask, 0, h, i)[j] ? 0 : 1);
        o << "]";
    }
    add_dataset(o.str() + "}");
}

void Lesson::explore_layers(
    const std::string& title,
    const std::vector<std::pair<std::string, std::vector<mha::Tensor4>>>& frames,
    const std::vector<std::string>& tokens) {
    if (!dumping() || frames.empty() || frames[0].second.empty()) return;
    const std::size_t L = frames[0].second.size(), H = frames[0].second[0].shape(1),
                      T = frames[0].second[0].shape(2);
    if (tokens.size() != T) throw std::invalid_argument("explore_layers(): T tokens needed");
    std::ostringstream o;
    o << dataset_head(title, "model") << ",\"layers\":" << L << ",\"heads\":" << H
      << ",\"rows\":" << T << ",\"cols\":" << T << ",\"tokens\":[";
    for (std::size_t i = 0; i < T; ++i) o << (i ? "," : "") << json_string(tokens[i]);
    o << "],\"frames\":[";
    char num[32];
    for (std::size_t f = 0; f < frames.size(); ++f) {
        o << (f ? "," : "") << "{\"label\":" << json_string(frames[f].first) << ",\"w\":[";
        for (std::size_t l = 0; l < L; ++l) {
            const mha::Tensor4& w = frames[f].second.at(l);  // [B, H, T, T]
            if (w.shape(1) != H || w.shape(2) != T || w.shape(3) != T)
                throw std::invalid_argument("explore_layers(): layers of different shapes");
            for (std::size_t h = 0; h < H; ++h)
                for (std::size_t i = 0; i < T; ++i)
                    for (std::size_t j = 0; j < T; ++j) {
                        std::snprintf(num, sizeof num, "%.6g", double(w(0, h, i, j)));
                        o << (l + h + i + j ? "," : "") << num;
                    }
        }
        o << "]}";
    }
    o << "],\"masked\":[";  // causal: key j > query i
    for (std::size_t p = 0; p < L * H; ++p)
        for (std::size_t i = 0; i < T; ++i)
            for (std::size_t j = 0; j < T; ++j) o << (p + i + j ? "," : "") << (j > i ? 1 : 0);
    add_dataset(o.str() + "]}");
}

void Lesson::figure(const std::string& title, const std::string& file,
                    const std::vector<svg::Grid>& grids, bool diverging,
                    const std::string& row_label, const std::string& col_label,
                    const Names& names, std::size_t per_row,
                    const std::vector<svg::Kind>& kinds) {
    if (opt.svg_dir.empty() || grids.empty()) return;
    const std::size_t rows = grids[0].value.size(), cols = rows ? grids[0].value[0].size() : 0;
    write_svg(file, grids,
              title + "  [" + std::to_string(rows) + ", " + std::to_string(cols) + "]" +
                  (grids.size() > 1 ? " each" : ""),
              row_label, col_label, diverging, names, per_row, kinds);
}

void Lesson::table(const std::string& title, const mha::Tensor2& m, const Names& names,
                   int digits) {
    const std::size_t rows = m.shape(0), cols = m.shape(1);
    check_names(names, rows, cols, "table " + title);
    std::vector<std::vector<std::string>> text(rows, std::vector<std::string>(cols));
    std::vector<std::size_t> width(cols, 0);  // each column as wide as its name and numbers
    std::size_t name_w = 0;
    for (const std::string& n : names.rows) name_w = std::max<std::size_t>(name_w, columns(n));
    for (std::size_t j = 0; j < cols; ++j) {
        if (!names.cols.empty()) width[j] = columns(names.cols[j]);
        for (std::size_t i = 0; i < rows; ++i) {
            char buf[32];
            std::snprintf(buf, sizeof buf, "%.*f", digits, double(m(i, j)));
            text[i][j] = std::isinf(m(i, j)) ? (m(i, j) < 0 ? "-inf" : "inf") : buf;
            width[j] = std::max(width[j], text[i][j].size());
        }
    }
    std::printf("%s\n", title.c_str());
    const std::string margin = "  " + std::string(name_w, ' ');
    if (!names.cols.empty()) {
        std::string line = margin;
        for (std::size_t j = 0; j < cols; ++j) line += " " + pad(names.cols[j], width[j], true);
        std::printf("%s\n", line.c_str());
    }
    for (std::size_t i = 0; i < rows; ++i) {
        std::string line = names.rows.empty() ? margin : "  " + pad(names.rows[i], name_w);
        for (std::size_t j = 0; j < cols; ++j) line += " " + pad(text[i][j], width[j], true);
        std::printf("%s\n", line.c_str());
    }
}

svg::Grid grid_of(const mha::Tensor4& t, std::size_t b, std::size_t h, const std::string& name,
                  const mha::Mask* mask) {
    const std::size_t rows = t.shape(2), cols = t.shape(3);
    svg::Grid g{name, std::vector<std::vector<float>>(rows, std::vector<float>(cols)), {}};
    if (mask != nullptr) g.masked.assign(rows, std::vector<bool>(cols));
    for (std::size_t i = 0; i < rows; ++i)
        for (std::size_t j = 0; j < cols; ++j) {
            g.value[i][j] = t(b, h, i, j);
            if (mask != nullptr) g.masked[i][j] = !mha::mask_row(*mask, b, h, i)[j];
        }
    return g;
}

std::vector<svg::Grid> head_grids(const mha::Tensor4& t, std::size_t b, const mha::Mask* mask,
                                  std::size_t group) {
    std::vector<svg::Grid> grids;
    for (std::size_t h = 0; h < t.shape(1) && h < 8; ++h) {
        const std::string name = "head " + std::to_string(h) +
                                 (group > 0 ? " reads kv " + std::to_string(h / group) : "");
        grids.push_back(grid_of(t, b, h, name, mask));
    }
    return grids;
}

std::vector<svg::Grid> layer_grids(const std::vector<mha::Tensor4>& layers, std::size_t b,
                                   const std::vector<std::string>& ticks) {
    std::vector<svg::Grid> grids;
    for (std::size_t l = 0; l < layers.size(); ++l)
        for (std::size_t h = 0; h < layers[l].shape(1); ++h) {
            grids.push_back(grid_of(layers[l], b, h,
                                    "layer " + std::to_string(l) + ", head " + std::to_string(h)));
            grids.back().row_ticks = grids.back().col_ticks = ticks;
        }
    return grids;
}

svg::Grid grid_of(const mha::Tensor3& t, std::size_t b, const std::string& name) {
    svg::Grid g{name, std::vector<std::vector<float>>(t.shape(1), std::vector<float>(t.shape(2))),
                {}};
    for (std::size_t i = 0; i < t.shape(1); ++i)
        for (std::size_t j = 0; j < t.shape(2); ++j) g.value[i][j] = t(b, i, j);
    return g;
}

void Lesson::plot(const std::string& title, const std::string& file,
                  const std::string& x_label, const std::vector<double>& x,
                  const std::vector<svg::Series>& series, bool log2_x) {
    if (opt.svg_dir.empty()) return;
    const std::string path = opt.svg_dir + "/" + file + ".svg";
    std::ofstream out(path);
    if (!out) throw std::runtime_error("cannot write " + path);
    out << svg::line_plot(info.name + ": " + title, x_label, x, series, log2_x);
    std::printf("  wrote %s\n", path.c_str());
}

void Lesson::bars(const std::string& title, const std::string& file,
                  const std::string& x_label, const std::vector<svg::Bar>& bars) {
    if (opt.svg_dir.empty()) return;
    const std::string path = opt.svg_dir + "/" + file + ".svg";
    std::ofstream out(path);
    if (!out) throw std::runtime_error("cannot write " + path);
    out << svg::bar_chart(info.name + ": " + title, x_label, bars);
    std::printf("  wrote %s\n", path.c_str());
}

void Lesson::heads(const std::string& title, const std::string& file, const mha::Tensor4& w,
                   const Names& names) {
    const std::size_t B = w.shape(0), H = w.shape(1), Tq = w.shape(2), Tk = w.shape(3);
    if (w.size() == 0) throw std::invalid_argument("heads(): no weights to draw for " + title);
    check_names(names, Tq, Tk, "heads " + title);
    Names side = names;  // the heads side by side: the key names again for each
    if (!names.cols.empty()) {
        side.cols.clear();
        for (std::size_t h = 0; h < H; ++h) {
            if (h > 0) side.cols.emplace_back();  // the blank column between two heads
            side.cols.insert(side.cols.end(), names.cols.begin(), names.cols.end());
        }
    }
    std::vector<std::vector<float>> m(Tq, std::vector<float>(H * (Tk + 1) - 1, 0.0f));
    std::vector<svg::Grid> grids(H);
    for (std::size_t h = 0; h < H; ++h) {
        grids[h].name = "head " + std::to_string(h);
        grids[h].value.assign(Tq, std::vector<float>(Tk));
        for (std::size_t i = 0; i < Tq; ++i)
            for (std::size_t j = 0; j < Tk; ++j) {
                double mean = 0;
                for (std::size_t b = 0; b < B; ++b) mean += w(b, h, i, j);
                m[i][h * (Tk + 1) + j] = grids[h].value[i][j] = static_cast<float>(mean / B);
            }
    }
    terminal(title + ": head 0 | head 1 ...", m, "query", "key", {}, false, side);
    if (!opt.svg_dir.empty())
        write_svg(file, grids,
                  title + (B > 1 ? ", the mean over " + std::to_string(B) + " sequences" : "") +
                      "  [" + std::to_string(H) + ", " + std::to_string(Tq) + ", " +
                      std::to_string(Tk) + "]",
                  "query", "key", false, names);
}

std::string fixed_list(const std::vector<double>& v, int digits, std::size_t most) {
    std::string s;
    for (std::size_t k = 0; k < v.size() && k < most; ++k) s += " " + fixed(v[k], digits);
    return s + (v.size() > most ? " ..." : "");
}

std::string sparkline(const std::vector<double>& v, std::size_t width) {
    static const char* bars[] = {"\u2581", "\u2582", "\u2583", "\u2584",
                                 "\u2585", "\u2586", "\u2587", "\u2588"};
    if (v.empty() || width == 0) return "";
    const std::size_t n = std::min(width, v.size());
    double lo = v[0], hi = v[0];
    for (double x : v) lo = std::min(lo, x), hi = std::max(hi, x);
    std::string s;
    for (std::size_t i = 0; i < n; ++i) {
        const double x = v[i * v.size() / n];
        s += bars[hi > lo ? std::lround(7 * (x - lo) / (hi - lo)) : 0];
    }
    char ends[64];
    std::snprintf(ends, sizeof ends, "  %.3f -> %.4f", v.front(), v.back());
    return s + ends;
}

std::size_t sparkline_column(std::size_t i, std::size_t count, std::size_t width) {
    const std::size_t n = std::min(width, count);  // column c shows value c count / n
    return count == 0 ? 0 : (i * n + count - 1) / count;
}

std::string joined(const std::vector<std::string>& words, const std::string& sep) {
    std::string out;
    for (std::size_t i = 0; i < words.size(); ++i) out += (i ? sep : "") + words[i];
    return out;
}

int Lesson::check(const std::string& what, double max_diff, double tol) {
    const bool ok = max_diff <= tol;
    char tolerance[32] = "exact";
    if (tol > 0) std::snprintf(tolerance, sizeof tolerance, "tolerance %.0e", tol);
    std::printf("\n%s, max |diff| = %.3g against %s (%s)\n", ok ? "OK" : "FAILED",
                max_diff, what.c_str(), tolerance);
    return ok ? 0 : 1;
}

int Lesson::claim(const std::string& what, bool holds) {
    std::printf("%s, %s\n", holds ? "OK" : "FAILED", what.c_str());
    return holds ? 0 : 1;
}

int run(int argc, char** argv, const Info& info,
        const std::function<int(Lesson&)>& body) {
    try {
        bool help = false;
        const Options o = parse(argc, argv, info, help);
        if (help) {
            usage(info);
            return 0;
        }
        if (info.flags_fit && !info.flags_fit(o).empty()) throw BadFlag(info.flags_fit(o));
        // A lesson's own stages at the articles' sizes free and ask again for the
        // same large blocks: kept, they are not faulted in afresh each time.
        mha::fast::keep_freed_memory();
        Lesson l(o, info);
        l.print_header();
        const int rc = body(l);
        if (o.predict) std::printf("\n%s\n", l.predictions().c_str());
        return rc;
    } catch (const BadFlag& e) {
        std::fprintf(stderr, "%s: %s\n", info.name.c_str(), e.what());
        return 2;
    } catch (const std::invalid_argument& e) {
        std::fprintf(stderr, "%s: %s\n", info.name.c_str(), e.what());
        return 2;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "%s: error: %s\n", info.name.c_str(), e.what());
        return 1;
    }
}

}  // namespace lesson
