// The checker's frame: comparing, reporting the first failing case, hints.
#include "check.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <exception>
#include <map>
#include <sstream>

#include "mha/fast/memory.hpp"
#include "mha/init.hpp"

namespace check {

namespace {

// A student's float sums run in another order than the core's BLAS: allow
// 1e-4, relative to the size of the number.
constexpr double kTolerance = 1e-4;

bool close(float got, float want) {
    if (got == want) return true;  // also -inf against -inf
    if (std::isnan(got) || std::isnan(want)) return std::isnan(got) && std::isnan(want);
    if (std::isinf(got) || std::isinf(want)) return false;  // and not equal
    return std::fabs(double(got) - double(want)) <= kTolerance * (1.0 + std::fabs(double(want)));
}

// The index of the first element that differs, or -1 when all are close.
long first_wrong(const Result& got, const Result& want) {
    for (std::size_t i = 0; i < want.data.size(); ++i)
        if (!close(got.data[i], want.data[i])) return long(i);
    return -1;
}

bool same(const Result& a, const Result& b) {
    return a.shape == b.shape && first_wrong(a, b) == -1;
}

std::string index_str(const std::vector<std::size_t>& shape, std::size_t flat) {
    std::vector<std::size_t> idx(shape.size());
    for (std::size_t d = shape.size(); d-- > 0;) {
        idx[d] = flat % shape[d];
        flat /= shape[d];
    }
    return mha::shape_str(idx);
}

std::string num(float x) {
    if (std::isnan(x)) return "NaN";
    std::ostringstream s;
    s.precision(6);
    s << x;
    return s.str();
}

// Prints text in lines of at most 90 columns, the first after `lead`, the
// rest indented to match it.
void say(const std::string& lead, const std::string& text) {
    const std::size_t width = 90, indent = lead.size();
    std::string line = lead;
    std::istringstream words(text);
    std::string w, more;
    bool first = true;
    while (words >> w) {
        // a shape [B, H, T, D] stays on one line
        while (std::count(w.begin(), w.end(), '[') > std::count(w.begin(), w.end(), ']') &&
               words >> more)
            w += " " + more;
        if (!first && line.size() + 1 + w.size() > width) {
            std::printf("%s\n", line.c_str());
            line = std::string(indent, ' ');
            first = true;
        }
        line += (first ? "" : " ") + w;
        first = false;
    }
    std::printf("%s\n", line.c_str());
}

// The outputs of a run, or the message it threw.
bool attempt(const std::function<Outputs()>& run, Outputs& out, std::string& error) {
    try {
        out = run();
        return true;
    } catch (const std::exception& e) {
        error = e.what();
        return false;
    }
}

// The core's outputs and the mistakes', by exercise, case and mistake: a process
// that checks several functions of one exercise (tests/workbook/mistakes.cpp,
// every usual mistake in turn) computes them once. The student's never.
bool attempt_once(const std::string& key, const std::function<Outputs()>& run, Outputs& out,
                  std::string& error) {
    static std::map<std::string, Outputs> done;
    if (const auto it = done.find(key); it != done.end()) {
        out = it->second;
        return true;
    }
    if (!attempt(run, out, error)) return false;
    done.emplace(key, out);
    return true;
}

const Result* find(const Outputs& outs, const std::string& name) {
    for (const auto& [n, r] : outs)
        if (n == name) return &r;
    return nullptr;
}

}  // namespace

Result number(float x) { return Result{{}, {x}}; }

int run(const std::string& title, const std::vector<Case>& cases,
        const std::string& fallback_hint) {
    // The cases at the lesson's sizes allocate the same large blocks again and
    // again: kept, they are not faulted in afresh each time.
    mha::fast::keep_freed_memory();
    const std::size_t n = cases.size();
    for (std::size_t c = 0; c < n; ++c) {
        const Case& k = cases[c];
        const std::string head = "case " + std::to_string(c + 1) + " of " +
                                 std::to_string(n) + ": " + k.name + ", " + k.shapes;
        Outputs want, got;
        std::string error;
        const std::string key = title + "|" + std::to_string(c) + " " + k.name + "|";
        if (!attempt_once(key, k.core, want, error)) {
            say("", head + ": the core threw: " + error);
            return 1;
        }
        if (!attempt(k.student, got, error)) {
            say("", head);
            say("  FAILS: ", "your code threw: " + error);
            std::printf("%s: case %zu of %zu fails\n", title.c_str(), c + 1, n);
            return 1;
        }
        // The first output that differs: by shape, or by an element.
        std::string wrong, detail;
        for (const auto& [name, w] : want) {
            const Result* g = find(got, name);
            if (g == nullptr) {
                wrong = name;
                detail = name + " is missing";
            } else if (g->shape != w.shape) {
                wrong = name;
                detail = name + " has shape " + mha::shape_str(g->shape) + ", the core's " +
                         mha::shape_str(w.shape);
            } else if (const long i = first_wrong(*g, w); i >= 0) {
                wrong = name;
                std::string at = w.shape.empty() ? "" : index_str(w.shape, std::size_t(i));
                if (!at.empty() && name.find(' ') != std::string::npos) at = " at " + at;
                detail = name + at + " = " + num(g->data[i]) + ", the core's " +
                         num(w.data[i]);
            }
            if (!wrong.empty()) break;
        }
        if (wrong.empty()) {
            say("", head + ": pass");
            continue;
        }
        say("", head);
        say("  FAILS: ", detail);
        // Which mistake gives these numbers?
        const Result& mine = *find(got, wrong);
        std::string hint;
        for (std::size_t m = 0; m < k.mistakes.size(); ++m) {
            const auto& [h, mistake] = k.mistakes[m];
            Outputs theirs;
            std::string ignored;
            if (!attempt_once(key + std::to_string(m), mistake, theirs, ignored))
                continue;  // shapes it cannot take
            // every output alike, not only the first that differs
            bool alike = theirs.size() == got.size();
            for (const auto& [name, r] : got) {
                const Result* t = find(theirs, name);
                alike = alike && t != nullptr && same(*t, r);
            }
            if (alike) {
                hint = h;
                break;
            }
        }
        bool zeros = !mine.data.empty();
        for (float x : mine.data) zeros = zeros && x == 0.0f;
        if (hint.empty() && zeros)
            hint = "all zeros: the body is still the one shipped; write it";
        if (hint.empty()) hint = fallback_hint;
        say("  hint: ", hint);
        std::printf("%s: case %zu of %zu fails\n", title.c_str(), c + 1, n);
        return 1;
    }
    std::printf("%s: all %zu cases pass\n", title.c_str(), n);
    return 0;
}

mha::Tensor4 randn4(std::size_t b, std::size_t h, std::size_t t, std::size_t d,
                    std::uint64_t seed, float scale) {
    mha::Rng rng(seed);
    mha::Tensor4 x({b, h, t, d});
    for (auto& v : x) v = scale * rng.normal();
    return x;
}

mha::Tensor3 randn3(std::size_t b, std::size_t t, std::size_t e, std::uint64_t seed) {
    mha::Rng rng(seed);
    return mha::randn(b, t, e, rng);
}

std::string shape4(std::size_t b, std::size_t h, std::size_t t, std::size_t d) {
    return mha::shape_str(std::vector<std::size_t>{b, h, t, d});
}

std::string shape3(std::size_t b, std::size_t t, std::size_t e) {
    return mha::shape_str(std::vector<std::size_t>{b, t, e});
}

}  // namespace check
