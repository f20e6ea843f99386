"""Lesson 13 side by side: for each head size D, on the lesson's q, k and
upstream gradients G, the variance of the scores, the softmax's mean entropy
and the median |dL/dscores| scaled by sqrt(D), sqrt(E) or not at all, with the
gradient from PyTorch's autograd (torch.autograd.grad), against the lesson's
table, which works the gradient out by hand: P * (G - sum(P * G))."""
import glob
import math
import os
import sys

from common import Lesson, torch

L = Lesson("13_scaling", sys.argv)
dims = sorted(int(os.path.basename(p)[1:-6]) for p in glob.glob(os.path.join(L.dir, "D*.q.npy")))
print("The lesson's E is D * H; H is found as the count that gives its sqrt(E) column.")
HOW = ("sqrt(D)", "sqrt(E)", "none")


def stats(q, k, factor, g):
    """var(scores), mean entropy of the softmax rows, median over the rows of
    |dL/ds| for L = sum(softmax(s) * g), s = factor * q k^T, as the lesson
    scales: by 1/sqrt(D), then by factor * sqrt(D)."""
    d = q.shape[-1]
    s = ((q @ k.transpose(-2, -1)) / math.sqrt(d) * (factor * math.sqrt(d))).requires_grad_()
    p = torch.softmax(s, dim=-1)                               # [n, 1, T, T]
    ds, = torch.autograd.grad((p * g).sum(), s)
    s64, p64 = s.detach().double(), p.detach().double()
    entropy = -(torch.where(p64 > 0, p64 * p64.log(), torch.zeros_like(p64))).sum(-1).mean()
    rows = ds.double().norm(dim=-1).flatten().sort().values
    return torch.tensor([float(s64.var(unbiased=False)), float(entropy),
                         float(rows[len(rows) // 2])])


def table(n_head):
    return {(d, f): stats(L.load(f"D{d}.q"), L.load(f"D{d}.k"),
                          (1 / math.sqrt(d), 1 / math.sqrt(d * n_head), 1.0)[f],
                          L.load(f"D{d}.G{f}")) for d in dims for f in range(3)}


# The dump holds no head count: the one whose sqrt(E) column at D = 16 is the lesson's.
d0 = dims[0]
n_head = min(range(1, 65), key=lambda h: float(
    (stats(L.load(f"D{d0}.q"), L.load(f"D{d0}.k"), 1 / math.sqrt(d0 * h), L.load(f"D{d0}.G1"))
     - L.load(f"D{d0}.stats1")).abs().max()))
ours = table(n_head)
L.section("1. Scores, softmax entropy and gradient across D")
print(f"H = {n_head}; each cell: var(scores), entropy, median |grad| through the softmax")
print(f"{'D':>4} | " + " | ".join(f"{h:^26}" for h in HOW))
for d in dims:
    print(f"{d:4} | " + " | ".join(f"{float(ours[d, f][0]):7.3f} {float(ours[d, f][1]):7.2f} "
                                   f"{float(ours[d, f][2]):9.2e}" for f in range(3)))
# Each number within 1e-4 of the lesson's, relative: the gradient is in float
# here, and a peaked row's (scaled by none, large D) is a small difference,
# so a float's rounding of the weights moves it by up to about 1e-5.
for d in dims:
    for f in range(3):
        L.show(f"D = {d}, scaled by {HOW[f]}", f"D{d}.stats{f}", ours[d, f].float(),
               relative="each", tolerance=1e-4)
L.done()
