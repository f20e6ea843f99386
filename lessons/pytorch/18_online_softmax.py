"""Lesson 18 side by side: attention in tiles with the online softmax,
written in PyTorch, against the softmax of all the scores at once and the
C++ lesson's tiles."""
import math
import sys

from common import Lesson, torch

L = Lesson("18_online_softmax", sys.argv)
with torch.no_grad():
    L.section("2. Attention in tiles: Bq queries by Bk keys")
    q, k, v = L.load("q")[:1], L.load("k0"), L.load("v0")      # sequence 0, [1, H, T, D]
    _, n_head, time, n_d = q.shape
    block = 2                            # any block size gives the same numbers
    causal = torch.tril(torch.ones(time, time, dtype=torch.bool))
    score = (q @ k.transpose(2, 3) / math.sqrt(n_d)).masked_fill(~causal, float("-inf"))
    plain = torch.softmax(score, dim=-1) @ v                    # all the scores at once

    # The online softmax over key blocks: a running max m, sum l and output acc
    m = torch.full((1, n_head, time, 1), float("-inf"))
    l, acc = torch.zeros(1, n_head, time, 1), torch.zeros(1, n_head, time, n_d)
    for j in range(0, time, block):
        s_b = score[..., j:j + block]                           # [1, H, T, Bk]
        m_new = torch.maximum(m, s_b.amax(-1, keepdim=True))
        safe = torch.where(torch.isinf(m_new), torch.zeros_like(m_new), m_new)
        rescale = torch.exp(m - safe)                           # e^(-inf) = 0 at first
        p = torch.exp(s_b - safe)
        l = l * rescale + p.sum(-1, keepdim=True)
        acc = acc * rescale + p @ v[..., j:j + block, :]
        m = m_new
    context = L.show("weights @ v, one block of keys at a time", "t.context", acc / l,
                     seq0=True)
    print(f"online against softmax(score) @ v at once: max |diff| = "
          f"{float((context - plain).abs().max()):.2g}")
    L.show("torch.logsumexp(scores, dim=-1)", "t.lse", torch.logsumexp(score, dim=-1),
           seq0=True)
    L.show("m + log(l), from the blocks", "t.lse", (m + torch.log(l)).squeeze(-1), seq0=True)

    L.section("3. The output from the tiles")
    y = L.linear("fc_out")(context.permute(0, 2, 1, 3).reshape(1, time, n_head * n_d))
    L.show("w_o(merge(context))", "y", y, seq0=True)
L.done()
