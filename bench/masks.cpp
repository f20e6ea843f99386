// mha_bench --masks: what the teaching core's mask stage costs now that
// apply_mask() is apply_mask_mod() with a mod reading the tensor, against
// the direct loop it replaced (a row of bools at a time, written out again
// here), at the articles' shape B = 128, T = 64, H = 8 and at B = 1,
// T = 2048, H = 8. For scale, the whole forward_stages() at the first.
#include <cstdio>

#include "common.hpp"
#include "mha/attention.hpp"

namespace bench {

namespace {

// The mask stage as it was before the variants: a row of bools at a time.
mha::Tensor4 direct_loop(const mha::Tensor4& scores, const mha::Mask& mask, float fill) {
    mha::Tensor4 out = scores;  // [B, H, Tq, Tk]
    for (std::size_t b = 0; b < out.shape(0); ++b)
        for (std::size_t h = 0; h < out.shape(1); ++h)
            for (std::size_t i = 0; i < out.shape(2); ++i) {
                const bool* keep = mha::mask_row(mask, b, h, i);
                float* row = &out(b, h, i, 0);
                for (std::size_t j = 0; j < out.shape(3); ++j)
                    if (!keep[j]) row[j] = fill;
            }
    return out;
}

}  // namespace

int run_masks() {
    std::printf("the mask stage, causal, median of %d runs (ms):\n", g_runs);
    std::printf("  %-16s %12s %12s %12s %8s\n", "B x H x T x T", "direct loop", "apply_mask",
                "causal_mod", "ratio");
    struct Size {
        std::size_t B, H, T;
    };
    for (const Size& z : {Size{128, 8, 64}, Size{1, 8, 2048}}) {
        mha::Rng rng(6);
        mha::Tensor4 scores = mha::Tensor4::from_shape({z.B, z.H, z.T, z.T});
        for (float& x : scores) x = rng.normal();
        const mha::Mask tril = mha::causal_mask(z.T, z.T);  // [1, 1, T, T]
        const mha::MaskMod mod = mha::causal_mod();
        const double d = median_seconds([&] { direct_loop(scores, tril, mha::kNegInf); });
        const double a = median_seconds([&] { mha::apply_mask(scores, tril); });
        const double c = median_seconds([&] { mha::apply_mask_mod(scores, mod); });
        std::printf("  %3zu x %zu x %4zu^2 %12.2f %12.2f %12.2f %7.2fx\n", z.B, z.H, z.T,
                    d * 1e3, a * 1e3, c * 1e3, a / d);
    }
    const mha::MultiHeadAttention m(512, 8, mha::Init::xavier(0));
    mha::Rng rng(7);
    const mha::Tensor3 x = mha::randn(128, 64, 512, rng);
    const mha::Mask mask = mha::causal_mask(64, 64);
    const double f = median_seconds([&] { m.forward_stages(x, x, x, &mask); });
    std::printf("forward_stages() at 128 x 64 x 512, causal: %.2f ms\n", f * 1e3);
    return 0;
}

}  // namespace bench
