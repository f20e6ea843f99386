#!/usr/bin/env python3
"""Past the articles, against PyTorch: mha_forward's grouped-query
attention, its tiled path without weights, and its decoding through the KV
cache.

    /usr/bin/python3 tests/pytorch/check_today.py build/tools/mha_forward

- Grouped-query attention in current models' names (q_proj, k_proj, v_proj,
  o_proj; biases on q, k, v only, as Qwen has, or none, as Llama has),
  H = 4 query heads over H_kv = 4, 2, 1: PyTorch 1.13 has no GQA, so the
  math is written out below with repeat_interleave; `--num-kv-heads G`.
- nn.MultiheadAttention(need_weights=False) against `--no-weights`, causal
  and with padding, at T = 300 (more than one tile of 256 keys).
- The causal forward against `--incremental`, one position at a time.
Exit 0 when every output (and weights) is within 1e-5, 1 when one is not,
77 (skipped) without PyTorch.
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
    sys.exit("usage: check_today.py MHA_FORWARD")
FORWARD = sys.argv[1]


def run(state, H, x, flags):
    """mha_forward on a state_dict and input x; its output and weights (or None)."""
    with tempfile.TemporaryDirectory() as d:
        os.makedirs(f"{d}/w")
        for k, v in state.items():
            np.save(f"{d}/w/{k}.npy", v.detach().numpy())
        np.save(f"{d}/x.npy", x.numpy())
        for flag, m in [f for f in flags if isinstance(f, tuple)]:
            np.save(f"{d}/{flag}.npy", m.numpy())
        args = [FORWARD, "--weights", f"{d}/w", "--num-heads", str(H), "--query", f"{d}/x.npy",
                "--out", f"{d}/out"]
        for f in flags:
            args += [f"--{f[0]}", f"{d}/{f[0]}.npy"] if isinstance(f, tuple) else f.split()
        subprocess.run(args, check=True, capture_output=True)
        w = f"{d}/out/attn_weights.npy"
        return (torch.from_numpy(np.load(f"{d}/out/output.npy")),
                torch.from_numpy(np.load(w)) if os.path.exists(w) else None)


def gqa(state, x, H, H_kv, causal):
    """Grouped-query attention written out: K, V [B, H_kv, T, D], each
    repeated H / H_kv times along the heads to meet the H query heads."""
    B, T, E = x.shape
    D = E // H
    lin = lambda name, t: t @ state[f"{name}.weight"].T + state.get(f"{name}.bias", 0)
    q = lin("q_proj", x).view(B, T, H, D).permute(0, 2, 1, 3)        # [B, H, T, D]
    k = lin("k_proj", x).view(B, T, H_kv, D).permute(0, 2, 1, 3)     # [B, H_kv, T, D]
    v = lin("v_proj", x).view(B, T, H_kv, D).permute(0, 2, 1, 3)
    k = k.repeat_interleave(H // H_kv, dim=1)                        # [B, H, T, D]
    v = v.repeat_interleave(H // H_kv, dim=1)
    s = q @ k.transpose(-2, -1) / D ** 0.5                           # [B, H, T, T]
    if causal:
        s = s.masked_fill(torch.tril(torch.ones(T, T)) == 0, float("-inf"))
    w = torch.softmax(s, dim=-1)
    y = (w @ v).permute(0, 2, 1, 3).contiguous().view(B, T, E)
    return lin("o_proj", y), w


torch.manual_seed(0)
results = []
with torch.no_grad():
    B, T, E, H = 2, 7, 16, 4
    x = torch.randn(B, T, E)
    for H_kv, bias in [(4, True), (2, True), (1, False)]:
        D = E // H
        state = {"q_proj.weight": torch.randn(E, E) / 4, "k_proj.weight": torch.randn(H_kv * D, E) / 4,
                 "v_proj.weight": torch.randn(H_kv * D, E) / 4, "o_proj.weight": torch.randn(E, E) / 4}
        if bias:
            for n, rows in [("q_proj", E), ("k_proj", H_kv * D), ("v_proj", H_kv * D)]:
                state[f"{n}.bias"] = torch.randn(rows) / 4
        kv = f"--num-kv-heads {H_kv}"
        for causal in [False, True]:
            want, want_w = gqa(state, x, H, H_kv, causal)
            got, got_w = run(state, H, x, [kv] + (["--causal"] if causal else []))
            results.append((f"GQA H={H} H_kv={H_kv} bias={bias} causal={causal}", want, got))
            results.append((f"  its weights {list(got_w.shape)}", want_w, got_w))
        got, _ = run(state, H, x, [kv, "--incremental"])
        results.append((f"GQA H_kv={H_kv} --incremental vs causal", gqa(state, x, H, H_kv, True)[0], got))

    B, T, E, H = 2, 300, 32, 4
    mha = torch.nn.MultiheadAttention(E, H, batch_first=True).eval()
    state = mha.state_dict()
    x = torch.randn(B, T, E)
    causal = torch.triu(torch.ones(T, T, dtype=torch.bool), 1)       # True = may not attend
    padding = torch.arange(T)[None, :] >= torch.tensor([T, 200])[:, None]
    want = mha(x, x, x, attn_mask=causal, need_weights=False)[0]
    got, got_w = run(state, H, x, [("attn-mask", causal), "--no-weights"])
    assert got_w is None, "--no-weights wrote attn_weights.npy"
    results.append((f"need_weights=False, causal, T={T}", want, got))
    want = mha(x, x, x, key_padding_mask=padding, need_weights=False)[0]
    got, _ = run(state, H, x, [("key-padding-mask", padding), "--no-weights"])
    results.append((f"need_weights=False, padding, T={T}", want, got))
    want = mha(x, x, x, attn_mask=causal, need_weights=False)[0]
    got, _ = run(state, H, x, ["--incremental"])
    results.append((f"causal attn_mask vs --incremental, T={T}", want, got))

worst = 0.0
for name, theirs, ours in results:
    diff = float((theirs - ours).abs().max())
    worst = diff if not diff <= worst else worst
    print(f"{name:<44} {str(list(ours.shape)):<16} max |diff| = {diff:.2g}")
ok = worst <= 1e-5
print(f"{'OK' if ok else 'FAILED'}, {len(results)} comparisons within 1e-5 of PyTorch (worst {worst:.2g})")
sys.exit(0 if ok else 1)
