// What every lesson shares: the flags, the step printout (tensor name and
// shape, the PyTorch line, the C++ line), tiny-size numbers, pictures,
// --pause, --dump, --predict, relations printed with both sides, and the
// closing self-check.
#pragma once

#include <cstdint>
#include <functional>
#include <iostream>
#include <map>
#include <set>
#include <string>
#include <type_traits>
#include <vector>

#include "mha/shape.hpp"
#include "svg.hpp"

/// Runs a statement of a lesson and hands its text to the next step(),
/// recap() or code() as the C++ line it prints, so that the C++ shown is the
/// C++ run, written once (as doctest's CHECK prints the expression it tests):
///
///     SHOWN(L, const mha::Tensor4 W = e / sum);
///     L.step("weights = softmax(score, -1)", "weights", W, "B, H, Tq, Tk",
///            "self.softmax(score)");   // prints "C++    : const mha::Tensor4 W = e / sum;"
///
/// It expands to two statements (the declaration must stay in the lesson's
/// scope): write it on a line of its own, never as the body of an if. The
/// text is handed over first, so a statement that throws (lesson 08's
/// constructor, in a try) is still the one shown.
#define SHOWN(L, ...)                   \
    (L).shown(#__VA_ARGS__ ";");        \
    __VA_ARGS__

namespace lesson {

/// The flags every lesson takes.
struct Options {
    std::size_t batch = 128, time = 64, d_model = 512, heads = 8;
    std::uint64_t seed = 0;
    bool tiny = false;     // batch 1, time 5, d_model 8, 2 heads; print numbers
    bool pause = false;    // wait for Enter between sections
    bool predict = false;  // ask for every shape before showing it
    std::string svg_dir;   // write pictures here
    std::string dump_dir;  // write every tensor a step shows as .npy here
    std::map<std::string, double> extra;  // a lesson's own flags, by name
    std::map<std::string, std::string> text;  // its text flags given ("1" for a switch)
    std::string ignored;  // with fixed sizes, the size flags given: "--time, --seed"
};

/// A flag only one lesson takes, such as lesson 19's --steps: a number in
/// [min, max], whole when @p whole.
struct Extra {
    std::string flag, meta, help;  // "--steps", "N", "training steps"
    double value, min, max;        // the default and the range
    bool whole = true;
    double tiny_value = 0;         // the default at --tiny, when not 0
};

/// A flag only one lesson takes whose value is text, such as lesson 23's
/// --corpus FILE, or a switch taking no value (meta empty), such as --train.
struct TextFlag {
    std::string flag, meta, help;  // "--corpus", "FILE", "read poems from FILE"
};

/// A lesson's name, one-line summary, and what its flags mean for it.
struct Info {
    std::string name;     // "05_softmax": the program, and its --dump folder
    std::string summary;  // one line
    bool draws = false;   // it has pictures for --svg
    double dump_mb = 0;   // what --dump writes at the default sizes, in MB
    // The heads it runs with when --heads is not given, and whether they
    // must divide d_model (lesson 08 shows a count that does not).
    std::size_t default_heads = 8;
    bool heads_divide = true;
    // The other sizes when not given, --tiny's batch, and the lesson's own flags.
    std::size_t default_batch = 128, default_time = 64, default_d_model = 512;
    std::size_t tiny_batch = 1, tiny_time = 5, tiny_d_model = 8;
    std::vector<Extra> extra = {};
    std::vector<TextFlag> text = {};
    // Sizes set by the lesson's data (lesson 00's six words): the default_*
    // above, at --tiny too; --batch, --time, --d-model, --heads and --seed are
    // taken (so that scripts/lessons.sh can pass them to every lesson), change
    // nothing, and the header says so.
    bool fixed_sizes = false;
    std::string sizes_from = "its words";  // what sets them, for the header
    // Sizes set by sizes_from unless this says the run makes its own (lesson 24:
    // lesson::trains, data/tang's model unless it trains one); --seed still counts.
    // The header names sizes_unless_flag as what would make them count.
    std::function<bool(const Options&)> sizes_unless = nullptr;
    std::string sizes_unless_flag = "--train";
    // Flags that are each in range but do not fit together (lesson 21's
    // --vocab and --time): "" when they fit, else the one line to print.
    std::function<std::string(const Options&)> flags_fit = nullptr;
};

/// Names for a grid's rows and columns, shown in place of their indices: the
/// words of lesson 00 ("the", "cat", ...). Each empty, or one per row / column.
struct Names {
    std::vector<std::string> rows, cols;
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
    bool flags = false;  // a bool mask: print 0 and 1, dump as bool
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
    Lesson(const Options& o, const Info& i);
    const Options opt;
    const Info info;

    /// The lesson's title and sizes lines, that open its output.
    void print_header() const;
    /// "== 2. Split into heads ==" (with --pause: wait for Enter first, and
    /// on a terminal start on a clean screen under the title and sizes lines).
    void section(const std::string& title);
    /// A paragraph of prose, wrapped to 88 columns, each line indented by
    /// the text's leading spaces; a shape such as [128, 8, 64, 64] is never
    /// split across lines.
    void say(const std::string& text);
    /// The PyTorch line and the C++ line of a step that makes no tensor.
    /// The C++ line is code of this lesson (tests check it in the source).
    void code(const std::string& torch, const std::string& cpp);
    /// The same with the C++ of the last SHOWN().
    void code(const std::string& torch) { code(torch, take_shown(torch)); }
    /// Keeps @p cpp, the text of a statement SHOWN() ran, for the next step(),
    /// recap() or code() that is given no C++ line of its own. A string literal:
    /// kept as a pointer, so a SHOWN() inside a loop over every element costs nothing.
    void shown(const char* cpp) { shown_ = cpp; }
    /// The same for C++ that is not in the lesson (what it would take, or a
    /// bug it does not commit): printed as "C++ sketch:".
    void sketch(const std::string& torch, const std::string& cpp);

    /// A step: `lhs  name.shape = [...] = [B, H, T, D]`, then the PyTorch and
    /// C++ lines; at --tiny also the numbers, unless @p show is shape_only.
    /// @p dims names each axis with the size symbols (B, T, E, H, D, Tq, Tk
    /// and any let()), e.g. "B, H, T, D": the lesson stops with an error when
    /// they do not give the tensor's shape. With --predict the student is
    /// asked for the shape first; with --dump DIR the tensor is written to
    /// DIR/<lesson>/<name>.npy (a name shown again: <name>.2.npy, ...).
    template <class T>
    void step(const std::string& lhs, const std::string& name, const T& t,
              const std::string& dims, const std::string& torch,
              const std::string& cpp, Show show = Show::numbers) {
        const bool print = show == Show::numbers && opt.tiny;
        step_values(lhs, name, Values::of(t, print || dumping()), dims, torch, cpp, print);
    }
    /// The same with the C++ of the last SHOWN(): the line printed is the
    /// line run.
    template <class T>
    void step(const std::string& lhs, const std::string& name, const T& t,
              const std::string& dims, const std::string& torch, Show show = Show::numbers) {
        step(lhs, name, t, dims, torch, take_shown(lhs), show);
    }
    /// An earlier stage done by the core in one line: shape only.
    template <class T>
    void recap(const std::string& lhs, const std::string& name, const T& t,
               const std::string& dims, const std::string& cpp) {
        step_values(lhs, name, Values::of(t, dumping()), dims, "", cpp, false);
    }
    /// The same with the C++ of the last SHOWN().
    template <class T>
    void recap(const std::string& lhs, const std::string& name, const T& t,
               const std::string& dims) {
        recap(lhs, name, t, dims, take_shown(lhs));
    }
    /// With --dump DIR, writes @p t as DIR/<lesson>/<name>.npy without
    /// printing it (the weights the PyTorch scripts load, for example),
    /// unless a step already wrote that name.
    template <class T>
    void dump(const std::string& name, const T& t) {
        if (dumping() && dumped_.count(name) == 0) write_dump(name, Values::of(t, true));
    }
    /// With --dump, the module's four layers under the four-linear-layers
    /// article's state_dict names, wq, wk, wv and fc_out (our w_o), each
    /// .weight.npy and .bias.npy: what the PyTorch scripts (lessons/pytorch/)
    /// and mha_forward --weights load.
    template <class Module>
    void dump_layers(const Module& m) {
        dump("wq.weight", m.wq.weight), dump("wq.bias", m.wq.bias);
        dump("wk.weight", m.wk.weight), dump("wk.bias", m.wk.bias);
        dump("wv.weight", m.wv.weight), dump("wv.bias", m.wv.bias);
        dump("fc_out.weight", m.w_o.weight), dump("fc_out.bias", m.w_o.bias);
    }
    /// With --dump DIR, adds a dataset to DIR/<lesson>/explorer.js, what the
    /// docs' attention explorer (docs/explorer/) shows: the weights of
    /// sequence 0 of each frame `[B, H, Tq, Tk]` (or, for "training", the
    /// mean over the batch), and which cells @p mask hides. @p kind is
    /// "weights", "decode" (a slider steps through the positions) or
    /// "training" (a slider steps through the frames).
    void explore(const std::string& title, const std::string& kind,
                 const std::vector<std::pair<std::string, const mha::Tensor4*>>& frames,
                 const mha::Mask* mask = nullptr);
    /// The same for a model of L layers, bertviz's model view: a grid of
    /// layers x heads, each frame holding every layer's weights `[B, H, T, T]`
    /// (sequence 0 of each is shown, causal: the cells above the diagonal
    /// masked), and @p tokens, the T tokens read, as the rows' and columns' labels.
    void explore_layers(const std::string& title,
                        const std::vector<std::pair<std::string, std::vector<mha::Tensor4>>>& frames,
                        const std::vector<std::string>& tokens);
    /// Gives a size symbol for step()'s dims, e.g. let("H_kv", 2).
    void let(const std::string& symbol, std::size_t value);

    /// A relation the lesson states, with both sides printed and checked:
    /// "  var(raw) = 4.046 against D var(q) var(k) = 2.710: ratio 1.49, not
    /// within 10%". When it fails, @p why_not says why (at this size, say).
    /// @return whether lhs / rhs is within 1 +- @p tolerance
    bool relation(const std::string& lhs_name, double lhs, const std::string& rhs_name,
                  double rhs, double tolerance, const std::string& why_not);

    /// picture() for a mask of 1 (may attend) and 0: in the terminal '██'
    /// and '··', in the SVG "allowed" and hatched "masked" cells, each with a
    /// legend of those two, "allowed (1)" and "masked (0)", not a scale.
    void mask_picture(const std::string& title, const std::string& file,
                      const std::vector<std::vector<float>>& m,
                      const std::string& row_label, const std::string& col_label);
    /// A grid picture of a [rows, cols] matrix: shaded cells in the terminal
    /// (values in [0, 1]; '··' where @p masked), and with --svg DIR a heat
    /// map DIR/<file>.svg (svg.hpp): title, ticks, colour bar, each cell's
    /// value, masked cells hatched; @p diverging for scores and gradients.
    /// With @p names, the rows and columns carry them (in the terminal as row
    /// and column headers, in the SVG as tick labels) instead of indices.
    /// Every SVG of heat maps (this, heads(), figure()) draws at most 1600
    /// cells, some 250 KB: past that, the first rows and columns of each
    /// grid, and a line under the title says which.
    void picture(const std::string& title, const std::string& file,
                 const std::vector<std::vector<float>>& m,
                 const std::string& row_label, const std::string& col_label,
                 const std::vector<std::vector<bool>>& masked = {}, bool diverging = false,
                 const Names& names = {});
    /// Every head of @p w `[B, H, Tq, Tk]`, averaged over the batch: in the
    /// terminal side by side a blank column apart, and with --svg DIR one
    /// small multiple per head on a shared scale; @p names as for picture().
    void heads(const std::string& title, const std::string& file, const mha::Tensor4& w,
               const Names& names = {});
    /// With --svg DIR, a heat map DIR/<file>.svg of @p grids side by side on
    /// one scale (nothing in the terminal): the lessons' other pictures;
    /// @p per_row grids to a row (0: all in one), a layer's heads, say; with
    /// @p kinds (svg::tile_kinds(), say), each cell drawn as the kind whose
    /// value it holds, under a legend of the kinds instead of the scale.
    void figure(const std::string& title, const std::string& file,
                const std::vector<svg::Grid>& grids, bool diverging,
                const std::string& row_label = "query", const std::string& col_label = "key",
                const Names& names = {}, std::size_t per_row = 0,
                const std::vector<svg::Kind>& kinds = {});
    /// The numbers of @p m `[rows, cols]` with @p digits decimals, under a
    /// header of the column names and each row after its name: a table
    /// whose rows and columns are words or features, not indices.
    void table(const std::string& title, const mha::Tensor2& m, const Names& names,
               int digits = 2);
    /// With --svg DIR, DIR/<file>.svg: @p stages top to bottom, each a row of
    /// blocks coloured by head (svg::blocks, built with blocks.hpp), and under
    /// the title which part of sequence 0 is drawn (nothing in the terminal).
    void blocks(const std::string& title, const std::string& file,
                const std::vector<svg::Stage>& stages);
    /// With --svg DIR, a line plot DIR/<file>.svg of each series against
    /// @p x, with axes and a legend (the terminal shows the numbers).
    void plot(const std::string& title, const std::string& file, const std::string& x_label,
              const std::vector<double>& x, const std::vector<svg::Series>& series,
              bool log2_x);
    /// With --svg DIR, DIR/<file>.svg: @p bars as horizontal bars on a linear
    /// scale from 0, each with its value written (svg::bar_chart), @p x_label
    /// under them (nothing in the terminal: the lesson prints the numbers).
    void bars(const std::string& title, const std::string& file, const std::string& x_label,
              const std::vector<svg::Bar>& bars);
    /// The closing self-check: prints "OK, max |diff| = ..." and returns
    /// the exit code (0 when max_diff <= tol).
    int check(const std::string& what, double max_diff, double tol);
    /// A self-check of a claim the lesson makes: prints "OK, <what>" or
    /// "FAILED, <what>" and returns the exit code (0 when it holds).
    int claim(const std::string& what, bool holds);

    /// What --predict scored: "predicted 7 of 9 shapes", or "" without it.
    std::string predictions() const;

private:
    bool dumping() const { return !opt.dump_dir.empty(); }
    // The last SHOWN() statement's text, once; a step that asks for one when
    // there is none is a bug of the lesson: std::logic_error naming @p what.
    std::string take_shown(const std::string& what);
    const char* shown_ = nullptr;
    void step_values(const std::string& lhs, const std::string& name, const Values& v,
                     const std::string& dims, const std::string& torch,
                     const std::string& cpp, bool numbers);
    void write_dump(const std::string& name, const Values& v);
    void terminal(const std::string& title, const std::vector<std::vector<float>>& m,
                  const std::string& row_label, const std::string& col_label,
                  const std::vector<std::vector<bool>>& masked, bool diverging,
                  const Names& names, bool mask = false);  // mask: 1 allowed, 0 masked
    void write_svg(const std::string& file, const std::vector<svg::Grid>& grids,
                   const std::string& title, const std::string& row_label,
                   const std::string& col_label, bool diverging, const Names& names,
                   std::size_t per_row = 0, const std::vector<svg::Kind>& kinds = {});
    void ask_shape(const std::string& lhs, const std::string& name, const Values& v,
                   const std::string& dims, const std::string& torch);
    std::string with_sizes(const std::string& dims) const;
    // explorer.js: a dataset's opening fields, and adding one to the file
    std::string dataset_head(const std::string& title, const std::string& kind) const;
    void add_dataset(const std::string& json);
    std::vector<std::string> explored_;  // explorer.js's datasets so far
    int sections_ = 0;
    std::map<std::string, std::size_t> symbols_;
    std::set<std::string> dumped_;
    bool asking_ = false;
    int asked_ = 0, right_ = 0;
};

/// t(b, h, i, j) over rows i and columns j as a grid named @p name, its
/// cells masked where @p mask (broadcast as in the core) holds 0.
svg::Grid grid_of(const mha::Tensor4& t, std::size_t b, std::size_t h, const std::string& name,
                  const mha::Mask* mask = nullptr);

/// grid_of() for the first 8 heads of sequence @p b, named "head h", or, when
/// @p group query heads share a kv head, "head h reads kv h / group".
std::vector<svg::Grid> head_grids(const mha::Tensor4& t, std::size_t b,
                                  const mha::Mask* mask = nullptr, std::size_t group = 0);

/// grid_of() for every head of every layer of a model, sequence @p b, named
/// "layer l, head h", layer 0's heads first; @p ticks (the tokens, say) label
/// the rows and columns when given.
std::vector<svg::Grid> layer_grids(const std::vector<mha::Tensor4>& layers, std::size_t b,
                                   const std::vector<std::string>& ticks = {});

/// t(b, i, j) over positions i and features j as a grid named @p name.
svg::Grid grid_of(const mha::Tensor3& t, std::size_t b, const std::string& name);

/// @p x with @p digits decimals, for sentences: fixed(0.61237) is "0.612".
std::string fixed(double x, int digits = 3);
/// @p x in scientific notation, for sentences: sci(0.000251) is "2.5e-04".
std::string sci(double x, int digits = 1);

/// @p v as a line of block characters, lowest to highest, in at most
/// @p width columns (every k-th value when there are more), then its first
/// and last values: "▅▅▄▂▁▁  2.666 -> 0.0000".
std::string sparkline(const std::vector<double>& v, std::size_t width = 60);

/// The column of sparkline(v, width) that shows v[i], for v of @p count values:
/// a caret printed that far in points at it.
std::size_t sparkline_column(std::size_t i, std::size_t count, std::size_t width = 60);

/// @p words joined with @p sep between them: joined({"a", "b"}) is "a b".
std::string joined(const std::vector<std::string>& words, const std::string& sep = " ");

/// " 0.97 0.23 ...": the first @p most of @p v with @p digits decimals each,
/// and " ..." when there are more.
std::string fixed_list(const std::vector<double>& v, int digits, std::size_t most = 6);

/// The median seconds of @p runs calls of @p f after one warm-up call:
/// enough to read a ratio in a lesson (bench/mha_bench times with more).
double median_seconds(const std::function<void()>& f, int runs = 3);

/// The milliseconds of one call of @p f, for a lesson that orders and sorts its runs.
double milliseconds(const std::function<void()>& f);

}  // namespace lesson
