#!/usr/bin/env python3
"""Runs the articles' own PyTorch code and writes the shape of every tensor
the lessons print at the default sizes to tests/data/article_shapes.txt.

    /usr/bin/python3 tests/pytorch/article_shapes.py   (Debian's python3-torch)

Each output line is "<lesson> <name>.shape = [...]  # <PyTorch expression>";
check_lesson looks for "<name>.shape = [...]" in that lesson's output.
"""
import math
import pathlib
import sys

try:
    import torch
    from torch import nn
except ImportError as e:  # as the suite's scripts: skipped (77) without PyTorch
    print(f"skipped: needs Debian's python3-torch ({e})")
    sys.exit(77)

torch.manual_seed(0)
lines = []


def record(lesson, name, tensor, expr):
    lines.append(f"{lesson} {name}.shape = {list(tensor.shape)}  # {expr}")


# The handwritten-course article: X = torch.randn(128, 64, 512), d_model 512,
# n_head 8, and its forward, line by line.
X = torch.randn(128, 64, 512)
d_model, n_head = 512, 8
w_q, w_k, w_v = (nn.Linear(d_model, d_model) for _ in range(3))
w_combine = nn.Linear(d_model, d_model)
with torch.no_grad():
    batch, time, dimension = X.shape
    n_d = d_model // n_head
    q, k, v = w_q(X), w_k(X), w_v(X)
    record("01_linear_projections", "X", X, "X = torch.randn(128, 64, 512)")
    record("01_linear_projections", "Q", q, "self.w_q(q)")
    record("01_linear_projections", "K", k, "self.w_k(k)")
    record("01_linear_projections", "V", v, "self.w_v(v)")
    q_view = q.view(batch, time, n_head, n_d)
    q = q_view.permute(0, 2, 1, 3)
    k = k.view(batch, time, n_head, n_d).permute(0, 2, 1, 3)
    v = v.view(batch, time, n_head, n_d).permute(0, 2, 1, 3)
    record("02_split_heads", "q", q_view, "q.view(batch, time, n_head, n_d)")
    record("02_split_heads", "q", q, "q.view(...).permute(0, 2, 1, 3)")
    record("02_split_heads", "k", k, "k.view(...).permute(0, 2, 1, 3)")
    record("02_split_heads", "v", v, "v.view(...).permute(0, 2, 1, 3)")
    raw = q @ k.transpose(2, 3)
    score = raw / math.sqrt(n_d)
    record("03_scores", "raw", raw, "q @ k.transpose(2, 3)")
    record("03_scores", "score", score, "q @ k.transpose(2, 3) / math.sqrt(n_d)")
    mask = torch.tril(torch.ones(time, time, dtype=bool))
    masked = score.masked_fill(mask == 0, float("-inf"))
    record("04_mask", "mask", mask, "torch.tril(torch.ones(time, time, dtype=bool))")
    record("04_mask", "score", masked, "score.masked_fill(mask == 0, float('-inf'))")
    weights = nn.Softmax(dim=-1)(masked)
    record("05_softmax", "weights", weights, "self.softmax(score)")
    x = weights @ v
    record("06_attend_merge", "x", x, "self.softmax(score) @ v")
    x = x.permute(0, 2, 1, 3)
    record("06_attend_merge", "x", x, "score.permute(0, 2, 1, 3)")
    x = x.contiguous().view(batch, time, dimension)
    record("06_attend_merge", "x", x, ".contiguous().view(batch, time, dimension)")
    output = w_combine(x)
    record("07_output_layer", "output", output, "self.w_combine(score)")

out = pathlib.Path(__file__).resolve().parent.parent / "data" / "article_shapes.txt"
out.write_text("\n".join(lines) + "\n")
print(f"wrote {len(lines)} shapes to {out}")
