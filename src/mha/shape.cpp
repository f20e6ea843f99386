// Shape strings and shared checks.
#include "mha/shape.hpp"

#include <stdexcept>

namespace mha {

void fail(const std::string& message) {
    throw std::invalid_argument(message);
}

void require_nonzero(const std::vector<std::size_t>& shape,
                     const std::string& what) {
    for (std::size_t n : shape) {
        if (n == 0) {
            fail(what + " has shape " + shape_str(shape) +
                 ": every size must be at least 1");
        }
    }
}

std::vector<std::size_t> divisors(std::size_t n) {
    std::vector<std::size_t> out;
    for (std::size_t d = 1; d <= n; ++d) {
        if (n % d == 0) out.push_back(d);
    }
    return out;
}

}  // namespace mha
