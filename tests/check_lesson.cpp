// check_lesson: runs one lesson and checks what it printed.
//
//   check_lesson [--exit N] [--max-width W] [--expect TEXT]...
//                [--shapes FILE --lesson NAME] -- PROGRAM [ARGS...]
//
// Fails (exit 1, with the reason) when the program's exit code is not N
// (default 0), when an output line is wider than W columns (default 90),
// when a TEXT is not found in the output, or when the shape lines that FILE
// lists for NAME do not appear in the output in that order. stdout and
// stderr are checked together.
#include <sys/wait.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace {

int columns(const std::string& s) {  // UTF-8 characters, not bytes
    int n = 0;
    for (unsigned char c : s) n += (c & 0xC0) != 0x80;
    return n;
}

std::string quote(const std::string& s) {
    std::string q = "'";
    for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
    return q + "'";
}

int fail(const std::string& why) {
    std::fprintf(stderr, "check_lesson: %s\n", why.c_str());
    return 1;
}

}  // namespace

int main(int argc, char** argv) {
    int want_exit = 0, max_width = 90;
    std::vector<std::string> expects;
    std::string shapes_file, lesson, command;
    int i = 1;
    for (; i < argc && std::string(argv[i]) != "--"; ++i) {
        const std::string a = argv[i];
        if (i + 1 >= argc) return fail("flag " + a + " needs a value");
        if (a == "--exit") want_exit = std::atoi(argv[++i]);
        else if (a == "--max-width") max_width = std::atoi(argv[++i]);
        else if (a == "--expect") expects.push_back(argv[++i]);
        else if (a == "--shapes") shapes_file = argv[++i];
        else if (a == "--lesson") lesson = argv[++i];
        else return fail("unknown flag " + a);
    }
    if (i + 1 >= argc) return fail("usage: check_lesson [flags] -- PROGRAM [ARGS]");
    for (++i; i < argc; ++i) command += quote(argv[i]) + " ";
    command += "2>&1 </dev/null";

    FILE* pipe = popen(command.c_str(), "r");
    if (pipe == nullptr) return fail("cannot run " + command);
    std::string out;
    char buf[4096];
    for (std::size_t n; (n = std::fread(buf, 1, sizeof buf, pipe)) > 0;)
        out.append(buf, n);
    const int status = pclose(pipe);
    const int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128;
    std::fwrite(out.data(), 1, out.size(), stdout);  // for --output-on-failure

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
    for (const std::string& e : expects)
        if (out.find(e) == std::string::npos) return fail("missing: " + e);
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
