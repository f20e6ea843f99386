"""Lesson 26 side by side: the gradient of every stage of the articles' forward,
from PyTorch's autograd (torch.autograd.grad), against the C++ lesson's by-hand
backward. Each is held within 1e-5 of the largest |gradient| of its tensor: the
two sum in float32 in different orders."""
import math
import sys

from common import Lesson, torch

L = Lesson("26_backward_by_hand", sys.argv)
L.section("The forward, as the four-linear-layers article writes it, and the loss")
X = L.load("X").requires_grad_()                                # [B, T, E]
G = L.load("G")                                                 # dloss/doutput
wq, wk, wv, fc_out = (L.linear(n) for n in ("wq", "wk", "wv", "fc_out"))
batch, time, e = X.shape
n_head = L.load("dA").shape[1]
head_dim = e // n_head


def split(t):  # [B, T, E] -> [B, H, T, D]
    return t.view(batch, -1, n_head, head_dim).permute(0, 2, 1, 3)


Q, K, V = split(wq(X)), split(wk(X)), split(wv(X))             # [B, H, T, D] each
causal = torch.tril(torch.ones(time, time, dtype=torch.bool))
energy = torch.matmul(Q, K.permute(0, 1, 3, 2)) / math.sqrt(head_dim)
score = energy.masked_fill(~causal, float("-inf"))             # the softmax's input
attention = torch.softmax(score, dim=-1)                        # [B, H, Tq, Tk]
x = torch.matmul(attention, V)                                  # [B, H, T, D]
context = x.permute(0, 2, 1, 3).contiguous().view(batch, -1, e)
output = fc_out(context)                                        # [B, T, E]
L.show("output = attention(X, X, X, causal)", "s.output", output.detach(), relative=True)
loss = (output * G).sum()
print("loss = (output * G).sum(), so dloss/doutput = G")
grads = torch.autograd.grad(loss, [context, x, attention, V, score, Q, K,
                                   wq.weight, fc_out.weight, X])
d = dict(zip(["dC", "dA", "dP", "dv", "dS", "dq", "dk", "dWq", "dWo", "dX"], grads))

L.section("7) The output layer: output = context Wo^T + bo")
L.show("dC, = torch.autograd.grad(loss, context)", "dC", d["dC"], relative=True)
L.show("fc_out.weight's gradient", "dWo", d["dWo"], relative=True)
L.section("6) The merge: context = merge(A)")
L.show("the gradient of x before the merge", "dA", d["dA"], relative=True)
L.section("5) Weights x V: A = P v")
L.show("attention's gradient", "dP", d["dP"], relative=True)
L.show("V's gradient (split)", "dv", d["dv"], relative=True)
L.section("4) The softmax, on one row, then on all")
i = min(time, 5) - 1                                            # the lesson's query
row = score.detach()[0, 0, i, :i + 1]
J = torch.autograd.functional.jacobian(lambda s: torch.softmax(s, dim=-1), row)
print(f"J = jacobian(softmax) at batch 0, head 0, query {i}, from autograd:\n{J}")
dS = L.load("dS")
gap = float((J.T @ L.load("dP")[0, 0, i, :i + 1] - dS[0, 0, i, :i + 1]).abs().max())
print(f"J^T dP against the C++ dS on that row: max |diff| = {gap:.2g}")
L.worst = max(L.worst, gap / float(dS.abs().max()))
L.show("score's gradient", "dS", d["dS"], relative=True)
L.section("3) The scale and Q K^T: S = q k^T / sqrt(D)")
L.show("Q's gradient (split)", "dq", d["dq"], relative=True)
L.show("K's gradient (split)", "dk", d["dk"], relative=True)
L.section("2) The split, 1) the projections")
L.show("wq.weight's gradient", "dWq", d["dWq"], relative=True)
L.show("X's gradient (read as query, key and value)", "dX", d["dX"], relative=True)
L.done()
