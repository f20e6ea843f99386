"""Lesson 02 side by side: view + permute(0, 2, 1, 3) in PyTorch."""
import sys

from common import Lesson, torch

L = Lesson("02_split_heads", sys.argv)
with torch.no_grad():
    L.section("Earlier stages, by the core")
    X = L.load("X")
    batch, time, d_model = X.shape
    n_head = L.load("q").shape[2]                     # the lesson's --heads
    Q = L.show("Q = w_q(X)", "Q", L.linear("wq")(X))  # [B, T, E]

    L.section("1. n_d = d_model / n_head")
    n_d = d_model // n_head
    print(f"n_d = {d_model} // {n_head} = {n_d}")

    L.section("2. view: split the last axis E into H x D")
    q = L.show("q.view(B, T, H, D)", "q", Q.view(batch, time, n_head, n_d))

    L.section("3. permute(0, 2, 1, 3): heads before time")
    q = L.show("q.permute(0, 2, 1, 3)", "q", q.permute(0, 2, 1, 3), dump="q.2")

    L.section("4. The same for K and V")
    for name, layer in [("k", "wk"), ("v", "wv")]:
        x = L.linear(layer)(X).view(batch, time, n_head, n_d).permute(0, 2, 1, 3)
        L.show(f"{name} = split(w_{name}(X))", name, x)
L.done()
