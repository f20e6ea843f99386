#!/usr/bin/env python3
"""mha_forward --block against PyTorch's pre-norm Transformer block.

    /usr/bin/python3 tests/pytorch/check_block.py build/tools/mha_forward

The block is nn.TransformerEncoderLayer(E, H, F, dropout=0.0,
activation="gelu", batch_first=True, norm_first=True), its norms and biases
moved away from PyTorch's 1 and 0 so that each is seen. Its state_dict goes
to mha_forward --block as .npy files with an input X [B, T, E] and a random
dL/d output G; autograd runs loss = sum(block(X) * G), with
src_mask = ones(T, T).triu(1) (True = may not attend) where the case is
causal (--causal). Sizes: E 8 to 64, H 1 to 4, F 16 to 128, T 1 to 9, B 1
to 3; X at scale 1, 1e-3 (the variance 1e-6 is under LayerNorm's eps 1e-5,
so eps matters) and 100.

Tolerances, each relative to the largest |value| of PyTorch's tensor: the
output within 2e-5, every gradient (query.grad and the twelve parameters')
within 1e-4. The reference is PyTorch in float64 on the same float32 weights
and input, so that the measure is the C++ float32 rounding alone; PyTorch's
own float32 run is measured against it too and printed beside ("torch f32").
Exit 0 when all agree, 1 when one does not, 77 (skipped) without PyTorch.
"""
import copy
import sys

from state_dicts import compare, run, torch

if len(sys.argv) != 2:
    sys.exit("usage: check_block.py MHA_FORWARD")
FORWARD = sys.argv[1]
OUTPUT_LIMIT, GRAD_LIMIT = 2e-5, 1e-4


def make_block(E, H, F):
    block = torch.nn.TransformerEncoderLayer(E, H, F, dropout=0.0, activation="gelu",
                                             batch_first=True, norm_first=True)
    with torch.no_grad():
        for name, p in block.named_parameters():
            if name.startswith("norm") and name.endswith("weight"):
                p.copy_(1 + 0.2 * torch.randn_like(p))
            elif name.endswith("bias"):
                p.copy_(0.1 * torch.randn_like(p))
    # Left in train mode, where dropout 0.0 is the identity: in eval mode under
    # no_grad and without a src_mask, PyTorch 1.13 takes its fused fast path
    # (torch._transformer_encoder_layer_fwd), another implementation than the
    # one autograd differentiates (it gave the same numbers when tried).
    return block


def autograd(block, x, G, causal):
    """output, query.grad and every parameter's .grad, under mha_forward's names."""
    x = x.clone().requires_grad_()
    T = x.shape[1]
    mask = torch.ones(T, T, dtype=torch.bool).triu(1) if causal else None
    y = block(x, src_mask=mask)
    (y * G).sum().backward()
    out = {"output": y, "query.grad": x.grad}
    out.update({f"{k}.grad": p.grad for k, p in block.named_parameters()})
    return out


torch.manual_seed(33)
results = []
#        B  T   E  H    F  scale causal
for B, T, E, H, F, scale, causal in [
        (1, 1, 8, 1, 16, 1.0, True),
        (2, 5, 8, 2, 16, 1.0, False),
        (3, 9, 16, 4, 64, 1.0, True),
        (2, 7, 32, 4, 128, 1e-3, True),
        (2, 7, 32, 2, 64, 100.0, False),
        (1, 9, 64, 4, 128, 1e-3, False),
        (3, 4, 24, 3, 32, 100.0, True),
        (2, 6, 64, 1, 16, 1.0, True),
        (3, 8, 48, 4, 96, 1.0, False)]:
    block = make_block(E, H, F)
    x = torch.randn(B, T, E) * scale
    G = torch.randn(B, T, E)
    theirs = autograd(copy.deepcopy(block).double(), x.double(), G.double(), causal)
    theirs32 = autograd(block, x, G, causal)
    ours = run(FORWARD, "--weights", block, ["--block", "--num-heads", str(H)] +
               (["--causal"] if causal else []), {"query": x, "grad-output": G})
    case = (f"B {B} T {T} E {E:2d} H {H} F {F:3d} x{scale:g}"
            f"{' causal' if causal else ''}")
    results.append(compare(case, ours, theirs, theirs32, "output", OUTPUT_LIMIT, GRAD_LIMIT))

print(f"{sum(results)} of {len(results)} blocks agree with PyTorch (output within "
      f"{OUTPUT_LIMIT:g}, gradients within {GRAD_LIMIT:g} of the largest |value|)")
sys.exit(0 if all(results) else 1)
