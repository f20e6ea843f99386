#!/usr/bin/env python3
"""Each article's own class in PyTorch against `mha_forward --weights DIR`
on its state_dict, with the article's mask convention and fill.

    /usr/bin/python3 tests/pytorch/check_articles.py build/tools/mha_forward

The four-linear-layers class takes a mask (1 = may attend) and fills with
-1e10: mha_forward --keep-mask M.npy --fill -1e10, on a causal mask, on a
padding mask with one sequence fully padded (uniform weights there, in both),
and in cross-attention. The handwritten-course class is always causal with
-inf: mha_forward --causal. Exit 0 when every output is within 1e-5, 1 when
one is not, 77 (skipped) without PyTorch.
"""
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "lessons", "pytorch"))
try:
    import numpy as np
    import torch
    from articles import FourLinearLayers, HandwrittenCourse
except ImportError as e:
    print(f"skipped: needs Debian's python3-torch and python3-numpy ({e})")
    sys.exit(77)

if len(sys.argv) != 2:
    sys.exit("usage: check_articles.py MHA_FORWARD")
FORWARD = sys.argv[1]
B, T, E, H = 3, 6, 12, 3


def run(model, flags, *inputs, **arrays):
    """mha_forward on model's state_dict and the inputs; its output.npy."""
    with tempfile.TemporaryDirectory() as d:
        os.makedirs(f"{d}/weights")
        for k, v in model.state_dict().items():
            np.save(f"{d}/weights/{k}.npy", v.numpy())
        args = [FORWARD, "--weights", f"{d}/weights", "--num-heads", str(H), "--out", f"{d}/out"]
        for flag, x in zip(["--query", "--key", "--value"], inputs):
            np.save(f"{d}/{flag[2:]}.npy", x.numpy())
            args += [flag, f"{d}/{flag[2:]}.npy"]
        for flag, x in arrays.items():
            np.save(f"{d}/{flag}.npy", x.numpy())
            args += ["--" + flag.replace("_", "-"), f"{d}/{flag}.npy"]
        subprocess.run(args + flags, check=True, capture_output=True)
        return torch.from_numpy(np.load(f"{d}/out/output.npy"))


torch.manual_seed(0)
x, memory = torch.randn(B, T, E), torch.randn(B, T + 3, E)
worst = 0.0
with torch.no_grad():
    four = FourLinearLayers(E, H).eval()
    causal = torch.tril(torch.ones(T, T))                    # float ones, 1 = may attend
    padding = (torch.arange(T)[None, :] < torch.tensor([T, 4, 0])[:, None]).float()
    padding = padding[:, None, None, :]                      # [B, 1, 1, Tk]; sequence 2 empty
    cases = [
        ("four-linear-layers, causal", four(x, x, x, causal),
         run(four, ["--fill", "-1e10"], x, keep_mask=causal)),
        ("four-linear-layers, padding, one empty", four(x, x, x, padding),
         run(four, ["--fill", "-1e10"], x, keep_mask=padding)),
        ("four-linear-layers, cross-attention", four(x, memory, memory),
         run(four, [], x, memory, memory)),
    ]
    hand = HandwrittenCourse(E, H).eval()
    cases.append(("handwritten course, always causal", hand(x, x, x), run(hand, ["--causal"], x)))
for name, theirs, ours in cases:
    diff = float((theirs - ours).abs().max())
    worst = diff if not diff <= worst else worst
    print(f"{name:<40} {list(ours.shape)}  max |diff| = {diff:.2g}")
print(f"{'OK' if worst <= 1e-5 else 'FAILED'}, every article's class within 1e-5 of "
      f"mha_forward (worst {worst:.2g})")
sys.exit(0 if worst <= 1e-5 else 1)
