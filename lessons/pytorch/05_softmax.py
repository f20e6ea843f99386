"""Lesson 05 side by side: the stable softmax, nn.Softmax(dim=-1)."""
import sys

from common import Lesson, torch

L = Lesson("05_softmax", sys.argv)
with torch.no_grad():
    L.section("Earlier stages, by the core")
    score = L.load("score")                                   # causal-masked, [B, H, Tq, Tk]

    L.section("1. Stable softmax over the last axis, written out")
    m = L.show("m = score.amax(-1, keepdim=True)", "m", score.amax(dim=-1, keepdim=True))
    weights = L.show("weights = softmax(score, -1)", "weights",
                     torch.nn.Softmax(dim=-1)(score))

    L.section("2. Rows sum to 1, columns do not")
    n = min(8, weights.shape[-1])
    print("row sums    (query i):", [round(float(x), 2) for x in weights[0, 0].sum(-1)[:n]])
    print("column sums (key j)  :", [round(float(x), 2) for x in weights[0, 0].sum(-2)[:n]])
L.done()
