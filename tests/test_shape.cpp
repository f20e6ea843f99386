// Tests for mha/shape.hpp: shapes written as PyTorch prints them, the
// comparison every check uses, and the errors every stage raises.
#include <doctest/doctest.h>

#include <cmath>
#include <stdexcept>
#include <vector>

#include "mha/shape.hpp"

TEST_CASE("shape_str and shape_of write shapes as torch.Size does") {
    CHECK(mha::shape_str(std::vector<std::size_t>{128, 64, 512}) == "[128, 64, 512]");
    CHECK(mha::shape_str(std::vector<std::size_t>{}) == "[]");
    CHECK(mha::shape_of(mha::Tensor4::from_shape({1, 8, 10, 64})) == "[1, 8, 10, 64]");
}

TEST_CASE("max_abs_diff: the largest difference, and never a pass for a NaN or a shape mismatch") {
    const mha::Tensor2 a = {{1.0f, 2.0f}, {3.0f, -INFINITY}};
    mha::Tensor2 b = a;
    CHECK(mha::max_abs_diff(a, b) == 0.0);  // equal -inf counts as equal
    b(0, 1) = 2.5f;
    CHECK(mha::max_abs_diff(a, b) == 0.5);
    b(1, 1) = 0.0f;  // -inf against a number
    CHECK(std::isinf(mha::max_abs_diff(a, b)));
    b = a;
    b(0, 0) = NAN;
    CHECK(std::isinf(mha::max_abs_diff(a, b)));
    CHECK(std::isinf(mha::max_abs_diff(a, mha::Tensor2::from_shape({2, 3}))));
}

TEST_CASE("resize_to keeps the memory when the shape already fits") {
    mha::Tensor3 t = mha::Tensor3::from_shape({2, 3, 4});
    const float* kept = t.data();
    mha::resize_to(t, {2, 3, 4});
    CHECK(t.data() == kept);
    mha::resize_to(t, {4, 3, 2});
    CHECK(mha::shape_of(t) == "[4, 3, 2]");
}

TEST_CASE("fail, require_nonzero and divisors: one exception type, the shape named") {
    CHECK_THROWS_WITH_AS(mha::fail("a message"), "a message", std::invalid_argument);
    CHECK_THROWS_WITH_AS(mha::require_nonzero({2, 0, 8}, "query [B, Tq, E]"),
                         doctest::Contains("query [B, Tq, E] has shape [2, 0, 8]"),
                         std::invalid_argument);
    CHECK_NOTHROW(mha::require_nonzero({1, 1}, "x"));
    CHECK(mha::divisors(12) == std::vector<std::size_t>{1, 2, 3, 4, 6, 12});
    CHECK(mha::divisors(1) == std::vector<std::size_t>{1});
}
