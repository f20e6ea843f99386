"""Lesson 16 side by side: decoding with a KV cache in PyTorch, torch.cat
along the time axis, against the causal forward of all T at once."""
import math
import sys

from common import Lesson, torch

L = Lesson("16_kv_cache", sys.argv)
with torch.no_grad():
    x0 = L.load("X0")                                          # sequence 0, [1, T, E]
    wq, wk, wv, fc_out = (L.linear(n) for n in ("wq", "wk", "wv", "fc_out"))
    n_head = L.load("cache.k").shape[1]
    batch, time, e = x0.shape
    n_d = e // n_head

    def split(t):  # [1, t, E] -> [1, H, t, D]
        return t.view(batch, -1, n_head, n_d).permute(0, 2, 1, 3)

    def attend(q, k, v, mask=None):  # [1, H, tq, D], [1, H, tk, D] -> [1, tq, E] and weights
        score = q @ k.transpose(2, 3) / math.sqrt(n_d)
        if mask is not None:
            score = score.masked_fill(mask == 0, float("-inf"))
        w = torch.softmax(score, dim=-1)
        return fc_out((w @ v).permute(0, 2, 1, 3).reshape(batch, -1, e)), w

    L.section("Earlier stages, by the core")
    causal = torch.tril(torch.ones(time, time, dtype=torch.bool))
    L.show("the causal forward, all T at once", "full",
           attend(split(wq(x0)), split(wk(x0)), split(wv(x0)), causal)[0], seq0=True)

    L.section("1. Prefill the prompt")
    prompt = L.load("y").shape[1]                              # P
    x = x0[:, :prompt]
    k_cache, v_cache = split(wk(x)), split(wv(x))              # [1, H, P, D]
    mask = torch.tril(torch.ones(prompt, prompt, dtype=torch.bool))
    L.show("prefill(prompt)", "y", attend(split(wq(x)), k_cache, v_cache, mask)[0], seq0=True)

    L.section("2. One decode step, written out")
    x_t = x0[:, prompt:prompt + 1]                             # [1, 1, E]
    k = L.show("k_cache[:, :, t] = k", "k", split(wk(x_t)), seq0=True)
    k_cache = torch.cat([k_cache, k], dim=2)                   # [1, H, P + 1, D]
    v_cache = torch.cat([v_cache, split(wv(x_t))], dim=2)
    y_t, w = attend(split(wq(x_t)), k_cache, v_cache)         # no mask: all cached keys
    L.show("softmax(q @ k_cache.T / sqrt(D))", "w", w, seq0=True)
    L.show("w_o(merge(w @ v_cache))", "y_t", y_t, seq0=True)

    L.section("3. Decode the rest: every step is the full forward's row")
    worst = 0.0
    full = L.load("full")[:1]
    for t in range(prompt + 1, time):
        x_t = x0[:, t:t + 1]
        k_cache = torch.cat([k_cache, split(wk(x_t))], dim=2)
        v_cache = torch.cat([v_cache, split(wv(x_t))], dim=2)
        worst = max(worst, float((attend(split(wq(x_t)), k_cache, v_cache)[0] -
                                  full[:, t:t + 1]).abs().max()))
    L.worst = max(L.worst, worst)
    print(f"steps {prompt + 1}..{time - 1} by torch.cat against the C++ causal forward: "
          f"max |diff| = {worst:.2g}")
L.done()
