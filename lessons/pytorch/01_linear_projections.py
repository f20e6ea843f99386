"""Lesson 01 side by side: wq, wk, wv as nn.Linear on the X the lesson drew."""
import sys

from common import Lesson, torch

L = Lesson("01_linear_projections", sys.argv)
with torch.no_grad():
    L.section("0. The input X and the layers")
    X = L.show("X = randn(B, T, E)", "X", L.load("X"))          # [B, T, E]
    wq = L.linear("wq")                                         # nn.Linear(E, E)
    L.show("wq.weight", "wq.weight", wq.weight)

    L.section("1. Q = X W^T + b, written out")
    rows = L.show("rows = X.view(B*T, E)", "rows", X.view(-1, X.shape[-1]))
    Q = L.show("Q = w_q(X)", "Q", wq(X))                        # [B, T, E]

    L.section("2. What Xavier keeps: the variance")
    print(f"  var(Q) = {Q.var(unbiased=False):.4g} against var(X) = "
          f"{X.var(unbiased=False):.4g}")

    L.section("3. K and V: the same layer shape, other weights")
    L.show("K = w_k(X)", "K", L.linear("wk")(X))
    L.show("V = w_v(X)", "V", L.linear("wv")(X))
L.done()
