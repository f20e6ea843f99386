#!/usr/bin/env python3
"""mha_forward --grad-output against torch.autograd.

    /usr/bin/python3 tests/pytorch/check_grads.py build/tools/mha_forward

For nn.MultiheadAttention (batch_first) with biases: self-attention without a
mask, with a causal attn_mask, a float attn_mask, a key_padding_mask, and
--causal; cross-attention with Tq != Tk and padding; and grouped-query
attention in q_proj ... o_proj names (H = 4 over H_kv = 2; PyTorch 1.13 has no
GQA, so its math is written out with repeat_interleave). Every case runs twice:
as it is, and with --no-weights (the trace keeps the log-sum-exp, and the
backward rebuilds the weights tile by tile, FlashAttention-2). Each case runs the
forward with autograd recording, loss = sum(output * G), loss.backward(), and
compares every .grad with the file mha_forward wrote: the worst |diff|
divided by the largest |gradient| of that tensor must be at most 1e-4. The
key bias is the exception: adding q . b_k to every score of a row leaves its
softmax unchanged, so its exact gradient is 0 and both sides hold rounding
noise (1e-8); it is divided by the largest gradient of the case instead.
Then --softcap (with --alibi too) and --rope in both conventions, with
--grad-output and --no-weights, against their math written out in PyTorch.
Exit 0 when all agree, 1 when one does not, 77 (skipped) without PyTorch.
"""
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
    sys.exit("usage: check_grads.py MHA_FORWARD")
FORWARD = sys.argv[1]
LIMIT = 1e-4


def mha_forward(state, H, files, flags):
    """Runs mha_forward with the state_dict and the .npy files given; returns
    every .grad.npy it wrote, by name."""
    with tempfile.TemporaryDirectory() as d:
        os.makedirs(f"{d}/w")
        for k, v in state.items():
            np.save(f"{d}/w/{k}.npy", v.detach().numpy())
        args = [FORWARD, "--weights", f"{d}/w", "--num-heads", str(H), "--out", f"{d}/out"]
        for flag, t in files.items():
            np.save(f"{d}/{flag}.npy", t.detach().numpy())
            args += [f"--{flag}", f"{d}/{flag}.npy"]
        subprocess.run(args + flags, check=True, capture_output=True)
        return {f[:-len(".grad.npy")]: torch.from_numpy(np.load(f"{d}/out/{f}"))
                for f in os.listdir(f"{d}/out") if f.endswith(".grad.npy")}


def compare(case, ours, theirs):
    worst = 0.0
    if sorted(ours) != sorted(theirs):
        print(f"FAILED {case}: wrote {sorted(ours)}, autograd has {sorted(theirs)}")
        return False
    largest = max(g.abs().max().item() for g in theirs.values())
    for name, g in theirs.items():
        if ours[name].shape != g.shape:
            print(f"FAILED {case}: {name} is {list(ours[name].shape)}, not {list(g.shape)}")
            return False
        scale = largest if name == "k_proj.bias" else g.abs().max().item()
        err = (ours[name] - g).abs().max().item() / scale
        if os.environ.get("VERBOSE"): print(f"  {name}: {err:.1e}")
        worst = max(worst, err)
    ok = worst <= LIMIT
    print(f"{'ok    ' if ok else 'FAILED'} {case}: worst |diff| / max |grad| = {worst:.1e} "
          f"over {len(theirs)} gradients")
    return ok


torch.manual_seed(0)
B, Tq, Tk, E, H = 2, 6, 9, 16, 4
results = []

# nn.MultiheadAttention, self-attention and cross-attention; each again with
# --no-weights, where the backward is the FlashAttention-2 tiles
CASES = [("self, no mask", False, {}, []),
         ("self, causal attn_mask", False, {"attn-mask": "causal"}, []),
         ("self, --causal", False, {}, ["--causal"]),
         ("self, float attn_mask", False, {"attn-mask": "float"}, []),
         ("self, key_padding_mask", False, {"key-padding-mask": "pad"}, []),
         ("cross Tq 6 Tk 9, key_padding_mask", True, {"key-padding-mask": "pad"}, [])]
for case, cross, masks, flags in CASES + [(c + ", --no-weights", x, m, f + ["--no-weights"])
                                          for c, x, m, f in CASES]:
    mha = torch.nn.MultiheadAttention(E, H, batch_first=True)
    torch.nn.init.normal_(mha.in_proj_bias, std=0.1)  # PyTorch starts them at 0
    torch.nn.init.normal_(mha.out_proj.bias, std=0.1)
    q = torch.randn(B, Tq, E, requires_grad=True)
    k = torch.randn(B, Tk, E, requires_grad=True) if cross else q
    v = torch.randn(B, Tk, E, requires_grad=True) if cross else q
    T_k = Tk if cross else Tq
    files, kw = {}, {}
    for flag, kind in masks.items():
        if kind == "causal":
            m = torch.ones(Tq, T_k).tril() == 0                 # True = may not attend
        elif kind == "float":
            m = torch.randn(Tq, T_k)
        else:
            m = torch.zeros(B, T_k, dtype=torch.bool)
            m[0, -2:] = True                                    # sequence 0's last two keys
        files[flag] = m
        kw["attn_mask" if flag == "attn-mask" else "key_padding_mask"] = m
    if "--causal" in flags:
        kw["attn_mask"] = torch.ones(Tq, T_k).tril() == 0
    G = torch.randn(B, Tq, E)
    out, _ = mha(q, k, v, **kw)
    (out * G).sum().backward()
    theirs = {"in_proj_weight": mha.in_proj_weight.grad, "in_proj_bias": mha.in_proj_bias.grad,
              "out_proj.weight": mha.out_proj.weight.grad, "out_proj.bias": mha.out_proj.bias.grad,
              "query": q.grad}
    if cross:
        theirs.update(key=k.grad, value=v.grad)
    files.update(query=q, **({"key": k, "value": v} if cross else {}))
    files["grad-output"] = G
    ours = mha_forward(mha.state_dict(), H, files, flags)
    results.append(compare(case, ours, theirs))

# grouped-query attention, written out, in current models' names
H_kv, D = 2, E // H
params = {"q_proj": (E, E), "k_proj": (H_kv * D, E), "v_proj": (H_kv * D, E), "o_proj": (E, E)}
state = {}
for name, (rows, cols) in params.items():
    state[f"{name}.weight"] = (torch.randn(rows, cols) / 4).requires_grad_()
    state[f"{name}.bias"] = (torch.randn(rows) / 10).requires_grad_()
x = torch.randn(B, Tq, E, requires_grad=True)
lin = lambda name, t: t @ state[f"{name}.weight"].T + state[f"{name}.bias"]
qh = lin("q_proj", x).view(B, Tq, H, D).permute(0, 2, 1, 3)                    # [B, H, T, D]
kh = lin("k_proj", x).view(B, Tq, H_kv, D).permute(0, 2, 1, 3).repeat_interleave(H // H_kv, 1)
vh = lin("v_proj", x).view(B, Tq, H_kv, D).permute(0, 2, 1, 3).repeat_interleave(H // H_kv, 1)
s = (qh @ kh.transpose(-2, -1) / D ** 0.5).masked_fill(torch.ones(Tq, Tq).tril() == 0, float("-inf"))
y = lin("o_proj", (s.softmax(-1) @ vh).permute(0, 2, 1, 3).reshape(B, Tq, E))
G = torch.randn(B, Tq, E)
(y * G).sum().backward()
theirs = {k: t.grad for k, t in state.items()}
theirs["query"] = x.grad
for extra in ([], ["--no-weights"]):
    ours = mha_forward(state, H, {"query": x, "grad-output": G},
                       ["--num-kv-heads", "2", "--causal"] + extra)
    results.append(compare("GQA H 4 over H_kv 2, --causal" + (", --no-weights" if extra else ""),
                           ours, theirs))


# Soft-capping and RoPE with --grad-output (GQA as above), written out in
# PyTorch 1.13 beside them, autograd giving the gradients. The cap
# C tanh(s / C) comes after the scale and before ALiBi and the mask; RoPE
# turns q and k after the projections, pair p of position t by the angle
# t * theta^(-2p/D): pairs (2p, 2p+1) interleaved, (p, p + D/2) half.
def rope(x, style, theta=10000.0):
    """x [B, h, T, D] turned to its positions."""
    T, D = x.shape[-2], x.shape[-1]
    freq = theta ** (-2 * torch.arange(D // 2, dtype=torch.float64) / D)        # [D/2]
    angle = torch.arange(T, dtype=torch.float64)[:, None] * freq                # [T, D/2]
    cos, sin = angle.cos().float(), angle.sin().float()
    if style == "interleaved":
        x1, x2 = x[..., 0::2], x[..., 1::2]
        return torch.stack([x1 * cos - x2 * sin, x1 * sin + x2 * cos], -1).flatten(-2)
    x1, x2 = x[..., :D // 2], x[..., D // 2:]
    return torch.cat([x1 * cos - x2 * sin, x1 * sin + x2 * cos], -1)


def variant_grads(cap, style, alibi, causal):
    """Every .grad of loss = sum(y * G) for the variant, and G."""
    for t in state.values():
        t.grad = None
    xv = x.detach().clone().requires_grad_()
    qv = lin("q_proj", xv).view(B, Tq, H, D).permute(0, 2, 1, 3)                # [B, H, T, D]
    kv = lin("k_proj", xv).view(B, Tq, H_kv, D).permute(0, 2, 1, 3)             # [B, H_kv, T, D]
    vv = lin("v_proj", xv).view(B, Tq, H_kv, D).permute(0, 2, 1, 3)
    if style:
        qv, kv = rope(qv, style), rope(kv, style)
    kv, vv = kv.repeat_interleave(H // H_kv, 1), vv.repeat_interleave(H // H_kv, 1)
    sv = qv @ kv.transpose(-2, -1) / D ** 0.5                                   # [B, H, T, T]
    if cap:
        sv = cap * torch.tanh(sv / cap)
    if alibi:  # -m_h (i - j), m_h = 2^(-8h/H), h = 1..H
        slopes = 2.0 ** (-8.0 * torch.arange(1, H + 1) / H)
        dist = torch.arange(Tq)[:, None] - torch.arange(Tq)[None, :]            # [T, T]
        sv = sv - slopes[:, None, None] * dist
    if causal:
        sv = sv.masked_fill(torch.ones(Tq, Tq).tril() == 0, float("-inf"))
    yv = lin("o_proj", (sv.softmax(-1) @ vv).permute(0, 2, 1, 3).reshape(B, Tq, E))
    Gv = torch.randn(B, Tq, E)
    (yv * Gv).sum().backward()
    grads = {k: t.grad.clone() for k, t in state.items()}
    grads["query"] = xv.grad
    return grads, Gv


VARIANTS = [("--softcap 0.5 --causal", dict(cap=0.5, causal=True)),
            ("--softcap 0.5", dict(cap=0.5)),
            ("--softcap 0.7 --alibi --causal", dict(cap=0.7, alibi=True, causal=True)),
            ("--rope interleaved --causal", dict(style="interleaved", causal=True)),
            ("--rope half", dict(style="half")),
            ("--rope half --softcap 0.5 --causal", dict(style="half", cap=0.5, causal=True))]
for flags, kw in VARIANTS:
    theirs, G = variant_grads(kw.get("cap"), kw.get("style"), kw.get("alibi"), kw.get("causal"))
    for extra in ([], ["--no-weights"]):
        ours = mha_forward(state, H, {"query": x, "grad-output": G},
                           ["--num-kv-heads", "2"] + flags.split() + extra)
        results.append(compare("GQA " + flags + (" --no-weights" if extra else ""), ours, theirs))

sys.exit(0 if all(results) else 1)
