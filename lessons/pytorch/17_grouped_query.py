"""Lesson 17 side by side: grouped-query attention's repeat_interleave, on
the q, k, v and k_proj.weight the C++ lesson dumped."""
import math
import sys

from common import Lesson, torch

L = Lesson("17_grouped_query", sys.argv)
with torch.no_grad():
    L.section("1.-2. Fewer key/value heads, by the core")
    q, k, wk = L.load("q"), L.load("k"), L.load("wk")      # [B, H, T, D], [B, H_kv, T, D]
    n_head, n_kv, n_d = q.shape[1], k.shape[1], q.shape[3]
    group = n_head // n_kv

    L.section("3. Meeting the query heads: a copy, or an index")
    k_rep = L.show("k.repeat_interleave(H // H_kv, dim=1)", "k_rep",
                   k.repeat_interleave(group, dim=1))
    L.show("q @ k.transpose(2, 3) / math.sqrt(D)", "scores",
           q @ k_rep.transpose(2, 3) / math.sqrt(n_d))

    L.section("4. Copied K/V weights: grouped attention is the articles' module")
    # Each kv head's D rows of k_proj.weight, repeated over its group: on rows
    # the repeat goes by blocks of D (a view to [H_kv, D, E] first).
    e = wk.shape[1]
    L.show("k_proj.weight.view(H_kv, D, E).repeat_interleave", "full.wk",
           wk.view(n_kv, n_d, e).repeat_interleave(group, dim=0).reshape(n_head * n_d, e))
    by_row = wk.repeat_interleave(group, dim=0)
    print(f"k_proj.weight.repeat_interleave(H // H_kv, dim=0), row by row: max |diff| vs C++ "
          f"= {float((by_row - L.load('full.wk')).abs().max()):.2g} "
          f"({'the same' if n_d == 1 or group == 1 else 'not it: each row repeats'})")
L.done()
