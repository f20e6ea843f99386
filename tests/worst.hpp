// A helper the test files share.
#pragma once

#include <algorithm>
#include <cmath>
#include <functional>

namespace mha_test {

/// Raises @p worst to @p err, the largest error seen so far, and keeps a
/// NaN once one is seen: std::max(worst, NaN) returns worst, so a NaN
/// result would pass a check of `worst < tolerance`.
inline void keep_worst(double& worst, double err) {
    if (!(err <= worst)) worst = err;
}

/// Worst relative error of @p analytic against central finite differences
/// of @p loss (computed in double) over every float of @p x: steps 2e-2
/// and 1e-2 combined (Richardson, the h^2 terms cancel), the error
/// |fd - analytic| / max(|fd|, |analytic|, floor).
template <class T, class G>
double fd_error(T& x, const G& analytic, const std::function<double()>& loss, double floor) {
    double worst = 0;
    for (std::size_t i = 0; i < x.size(); ++i) {  // xtensor or std::vector
        const float keep = x.data()[i];
        auto central = [&](float h) {
            x.data()[i] = keep + h;
            const double hi = x.data()[i], up = loss();
            x.data()[i] = keep - h;
            const double lo = x.data()[i], down = loss();
            x.data()[i] = keep;
            return (up - down) / (hi - lo);
        };
        const double fd = (4.0 * central(1e-2f) - central(2e-2f)) / 3.0;
        const double an = analytic.data()[i];
        keep_worst(worst, std::fabs(fd - an) / std::max({std::fabs(fd), std::fabs(an), floor}));
    }
    return worst;
}

}  // namespace mha_test
