#!/usr/bin/env python3
"""The variants of today's models, against PyTorch: mha_forward's --window,
--sinks, --prefix, --documents, --alibi, --softcap and --rope (both conventions, a theta,
through the KV cache with --incremental; --window and --sinks through the rolling
cache), alone and combined, with
grouped-query attention.

    /usr/bin/python3 tests/pytorch/check_variants.py build/tools/mha_forward

PyTorch 1.13 has none of them as a flag, so each is written out below in a
few lines of tensor code, in the order the core applies them: projections,
RoPE on q and k, scores / sqrt(D), soft-capping, ALiBi, the masks, softmax.
Exit 0 when every output and weights is within 1e-5, 1 when one is not,
77 (skipped) without PyTorch.
"""
import math
import os
import subprocess
import sys
import tempfile

try:
    import numpy as np
    import torch
except ImportError as e:
    print(f"skipped: needs Debian's python3-torch and python3-numpy ({e})")
    sys.exit(77)

if len(sys.argv) != 2:
    sys.exit("usage: check_variants.py MHA_FORWARD")
FORWARD = sys.argv[1]


def run(state, H, x, flags, ids=None):
    """mha_forward on a state_dict and input x (and document ids, the file IDS
    in flags); its output and weights (or None)."""
    with tempfile.TemporaryDirectory() as d:
        os.makedirs(f"{d}/w")
        for k, v in state.items():
            np.save(f"{d}/w/{k}.npy", v.numpy())
        np.save(f"{d}/x.npy", x.numpy())
        if ids is not None:
            np.save(f"{d}/ids.npy", ids.numpy())
        args = [FORWARD, "--weights", f"{d}/w", "--num-heads", str(H), "--query", f"{d}/x.npy",
                "--out", f"{d}/out"] + flags.replace("IDS", f"{d}/ids.npy").split()
        subprocess.run(args, check=True, capture_output=True)
        w = f"{d}/out/attn_weights.npy"
        return (torch.from_numpy(np.load(f"{d}/out/output.npy")),
                torch.from_numpy(np.load(w)) if os.path.exists(w) else None)


def slopes(H):
    """ALiBi's slopes: 2^(-8h/H), h = 1..H, for H a power of two; else those
    of the power of two c below H, then every other one of 2c's."""
    c = 2 ** int(math.log2(H))
    pow2 = lambda n: [2 ** (-8 * h / n) for h in range(1, n + 1)]
    return torch.tensor(pow2(c) + pow2(2 * c)[0::2][:H - c])


def rope(t, style, theta):
    """t [B, H, T, D] turned: pair p at position i by the angle i theta^(-2p/D)."""
    T, D = t.shape[2], t.shape[3]
    freq = theta ** (-torch.arange(0, D, 2, dtype=torch.float64) / D)      # [D/2]
    angle = torch.arange(T, dtype=torch.float64)[:, None] * freq[None, :]  # [T, D/2]
    cos, sin = angle.cos().float(), angle.sin().float()
    if style == "interleaved":  # llama2.c: pairs (2p, 2p + 1)
        x1, x2 = t[..., 0::2], t[..., 1::2]
        return torch.stack([x1 * cos - x2 * sin, x1 * sin + x2 * cos], -1).flatten(-2)
    # Hugging Face's Llama: q * cos + rotate_half(q) * sin, pairs (p, p + D/2)
    cos, sin = torch.cat([cos, cos], -1), torch.cat([sin, sin], -1)
    rotate_half = torch.cat([-t[..., D // 2:], t[..., :D // 2]], -1)
    return t * cos + rotate_half * sin


def attend(state, x, H, H_kv, keep=None, alibi=False, cap=None, rope_style=None, theta=1e4):
    """The forward written out; keep(i, j) bool [T, T] or [B, 1, T, T], True = may attend."""
    B, T, E = x.shape
    D = E // H
    lin = lambda name, t: t @ state[f"{name}.weight"].T
    q = lin("q_proj", x).view(B, T, H, D).permute(0, 2, 1, 3)        # [B, H, T, D]
    k = lin("k_proj", x).view(B, T, H_kv, D).permute(0, 2, 1, 3)     # [B, H_kv, T, D]
    v = lin("v_proj", x).view(B, T, H_kv, D).permute(0, 2, 1, 3)
    if rope_style:
        q, k = rope(q, rope_style, theta), rope(k, rope_style, theta)
    k = k.repeat_interleave(H // H_kv, dim=1)                        # [B, H, T, D]
    v = v.repeat_interleave(H // H_kv, dim=1)
    s = q @ k.transpose(-2, -1) / math.sqrt(D)                       # [B, H, T, T]
    if cap:
        s = cap * torch.tanh(s / cap)
    i, j = torch.arange(T)[:, None], torch.arange(T)[None, :]
    if alibi:
        s = s - slopes(H)[:, None, None] * (i - j)                   # [H, T, T]
    if keep is not None:
        s = s.masked_fill(~keep(i, j), float("-inf"))
    w = torch.softmax(s, dim=-1)
    y = (w @ v).permute(0, 2, 1, 3).contiguous().view(B, T, E)
    return lin("o_proj", y), w


causal = lambda i, j: j <= i
window = lambda W: lambda i, j: (j <= i) & (j > i - W)
sinks = lambda S, W: lambda i, j: (j <= i) & ((j < S) | (j > i - W))
prefix = lambda P: lambda i, j: (j < P) | (j <= i)
# ids [B, T]: the same document (ids[b, i] == ids[b, j]) and causal, [B, 1, T, T]
documents = lambda ids: lambda i, j: ((ids[:, :, None] == ids[:, None, :]) & (j <= i))[:, None]

torch.manual_seed(0)
results = []
with torch.no_grad():
    B, T = 2, 11
    for E, H, H_kv in [(16, 4, 2), (24, 6, 3), (16, 4, 1)]:
        D = E // H
        state = {"q_proj.weight": torch.randn(E, E) / 3, "k_proj.weight": torch.randn(H_kv * D, E) / 3,
                 "v_proj.weight": torch.randn(H_kv * D, E) / 3, "o_proj.weight": torch.randn(E, E) / 3}
        x = torch.randn(B, T, E)
        kv = f"--num-kv-heads {H_kv}"
        cases = [
            ("--window 3", dict(keep=window(3))),
            ("--window 4 --sinks 2", dict(keep=sinks(2, 4))),
            ("--prefix 4", dict(keep=prefix(4))),
            ("--alibi --causal", dict(keep=causal, alibi=True)),
            ("--softcap 0.5 --causal", dict(keep=causal, cap=0.5)),
            ("--softcap 0.5", dict(cap=0.5)),
            ("--rope interleaved --causal", dict(keep=causal, rope_style="interleaved")),
            ("--rope half --rope-theta 500 --causal",
             dict(keep=causal, rope_style="half", theta=500.0)),
            ("--rope half --window 3", dict(keep=window(3), rope_style="half")),
            ("--window 5 --sinks 1 --alibi --softcap 0.7",
             dict(keep=sinks(1, 5), alibi=True, cap=0.7)),
        ]
        for flags, kw in cases:
            want, want_w = attend(state, x, H, H_kv, **kw)
            got, got_w = run(state, H, x, f"{kv} {flags}")
            results.append((f"H={H} H_kv={H_kv} {flags}", want, got))
            results.append(("  its weights", want_w, got_w))
        # --no-weights: the engine's tiles (soft-capping among them, C in the call)
        for flags, kw in [("--window 3 --no-weights", dict(keep=window(3))),
                          ("--rope half --no-weights --causal",
                           dict(keep=causal, rope_style="half")),
                          ("--softcap 0.5 --causal --no-weights", dict(keep=causal, cap=0.5)),
                          ("--window 5 --sinks 1 --alibi --softcap 0.7 --no-weights",
                           dict(keep=sinks(1, 5), alibi=True, cap=0.7))]:
            got, got_w = run(state, H, x, f"{kv} {flags}")
            assert got_w is None, f"{flags} wrote attn_weights.npy"
            results.append((f"H={H} H_kv={H_kv} {flags}", attend(state, x, H, H_kv, **kw)[0], got))
        ids = torch.tensor([[0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2], [5] * 6 + [7] * 5])  # int64 [B, T]
        for flags, kw in [("--documents IDS", dict(keep=documents(ids))),
                          ("--documents IDS --rope half --alibi",
                           dict(keep=documents(ids), rope_style="half", alibi=True))]:
            want, want_w = attend(state, x, H, H_kv, **kw)
            got, got_w = run(state, H, x, f"{kv} {flags}", ids)
            results.append((f"H={H} H_kv={H_kv} {flags}", want, got))
            results.append(("  its weights", want_w, got_w))
        for style in ["interleaved", "half"]:
            want = attend(state, x, H, H_kv, keep=causal, rope_style=style)[0]
            got, _ = run(state, H, x, f"{kv} --rope {style} --incremental")
            results.append((f"H={H} H_kv={H_kv} --rope {style} --incremental", want, got))
        # the rolling cache of S + W slots, decoding T = 11 positions: it wraps
        for flags, kw in [("--window 3 --incremental", dict(keep=window(3))),
                          ("--window 4 --sinks 2 --incremental", dict(keep=sinks(2, 4))),
                          ("--window 3 --sinks 1 --rope half --incremental",
                           dict(keep=sinks(1, 3), rope_style="half")),
                          ("--window 16 --sinks 2 --rope interleaved --incremental",
                           dict(keep=causal, rope_style="interleaved"))]:
            got, _ = run(state, H, x, f"{kv} {flags}")
            results.append((f"H={H} H_kv={H_kv} {flags}", attend(state, x, H, H_kv, **kw)[0], got))

worst = 0.0
for name, theirs, ours in results:
    diff = float((theirs - ours).abs().max())
    worst = diff if not diff <= worst else worst
    print(f"{name:<60} max |diff| = {diff:.2g}")
ok = worst <= 1e-5
print(f"{'OK' if ok else 'FAILED'}, {len(results)} comparisons within 1e-5 of PyTorch (worst {worst:.2g})")
sys.exit(0 if ok else 1)
