// Tests for mha/init.hpp: the seeded generator and the initialisers.
#include <doctest/doctest.h>

#include <cmath>
#include <stdexcept>

#include "mha/init.hpp"

TEST_CASE("Rng: the same seed gives the same numbers, others differ") {
    mha::Rng a(7), b(7), c(8);
    for (int i = 0; i < 100; ++i) {
        const float x = a.uniform(-1, 1);
        CHECK(x == b.uniform(-1, 1));
        CHECK(x >= -1.0f);
        CHECK(x < 1.0f);
    }
    CHECK(mha::Rng(7).normal() != c.normal());
}

TEST_CASE("Rng: uniform matches NumPy's RandomState for an integer seed") {
    /*py
    import numpy as np
    np.random.RandomState(42).random_sample(3)
    # array([0.37454012, 0.95071431, 0.73199394])
    */
    mha::Rng rng(42);
    CHECK(rng.uniform(0, 1) == doctest::Approx(0.37454012).epsilon(1e-7));
    CHECK(rng.uniform(0, 1) == doctest::Approx(0.95071431).epsilon(1e-7));
    CHECK(rng.uniform(0, 1) == doctest::Approx(0.73199394).epsilon(1e-7));
}

TEST_CASE("Rng: normal matches NumPy's RandomState, and shares its stream with uniform") {
    /*py
    np.random.RandomState(0).standard_normal(6)
    # [ 1.76405235,  0.40015721,  0.97873798,  2.2408932 ,  1.86755799, -0.97727788]
    r = np.random.RandomState(7); r.random_sample(2); r.standard_normal(3)
    # [ 1.6905257 , -0.46593737,  0.03282016]
    */
    mha::Rng rng(0);
    for (double want : {1.76405235, 0.40015721, 0.97873798, 2.2408932, 1.86755799,
                        -0.97727788})
        CHECK(rng.normal() == doctest::Approx(want).epsilon(1e-7));
    mha::Rng seven(7);
    CHECK(seven.uniform(0, 1) == doctest::Approx(0.07630829).epsilon(1e-7));
    CHECK(seven.uniform(0, 1) == doctest::Approx(0.77991879).epsilon(1e-7));
    for (double want : {1.6905257, -0.46593737, 0.03282016})
        CHECK(seven.normal() == doctest::Approx(want).epsilon(1e-7));
}

TEST_CASE("xavier_uniform: bound sqrt(6 / (fan_in + fan_out)) and its moments") {
    mha::Rng rng(3);
    const std::size_t out = 300, in = 500;
    const mha::Tensor2 w = mha::xavier_uniform(out, in, rng);
    REQUIRE(w.shape(0) == out);
    REQUIRE(w.shape(1) == in);
    const double a = std::sqrt(6.0 / (out + in));  // 0.0866
    double max = 0, sum = 0, sq = 0;
    for (float x : w) {
        max = std::fmax(max, std::fabs(x));
        sum += x;
        sq += double(x) * x;
    }
    const double n = double(w.size());
    CHECK(max <= a);
    CHECK(max > 0.999 * a);  // 150000 draws reach the edge
    // U(-a, a) has mean 0 and variance a^2 / 3; 1% and 2% are > 5 sigma.
    CHECK(std::fabs(sum / n) < 0.01 * a);
    CHECK(sq / n == doctest::Approx(a * a / 3).epsilon(0.02));
}

TEST_CASE("zeros, constant and nn.Linear's default bias") {
    const mha::Tensor2 z = mha::zeros(2, 3);
    const mha::Tensor2 c = mha::constant(3, 2, 0.5f);
    CHECK(z.shape(0) == 2);
    CHECK(c.shape(0) == 3);
    for (float x : z) CHECK(x == 0.0f);
    for (float x : c) CHECK(x == 0.5f);
    mha::Rng rng(1);
    const mha::Tensor1 b = mha::linear_default_bias(1000, 16, rng);
    REQUIRE(b.size() == 1000);
    double max = 0;
    for (float x : b) max = std::fmax(max, std::fabs(x));
    CHECK(max <= 0.25);  // 1 / sqrt(16)
    CHECK(max > 0.24);
}

TEST_CASE("randn: mean 0 and variance 1") {
    mha::Rng rng(5);
    const mha::Tensor3 x = mha::randn(4, 100, 250, rng);
    double sum = 0, sq = 0;
    for (float v : x) {
        sum += v;
        sq += double(v) * v;
    }
    const double n = double(x.size());
    // n = 100000: the sample mean has sd 0.003, the variance about 0.0045.
    CHECK(std::fabs(sum / n) < 0.015);
    CHECK(sq / n == doctest::Approx(1.0).epsilon(0.025));
}

TEST_CASE("initialisers refuse sizes of zero") {
    mha::Rng rng(0);
    CHECK_THROWS_AS(mha::xavier_uniform(0, 4, rng), std::invalid_argument);
    CHECK_THROWS_AS(mha::zeros(4, 0), std::invalid_argument);
    CHECK_THROWS_AS(mha::constant(0, 0, 1.0f), std::invalid_argument);
    CHECK_THROWS_AS(mha::linear_default_bias(0, 4, rng), std::invalid_argument);
    CHECK_THROWS_WITH_AS(mha::randn(1, 0, 8, rng),
                         doctest::Contains("[1, 0, 8]"), std::invalid_argument);
}
