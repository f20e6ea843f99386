#!/usr/bin/env python3
"""Writes the committed parity fixtures to tests/data/parity/<case>/.

    /usr/bin/python3 tests/pytorch/make_parity_fixtures.py

Each case folder holds nn.MultiheadAttention's state_dict (in_proj_weight,
in_proj_bias, out_proj.weight, out_proj.bias), the inputs, the masks, and
PyTorch's output and per-head attention weights (expected_*.npy).
"""
import pathlib
import shutil

from parity_cases import CASES, write_case

root = pathlib.Path(__file__).resolve().parent.parent / "data" / "parity"
shutil.rmtree(root, ignore_errors=True)
for seed, (name, spec) in enumerate(CASES.items()):
    write_case(root / name, seed, *spec)
size = sum(f.stat().st_size for f in root.rglob("*") if f.is_file())
print(f"wrote {len(CASES)} cases to {root}, {size / 1024:.0f} KiB")
