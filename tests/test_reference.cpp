// Tests for mha/reference.hpp: the oracle against PyTorch's own numbers.
#include <doctest/doctest.h>

#include "mha/reference.hpp"

namespace {

// (arange(16).view(4, 4) - o) / 10 and arange(4) / 10 - 0.1 o, as below.
mha::Linear arange_layer(float o) {
    mha::Linear l;
    l.weight = mha::Tensor2::from_shape({4, 4});
    l.bias = mha::Tensor1::from_shape({4});
    for (std::size_t i = 0; i < 16; ++i) l.weight.data()[i] = (float(i) - o) / 10;
    for (std::size_t i = 0; i < 4; ++i) l.bias(i) = float(i) / 10 - 0.1f * o;
    return l;
}

}  // namespace

TEST_CASE("reference_forward matches PyTorch on a causal E=4, H=2, T=3 case") {
    /*py
    import torch
    E, H, T = 4, 2, 3
    def lin(o):
        l = torch.nn.Linear(E, E)
        with torch.no_grad():
            l.weight.copy_((torch.arange(E*E, dtype=torch.float32).view(E, E) - o) / 10.0)
            l.bias.copy_(torch.arange(E, dtype=torch.float32) / 10.0 - 0.1 * o)
        return l
    wq, wk, wv, wo = lin(0), lin(3), lin(5), lin(8)
    X = (torch.arange(T*E, dtype=torch.float32).view(1, T, E) % 5 - 2) / 4.0
    q = wq(X).view(1, T, H, E//H).permute(0, 2, 1, 3)   # likewise k, v
    s = q @ k.transpose(2, 3) / (E//H) ** 0.5
    s = s.masked_fill(torch.tril(torch.ones(T, T, dtype=torch.bool)) == 0, float("-inf"))
    a = torch.softmax(s, -1)
    o = wo((a @ v).permute(0, 2, 1, 3).contiguous().view(1, T, E))
    */
    mha::MultiHeadAttention m(4, 2);
    m.wq = arange_layer(0);
    m.wk = arange_layer(3);
    m.wv = arange_layer(5);
    m.w_o = arange_layer(8);
    mha::Tensor3 x({1, 3, 4});
    for (std::size_t i = 0; i < 12; ++i) x.data()[i] = float(int(i) % 5 - 2) / 4;
    const mha::Mask causal = mha::causal_mask(3, 3);
    const mha::ReferenceOutput r = mha::reference_forward(m, x, x, x, &causal);
    const mha::Tensor4 a = {{{{1, 0, 0},
                              {0.4938132f, 0.5061869f, 0},
                              {0.3274649f, 0.3347814f, 0.3377536f}},
                             {{1, 0, 0},
                              {0.5008839f, 0.4991161f, 0},
                              {0.3282212f, 0.3308427f, 0.3409361f}}}};
    const mha::Tensor3 o = {{{0.06f, -0.4f, -0.86f, -1.32f},
                             {0.2495903f, -0.3115056f, -0.8726016f, -1.4336977f},
                             {0.3287296f, -0.2655077f, -0.859745f, -1.4539824f}}};
    // PyTorch printed 7 decimals: 2e-7 covers its rounding and float's.
    CHECK(mha::max_abs_diff(r.weights, a) < 2e-7);
    CHECK(mha::max_abs_diff(r.output, o) < 5e-7);
    // And the fast path gives the same numbers.
    const mha::AttentionOutput f = m.forward(x, x, x, &causal);
    CHECK(mha::max_abs_diff(f.weights, a) < 5e-7);
    CHECK(mha::max_abs_diff(f.output, o) < 1e-6);
}
