// Exercise 05 solved as a student might: loops over each row, not the core's
// function. tests/CMakeLists.txt builds it the way check-exercise.sh builds
// workbook/05_softmax.cpp, and hands it to tests/workbook/same_as_shipped.cmake
// in place of workbook/05_softmax.cpp: the check passes it, and that test
// skips it (a student's work), failing it only under MHA_WORKBOOK_AS_SHIPPED=1.
#include <cmath>
#include <limits>

#include "exercises.hpp"

namespace workbook {

Tensor4 softmax(const Tensor4& scores) {
    Tensor4 weights = xt::zeros<float>(scores.shape());  // [B, H, Tq, Tk]
    const std::size_t Tk = scores.shape(3), rows = scores.size() / Tk;
    for (std::size_t r = 0; r < rows; ++r) {  // one query's row: fixed b, h, i
        const float* s = scores.data() + r * Tk;
        float* w = weights.data() + r * Tk;
        float m = -std::numeric_limits<float>::infinity();
        for (std::size_t j = 0; j < Tk; ++j) m = std::max(m, s[j]);
        if (std::isinf(m) && m < 0) continue;  // every key masked: zeros
        float sum = 0;
        for (std::size_t j = 0; j < Tk; ++j) sum += w[j] = std::exp(s[j] - m);
        for (std::size_t j = 0; j < Tk; ++j) w[j] /= sum;
    }
    return weights;
}

}  // namespace workbook
