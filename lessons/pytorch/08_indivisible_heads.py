"""Lesson 08 side by side: 7 heads on d_model 8 (or 512) in PyTorch: the
article's view fails, and the floored head_dim silently drops columns."""
import math
import sys

from common import Lesson, torch

L = Lesson("08_indivisible_heads", sys.argv)
with torch.no_grad():
    L.section("2. What a silent floor would do")
    x0 = L.load("X0")                                          # sequence 0, [1, T, E]
    wq, wk, wv = L.linear("wq"), L.linear("wk"), L.linear("wv")
    batch, time, e = x0.shape
    used = L.load("x").shape[2]                                 # H * D of the E columns
    q, k, v = wq(x0), wk(x0), wv(x0)                            # [1, T, E] each

    def floored(q, k, v, n_head):  # attention over the first H * D columns: [1, T, H*D]
        d = e // n_head                                         # embed_dim // num_heads

        def split(t):  # [1, T, H*D] -> [1, H, T, D]
            return t[..., :n_head * d].reshape(batch, time, n_head, d).permute(0, 2, 1, 3)

        w = torch.softmax(split(q) @ split(k).transpose(2, 3) / math.sqrt(d), dim=-1)
        return (w @ split(v)).permute(0, 2, 1, 3).reshape(batch, time, n_head * d)

    # The dump holds no head count: of those whose floor uses `used` columns,
    # the one whose output is the lesson's (3 and 6 both use 6 of 8 columns).
    fits = [h for h in range(2, e) if e % h and h * (e // h) == used]
    theirs = L.load("x")[:1]
    n_head = min(fits, key=lambda h: float((floored(q, k, v, h) - theirs).abs().max()))
    head_dim = e // n_head
    print(f"H = {n_head} (of the head counts that use {used} of the {e} columns: {fits})")
    try:
        q.view(batch, -1, n_head, head_dim)
        print(f"q.view(batch, -1, {n_head}, {head_dim}) ran")
    except RuntimeError as err:
        print(f"q.view(batch, -1, {n_head}, {head_dim}): RuntimeError: {err}")
    out = L.show("x = floored attention", "x", floored(q, k, v, n_head), seq0=True)
    q2, k2, v2 = q.clone(), k.clone(), v.clone()
    q2[..., used:] += 100
    k2[..., used:] -= 100
    v2[..., used:] *= 50
    out2 = floored(q2, k2, v2, n_head)
    print(f"the ignored columns changed: max |diff| = {float((out2 - out).abs().max()):.6f}")
L.done()
