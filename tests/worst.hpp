// A helper the test files share.
#pragma once

namespace mha_test {

/// Raises @p worst to @p err, the largest error seen so far, and keeps a
/// NaN once one is seen: std::max(worst, NaN) returns worst, so a NaN
/// result would pass a check of `worst < tolerance`.
inline void keep_worst(double& worst, double err) {
    if (!(err <= worst)) worst = err;
}

}  // namespace mha_test
