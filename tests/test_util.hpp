// Helpers shared by the tests: tensors from literals, max |diff|, random data.
#pragma once

#include <cmath>
#include <cstddef>

#include "mha/init.hpp"
#include "mha/shape.hpp"

namespace test {

/// max |a - b| over all elements; +inf when shapes differ or a NaN appears.
template <class A, class B>
double max_abs_diff(const A& a, const B& b) {
    if (a.shape().size() != b.shape().size() || a.size() != b.size())
        return INFINITY;
    for (std::size_t d = 0; d < a.shape().size(); ++d)
        if (a.shape()[d] != b.shape()[d]) return INFINITY;
    double m = 0.0;
    auto ia = a.begin();
    for (auto ib = b.begin(); ib != b.end(); ++ia, ++ib) {
        const double d = std::fabs(double(*ia) - double(*ib));
        if (std::isnan(d)) return INFINITY;
        if (d > m) m = d;
    }
    return m;
}

}  // namespace test
