"""Lesson 32 side by side: multi-head latent attention as DeepSeek-V2's PyTorch
code writes it (the latent c_kv, the shared rotated key k_pe, q_nope and q_pe
concatenated), on sequence 0's input and the weights the C++ lesson dumped;
then the absorbed form, the weights folded with torch.einsum."""
import math
import sys

from common import Lesson, torch


def rope(x, theta=10000.0):
    """x [B, h, T, d] turned pair (2p, 2p + 1) by t * theta^(-2p/d) at position t,
    as Meta's Llama code does it, with complex numbers (angles in double)."""
    d, t = x.shape[-1], torch.arange(x.shape[-2], dtype=torch.float64)
    freqs = 1.0 / theta ** (torch.arange(0, d, 2, dtype=torch.float64) / d)
    turn = torch.polar(torch.ones(len(t), d // 2, dtype=torch.float64), torch.outer(t, freqs))
    z = torch.view_as_complex(x.double().reshape(*x.shape[:-1], d // 2, 2).contiguous())
    return torch.view_as_real(z * turn).flatten(-2).float()


L = Lesson("32_latent_attention", sys.argv)
with torch.no_grad():
    x = L.load("X0")                                          # [1, T, E]: sequence 0
    W = {n: L.load(n) for n in ("w_dq", "w_uq", "w_qr", "w_dkv", "w_uk", "w_uv", "w_kr", "w_o")}
    B, T, E = x.shape
    d_c, d_R = W["w_dkv"].shape[0], W["w_kr"].shape[0]
    H = W["w_qr"].shape[0] // d_R
    D = W["w_uq"].shape[0] // H
    causal = torch.ones(T, T, dtype=torch.bool).tril()

    L.section("1. The latent: what a decoder caches")
    c_kv = L.show("c_kv = kv_a_proj(x)[..., :d_c]", "c_kv", x @ W["w_dkv"].T, seq0=True)
    k_pe = L.show("k_pe = rope(k_pe.view(B, T, 1, d_R))", "k_r",
                  rope((x @ W["w_kr"].T).view(B, T, 1, d_R).transpose(1, 2)), seq0=True)

    L.section("2. Queries: a part without RoPE and a part with")
    c_q = L.show("c_q = q_a_proj(x)", "c_q", x @ W["w_dq"].T, seq0=True)
    q_nope = L.show("q_nope = q_b_proj(c_q)[..., :D]", "q_c",
                    (c_q @ W["w_uq"].T).view(B, T, H, D).transpose(1, 2), seq0=True)
    q_pe = L.show("q_pe = rope(q[..., D:])", "q_r",
                  rope((c_q @ W["w_qr"].T).view(B, T, H, d_R).transpose(1, 2)), seq0=True)

    L.section("3.-4. Explicit: every head's K and V rebuilt from the latent")
    k_nope = L.show("k_nope = kv_b_proj(c_kv)[..., :D]", "k_c",
                    (c_kv @ W["w_uk"].T).view(B, T, H, D).transpose(1, 2), seq0=True)
    v = L.show("v = kv_b_proj(c_kv)[..., D:]", "v",
               (c_kv @ W["w_uv"].T).view(B, T, H, D).transpose(1, 2), seq0=True)
    k = L.show("k = torch.cat([k_nope, k_pe.expand()])", "k",
               torch.cat([k_nope, k_pe.expand(B, H, T, d_R)], dim=-1), seq0=True)
    q = torch.cat([q_nope, q_pe], dim=-1)                    # [B, H, T, D + d_R]
    scores = (q @ k.transpose(2, 3) / math.sqrt(D + d_R)).masked_fill(~causal, float("-inf"))
    w = L.show("softmax(q @ k.mT / sqrt(D + d_R))", "w", torch.softmax(scores, dim=-1),
               seq0=True)
    y = L.show("o_proj((w @ v) merged)", "y",
               (w @ v).transpose(1, 2).reshape(B, T, H * D) @ W["w_o"].T, seq0=True)

    L.section("5.-6. Absorbed: attention against the latent itself")
    w_uk, w_uv = W["w_uk"].view(H, D, d_c), W["w_uv"].view(H, D, d_c)
    w_q_lat = L.show("einsum('hdc,hdq->hcq', w_uk, w_uq)", "w_q_lat",
                     torch.einsum("hdc,hdq->hcq", w_uk, W["w_uq"].view(H, D, -1))
                     .reshape(H * d_c, -1))
    w_o_lat = L.show("einsum('ehd,hdc->ehc', w_o, w_uv)", "w_o_lat",
                     torch.einsum("ehd,hdc->ehc", W["w_o"].view(E, H, D), w_uv)
                     .reshape(E, H * d_c))
    q_lat = L.show("einsum('bhtd,hdc->bhtc', q_nope, w_uk)", "q_lat",
                   torch.einsum("bhtd,hdc->bhtc", q_nope, w_uk), seq0=True)
    latent = c_kv.unsqueeze(1)                                # [B, 1, T, d_c]
    s = L.show("(q_lat @ c_kv.mT + q_pe @ k_pe.mT) / sqrt", "s",
               (q_lat @ latent.transpose(2, 3) + q_pe @ k_pe.transpose(2, 3))
               / math.sqrt(D + d_R), seq0=True)
    w_lat = torch.softmax(s.masked_fill(~causal, float("-inf")), dim=-1)
    y_lat = L.show("(w @ c_kv) merged @ w_o_lat.mT", "y_lat",
                   (w_lat @ latent).transpose(1, 2).reshape(B, T, H * d_c) @ w_o_lat.T, seq0=True)
    gap = float((y - y_lat).abs().max())
    print(f"explicit against absorbed in PyTorch: max |diff| = {gap:.2g}")
L.done()
