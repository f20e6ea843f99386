"""Lesson 06 side by side: weights @ v, permute back, contiguous, view."""
import sys

from common import Lesson, torch

L = Lesson("06_attend_merge", sys.argv)
with torch.no_grad():
    L.section("Earlier stages, by the core")
    v, weights = L.load("v"), L.load("weights")        # [B, H, Tk, D], [B, H, Tq, Tk]
    batch, n_head, time, n_d = v.shape

    L.section("1. weights @ v, one product per (batch, head)")
    x = L.show("x = weights @ v", "x", weights @ v)    # [B, H, Tq, D]

    L.section("2. permute back, contiguous, view")
    x = L.show("x.permute(0, 2, 1, 3)", "x", x.permute(0, 2, 1, 3), dump="x.2")
    L.show("x.contiguous().view(B, T, E)", "x", x.contiguous().view(batch, time, n_head * n_d),
           dump="x.3")
L.done()
