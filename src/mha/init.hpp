/// @file init.hpp
/// @brief Stage 0: the seeded random generator and the weight initialisers.
#pragma once

#include <cstdint>
#include <random>

#include "mha/shape.hpp"

namespace mha {

/// @defgroup init Initialisers
/// @brief Xavier/Glorot uniform, zeros, constant; one seeded generator.
/// @{

/// One seeded generator for everything random in the project.
///
/// std::mt19937 is specified bit for bit by the C++ standard, and the
/// conversions below are written out here (the standard distributions are
/// not), so the same seed gives the same numbers with every compiler. They
/// are NumPy's: for an integer seed, uniform(0, 1) and normal() give what
/// `np.random.RandomState(seed)`'s random_sample() and standard_normal() do
/// (rounded to float).
class Rng {
public:
    /// @param seed any integer; the same seed gives the same sequence.
    explicit Rng(std::uint64_t seed = 0);
    /// Uniform in [lo, hi).
    /// @param lo, hi the interval
    /// @return the next number
    float uniform(float lo, float hi);
    /// Standard normal (mean 0, variance 1), by Marsaglia's polar method:
    /// two numbers per accepted pair of uniforms, the second kept for the
    /// next call.
    /// @return the next number
    float normal();

private:
    double unit();  // uniform in [0, 1) with 53 random bits
    std::mt19937 gen_;
    bool has_spare_ = false;
    double spare_ = 0.0;
};

/// Xavier/Glorot uniform, as `nn.init.xavier_uniform_`:
/// every entry drawn from U(-a, a) with \f$a = \sqrt{6 / (\text{fan\_in} +
/// \text{fan\_out})}\f$.
/// @param fan_out rows of the weight (out features), at least 1.
/// @param fan_in  columns of the weight (in features), at least 1.
/// @param rng     the generator to draw from.
/// @return a weight `[fan_out, fan_in]`.
Tensor2 xavier_uniform(std::size_t fan_out, std::size_t fan_in, Rng& rng);

/// A weight `[rows, cols]` of zeros, as `nn.init.zeros_`.
/// @param rows, cols the shape, each at least 1
/// @return a weight `[rows, cols]`
/// @warning zero init is a pitfall: see \ref lesson09.
Tensor2 zeros(std::size_t rows, std::size_t cols);

/// A weight `[rows, cols]` with every entry @p value, as `nn.init.constant_`.
/// @param rows, cols the shape, each at least 1
/// @param value      every entry
/// @return a weight `[rows, cols]`
/// @warning every head then computes the same thing: see \ref lesson09.
Tensor2 constant(std::size_t rows, std::size_t cols, float value);

/// The bias `nn.Linear(in, out)` starts with: U(-1/sqrt(in), 1/sqrt(in)).
/// The articles only re-initialise the weights, so their biases are these.
/// @param out_features length of the bias `[out]`.
/// @param in_features  the layer's input size (sets the bound).
/// @param rng          the generator to draw from.
/// @return a bias `[out_features]`
Tensor1 linear_default_bias(std::size_t out_features, std::size_t in_features,
                            Rng& rng);

/// Standard-normal data, as `torch.randn(B, T, E)`.
/// @param b, t, e the sizes of the result `[b, t, e]`.
/// @param rng     the generator to draw from.
/// @return        `[b, t, e]`
Tensor3 randn(std::size_t b, std::size_t t, std::size_t e, Rng& rng);

/// How MultiHeadAttention initialises its four weights.
struct Init {
    /// The weight scheme.
    enum class Kind {
        xavier_uniform,  ///< the articles' choice, one matrix at a time
        zeros,           ///< every weight 0 (a pitfall)
        constant,        ///< every weight `value` (a pitfall)
        torch_linear,    ///< as a plain nn.Linear initialises itself
        torch_mha        ///< as torch.nn.MultiheadAttention initialises itself
    };
    Kind kind = Kind::xavier_uniform;  ///< which scheme
    float value = 0.0f;                ///< the constant, for Kind::constant
    std::uint64_t seed = 0;            ///< seeds weights and biases

    /// Xavier uniform weights, nn.Linear's default biases.
    /// @param seed seeds weights and biases
    /// @return the scheme
    static Init xavier(std::uint64_t seed = 0) {
        return {Kind::xavier_uniform, 0.0f, seed};
    }
    /// Zero weights, nn.Linear's default biases.
    /// @param seed seeds the biases
    /// @return the scheme
    static Init zero(std::uint64_t seed = 0) { return {Kind::zeros, 0.0f, seed}; }
    /// Constant weights, nn.Linear's default biases.
    /// @param v    every weight
    /// @param seed seeds the biases
    /// @return the scheme
    static Init constant(float v, std::uint64_t seed = 0) {
        return {Kind::constant, v, seed};
    }
    /// What a plain `nn.Linear(in, out)` does, and so the handwritten-course
    /// article's module, which never re-initialises: weights from
    /// U(-1/sqrt(in), 1/sqrt(in)) (kaiming_uniform with a = sqrt(5)), so
    /// var(w) = 1 / (3 in), a third of Xavier's 1 / in for a square layer.
    /// @param seed seeds weights and biases
    /// @return the scheme
    static Init torch_linear(std::uint64_t seed = 0) {
        return {Kind::torch_linear, 0.0f, seed};
    }
    /// What `torch.nn.MultiheadAttention(E, H)` does: one Xavier uniform over
    /// the packed in_proj weight `[3E, E]`, so wq, wk and wv are drawn with
    /// the bound \f$\sqrt{6 / (E + 3E)} = \sqrt{6 / (4E)}\f$, not the
    /// articles' \f$\sqrt{6 / (2E)}\f$; out_proj keeps nn.Linear's
    /// U(-1/sqrt(E), 1/sqrt(E)); every bias is 0.
    /// @param seed seeds the weights
    /// @return the scheme
    static Init torch(std::uint64_t seed = 0) { return {Kind::torch_mha, 0.0f, seed}; }
};

/// @}

}  // namespace mha
