"""Lesson 03 side by side: q @ k.transpose(2, 3) / math.sqrt(n_d)."""
import math
import sys

from common import Lesson, torch

L = Lesson("03_scores", sys.argv)
with torch.no_grad():
    L.section("Earlier stages, by the core")
    X = L.load("X")
    batch, time, d_model = X.shape
    n_head, n_d = L.load("q").shape[1], L.load("q").shape[3]
    split = lambda x: x.view(batch, time, n_head, n_d).permute(0, 2, 1, 3)
    q = L.show("q = split(w_q(X))", "q", split(L.linear("wq")(X)))   # [B, H, T, D]
    k = L.show("k = split(w_k(X))", "k", split(L.linear("wk")(X)))

    L.section("1. Q K^T, one product per (batch, head)")
    raw = L.show("q @ k.transpose(2, 3)", "raw", q @ k.transpose(2, 3))  # [B, H, Tq, Tk]

    L.section("2. Divide by sqrt(D)")
    score = L.show("score = raw / sqrt(n_d)", "score", raw / math.sqrt(n_d))
    var = lambda t: float(t.var(unbiased=False))
    print(f"  var(raw) = {var(raw):.4g} against D var(q) var(k) = "
          f"{n_d * var(q) * var(k):.4g}; var(score) = {var(score):.4g}")
L.done()
