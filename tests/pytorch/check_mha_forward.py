#!/usr/bin/env python3
"""Runs fresh random cases (not the committed ones) through PyTorch and
build/tools/mha_forward, and compares output and per-head weights.

    /usr/bin/python3 tests/pytorch/check_mha_forward.py [N] [SEED]
"""
import pathlib
import random
import subprocess
import sys
import tempfile

import numpy as np

from parity_cases import write_case

repo = pathlib.Path(__file__).resolve().parent.parent.parent
tool = repo / "build" / "tools" / "mha_forward"
n = int(sys.argv[1]) if len(sys.argv) > 1 else 20
rng = random.Random(int(sys.argv[2]) if len(sys.argv) > 2 else 12345)
worst, passed = 0.0, 0
with tempfile.TemporaryDirectory() as tmp:
    for i in range(n):
        H = rng.choice([1, 2, 4, 8])
        E = H * rng.choice([1, 2, 4, 8])
        B, Tq = rng.randint(1, 4), rng.randint(1, 12)
        cross = rng.random() < 0.5
        Tk = rng.randint(1, 12) if cross else Tq
        mask = rng.choice([None, "float", "bool_3d"] +
                          (["causal_bool", "causal_float"] if Tq <= Tk else []))
        padding = [rng.randint(1, Tk) for _ in range(B)] if rng.random() < 0.5 else None
        case = pathlib.Path(tmp) / f"case{i}"
        write_case(case, 1000 + i, B, Tq, Tk, E, H, cross, mask, padding)
        cmd = [str(tool), "--weights", str(case), "--num-heads", str(H),
               "--query", str(case / "query.npy"), "--out", str(case / "out")]
        if cross:
            cmd += ["--key", str(case / "key.npy"), "--value", str(case / "value.npy")]
        if mask:
            cmd += ["--attn-mask", str(case / "attn_mask.npy")]
        if padding:
            cmd += ["--key-padding-mask", str(case / "key_padding_mask.npy")]
        subprocess.run(cmd, check=True, capture_output=True)
        diff = max(
            np.abs(np.load(case / "out" / "output.npy") -
                   np.load(case / "expected_output.npy")).max(),
            np.abs(np.load(case / "out" / "attn_weights.npy") -
                   np.load(case / "expected_attn_weights.npy")).max())
        ok = diff <= 1e-5
        passed += ok
        worst = max(worst, diff)
        print(f"case {i:2d}: B={B} Tq={Tq:2d} Tk={Tk:2d} E={E:2d} H={H} "
              f"cross={cross!s:5} mask={mask!s:12} padding={padding!s:14} "
              f"max|diff|={diff:.2e} {'ok' if ok else 'FAIL'}")
print(f"{passed} passed, {n - passed} failed (worst max|diff| {worst:.2e}, tolerance 1e-5)")
sys.exit(0 if passed == n else 1)
