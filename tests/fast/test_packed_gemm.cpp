// Tests for mha/fast/packed_gemm.hpp: the per-head products and the linear
// layers on packed panels, against products in double, and the forward
// with them against the forward with BLAS. On a processor without AVX2 +
// FMA the kernels do not run, and the cases on the kernels alone say so
// and check nothing.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <vector>

#include "mha/attention.hpp"
#include "mha/fast/packed_gemm.hpp"
#include "mha/fast/packed_tile.hpp"
#include "../worst.hpp"

namespace {

// Restores the forward's choice of kernels when a test case ends.
struct PackedSetting {
    bool was = mha::fast::packed_products_on();
    ~PackedSetting() { mha::fast::set_packed_products(was); }
};

// Restores the AVX-512 tile's setting when a test case ends.
struct WideSetting {
    bool was = mha::fast::wide_tiles_on();
    ~WideSetting() { mha::fast::set_wide_tiles(was); }
};

// The tiles each case runs: the AVX2 one, and the AVX-512 one where the
// processor has it.
std::vector<bool> wide_settings() {
    mha::fast::set_wide_tiles(true);
    if (mha::fast::wide_tiles_on()) return {false, true};
    MESSAGE("no AVX-512 here: only the AVX2 tile is tested");
    return {false};
}

std::vector<float> random_floats(std::size_t n, mha::Rng& rng) {
    std::vector<float> v(n);
    for (float& x : v) x = rng.normal();
    return v;
}

// Whether the packed kernels run on this processor; when not, says so (the
// case then checks nothing: the forward does not use them here).
bool kernels_run_here() {
    if (mha::fast::packed_products_available()) return true;
    MESSAGE("no AVX2 + FMA here: the packed kernels are not used, nothing to test");
    return false;
}

// How many floats of c, [m, n] with rows ldc apart and filled with guard
// before the call, changed past column n or in the row after row m.
std::size_t touched_outside(const std::vector<float>& c, std::size_t m, std::size_t n,
                            std::size_t ldc, float guard) {
    std::size_t touched = 0;
    for (std::size_t i = 0; i <= m; ++i)
        for (std::size_t j = i < m ? n : 0; j < ldc; ++j) touched += c[i * ldc + j] != guard;
    return touched;
}

}  // namespace

TEST_CASE("pack_panels puts every element of B where the kernels read it, zeros past n") {
    if (!kernels_run_here()) return;
    // Panel p, row t, lane j holds B[t][16 p + j], or 0 past column n.
    // k: under one 8-term step, whole steps and a tail; n: a partial panel,
    // whole panels, and both. Every float is copied, so they must be equal.
    mha::Rng rng(11);
    for (std::size_t k : {1, 7, 8, 16, 21, 64}) {
        for (std::size_t n : {1, 9, 16, 32, 37}) {
            for (bool trans : {false, true}) {
                CAPTURE(k); CAPTURE(n); CAPTURE(trans);
                const std::size_t ld = (trans ? k : n) + 3;
                const std::vector<float> src = random_floats((trans ? n : k) * ld, rng);
                std::vector<float> packed(mha::fast::packed_floats(k, n) + 1, -1.0f);
                mha::fast::pack_panels(src.data(), ld, trans, k, n, packed.data());
                std::size_t wrong = 0;
                for (std::size_t p = 0; p * mha::fast::kPanelWidth < n; ++p) {
                    for (std::size_t t = 0; t < k; ++t) {
                        for (std::size_t j = 0; j < mha::fast::kPanelWidth; ++j) {
                            const std::size_t col = p * mha::fast::kPanelWidth + j;
                            const float want = col >= n ? 0.0f
                                               : trans ? src[col * ld + t]
                                                       : src[t * ld + col];
                            wrong += packed[(p * k + t) * mha::fast::kPanelWidth + j] != want;
                        }
                    }
                }
                CHECK(wrong == 0);
                CHECK(packed.back() == -1.0f);  // nothing past packed_floats(k, n)
            }
        }
    }
}

TEST_CASE("packed_gemm equals a product in double, at every edge of its blocking") {
    if (!kernels_run_here()) return;
    WideSetting restore;
    for (bool wide : wide_settings()) {
    mha::fast::set_wide_tiles(wide);
    CAPTURE(wide);
    // m: whole 6-row tiles and every remainder; k: one step, one stretch of
    // 256, and more; n: whole 16-column panels and partial ones.
    mha::Rng rng(7);
    const float guard = 777.0f;
    for (std::size_t m : {1, 5, 6, 7, 13, 64}) {
        for (std::size_t k : {1, 3, 64, 256, 257, 600}) {
            for (std::size_t n : {1, 15, 16, 17, 33, 64}) {
                for (bool trans : {false, true}) {
                    CAPTURE(m); CAPTURE(k); CAPTURE(n); CAPTURE(trans);
                    // B is the first k rows and n columns of a packed
                    // [k + 5, n + 9]; A, the source of B and C have rows
                    // wider than they are used.
                    const std::size_t K = k + 5, N = n + 9;
                    const std::size_t lda = k + 3, ldb = (trans ? K : N) + 2, ldc = n + 4;
                    const std::vector<float> a = random_floats(m * lda, rng);
                    const std::vector<float> src = random_floats((trans ? N : K) * ldb, rng);
                    std::vector<float> packed(mha::fast::packed_floats(K, N));
                    mha::fast::pack_panels(src.data(), ldb, trans, K, N, packed.data());
                    std::vector<float> c((m + 1) * ldc, guard);  // and a row past C
                    const float alpha = k % 2 == 0 ? 0.125f : 1.0f;
                    mha::fast::packed_gemm(a.data(), lda, m, k, packed.data(), K, n, c.data(), ldc,
                                     alpha);
                    double worst = 0;  // |error| / (sum of |terms|), over C
                    for (std::size_t i = 0; i < m; ++i) {
                        for (std::size_t j = 0; j < n; ++j) {
                            double sum = 0, size = 0;
                            for (std::size_t t = 0; t < k; ++t) {
                                const double b = trans ? src[j * ldb + t] : src[t * ldb + j];
                                sum += double(a[i * lda + t]) * b;
                                size += std::fabs(double(a[i * lda + t]) * b);
                            }
                            const double err = std::fabs(c[i * ldc + j] - alpha * sum);
                            mha_test::keep_worst(worst, err / (alpha * size));
                        }
                    }
                    // float sums of k terms: each step rounds by <= 6e-8
                    CHECK(worst < 6e-8 * (k + 2));
                    CHECK(touched_outside(c, m, n, ldc, guard) == 0);
                }
            }
        }
    }
    }
}

TEST_CASE("packed_gemm_add: A by rows or by columns, C added to or overwritten, as in double") {
    if (!kernels_run_here()) return;
    WideSetting restore;
    for (bool wide : wide_settings()) {
    mha::fast::set_wide_tiles(wide);
    CAPTURE(wide);
    // m: a 6-row tile, remainders; k: one step, a stretch of 256 and more;
    // n: whole and partial panels, and a 32-column tile with a partial half.
    mha::Rng rng(8);
    const float guard = 777.0f;
    for (std::size_t m : {1, 5, 6, 13, 64}) {
        for (std::size_t k : {1, 64, 257}) {
            for (std::size_t n : {7, 16, 33, 64}) {
                for (bool trans_a : {false, true}) {
                    for (bool add : {false, true}) {
                        CAPTURE(m); CAPTURE(k); CAPTURE(n); CAPTURE(trans_a); CAPTURE(add);
                        // A [m, k], or A^T [k, m] when trans_a, rows wider than used
                        const std::size_t lda = (trans_a ? m : k) + 3, ldc = n + 4;
                        const std::vector<float> a = random_floats((trans_a ? k : m) * lda, rng);
                        const std::vector<float> src = random_floats(k * n, rng);  // B [k, n]
                        std::vector<float> packed(mha::fast::packed_floats(k, n));
                        mha::fast::pack_panels(src.data(), n, false, k, n, packed.data());
                        std::vector<float> c((m + 1) * ldc, guard);  // and a row past C
                        for (std::size_t i = 0; i < m; ++i)
                            for (std::size_t j = 0; j < n; ++j) c[i * ldc + j] = rng.normal();
                        const std::vector<float> before = c;
                        const float alpha = 0.125f;
                        mha::fast::packed_gemm_add(a.data(), lda, trans_a, m, k, packed.data(),
                                                   k, n, c.data(), ldc, alpha, add);
                        double worst = 0;  // |error| / (sum of |terms|), over C
                        for (std::size_t i = 0; i < m; ++i) {
                            for (std::size_t j = 0; j < n; ++j) {
                                double sum = 0, size = 0;
                                for (std::size_t t = 0; t < k; ++t) {
                                    const double x = trans_a ? a[t * lda + i] : a[i * lda + t];
                                    sum += x * src[t * n + j];
                                    size += std::fabs(x * src[t * n + j]);
                                }
                                const double c0 = add ? before[i * ldc + j] : 0.0;
                                const double err = std::fabs(c[i * ldc + j] - c0 - alpha * sum);
                                mha_test::keep_worst(worst,
                                                     err / (alpha * size + std::fabs(c0)));
                            }
                        }
                        // float sums of k terms, and the add: each rounds by <= 6e-8
                        CHECK(worst < 6e-8 * (k + 3));
                        CHECK(touched_outside(c, m, n, ldc, guard) == 0);
                    }
                }
            }
        }
    }
    }
}

TEST_CASE("packed_gemm: NaN and Inf in B reach C as in any product") {
    if (!kernels_run_here()) return;
    // A row of zero weights times a value row holding NaN is NaN (0 x NaN),
    // and 0 x Inf is NaN too: the forward's skipping of masked columns
    // relies on the products keeping this.
    const std::size_t m = 7, k = 300, n = 20;
    std::vector<float> a(m * k, 0.0f), b(k * n, 1.0f);
    b[290 * n + 3] = std::numeric_limits<float>::quiet_NaN();
    b[5 * n + 17] = std::numeric_limits<float>::infinity();
    std::vector<float> packed(mha::fast::packed_floats(k, n)), c(m * n);
    mha::fast::pack_panels(b.data(), n, false, k, n, packed.data());
    mha::fast::packed_gemm(a.data(), k, m, k, packed.data(), k, n, c.data(), n, 1.0f);
    for (std::size_t i = 0; i < m; ++i) {
        CAPTURE(i);
        CHECK(std::isnan(c[i * n + 3]));
        CHECK(std::isnan(c[i * n + 17]));
        CHECK(c[i * n + 0] == 0.0f);
    }
}

TEST_CASE("packed_linear equals x W^T + b in double, for one layer and three on the same rows, "
          "three widths") {
    if (!kernels_run_here()) return;
    WideSetting restore;
    for (bool wide : wide_settings()) {
    mha::fast::set_wide_tiles(wide);
    CAPTURE(wide);
    // m: whole 6-row micro-panels, every remainder, one 48-row block and
    // more; k: short of and past the 8 terms packed at a time, one stretch
    // of 512 and more; n: whole 16-column panels and partial ones, and with
    // three layers three widths (Q wider than the K and V of grouped heads).
    mha::Rng rng(11);
    const float guard = 555.0f;
    for (std::size_t m : {1, 5, 6, 7, 47, 48, 49, 101}) {
        for (std::size_t k : {1, 7, 9, 64, 512, 513, 600}) {
            for (std::size_t n : {1, 15, 16, 17, 40}) {
                for (std::size_t count : {1, 3}) {
                    CAPTURE(m); CAPTURE(k); CAPTURE(n); CAPTURE(count);
                    const std::size_t lda = k + 3;
                    const std::vector<float> x = random_floats(m * lda, rng);
                    std::vector<std::vector<float>> w, bias, packed, c;
                    std::vector<std::size_t> ns, ldcs;
                    std::vector<mha::fast::LinearPanels> layers;
                    for (std::size_t l = 0; l < count; ++l) {
                        ns.push_back(l == 0 ? n : (n + 1) / (l + 1));
                        ldcs.push_back(ns[l] + 2 + l);
                        w.push_back(random_floats(ns[l] * k, rng));  // W [n, k]
                        bias.push_back(random_floats(ns[l], rng));
                        packed.emplace_back(mha::fast::packed_floats(k, ns[l]));
                        mha::fast::pack_panels(w[l].data(), k, true, k, ns[l], packed[l].data());
                        c.emplace_back((m + 1) * ldcs[l], guard);  // and a row past C
                    }
                    for (std::size_t l = 0; l < count; ++l)
                        layers.push_back({packed[l].data(), bias[l].data(), c[l].data(), ns[l],
                                          ldcs[l]});
                    mha::fast::packed_linear(x.data(), lda, m, k, layers.data(), count);
                    for (std::size_t l = 0; l < count; ++l) {
                        CAPTURE(l);
                        const std::size_t n = ns[l], ldc = ldcs[l];
                        double worst = 0;  // |error| / (sum of |terms|), over C
                        for (std::size_t i = 0; i < m; ++i) {
                            for (std::size_t j = 0; j < n; ++j) {
                                double sum = bias[l][j], size = std::fabs(bias[l][j]);
                                for (std::size_t t = 0; t < k; ++t) {
                                    const double term = double(x[i * lda + t]) * w[l][j * k + t];
                                    sum += term;
                                    size += std::fabs(term);
                                }
                                const double err = std::fabs(c[l][i * ldc + j] - sum);
                                mha_test::keep_worst(worst, err / size);
                            }
                        }
                        // k float steps and the bias, each rounding by <= 6e-8
                        CHECK(worst < 6e-8 * (k + 3));
                        CHECK(touched_outside(c[l], m, n, ldc, guard) == 0);
                    }
                }
            }
        }
    }
    }
}

TEST_CASE("packed_linear: a row's result does not depend on the rows around it") {
    if (!kernels_run_here()) return;
    WideSetting restore;
    for (bool wide : wide_settings()) {
    mha::fast::set_wide_tiles(wide);
    CAPTURE(wide);
    // The forward hands blocks of rows to the workers: rows in a packed
    // micro-panel and rows read in place must give the same bits.
    mha::Rng rng(12);
    const std::size_t m = 103, k = 520, n = 33;
    const std::vector<float> x = random_floats(m * k, rng), w = random_floats(n * k, rng);
    const std::vector<float> bias = random_floats(n, rng);
    std::vector<float> packed(mha::fast::packed_floats(k, n)), whole(m * n), parts(m * n);
    mha::fast::pack_panels(w.data(), k, true, k, n, packed.data());
    mha::fast::LinearPanels layer{packed.data(), bias.data(), whole.data(), n, n};
    mha::fast::packed_linear(x.data(), k, m, k, &layer, 1);
    for (std::size_t r0 = 0, size = 1; r0 < m; r0 += size, size = size % 13 + 4) {
        const std::size_t rows = std::min(size, m - r0);
        layer.c = parts.data() + r0 * n;
        mha::fast::packed_linear(x.data() + r0 * k, k, rows, k, &layer, 1);
    }
    CHECK(std::memcmp(whole.data(), parts.data(), whole.size() * sizeof(float)) == 0);
    }
}

TEST_CASE("packed_product equals C = alpha op(A) op(B) + beta C in double, every transpose, "
          "at the edges of its blocking") {
    if (!kernels_run_here()) return;
    WideSetting restore;
    // m: under one 6-row tile, one 48-row block and more, and large enough
    // to be split over the workers (in blocks of fewer rows when they are
    // few, 130, and of 48 when many, 800); k: one term, a 512-term stretch and
    // more, and past the 4096 that cuts the sum into slabs; n: partial and
    // whole 16- and 32-column blocks. With beta 0, C holds NaN: not read.
    struct Size {
        std::size_t m, k, n;
    };
    const std::vector<Size> sizes = {{1, 1, 1},    {5, 3, 17},   {6, 512, 16}, {7, 513, 33},
                                     {49, 64, 31}, {64, 70, 64}, {100, 600, 48},
                                     {130, 4100, 40}, {800, 600, 40}};
    mha::Rng rng(13);
    const float guard = 333.0f;
    for (bool wide : wide_settings()) {
        mha::fast::set_wide_tiles(wide);
        for (const Size& z : sizes) {
            for (int trans = 0; trans < 4; ++trans) {
                const bool ta = trans & 1, tb = trans & 2;
                for (float beta : {0.0f, 1.0f, 0.5f}) {
                    CAPTURE(wide); CAPTURE(z.m); CAPTURE(z.k); CAPTURE(z.n); CAPTURE(ta);
                    CAPTURE(tb); CAPTURE(beta);
                    const std::size_t lda = (ta ? z.m : z.k) + 3, ldb = (tb ? z.k : z.n) + 2;
                    const std::size_t ldc = z.n + 5;
                    const std::vector<float> a = random_floats((ta ? z.k : z.m) * lda, rng);
                    const std::vector<float> b = random_floats((tb ? z.n : z.k) * ldb, rng);
                    std::vector<float> c = random_floats((z.m + 1) * ldc, rng);
                    for (std::size_t i = 0; i <= z.m; ++i) {
                        for (std::size_t j = 0; j < ldc; ++j) {
                            if (i == z.m || j >= z.n) c[i * ldc + j] = guard;
                            else if (beta == 0.0f) c[i * ldc + j] = std::nanf("");
                        }
                    }
                    const std::vector<float> before = c;
                    const float alpha = 0.75f;
                    mha::fast::packed_product({a.data(), ta ? z.k : z.m, ta ? z.m : z.k, lda}, ta,
                                              {b.data(), tb ? z.n : z.k, tb ? z.k : z.n, ldb}, tb,
                                              c.data(), ldc, alpha, beta);
                    double worst = 0;  // |error| / (sum of |terms|), over C
                    for (std::size_t i = 0; i < z.m; ++i) {
                        for (std::size_t j = 0; j < z.n; ++j) {
                            double sum = 0, size = 0;
                            for (std::size_t t = 0; t < z.k; ++t) {
                                const double x = ta ? a[t * lda + i] : a[i * lda + t];
                                const double y = tb ? b[j * ldb + t] : b[t * ldb + j];
                                sum += x * y;
                                size += std::fabs(x * y);
                            }
                            const double old = beta == 0.0f ? 0.0 : before[i * ldc + j];
                            const double want = alpha * sum + beta * old;
                            const double scale = alpha * size + std::fabs(beta * old);
                            mha_test::keep_worst(worst, std::fabs(c[i * ldc + j] - want) / scale);
                        }
                    }
                    // k float steps, a slab sum and beta C, each rounding by <= 6e-8
                    CHECK(worst < 6e-8 * (z.k + 5));
                    CHECK(touched_outside(c, z.m, z.n, ldc, guard) == 0);
                }
            }
        }
    }
}

TEST_CASE("packed_product: a row of C has the same bits whatever rows are computed with it") {
    if (!kernels_run_here()) return;
    // Rows of C go to the workers in any split: C computed whole must equal
    // C computed a few rows at a time, for A and for A^T.
    mha::Rng rng(14);
    const std::size_t m = 131, k = 300, n = 70;
    const std::vector<float> a = random_floats(m * k, rng), b = random_floats(k * n, rng);
    for (bool ta : {false, true}) {
        CAPTURE(ta);
        std::vector<float> whole(m * n), parts(m * n);
        const mha::fast::Block all = ta ? mha::fast::Block{a.data(), k, m, m}
                                        : mha::fast::Block{a.data(), m, k, k};
        mha::fast::packed_product(all, ta, {b.data(), k, n, n}, false, whole.data(), n);
        for (std::size_t r0 = 0, size = 1; r0 < m; r0 += size, size = size % 11 + 5) {
            const std::size_t rows = std::min(size, m - r0);
            const mha::fast::Block some = ta ? mha::fast::Block{a.data() + r0, k, rows, m}
                                             : mha::fast::Block{a.data() + r0 * k, rows, k, k};
            mha::fast::packed_product(some, ta, {b.data(), k, n, n}, false,
                                      parts.data() + r0 * n, n);
        }
        CHECK(std::memcmp(whole.data(), parts.data(), whole.size() * sizeof(float)) == 0);
    }
}

TEST_CASE("forward: the packed kernels and BLAS give the same attention") {
    PackedSetting restore;
    struct Case {
        std::size_t B, Tq, Tk, E, H;
    };
    // Head sizes of 1 to 64; key lengths on and off the 16-column panels;
    // one and several 64-row query blocks; many chunks and few.
    const std::vector<Case> cases = {{2, 5, 7, 12, 3},    {1, 1, 1, 8, 8},
                                     {3, 17, 33, 64, 4},  {2, 64, 64, 128, 2},
                                     {1, 130, 200, 64, 1}, {40, 12, 12, 16, 2}};
    std::uint64_t seed = 500;
    for (const Case& c : cases) {
        for (int masked = 0; masked < 2; ++masked) {
            CAPTURE(c.B); CAPTURE(c.Tq); CAPTURE(c.Tk); CAPTURE(c.H); CAPTURE(masked);
            mha::Rng rng(++seed);
            const mha::MultiHeadAttention m(c.E, c.H, mha::Init::xavier(seed));
            const mha::Tensor3 q = mha::randn(c.B, c.Tq, c.E, rng);
            const mha::Tensor3 kv = mha::randn(c.B, c.Tk, c.E, rng);
            const mha::Mask causal = mha::causal_mask(c.Tq, c.Tk);
            const mha::Mask* mp = masked ? &causal : nullptr;
            mha::fast::set_packed_products(true);
            const auto packed = m.forward(q, kv, kv, mp);
            mha::fast::set_packed_products(false);
            CHECK_FALSE(mha::fast::packed_products_on());
            const auto blas = m.forward(q, kv, kv, mp);
            // unit-scale data: sums in different orders differ by < 2e-5
            CHECK(mha::max_abs_diff(packed.output, blas.output) < 2e-5);
            CHECK(mha::max_abs_diff(packed.weights, blas.weights) < 2e-5);
            if (c.Tq != c.Tk) continue;
            // self-attention: Q, K and V projected in one pass over q
            mha::fast::set_packed_products(true);
            const auto packed_self = m.forward(q, q, q, mp);
            mha::fast::set_packed_products(false);
            const auto blas_self = m.forward(q, q, q, mp);
            CHECK(mha::max_abs_diff(packed_self.output, blas_self.output) < 2e-5);
            CHECK(mha::max_abs_diff(packed_self.weights, blas_self.weights) < 2e-5);
        }
    }
}

TEST_CASE("MHA_PACKED=0 in the environment starts the forward on BLAS" *
          doctest::test_suite("oracle")) {
    // ctest runs this case with and without MHA_PACKED=0 (tests/CMakeLists.txt)
    const char* env = std::getenv("MHA_PACKED");
    const bool off = env != nullptr && std::strcmp(env, "0") == 0;
    CAPTURE(off);
    CHECK(mha::fast::packed_products_on() == (mha::fast::packed_products_available() && !off));
}
