"""Lesson 30 side by side: RoPE in PyTorch, both conventions (Meta's Llama and
llama2.c pair 2p with 2p + 1, Hugging Face's rotate_half pairs p with p + D/2),
on the q and the weights the C++ lesson dumped."""
import math
import sys

from common import Lesson, torch

L = Lesson("30_rope", sys.argv)
theta = 10000.0


def rope(t, half, offset=0):
    """t [B, H, T, D] turned: pair p at position offset + t by (offset + t) theta^(-2p/D),
    the angles in float64 as the C++ computes them."""
    T, D = t.shape[2], t.shape[3]
    freqs = 1.0 / theta ** (torch.arange(0, D, 2, dtype=torch.float64) / D)     # [D/2]
    angle = (offset + torch.arange(T, dtype=torch.float64))[:, None] * freqs    # [T, D/2]
    cos, sin, t = angle.cos(), angle.sin(), t.double()
    if not half:  # llama2.c: q0 * fcr - q1 * fci, q0 * fci + q1 * fcr
        x1, x2 = t[..., 0::2], t[..., 1::2]
        return torch.stack([x1 * cos - x2 * sin, x1 * sin + x2 * cos], -1).flatten(-2).float()
    cos, sin = torch.cat([cos, cos], -1), torch.cat([sin, sin], -1)             # [T, D]
    rotate_half = torch.cat([-t[..., D // 2:], t[..., :D // 2]], -1)
    return (t * cos + rotate_half * sin).float()


with torch.no_grad():
    L.section("Earlier stages, by the core")
    x0 = L.load("X0")                                          # sequence 0, [1, T, E]
    wq, wk = L.linear("wq"), L.linear("wk")
    q_all = L.load("q")                                        # every sequence, [B, H, T, D]
    batch, n_head, time, n_d = q_all.shape

    def split(t):  # [1, T, E] -> [1, H, T, D]
        return t.view(1, time, n_head, n_d).permute(0, 2, 1, 3)

    q = L.show("q = split(wq(X))", "q", split(wq(x0)), seq0=True)
    k = split(wk(x0))                                          # [1, H, T, D]

    L.section("2. RoPE on every head, written out")
    q_rot = L.show("q = apply_rotary_emb(q, freqs_cis)", "q_rot", rope(q_all, False))
    L.show("q @ k.transpose(2, 3) / math.sqrt(D)", "s",
           q_rot[:1] @ rope(k, False).transpose(2, 3) / math.sqrt(n_d), seq0=True)

    L.section("4. Two conventions, one permutation apart")
    perm = torch.cat([torch.arange(0, n_d, 2), torch.arange(1, n_d, 2)])
    L.show("q[..., perm], then rotate_half", "q_half", rope(q_all[..., perm], True))
    s_half = rope(q[..., perm], True) @ rope(k[..., perm], True).transpose(2, 3) / math.sqrt(n_d)
    L.show("the scores of the permuted rotate-half", "s_half", s_half, dump="s", seq0=True)
L.done()
