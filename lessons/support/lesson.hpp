// What every lesson shares: the flags, the step printout (tensor name and
// shape, the PyTorch line, the C++ line), tiny-size numbers, the terminal
// and SVG pictures, --pause, and the closing self-check.
#pragma once

#include <cstdint>
#include <functional>
#include <iostream>
#include <string>
#include <type_traits>
#include <vector>

#include "mha/shape.hpp"

namespace lesson {

/// The flags every lesson takes.
struct Options {
    std::size_t batch = 128, time = 64, d_model = 512, heads = 8;
    std::uint64_t seed = 0;
    bool tiny = false;     // batch 1, time 4, d_model 8, 2 heads; print numbers
    bool pause = false;    // wait for Enter between sections
    std::string svg_dir;   // write pictures here (lessons 04, 05)
    std::string dump_dir;  // write every tensor a step shows as .npy here
};

/// A lesson's name, one-line summary and whether it draws pictures.
struct Info {
    std::string name;
    std::string summary;
    bool draws = false;
};

/// What a step shows of its tensor: at --tiny its numbers too, or its shape
/// only (a tensor too large, or not the point, to print).
enum class Show { numbers, shape_only };

class Lesson;
/// Parses the flags, runs @p body, and turns every error into one line and
/// an exit code: 2 for bad flags or shapes, 1 for anything else.
int run(int argc, char** argv, const Info& info,
        const std::function<int(Lesson&)>& body);

/// One tensor's numbers, flattened, with its shape: what step() prints.
struct Values {
    std::vector<std::size_t> shape;
    std::vector<float> data;
    bool flags = false;  // a bool mask: print 0 and 1
    template <class T>
    static Values of(const T& t, bool with_data) {
        Values v;
        v.flags = std::is_same<typename T::value_type, bool>::value;
        v.shape.assign(t.shape().begin(), t.shape().end());
        if (with_data) v.data.assign(t.begin(), t.end());
        return v;
    }
};

class Lesson {
public:
    explicit Lesson(const Options& o) : opt(o) {}
    const Options opt;

    /// "== 2. Split into heads ==" (and, with --pause, wait for Enter).
    void section(const std::string& title);
    /// A paragraph of prose, wrapped to 88 columns.
    void say(const std::string& text);
    /// The PyTorch line and the C++ line of a step that makes no tensor.
    /// The C++ line is code of this lesson (tests check it in the source).
    void code(const std::string& torch, const std::string& cpp);
    /// The same for C++ that is not in the lesson (what it would take, or a
    /// bug it does not commit): printed as "C++ sketch:".
    void sketch(const std::string& torch, const std::string& cpp);
    /// A step: `lhs  name.shape = [...]`, then the PyTorch and C++ lines;
    /// at --tiny also the numbers, unless @p show is Show::shape_only.
    /// With --dump DIR the tensor is also written to DIR/NN_name.npy.
    template <class T>
    void step(const std::string& lhs, const std::string& name, const T& t,
              const std::string& torch, const std::string& cpp,
              Show show = Show::numbers) {
        const bool print = show == Show::numbers && opt.tiny;
        step_values(lhs, name, Values::of(t, print || !opt.dump_dir.empty()), torch,
                    cpp, print);
    }
    /// An earlier stage done by the core in one line: shape only.
    template <class T>
    void recap(const std::string& lhs, const std::string& name, const T& t,
               const std::string& cpp) {
        step_values(lhs, name, Values::of(t, !opt.dump_dir.empty()), "", cpp, false);
    }
    /// A grid picture of a [rows, cols] matrix with values in [0, 1]:
    /// shaded cells in the terminal, and DIR/<file>.svg with --svg DIR.
    void picture(const std::string& title, const std::string& file,
                 const std::vector<std::vector<float>>& m,
                 const std::string& row_label, const std::string& col_label);
    /// The closing self-check: prints "OK, max |diff| = ..." and returns
    /// the exit code (0 when max_diff <= tol).
    int check(const std::string& what, double max_diff, double tol);
    /// A self-check of a claim the lesson makes: prints "OK, <what>" or
    /// "FAILED, <what>" and returns the exit code (0 when it holds).
    int claim(const std::string& what, bool holds);

private:
    void step_values(const std::string& lhs, const std::string& name,
                     const Values& v, const std::string& torch,
                     const std::string& cpp, bool numbers);
    int sections_ = 0;
    int dumped_ = 0;
};

/// @p x with @p digits decimals, for sentences: fixed(0.61237) is "0.612".
std::string fixed(double x, int digits = 3);

}  // namespace lesson
