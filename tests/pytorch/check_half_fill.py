#!/usr/bin/env python3
"""Lesson 12's sentences about half precision, against PyTorch.

    /usr/bin/python3 tests/pytorch/check_half_fill.py build/lessons/12_fill_value

- Its line "as float16: -1e10 -> -inf, -1e9 -> -inf, -1e4 -> -10000" (the C++
  rounding) gives what PyTorch's cast torch.tensor(x).half() gives.
- masked_fill on a float16 tensor raises, for -1e10 and -1e9, the error the
  lesson quotes, and takes -inf, -1e4 and torch.finfo(torch.float16).min,
  which is -65504.
Exit 0 when all of that holds, 1 when something does not, 77 (skipped)
without PyTorch.
"""
import re
import subprocess
import sys

try:
    import torch
except ImportError as e:
    print(f"skipped: needs Debian's python3-torch ({e})")
    sys.exit(77)

if len(sys.argv) != 2:
    sys.exit("usage: check_half_fill.py 12_FILL_VALUE")
out = subprocess.run([sys.argv[1], "--tiny"], capture_output=True, text=True,
                     check=True).stdout
# The lesson wraps its prose at 88 columns: compare with the line breaks as spaces.
prose = " ".join(out.split())
bad = []

line = re.search(r"as float16: (.*)", out)
pairs = re.findall(r"(-?[0-9.e+]+) -> (-?(?:inf|[0-9.e+]+))", line.group(1)) if line else []
if len(pairs) != 3:
    bad.append(f"no 'as float16: x -> y, ...' line with three casts in:\n{out}")
for x, y in pairs:
    torch_says = torch.tensor(float(x)).half().item()
    if float(y) != torch_says:
        bad.append(f"the lesson rounds {x} to {y} in float16, PyTorch's cast to {torch_says}")

half = torch.randn(2, 3).half()
mask = torch.tensor([[1, 0, 1], [0, 1, 1]])
message = "value cannot be converted to type at::Half without overflow"
if message not in prose:
    bad.append(f"the lesson does not quote PyTorch's error '{message}'")
for fill in (-1e10, -1e9):
    try:
        half.masked_fill(mask == 0, fill)
        bad.append(f"masked_fill({fill}) on float16 did not raise")
    except RuntimeError as e:
        if message not in str(e):
            bad.append(f"masked_fill({fill}) on float16 raised another error: {e}")
finfo_min = torch.finfo(torch.float16).min
if finfo_min != -65504 or "torch.finfo(torch.float16).min = -65504" not in prose:
    bad.append(f"torch.finfo(torch.float16).min is {finfo_min}; the lesson says -65504")
for fill in (float("-inf"), -1e4, finfo_min):
    filled = half.masked_fill(mask == 0, fill)
    if filled[0, 1].item() != fill:
        bad.append(f"masked_fill({fill}) on float16 gave {filled[0, 1].item()}")

for b in bad:
    print("FAILED:", b)
if not bad:
    print(f"OK: {len(pairs)} casts as PyTorch's; -1e10 and -1e9 raise '{message}'; "
          f"-inf, -1e4 and {finfo_min} fill")
sys.exit(1 if bad else 0)
