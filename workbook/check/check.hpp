// The workbook's checker: runs a student's function and the core's on the
// same inputs, case by case, and stops at the first case that differs. A
// failing case is also run through the deliberate mistakes of its
// exercise (the softmax over the wrong axis, the merge without the
// permute, ...): a mistake that gives the student's numbers names the bug.
#pragma once

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "mha/attention.hpp"
#include "mha/kv_cache.hpp"
#include "mha/online_softmax.hpp"
#include "mha/shape.hpp"

namespace check {

/// A tensor (or a single number) flattened, with its shape.
struct Result {
    std::vector<std::size_t> shape;
    std::vector<float> data;
};

template <class T>
Result result(const T& t) {
    Result r;
    r.shape.assign(t.shape().begin(), t.shape().end());
    r.data.assign(t.begin(), t.end());
    return r;
}
Result number(float x);

/// What one run gives, by name, in the order they are compared.
using Outputs = std::vector<std::pair<std::string, Result>>;

/// One case, type-erased: the student's run, the core's, the mistakes'.
struct Case {
    std::string name;    ///< "the lesson's sizes", "Tq != Tk", ...
    std::string shapes;  ///< "scores [2, 3, 4, 7]"
    std::function<Outputs()> student, core;
    std::vector<std::pair<std::string, std::function<Outputs()>>> mistakes;  // hint, run
};

/// A case before it meets the functions: a name, the shapes, and how to
/// run any function of the exercise's signature Fn on its inputs.
template <class Fn>
struct Setup {
    std::string name, shapes;
    std::function<Outputs(const Fn&)> run;
};

/// A deliberate mistake and what it looks like.
template <class Fn>
struct Mistake {
    std::string hint;
    Fn fn;
};

template <class Fn>
std::vector<Case> cases(const std::vector<Setup<Fn>>& setups, const Fn& student,
                        const Fn& core, const std::vector<Mistake<Fn>>& mistakes) {
    std::vector<Case> out;
    for (const Setup<Fn>& s : setups) {
        Case c{s.name, s.shapes, [s, student] { return s.run(student); },
               [s, core] { return s.run(core); }, {}};
        for (const Mistake<Fn>& m : mistakes)
            c.mistakes.push_back({m.hint, [s, m] { return s.run(m.fn); }});
        out.push_back(c);
    }
    return out;
}

/// Runs the cases in order; prints a line per passing case, then either the
/// first failing case (its shapes, first wrong element, a hint) or "all N
/// cases pass". @return 0 when all pass, else 1.
int run(const std::string& title, const std::vector<Case>& cases,
        const std::string& fallback_hint);

/// Seeded inputs for the cases.
mha::Tensor4 randn4(std::size_t b, std::size_t h, std::size_t t, std::size_t d,
                    std::uint64_t seed, float scale = 1.0f);
mha::Tensor3 randn3(std::size_t b, std::size_t t, std::size_t e, std::uint64_t seed);
std::string shape4(std::size_t b, std::size_t h, std::size_t t, std::size_t d);
std::string shape3(std::size_t b, std::size_t t, std::size_t e);

// Each exercise's check, given the student's functions (the signatures of
// workbook/exercises.hpp). Each returns run()'s exit code.
using mha::Mask;
using mha::Tensor3;
using mha::Tensor4;
using LinearFn = std::function<Tensor3(const Tensor3&, const mha::Linear&)>;
using SplitFn = std::function<Tensor4(const Tensor3&, std::size_t)>;
using ScoresFn = std::function<Tensor4(const Tensor4&, const Tensor4&)>;
using CausalFn = std::function<Mask(std::size_t, std::size_t)>;
using ApplyMaskFn = std::function<Tensor4(const Tensor4&, const Mask&, float)>;
using SoftmaxFn = std::function<Tensor4(const Tensor4&)>;
using AttendFn = std::function<Tensor4(const Tensor4&, const Tensor4&)>;
using MergeFn = std::function<Tensor3(const Tensor4&)>;
using ForwardFn = std::function<Tensor3(const mha::MultiHeadAttention&, const Tensor3&,
                                        const Tensor3&, const Tensor3&, const Mask*)>;
using DecodeFn = std::function<Tensor3(const mha::MultiHeadAttention&, const Tensor3&,
                                       mha::KVCache&)>;
using TakeBlockFn = std::function<void(mha::RunningSoftmax&, const float*, std::size_t)>;
using SoftmaxBackwardFn = std::function<Tensor4(const Tensor4&, const Tensor4&)>;

int linear(const LinearFn& student);
int split_heads(const SplitFn& student);
int scores(const ScoresFn& student);
int mask(const CausalFn& causal, const ApplyMaskFn& apply);
int softmax(const SoftmaxFn& student);
int attend_merge(const AttendFn& attend, const MergeFn& merge);
int forward(const ForwardFn& student);
int kv_cache(const DecodeFn& student);
int online_softmax(const TakeBlockFn& student);
int softmax_backward(const SoftmaxBackwardFn& student);

}  // namespace check
