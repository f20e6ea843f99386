// The set-up the oracle tests share: a case's sizes, then its module and
// random inputs drawn the same way every time.
#pragma once

#include <cstddef>
#include <cstdint>

#include "mha/attention.hpp"
#include "mha/init.hpp"

namespace mha_test {

/// A [B, H, T, D] tensor of unit normals drawn from @p rng.
inline mha::Tensor4 randn4(std::size_t B, std::size_t H, std::size_t T, std::size_t D,
                           mha::Rng& rng) {
    mha::Tensor4 x({B, H, T, D});
    for (float& v : x) v = rng.normal();
    return x;
}

/// The sizes of one cross-attention case: batch B, Tq queries, Tk keys,
/// width E, H query heads sharing H_kv key/value heads, and tiles of bq
/// queries by bk keys (0 in a test that does not choose its tiles).
struct Case {
    std::size_t B, Tq, Tk, E, H, H_kv, bq = 0, bk = 0;
};

/// A case made: the Rng seeded @p seed, the module (Xavier, seed @p seed),
/// then query, kv and g_out drawn from the Rng in that order. The Rng
/// stays in it, for what a test draws after them.
struct Setup {
    /// @param c the sizes
    /// @param seed the seed of the Rng and of the module's weights
    Setup(const Case& c, std::uint64_t seed)
        : rng(seed),
          m(c.E, c.H, c.H_kv, mha::Init::xavier(seed)),
          query(mha::randn(c.B, c.Tq, c.E, rng)),
          kv(mha::randn(c.B, c.Tk, c.E, rng)),
          g_out(mha::randn(c.B, c.Tq, c.E, rng)) {}
    mha::Rng rng;
    mha::MultiHeadAttention m;
    mha::Tensor3 query;  // [B, Tq, E]
    mha::Tensor3 kv;     // [B, Tk, E]: the keys and the values
    mha::Tensor3 g_out;  // [B, Tq, E]: dL/d(output)
};

}  // namespace mha_test
