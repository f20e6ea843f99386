"""Lesson 10 side by side: the merge with permute(0, 2, 1, 3) and without it."""
import sys

from common import Lesson, torch

L = Lesson("10_merge_without_permute", sys.argv)
with torch.no_grad():
    L.section("Earlier stages, by the core")
    x = L.load("x")                                           # weights @ v, [B, H, T, D]
    batch, n_head, time, n_d = x.shape

    L.section("1. The right merge and the wrong one")
    right = L.show("x.permute(0,2,1,3).contiguous().view", "right",
                   x.permute(0, 2, 1, 3).contiguous().view(batch, time, n_head * n_d))
    wrong = L.show("x.view(B, T, E)  # no permute", "wrong",
                   x.contiguous().view(batch, time, n_head * n_d))
    print(f"max |right - wrong| = {float((right - wrong).abs().max()):.4f}: same shape, "
          "other numbers")
    # view on the permuted tensor itself fails: PyTorch asks for the contiguous().
    try:
        x.permute(0, 2, 1, 3).view(batch, time, n_head * n_d)
        print("x.permute(0, 2, 1, 3).view(B, T, E) ran")
    except RuntimeError as e:
        print(f"x.permute(0, 2, 1, 3).view(B, T, E) without contiguous(): RuntimeError: "
              f"{str(e).splitlines()[0][:60]}...")
L.done()
