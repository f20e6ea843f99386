// Lesson 13 (pitfall): scale by sqrt(D), by sqrt(E), or not at all.
//
// Shows: for head sizes D = 16 .. 256 with unit-variance q and k (lesson 03
// showed the projections give about that), the variance of the scores, how
// peaked the softmax is (its entropy), and how much gradient gets through
// the softmax. Only 1/sqrt(D) keeps all three the same for every D.
// Mirrors: `/ math.sqrt(n_d)` ("除以它的维度开根号（让方差变小）") and
// `/ (self.head_dim ** 0.5)`.
//
// T = time (queries and keys), D = head_dim, E = D * H.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <vector>

#include "mha/init.hpp"
#include "mha/scores.hpp"
#include "mha/softmax.hpp"
#include "support/lesson.hpp"

namespace {

struct Stats {
    double var = 0, entropy = 0, grad = 0;
};

// Scores s = factor * q k^T over n samples of [T, D] (their line goes to L: SHOWN);
// their variance, the mean entropy of the softmax rows, and the median over rows of
// |dL/ds| for a unit-normal upstream gradient G [n, 1, T, T]: ds = P * (G - sum(P * G)).
// The median, because a few rows with two close winners carry most of the gradient.
Stats measure(lesson::Lesson& L, const mha::Tensor4& q, const mha::Tensor4& k,
              double factor, const mha::Tensor4& G) {
    const double sqrt_d = std::sqrt(double(q.shape(3)));  // undoes scaled_scores()'s
    SHOWN(L, const mha::Tensor4 s = mha::scaled_scores(q, k) * float(factor * sqrt_d));
    const mha::Tensor4 p = mha::softmax(s);
    const std::size_t T = s.shape(3), rows = s.size() / T;
    Stats st;
    double sum = 0, sq = 0;
    std::vector<double> row_norms(rows);  // each row's |dL/ds|
    for (float x : s) sum += x, sq += double(x) * x;
    st.var = sq / s.size() - (sum / s.size()) * (sum / s.size());
    for (std::size_t r = 0; r < rows; ++r) {
        const float *pr = p.data() + r * T, *g = G.data() + r * T;
        double dot = 0;
        for (std::size_t j = 0; j < T; ++j) {
            dot += pr[j] * g[j];
            if (pr[j] > 0) st.entropy -= pr[j] * std::log(double(pr[j]));
        }
        double g2 = 0;
        for (std::size_t j = 0; j < T; ++j) {
            const double ds = pr[j] * (g[j] - dot);
            g2 += ds * ds;
        }
        row_norms[r] = std::sqrt(g2);
    }
    st.entropy /= rows;
    std::nth_element(row_norms.begin(), row_norms.begin() + rows / 2, row_norms.end());
    st.grad = row_norms[rows / 2];
    return st;
}

}  // namespace

int main(int argc, char** argv) {
    lesson::Info info;
    info.name = "13_scaling", info.summary = "pitfall: sqrt(D), sqrt(E) or no scaling";
    info.draws = true, info.dump_mb = 8.0;
    return lesson::run(argc, argv, info, [](lesson::Lesson& L) {
        const std::size_t T = L.opt.time, H = L.opt.heads;
        using lesson::fixed;
        // About 65536 scores at any T, so that the statistics hold at --tiny too.
        const std::size_t n = std::clamp<std::size_t>(65536 / (T * T), 4, 256);
        mha::Rng rng(L.opt.seed);

        L.section("1. Scores, softmax entropy and gradient across D");
        L.say("For each head size D, " + std::to_string(n) + " samples: a q and a k of [T, "
              "D] = [" + std::to_string(T) + ", D] with unit-normal numbers (what lesson "
              "03's projections give), scaled three ways. Entropy: of each softmax row, "
              "averaged (at most ln T = " + fixed(std::log(double(T)), 2) + "). Median "
              "|grad|: for an upstream gradient G of unit-normal numbers, the length of "
              "dL/ds = P (G - sum(P G)) in each row, the median over the rows.");
        std::printf("%4s | %-23s | %-23s | %s\n     | %s | %s | %s\n", "D", "var(scores)",
                    "entropy", "median |grad| through softmax", "sqrt(D) sqrt(E)    none",
                    "sqrt(D) sqrt(E)    none", " sqrt(D)  sqrt(E)     none");
        Stats first[3], last[3];
        std::vector<double> dims;
        std::vector<lesson::svg::Series> var{{"sqrt(D)", {}}, {"sqrt(E)", {}}},
            ent{{"sqrt(D)", {}}, {"sqrt(E)", {}}, {"none", {}}};
        for (std::size_t D = 16; D <= 256; D *= 2) {
            mha::Tensor4 q({n, 1, T, D}), k({n, 1, T, D});
            for (float& x : q) x = rng.normal();
            for (float& x : k) x = rng.normal();
            const double factors[3] = {1 / std::sqrt(double(D)),
                                       1 / std::sqrt(double(D * H)), 1.0};
            const std::string at = "D" + std::to_string(D) + ".";  // --dump's names
            L.dump(at + "q", q), L.dump(at + "k", k);  // for lessons/pytorch/
            Stats st[3];
            for (int f = 0; f < 3; ++f) {
                mha::Tensor4 G({n, 1, T, T});  // the upstream gradient
                for (float& x : G) x = rng.normal();
                st[f] = measure(L, q, k, factors[f], G);
                L.dump(at + "G" + std::to_string(f), G);
                L.dump(at + "stats" + std::to_string(f),  // var, entropy, median |grad|
                       mha::Tensor1{float(st[f].var), float(st[f].entropy), float(st[f].grad)});
            }
            std::printf("%4zu | %7.3f %7.3f %7.1f | %7.2f %7.2f %7.2f | %8.2e %8.2e %8.2e\n",
                        D, st[0].var, st[1].var, st[2].var, st[0].entropy,
                        st[1].entropy, st[2].entropy, st[0].grad, st[1].grad, st[2].grad);
            for (int f = 0; f < 3; ++f) {
                if (D == 16) first[f] = st[f];
                last[f] = st[f];
                ent[f].y.push_back(st[f].entropy);
                if (f < 2) var[f].y.push_back(st[f].var);
            }
            dims.push_back(double(D));
        }
        L.code("q @ k.transpose(-2, -1) * factor  # the scores of every cell above");
        L.plot("softmax entropy against D (at most ln T = " + fixed(std::log(double(T)), 2) +
                   ")", "entropy_by_d", "head size D", dims, ent, true);
        L.plot("var(scores) against D, scaled by sqrt(D) or sqrt(E)", "variance_by_d",
               "head size D", dims, var, true);

        L.section("2. What the table shows");
        L.say("Without scaling the variance grows as D: the largest scores of a row dwarf "
              "the rest, the softmax gets peaked (entropy " + fixed(first[2].entropy, 2) +
              " at D = 16, " + fixed(last[2].entropy, 2) + " at D = 256) and the median "
              "gradient through it falls " + fixed(first[2].grad / last[2].grad, 1) +
              "x: most queries stop learning where to look. Dividing by sqrt(E) overshoots "
              "by sqrt(H): entropy " + fixed(last[1].entropy, 2) + " of at most " +
              fixed(std::log(double(T)), 2) + ", nearly uniform. sqrt(D) keeps all three "
              "about the same for every D:");
        int rc = 0;
        for (const Stats* st : {&first[0], &last[0]}) {
            rc |= L.claim("sqrt(D): var(scores) " + fixed(st->var) + " near 1 at D = " +
                              (st == first ? "16" : "256"), st->var > 0.8 && st->var < 1.25);
        }
        const double de = last[0].entropy / first[0].entropy, dg = last[0].grad / first[0].grad;
        rc |= L.claim("sqrt(D): entropy and gradient at D = 256 within 10% and 20% of D = 16 (" +
                          fixed(de, 2) + "x, " + fixed(dg, 2) + "x)",
                      std::fabs(de - 1) < 0.1 && std::fabs(dg - 1) < 0.2);
        const double growth = last[2].var / first[2].var;
        rc |= L.claim("none: variance grows 16x from D = 16 to 256 (" + fixed(growth, 1) +
                          "x), within 1.3x", growth > 16 / 1.3 && growth < 16 * 1.3);
        rc |= L.claim("none: the softmax at D = 256 is more peaked than with sqrt(D)",
                      last[2].entropy < last[0].entropy);
        rc |= L.claim("none: the gradient at D = 256 is under a third of sqrt(D)'s",
                      last[2].grad < last[0].grad / 3);
        return rc;
    });
}
