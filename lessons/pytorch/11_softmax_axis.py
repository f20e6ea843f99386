"""Lesson 11 side by side: the softmax over dim=-1 and over dim=-2, and the
future leaking into the past with dim=-2, on sequence 0."""
import math
import sys

from common import Lesson, torch

L = Lesson("11_softmax_axis", sys.argv)
with torch.no_grad():
    x0 = L.load("X0")                                          # sequence 0, [1, T, E]
    wq, wk, wv, fc_out = (L.linear(n) for n in ("wq", "wk", "wv", "fc_out"))
    batch, time, e = x0.shape
    n_head = L.load("right_w0").shape[1]
    n_d = e // n_head
    causal = torch.tril(torch.ones(time, time, dtype=torch.bool))

    def split(t):  # [1, T, E] -> [1, H, T, D]
        return t.view(batch, time, n_head, n_d).permute(0, 2, 1, 3)

    def attention(x, dim):  # the module with the softmax over `dim`: output, weights
        score = split(wq(x)) @ split(wk(x)).transpose(2, 3) / math.sqrt(n_d)
        w = torch.softmax(score.masked_fill(~causal, float("-inf")), dim=dim)
        return fc_out((w @ split(wv(x))).permute(0, 2, 1, 3).reshape(batch, time, e)), w

    L.section("1. Rows or columns")
    right, right_w = attention(x0, -1)
    wrong, wrong_w = attention(x0, -2)
    L.show("torch.softmax(score, dim=-1)", "right_w", right_w, dump="right_w0")
    L.show("torch.softmax(score, dim=-2)", "wrong_w", wrong_w, dump="wrong_w0")
    for dim, w in ((-1, right_w), (-2, wrong_w)):
        print(f"dim={dim}  row sums {[round(float(s), 2) for s in w[0, 0].sum(-1)[:6]]}"
              f"   column sums {[round(float(s), 2) for s in w[0, 0].sum(-2)[:6]]}")
    L.show("output, dim=-1", "right", right, dump="right0")
    L.show("output, dim=-2", "wrong", wrong, dump="wrong0")

    L.section("2. The future leaks into the past")
    x2 = x0.clone()
    x2[0, time - 1] += 1                                       # the last token only
    print("change of outputs 0..T-2 after changing token T-1:")
    for dim, before in ((-1, right), (-2, wrong)):
        after = attention(x2, dim)[0]
        print(f"  dim={dim}: max |diff| = "
              f"{float((after - before)[:, :time - 1].abs().max()):.3g}")
L.done()
