"""Lesson 19 side by side: the sinusoidal positional encoding the model adds,
and the softmax rows of the heads' weights it drew."""
import math
import sys

from common import Lesson, torch

L = Lesson("19_heads_learn", sys.argv)
with torch.no_grad():
    L.section("1. The task and the model")
    time, e = L.load("m.positions").shape
    p = torch.arange(time, dtype=torch.float64)[:, None]             # [T, 1]
    i2 = torch.arange(0, e, 2, dtype=torch.float64)[None, :]          # 2i, [1, E/2]
    pe = torch.zeros(time, e, dtype=torch.float64)
    pe[:, 0::2] = torch.sin(p / 10000 ** (i2 / e))
    pe[:, 1::2] = torch.cos(p / 10000 ** (i2 / e))
    L.show("pe[p, 2i] = sin(p / 10000**(2i/E))", "m.positions", pe.float())

    L.section("2.-3. The weights before and after training")
    for name in ("weights.before", "weights.end"):
        w = L.load(name)                                              # [B, H, T, T]
        rows = w.sum(-1)                                              # each row a softmax
        diff = float((rows - 1).abs().max())
        L.worst = max(L.worst, diff)
        print(f"{name + '.sum(-1)':<41} rows = {list(rows.shape)}  max |sum - 1| = "
              f"{diff:.2g}")
    end = L.load("weights.end")
    anti = end[:, :, torch.arange(time), time - 1 - torch.arange(time)].mean()
    print(f"mean weight on the anti-diagonal (the reversed position) at the end: "
          f"{float(anti):.3f}")
L.done()
