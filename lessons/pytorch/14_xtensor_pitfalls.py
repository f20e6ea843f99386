"""Lesson 14 side by side: the softmax xtensor's lazy one-liner gets wrong,
torch.softmax(s, dim=-1) on the same block of scores."""
import sys

from common import Lesson, torch

L = Lesson("14_xtensor_pitfalls", sys.argv)
with torch.no_grad():
    L.section("1. A lazy reducer inside a broadcast")
    s = L.load("s")                                           # scores, [1, 1, n, n]
    right = L.show("torch.softmax(s, dim=-1)", "right", torch.softmax(s, dim=-1))
    lazy = L.load("lazy")
    print(f"row sums, torch: {[round(float(r), 4) for r in right[0, 0].sum(-1)]}; "
          f"the lazy one-liner's: {[round(float(r), 4) for r in lazy[0, 0].sum(-1)]}")
    print(f"the lazy one-liner against torch: max |diff| = "
          f"{float((lazy - right).abs().max()):.4f} (the bug, not held to 1e-5)")
L.done()
