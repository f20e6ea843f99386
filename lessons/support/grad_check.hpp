// What lesson 26 (the backward by hand) computes with but does not teach: the
// products numpy.dot does not batch, and the finite-difference check. Header-only
// templates, so that float and double share them; only that lesson includes it.
#pragma once

#include <algorithm>
#include <array>
#include <cmath>

#include <xtensor-blas/xlinalg.hpp>
#include <xtensor/xmath.hpp>
#include <xtensor/xview.hpp>

namespace lesson {

template <class T, std::size_t N>
using Tn = xt::xtensor<T, N>;
using D2 = Tn<double, 2>;
using D3 = Tn<double, 3>;
using D4 = Tn<double, 4>;

// [B, T, in] x M [in, out] -> [B, T, out]: each position's row times M.
template <class T>
Tn<T, 3> rows_times(const Tn<T, 3>& x, const Tn<T, 2>& m) {
    const std::array<std::size_t, 2> rows{x.shape(0) * x.shape(1), x.shape(2)};
    const Tn<T, 2> r = xt::linalg::dot(Tn<T, 2>(xt::reshape_view(x, rows)), m);
    const std::array<std::size_t, 3> shape{x.shape(0), x.shape(1), m.shape(1)};
    return xt::reshape_view(r, shape);
}
// [B, T, a] x [B, T, b] -> [a, b]: summed over every position, as a weight's gradient.
template <class T>
Tn<T, 2> over_rows(const Tn<T, 3>& a, const Tn<T, 3>& b) {
    auto rows = [](const Tn<T, 3>& x) {
        return Tn<T, 2>(xt::reshape_view(x, std::array<std::size_t, 2>{
                                                x.shape(0) * x.shape(1), x.shape(2)}));
    };
    return xt::linalg::dot(xt::transpose(rows(a)), rows(b));
}
// x @ y for every (batch, head), x^T or y^T when asked: numpy.dot is not batched.
template <class T>
Tn<T, 4> each_head(const Tn<T, 4>& x, const Tn<T, 4>& y, bool tx, bool ty) {
    Tn<T, 4> r({x.shape(0), x.shape(1), x.shape(tx ? 3 : 2), y.shape(ty ? 2 : 3)});
    for (std::size_t b = 0; b < x.shape(0); ++b)
        for (std::size_t h = 0; h < x.shape(1); ++h) {
            Tn<T, 2> a = xt::view(x, b, h), c = xt::view(y, b, h);
            if (tx) a = xt::transpose(a);
            if (ty) c = xt::transpose(c);
            xt::view(r, b, h) = xt::linalg::dot(a, c);
        }
    return r;
}
// d/dx of sum(up * f(x)) by central differences in double, at up to 64 entries
// spread over x, against grad there: the worst |difference| over max |grad|.
template <class X, class Up, class F>
double worst_fd(X x, const Up& up, const F& f, const X& grad) {
    const double h = 1e-6, top = std::max(1e-30, double(xt::amax(xt::abs(grad))()));
    const std::size_t n = std::min<std::size_t>(64, x.size());
    double worst = 0;
    for (std::size_t c = 0; c < n; ++c) {
        const std::size_t i = c * x.size() / n;
        const double keep = x.flat(i);
        x.flat(i) = keep + h;
        const double plus = xt::sum(up * f(x))();
        x.flat(i) = keep - h;
        const double minus = xt::sum(up * f(x))();
        x.flat(i) = keep;
        worst = std::max(worst, std::fabs((plus - minus) / (2 * h) - grad.flat(i)) / top);
    }
    return worst;
}
// A float tensor as double, evaluated.
template <class T>
auto dbl(const T& t) {
    return Tn<double, T::rank>(xt::cast<double>(t));
}

}  // namespace lesson
