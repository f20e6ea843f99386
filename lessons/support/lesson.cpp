// The lesson frame: flags, printing, pictures, self-check.
#include "lesson.hpp"

#include <xtensor/xadapt.hpp>

#include "mha/heads.hpp"
#include "mha/io/npy.hpp"

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

std::size_t parse_size(const std::string& flag, const char* text,
                       std::size_t max) {
    if (text == nullptr) throw BadFlag(flag + " needs a value");
    errno = 0;
    char* end = nullptr;
    const long long v = std::strtoll(text, &end, 10);
    if (end == text || *end != '\0' || errno == ERANGE) {
        throw BadFlag(flag + " takes a whole number, not '" + text + "'");
    }
    if (v < 1 || static_cast<unsigned long long>(v) > max) {
        throw BadFlag(flag + " must be between 1 and " + std::to_string(max) +
                      ", not " + text);
    }
    return static_cast<std::size_t>(v);
}

void usage(const Info& info) {
    std::printf(
        "%s: %s\n\n"
        "usage: %s [--tiny] [--batch B] [--time T] [--d-model E] [--heads H]\n"
        "          [--seed S] [--pause] [--dump DIR]%s [--help]\n\n"
        "  --tiny       batch 1, time 4, d_model 8, 2 heads; prints the numbers\n"
        "  --batch B    batch size (default 128)\n"
        "  --time T     sequence length (default 64)\n"
        "  --d-model E  embedding size d_model (default 512)\n"
        "  --heads H    number of heads; must divide d_model (default 8)\n"
        "  --seed S     seed for the data and the weights (default 0)\n"
        "  --pause      wait for Enter between sections, for class\n"
        "  --dump DIR   also save every tensor shown as DIR/NN_name.npy (float32)\n"
        "%s"
        "  --help       this text\n",
        info.name.c_str(), info.summary.c_str(), info.name.c_str(),
        info.draws ? " [--svg DIR]" : "",
        info.draws ? "  --svg DIR    also write the pictures as SVG files in DIR\n"
                   : "");
}

// A folder flag's value: created if missing, and it must be writable.
std::string folder(const std::string& flag, const char* value) {
    if (value == nullptr) throw BadFlag(flag + " needs a folder");
    std::error_code ec;
    std::filesystem::create_directories(value, ec);
    if (ec || access(value, W_OK) != 0) {
        throw BadFlag(flag + ": cannot write to the folder '" + value + "'" +
                      (ec ? ": " + ec.message() : ""));
    }
    return value;
}

Options parse(int argc, char** argv, const Info& info, bool& help) {
    Options o;
    bool sized = false;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        const char* next = i + 1 < argc ? argv[i + 1] : nullptr;
        auto value = [&](std::size_t max) {
            ++i;
            sized = true;
            return parse_size(a, next, max);
        };
        if (a == "--help" || a == "-h") help = true;
        else if (a == "--tiny") o.tiny = true;
        else if (a == "--pause") o.pause = true;
        else if (a == "--batch") o.batch = value(4096);
        else if (a == "--time") o.time = value(4096);
        else if (a == "--d-model") o.d_model = value(8192);
        else if (a == "--heads") o.heads = value(8192);
        else if (a == "--seed") { ++i; o.seed = parse_size(a, next, 1ULL << 62) ; }
        else if (a == "--svg" && info.draws) o.svg_dir = folder(a, next), ++i;
        else if (a == "--dump") o.dump_dir = folder(a, next), ++i;
        else {
            throw BadFlag("unknown flag '" + a + "' (try --help)");
        }
    }
    if (o.tiny && sized) {
        throw BadFlag("--tiny sets the sizes itself; drop --batch/--time/"
                      "--d-model/--heads, or drop --tiny");
    }
    if (o.tiny) o = Options{1, 4, 8, 2, o.seed, true, o.pause, o.svg_dir, o.dump_dir};
    if (o.heads > o.d_model) {
        throw BadFlag("--heads " + std::to_string(o.heads) +
                      " is more than --d-model " + std::to_string(o.d_model) +
                      ": each head needs at least one of the d_model numbers");
    }
    mha::head_dim_for(o.d_model, o.heads);  // says which H divide d_model
    // About ten [B, T, E] tensors and three [B, H, T, T] live at once.
    const double bytes = 4.0 * (10.0 * o.batch * o.time * o.d_model +
                                3.0 * o.batch * o.heads * o.time * o.time);
    if (bytes > 4e9) {
        char gb[32];
        std::snprintf(gb, sizeof gb, "%.1f", bytes / 1e9);
        throw BadFlag(std::string("these sizes need about ") + gb +
                      " GB, over the 4 GB limit: lower --batch, --time or "
                      "--d-model");
    }
    return o;
}

// Display width of UTF-8 text: count the bytes that start a character.
int columns(const std::string& s) {
    int n = 0;
    for (unsigned char c : s) n += (c & 0xC0) != 0x80;
    return n;
}

std::string fmt(float x, bool flag) {
    char buf[32];
    if (flag) return x != 0.0f ? "1" : "0";
    if (std::isinf(x)) return x < 0 ? "-inf" : "inf";
    std::snprintf(buf, sizeof buf, "%.3f", x);
    return buf;
}

// At --tiny, the numbers: one [rows, cols] matrix per leading index.
void print_numbers(const Values& v) {
    const std::size_t rank = v.shape.size();
    const std::size_t cols = rank >= 1 ? v.shape[rank - 1] : 1;
    const std::size_t rows = rank >= 2 ? v.shape[rank - 2] : 1;
    const std::size_t blocks = v.data.size() / (rows * cols);
    for (std::size_t blk = 0; blk < blocks; ++blk) {
        if (rank > 2) {
            std::vector<std::size_t> idx(rank - 2);
            std::size_t r = blk;
            for (std::size_t d = rank - 2; d-- > 0;) {
                idx[d] = r % v.shape[d];
                r /= v.shape[d];
            }
            std::string label = "    [";
            for (std::size_t i : idx) label += std::to_string(i) + ", ";
            std::printf("%s:, :]\n", label.c_str());
        }
        for (std::size_t i = 0; i < rows; ++i) {
            std::string line = "      ";
            for (std::size_t j = 0; j < cols; ++j) {
                std::string s = fmt(v.data[(blk * rows + i) * cols + j], v.flags);
                const std::size_t w = v.flags ? 2 : 7;
                line += std::string(s.size() < w ? w - s.size() : 0, ' ') + s;
                if (j + 1 < cols) line += ' ';
            }
            std::printf("%s\n", line.c_str());
        }
    }
}

const char* shade(float x) {
    if (!(x > 0.0f)) return "  ";
    if (x < 0.1f) return "\u2591\u2591";  // light
    if (x < 0.3f) return "\u2592\u2592";  // medium
    if (x < 0.6f) return "\u2593\u2593";  // dark
    return "\u2588\u2588";                // full
}

}  // namespace

void Lesson::section(const std::string& title) {
    if (opt.pause && sections_ > 0) {
        std::printf("(press Enter)");
        std::fflush(stdout);
        std::string ignored;
        std::getline(std::cin, ignored);
    }
    ++sections_;
    std::printf("\n== %s %s\n", title.c_str(),
                std::string(std::max(3, kWidth - 4 - columns(title)), '=').c_str());
}

void Lesson::say(const std::string& text) {
    std::istringstream words(text);
    std::string word, line;
    while (words >> word) {
        if (!line.empty() && columns(line) + 1 + columns(word) > kWidth - 2) {
            std::printf("%s\n", line.c_str());
            line.clear();
        }
        line += (line.empty() ? "" : " ") + word;
    }
    if (!line.empty()) std::printf("%s\n", line.c_str());
}

void Lesson::code(const std::string& torch, const std::string& cpp) {
    std::printf("    PyTorch: %s\n    C++    : %s\n", torch.c_str(), cpp.c_str());
}

void Lesson::sketch(const std::string& torch, const std::string& cpp) {
    std::printf("    PyTorch: %s\n    C++ sketch: %s\n", torch.c_str(), cpp.c_str());
}

std::string fixed(double x, int digits) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.*f", digits, x);
    return buf;
}

void Lesson::step_values(const std::string& lhs, const std::string& name,
                         const Values& v, const std::string& torch,
                         const std::string& cpp, bool numbers) {
    const std::string right = name + ".shape = " + mha::shape_str(v.shape);
    const int pad = std::max(2, kWidth - columns(lhs) - columns(right));
    std::printf("%s%s%s\n", lhs.c_str(), std::string(pad, ' ').c_str(),
                right.c_str());
    if (!torch.empty()) std::printf("    PyTorch: %s\n", torch.c_str());
    if (!cpp.empty()) std::printf("    C++    : %s\n", cpp.c_str());
    if (numbers) print_numbers(v);
    if (!opt.dump_dir.empty()) {
        char file[16];
        std::snprintf(file, sizeof file, "%02d_", ++dumped_);
        const std::string path = opt.dump_dir + "/" + file + name + ".npy";
        mha::save_npy(path, xt::adapt(v.data, v.shape));
        std::printf("    saved %s\n", path.c_str());
    }
}

void Lesson::picture(const std::string& title, const std::string& file,
                     const std::vector<std::vector<float>>& m,
                     const std::string& row_label,
                     const std::string& col_label) {
    const std::size_t rows = m.size(), cols = rows ? m[0].size() : 0;
    const std::size_t shown = std::min<std::size_t>(rows, 20);
    const std::size_t shown_cols = std::min<std::size_t>(cols, 20);
    std::printf("%s  (%s down, %s across%s)\n", title.c_str(), row_label.c_str(),
                col_label.c_str(),
                shown < rows || shown_cols < cols ? "; first cells only" : "");
    for (std::size_t i = 0; i < shown; ++i) {
        std::string line = "  ";
        for (std::size_t j = 0; j < shown_cols; ++j) line += shade(m[i][j]);
        std::printf("%s|\n", line.c_str());
    }
    std::printf("  key: '  ' 0   \u2591 <.1   \u2592 <.3   \u2593 <.6   \u2588 >=.6\n");
    if (opt.svg_dir.empty()) return;
    const std::string path = opt.svg_dir + "/" + file + ".svg";
    std::ofstream svg(path);
    if (!svg) throw std::runtime_error("cannot write " + path);
    const int cell = static_cast<int>(std::max<std::size_t>(4, 320 / std::max(rows, cols)));
    const int w = int(cols) * cell + 60, h = int(rows) * cell + 60;
    svg << "<svg xmlns='http://www.w3.org/2000/svg' width='" << w
        << "' height='" << h << "' font-family='sans-serif' font-size='12'>\n"
        << "<text x='40' y='16'>" << title << "</text>\n"
        << "<text x='40' y='" << h - 6 << "'>" << col_label << " \u2192</text>\n"
        << "<text x='14' y='" << 40 + rows * cell / 2
        << "' transform='rotate(90 14," << 40 + rows * cell / 2 << ")'>"
        << row_label << " \u2192</text>\n";
    for (std::size_t i = 0; i < rows; ++i)
        for (std::size_t j = 0; j < cols; ++j) {
            const float x = std::isfinite(m[i][j]) ? m[i][j] : 0.0f;
            const int g = 255 - static_cast<int>(std::lround(
                                    std::min(1.0f, std::max(0.0f, x)) * 255));
            svg << "<rect x='" << 40 + int(j) * cell << "' y='" << 24 + int(i) * cell
                << "' width='" << cell << "' height='" << cell << "' fill='rgb("
                << g << ',' << g << ',' << g << ")' stroke='#ccc'/>\n";
        }
    svg << "</svg>\n";
    std::printf("  wrote %s\n", path.c_str());
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
        Lesson l(o);
        std::printf("%s: %s\n", info.name.c_str(), info.summary.c_str());
        std::printf("sizes: batch B = %zu, time T = %zu, d_model E = %zu, "
                    "heads H = %zu, seed %llu\n",
                    o.batch, o.time, o.d_model, o.heads,
                    static_cast<unsigned long long>(o.seed));
        return body(l);
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
