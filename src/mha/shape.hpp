/// @file shape.hpp
/// @brief Tensor types, the shape-printing helper and the shape checks.
///
/// Shape vocabulary used across the core:
///   B batch, T time (Tq queries, Tk keys/values), E embed_dim (d_model),
///   H heads, D head_dim = E / H.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include <xtensor/xtensor.hpp>

/// Everything in the core lives here.
namespace mha {

/// @defgroup shapes Tensors and shapes
/// @brief The tensor types, `shape_str` and the shape checks every stage uses.
/// @{

/// `xt::xtensor<float, N>`: the rank is in the type, the layout row-major,
/// like a contiguous PyTorch tensor.
template <std::size_t N>
using Tensor = xt::xtensor<float, N>;
using Tensor1 = Tensor<1>;  ///< e.g. a bias `[out]`
using Tensor2 = Tensor<2>;  ///< e.g. a weight `[out, in]`
using Tensor3 = Tensor<3>;  ///< e.g. X `[B, T, E]`
using Tensor4 = Tensor<4>;  ///< e.g. Q `[B, H, T, D]`
/// A mask: true (1) = may attend, false (0) = masked, as `torch.tril` gives.
/// Always rank 4, `[B or 1, H or 1, Tq or 1, Tk]`, broadcast like PyTorch.
using Mask = xt::xtensor<bool, 4>;

/// A shape written the way PyTorch prints it: `[128, 64, 8, 64]`.
/// @param shape any sequence of sizes (an xtensor shape, a std::vector, ...).
/// @return e.g. "[128, 64, 8, 64]"
template <class S>
std::string shape_str(const S& shape) {
    std::ostringstream out;
    out << '[';
    bool first = true;
    for (auto n : shape) {
        out << (first ? "" : ", ") << n;
        first = false;
    }
    out << ']';
    return out.str();
}

/// The shape of a tensor (or any expression), as `shape_str` writes it.
/// @param t a tensor of any rank.
/// @return e.g. "[128, 64, 512]"
template <class E>
std::string shape_of(const E& t) {
    return shape_str(t.shape());
}

/// Gives @p x the shape @p shape, keeping its memory when it already has
/// it: what the `_into` functions do with the tensors their caller keeps.
/// @param x     a tensor of any shape
/// @param shape the shape it must have
template <class Tensor>
void resize_to(Tensor& x, const typename Tensor::shape_type& shape) {
    if (x.shape() != shape) x.resize(shape);
}

/// max |a - b| over all elements: how the lessons' self-checks and the
/// tests compare two tensors. Equal infinities count as equal (-inf after a
/// mask); a shape mismatch or a NaN on either side gives +inf.
/// @param a, b tensors of the same shape.
/// @return the largest absolute difference, 0 when equal
template <class A, class B>
double max_abs_diff(const A& a, const B& b) {
    const double inf = std::numeric_limits<double>::infinity();
    if (shape_of(a) != shape_of(b)) return inf;
    double m = 0.0;
    auto ia = a.begin();
    for (auto ib = b.begin(); ib != b.end(); ++ia, ++ib) {
        if (double(*ia) == double(*ib)) continue;
        const double d = std::fabs(double(*ia) - double(*ib));
        if (std::isnan(d)) return inf;
        m = std::max(m, d);
    }
    return m;
}

/// Throws std::invalid_argument with @p message. Every check in the core
/// goes through here, so that programs can catch one exception type.
/// @param message one line naming the shapes and what would fit
[[noreturn]] void fail(const std::string& message);

/// Refuses a size of zero: "<what> is 0 in <where> [shape]; ...".
/// @param shape the shape being checked (any rank).
/// @param what  names the tensor, e.g. "query [B, Tq, E]".
void require_nonzero(const std::vector<std::size_t>& shape,
                     const std::string& what);

/// The divisors of @p n, for error messages that say what would fit.
/// @param n a size, at least 1
/// @return 1, ..., n in increasing order
std::vector<std::size_t> divisors(std::size_t n);

/// @}

}  // namespace mha
