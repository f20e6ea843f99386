// check_lesson: runs one lesson and checks what it printed.
//
//   check_lesson [--exit N] [--max-width W] [--max-section-rows R] [--max-lines M]
//                [--expect TEXT]... [--reject TEXT]... [--numbers NAME]...
//                [--stdin TEXT] [--save FILE]
//                [--shapes FILE --lesson NAME] [--source FILE]
//                -- PROGRAM [ARGS...]
//   check_lesson [flags] --from FILE
//
// Fails (exit 1, with the reason) when the program's exit code is not N
// (default 0; 77, a lesson skipped for want of its data, is passed on),
// when an output line is wider than W columns (default 90),
// when the output has more than M lines (a tool's error: M = 1),
// when a line opens a '[' it does not close (a shape split by wrapping),
// when a section ("== title ==", from the blank line before it to the next
// one, plus the row of --pause's prompt and the lines before the first
// section, the title and sizes that --pause repeats on every screen) takes
// more than R rows (default 30, a projector's screen; the lines "  wrote DIR/NAME.svg"
// of --svg not counted), when a TEXT is not found in the output or a
// --reject TEXT is, when the shape lines that FILE lists for NAME do not
// appear in the output in that order, when a printed "C++    : " line is
// not code of the --source file (compared with all whitespace removed,
// against the file without its comments and string literals, so that the
// printed string cannot vouch for itself; "C++ sketch: " lines are exempt)
// or is also one of its string literals (C++ typed twice, not SHOWN()),
// or when a relation line "  a = X against b = Y: ratio R, [not ]within P%"
// has a ratio that is not X / Y or a verdict its numbers do not give, or
// when a step "NAME.shape = [...]" of a --numbers NAME is missing or not
// followed, past its PyTorch and C++ lines, by its numbers (--tiny's).
// stdout and stderr are checked together; the program's stdin is --stdin's
// TEXT (\n for newlines), or empty. --save FILE writes "exit N" and the
// output to FILE before any check, for other tests to read (a run shared by
// several checks: tests/exercises.cmake reads the lessons' runs); --from FILE
// checks such a saved run instead of running a program.
#include <sys/wait.h>

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "support/text_width.hpp"

namespace {

using lesson::columns;

std::string quote(const std::string& s) {
    std::string q = "'";
    for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
    return q + "'";
}

// The code of a C++ file: comments and string and character literals
// removed, then every whitespace character.
std::string code_only(const std::string& src) {
    std::string out;
    for (std::size_t i = 0; i < src.size(); ++i) {
        const char c = src[i];
        if (c == '/' && i + 1 < src.size() && src[i + 1] == '/') {
            while (i < src.size() && src[i] != '\n') ++i;
        } else if (c == '/' && i + 1 < src.size() && src[i + 1] == '*') {
            i = src.find("*/", i + 2);
            if (i == std::string::npos) break;
            ++i;
        } else if (c == '"' || c == '\'') {
            for (++i; i < src.size() && src[i] != c; ++i)
                if (src[i] == '\\') ++i;
        } else if (!std::isspace(static_cast<unsigned char>(c))) {
            out += c;
        }
    }
    return out;
}

std::string without_spaces(const std::string& s) {
    std::string out;
    for (char c : s)
        if (!std::isspace(static_cast<unsigned char>(c))) out += c;
    return out;
}

// The string literals of a C++ file, each without whitespace and a final ';',
// adjacent ones ("a" "b") joined: a printed C++ line found among them was
// typed a second time as a string, not handed over by SHOWN().
std::set<std::string> literals_of(const std::string& src) {
    std::set<std::string> out;
    std::string lit;
    bool open = false;  // a literal ended and only whitespace followed so far
    const auto close = [&] {
        if (!lit.empty() && lit.back() == ';') lit.pop_back();
        if (open) out.insert(lit);
        lit.clear(), open = false;
    };
    for (std::size_t i = 0; i < src.size(); ++i) {
        const char c = src[i];
        if (c == '/' && i + 1 < src.size() && src[i + 1] == '/') {
            close();
            i = src.find('\n', i);
            if (i == std::string::npos) break;
        } else if (c == '/' && i + 1 < src.size() && src[i + 1] == '*') {
            close();
            i = src.find("*/", i + 2);
            if (i == std::string::npos) break;
            ++i;
        } else if (c == '"' || c == '\'') {
            std::string text;
            for (++i; i < src.size() && src[i] != c; ++i) {
                if (src[i] == '\\') text += src[i++];
                if (i < src.size()) text += src[i];
            }
            if (c == '"') lit += without_spaces(text), open = true;
            else close();
        } else if (!std::isspace(static_cast<unsigned char>(c))) {
            close();
        }
    }
    close();
    return out;
}

int fail(const std::string& why) {
    std::fprintf(stderr, "check_lesson: %s\n", why.c_str());
    return 1;
}

}  // namespace

int main(int argc, char** argv) {
    int want_exit = 0, max_width = 90, max_rows = 30, max_lines = -1;
    std::vector<std::string> expects, rejects, numbers;
    std::string input;
    std::string shapes_file, lesson, source_file, save_file, from_file, command;
    int i = 1;
    for (; i < argc && std::string(argv[i]) != "--"; ++i) {
        const std::string a = argv[i];
        if (i + 1 >= argc) return fail("flag " + a + " needs a value");
        if (a == "--exit") want_exit = std::atoi(argv[++i]);
        else if (a == "--max-width") max_width = std::atoi(argv[++i]);
        else if (a == "--max-lines") max_lines = std::atoi(argv[++i]);
        else if (a == "--expect") expects.push_back(argv[++i]);
        else if (a == "--reject") rejects.push_back(argv[++i]);
        else if (a == "--numbers") numbers.push_back(argv[++i]);
        else if (a == "--max-section-rows") max_rows = std::atoi(argv[++i]);
        else if (a == "--stdin") input = argv[++i];
        else if (a == "--shapes") shapes_file = argv[++i];
        else if (a == "--lesson") lesson = argv[++i];
        else if (a == "--source") source_file = argv[++i];
        else if (a == "--save") save_file = argv[++i];
        else if (a == "--from") from_file = argv[++i];
        else return fail("unknown flag " + a);
    }
    std::string out;
    int code = 0;
    if (!from_file.empty()) {
        if (i < argc || !save_file.empty() || !input.empty())
            return fail("--from FILE takes no program, --save or --stdin");
        std::ifstream saved(from_file, std::ios::binary);
        std::string head;
        if (!std::getline(saved, head) || head.rfind("exit ", 0) != 0)
            return fail("--from " + from_file + ": no saved run ('exit N' first)");
        code = std::atoi(head.c_str() + 5);
        out.assign(std::istreambuf_iterator<char>(saved), {});
        std::fwrite(out.data(), 1, out.size(), stdout);  // for --output-on-failure
    } else {
        if (i + 1 >= argc) return fail("usage: check_lesson [flags] -- PROGRAM [ARGS]");
        for (++i; i < argc; ++i) command += quote(argv[i]) + " ";
        std::string text;  // --stdin's TEXT, with \n made newlines
        for (std::size_t k = 0; k < input.size(); ++k) {
            if (input[k] == '\\' && k + 1 < input.size() && input[k + 1] == 'n')
                text += '\n', ++k;
            else
                text += input[k];
        }
        char stdin_file[] = "/tmp/check_lesson_stdin_XXXXXX";
        const int fd = mkstemp(stdin_file);
        if (fd < 0) return fail("cannot make a file for --stdin");
        if (write(fd, text.data(), text.size()) != static_cast<ssize_t>(text.size())) {
            close(fd);
            return fail("cannot write the file for --stdin");
        }
        close(fd);
        command += "2>&1 <" + quote(stdin_file);

        FILE* pipe = popen(command.c_str(), "r");
        if (pipe == nullptr) return fail("cannot run " + command);
        char buf[4096];
        for (std::size_t n; (n = std::fread(buf, 1, sizeof buf, pipe)) > 0;)
            out.append(buf, n);
        const int status = pclose(pipe);
        unlink(stdin_file);
        code = WIFEXITED(status) ? WEXITSTATUS(status) : 128;
        std::fwrite(out.data(), 1, out.size(), stdout);  // for --output-on-failure
        if (!save_file.empty()) {
            std::ofstream saved(save_file, std::ios::binary);
            saved << "exit " << code << '\n' << out;
            if (!saved) return fail("cannot write --save " + save_file);
        }
    }

    if (code == 77 && want_exit != 77) return 77;  // skipped (it printed why)
    if (code != want_exit) {
        return fail("exit code " + std::to_string(code) + ", expected " +
                    std::to_string(want_exit));
    }
    std::istringstream lines(out);
    std::string line;
    for (int n = 1; std::getline(lines, line); ++n) {
        if (columns(line) > max_width) {
            return fail("line " + std::to_string(n) + " is " +
                        std::to_string(columns(line)) + " columns wide (max " +
                        std::to_string(max_width) + "): " + line);
        }
    }
    const long lines_out = std::count(out.begin(), out.end(), '\n') +
                           (!out.empty() && out.back() != '\n');
    if (max_lines >= 0 && lines_out > max_lines) {
        return fail(std::to_string(lines_out) + " lines printed, at most " +
                    std::to_string(max_lines) + " expected");
    }
    for (const std::string& e : expects)
        if (out.find(e) == std::string::npos) return fail("missing: " + e);
    for (const std::string& r : rejects)
        if (out.find(r) != std::string::npos) return fail("printed, and must not be: " + r);
    std::vector<std::string> all;
    {
        std::istringstream split(out);
        for (std::string l; std::getline(split, l);) all.push_back(l);
    }
    for (std::size_t n = 0; n < all.size(); ++n) {
        int depth = 0;
        for (char c : all[n]) depth += c == '[' ? 1 : c == ']' ? -1 : 0;
        if (depth > 0) return fail("line " + std::to_string(n + 1) + " opens a '[' it does not "
                                   "close (a shape split across lines?): " + all[n]);
    }
    // The screens are those of a run without --svg: the lines naming the pictures
    // written ("  wrote DIR/NAME.svg") are not counted.
    std::vector<std::size_t> screen;  // the line numbers of the rows shown
    for (std::size_t n = 0; n < all.size(); ++n) {
        const std::string& l = all[n];
        const bool wrote = l.rfind("  wrote ", 0) == 0 && l.size() > 12 &&
                           l.compare(l.size() - 4, 4, ".svg") == 0;
        if (!wrote) screen.push_back(n);
    }
    std::vector<std::size_t> starts = {0};  // where each section's rows begin, in screen
    for (std::size_t n = 1; n < screen.size(); ++n)
        if (all[screen[n]].rfind("== ", 0) == 0 && all[screen[n - 1]].empty())
            starts.push_back(n - 1);
    starts.push_back(screen.size());
    const std::size_t head = starts.size() > 2 ? starts[1] : 0;  // the title and sizes
    for (std::size_t k = starts.size() > 2 ? 1 : 0; k + 1 < starts.size(); ++k) {
        // + the prompt's row, + the title and sizes on top of the screen
        const std::size_t rows = starts[k + 1] - starts[k] + 1 + head;
        if (rows > static_cast<std::size_t>(max_rows)) {
            const std::size_t first = starts[k] + 1 < screen.size() ? screen[starts[k] + 1] : 0;
            return fail("the section from line " + std::to_string(screen[starts[k]] + 1) +
                        " takes " + std::to_string(rows) + " rows (max " +
                        std::to_string(max_rows) + "): " + (first ? all[first] : ""));
        }
    }
    for (const std::string& name : numbers) {
        std::size_t n = 0;
        while (n < all.size() && all[n].find(" " + name + ".shape = [") == std::string::npos) ++n;
        if (n == all.size()) return fail("no step shows " + name + ".shape");
        ++n;
        while (n < all.size() && (all[n].rfind("    PyTorch: ", 0) == 0 ||
                                  all[n].rfind("    C++", 0) == 0))
            ++n;
        // a block's label "    [0, :, :]", or a row of numbers "      -0.252 ..."
        static const std::regex row(
            R"(^    \[[0-9, :]+\]|^ +-?([0-9]+\.[0-9]+|inf|nan|[01])( |$))");
        if (n == all.size() || !std::regex_search(all[n], row))
            return fail("the step " + name + " shows no numbers: " +
                        (n < all.size() ? all[n] : std::string("(end)")));
    }
    const std::regex relation(
        R"(^  (.*) = (\S+) against (.*) = (\S+): ratio (\S+), (not )?within (\S+)%$)");
    for (const std::string& l : all) {
        std::smatch m;
        if (!std::regex_match(l, m, relation)) continue;
        const double a = std::stod(m[2]), b = std::stod(m[4]), ratio = std::stod(m[5]);
        const double tol = std::stod(m[7]) / 100;
        // The sides are printed with 4 significant digits, the ratio with 3
        // decimals: recompute within what that printing allows.
        const double exact = a / b, slack = 1e-3 * (1 + std::fabs(exact)) + 5e-4;
        if (std::fabs(ratio - exact) > slack) {
            return fail("relation line: " + std::string(m[2]) + " / " + std::string(m[4]) +
                        " is not " + std::string(m[5]) + ": " + l);
        }
        const bool within = std::fabs(ratio - 1) <= tol;
        if (within == m[6].matched) return fail("relation line: wrong verdict: " + l);
    }
    if (!source_file.empty()) {
        std::ifstream f(source_file);
        if (!f) return fail("cannot read " + source_file);
        const std::string src(std::istreambuf_iterator<char>(f), {});
        const std::string code = code_only(src);
        const std::set<std::string> typed = literals_of(src);
        const std::string prefix = "    C++    : ";
        std::istringstream printed(out);
        std::size_t checked = 0;
        while (std::getline(printed, line)) {
            if (line.rfind(prefix, 0) != 0) continue;
            const std::string shown = line.substr(prefix.size());
            // SHOWN(L, stmt) prints "stmt;" where the source has "stmt)"
            std::string bare = without_spaces(shown);
            if (!bare.empty() && bare.back() == ';') bare.pop_back();
            if (code.find(bare) == std::string::npos) {
                return fail("the lesson prints 'C++    : " + shown + "' but " +
                            source_file + " has no such code (print it as "
                            "'C++ sketch: ' if it is not the lesson's own)");
            }
            if (typed.count(bare) != 0) {
                return fail("the lesson prints 'C++    : " + shown + "' from a string "
                            "literal of " + source_file + ": C++ typed a second time "
                            "(run the statement with SHOWN() and print that)");
            }
            ++checked;
        }
        if (checked == 0) return fail("no 'C++    : ' line to check in the output");
    }
    if (!shapes_file.empty()) {
        std::ifstream f(shapes_file);
        if (!f) return fail("cannot read " + shapes_file);
        std::size_t from = 0, found = 0;
        while (std::getline(f, line)) {
            // "<lesson> <name>.shape = [...]  # the PyTorch expression"
            if (line.rfind(lesson + " ", 0) != 0) continue;
            std::string want = line.substr(lesson.size() + 1);
            want = want.substr(0, want.find("  #"));
            const std::size_t at = out.find(want, from);
            if (at == std::string::npos) {
                return fail("PyTorch gives '" + want +
                            "' but the lesson does not print it (in order)");
            }
            from = at + want.size();
            ++found;
        }
        if (found == 0) return fail("no shapes for " + lesson + " in " + shapes_file);
    }
    return 0;
}
