#!/usr/bin/env python3
"""Times torch.nn.MultiheadAttention(batch_first=True) at the benchmark's
shapes, with the same thread count, and prints ours / PyTorch.

    /usr/bin/python3 bench/torch_bench.py [--threads N] [--runs N] [--rounds N]

Both sides are timed the same way: the median of N consecutive runs after
a warm-up. PyTorch runs before and after build/bench/mha_bench (same
sitting, same machine), and its times are the median over both passes, so
that a drift of the machine's speed during the sitting hits both sides.
Ours are mha_bench's medians: at T = 64 its forward() and forward_into
rows, at the other T its T table. Both sides compute the output and the
per-head weights (need_weights=True, average_attn_weights=False), with a
causal bool mask, under torch.no_grad() in eval mode. At the end, the
articles' shape is timed again in rounds (7 unless --rounds) of PyTorch
then `mha_bench --article`, one ratio per round and their median: this
machine's speed drifts by +-20% over seconds, and more rounds make the
median steadier.
"""
import argparse
import os
import pathlib
import re
import statistics
import subprocess
import sys
import time

import torch

ap = argparse.ArgumentParser()
ap.add_argument("--threads", type=int, default=os.cpu_count())
ap.add_argument("--runs", type=int, default=7)
ap.add_argument("--rounds", type=int, default=7)
args = ap.parse_args()
if args.threads < 1 or args.rounds < 1 or not 5 <= args.runs <= 1000:
    sys.exit(f"torch_bench.py: --threads {args.threads}, --rounds {args.rounds}, "
             f"--runs {args.runs}: threads and rounds must be at least 1, runs 5..1000")
torch.set_num_threads(args.threads)
E, H = 512, 8
SHAPES = [(8192 // T, T) for T in [64, 128, 256, 512, 1024, 2048]]


def times(fn):
    fn()
    out = []
    for _ in range(args.runs):
        t0 = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t0)
    return out


def pytorch_times(B, T):
    torch.manual_seed(0)
    mha = torch.nn.MultiheadAttention(E, H, batch_first=True).eval()
    x = torch.randn(B, T, E)
    mask = torch.ones(T, T, dtype=torch.bool).triu(1)

    def run():
        with torch.no_grad():
            mha(x, x, x, attn_mask=mask, need_weights=True,
                average_attn_weights=False)

    return times(run)


def time_pytorch():
    return {T: pytorch_times(B, T) for B, T in SHAPES}


def run_ours(*flags):
    return subprocess.run([str(repo / "build" / "bench" / "mha_bench"),
                           "--runs", str(args.runs), *flags], env=env, check=True,
                          capture_output=True, text=True).stdout


def at_64(out):
    """forward() and forward_into medians at the articles' shape."""
    return tuple(float(re.search(rf"^  {name}\s+([0-9.]+) s", out, re.M).group(1))
                 for name in [r"forward\(\)", "forward_into, output reused"])


repo = pathlib.Path(__file__).resolve().parent.parent
env = dict(os.environ, MHA_THREADS=str(args.threads))
before = time_pytorch()
ours_out = run_ours()
after = time_pytorch()

# ours[T] = (forward() s, forward_into s), causal
ours = {64: at_64(ours_out)}
row = re.compile(r"^\s+(\d+)\s+\d+\s+[0-9.]+\s+[0-9.]+x\s+([0-9.]+) s\s+[0-9.]+x"
                 r"\s+([0-9.]+) s", re.M)
for m in row.finditer(ours_out):
    ours.setdefault(int(m.group(1)), (float(m.group(2)), float(m.group(3))))

print(ours_out.rstrip())
print()
print(f"threads {args.threads}; each side the median of {args.runs} runs after a "
      f"warm-up; PyTorch timed before and after mha_bench, median of both passes")
print(f"{'shape':>22} {'PyTorch s':>10} {'forward() s':>12} {'ratio':>6} "
      f"{'forward_into s':>15} {'ratio':>6}")
for B, T in SHAPES:
    theirs = statistics.median(before[T] + after[T])
    fwd, into = ours[T]
    print(f"{f'{B}x{T}x{E} h{H} causal':>22} {theirs:10.4f} {fwd:12.4f} "
          f"{fwd / theirs:5.2f}x {into:15.4f} {into / theirs:5.2f}x")

# The articles' shape again, in turns: PyTorch, then mha_bench --article,
# round after round; each round's ratio compares two measurements seconds
# apart.
print()
print(f"the articles' shape in turns (PyTorch, then mha_bench --article), "
      f"{args.rounds} rounds:")
ratios = []
for r in range(args.rounds):
    theirs = statistics.median(pytorch_times(128, 64))
    fwd, into = at_64(run_ours("--article"))
    ratios.append((fwd / theirs, into / theirs))
    print(f"  round {r + 1}: PyTorch {theirs:.4f} s, forward() {fwd:.4f} s "
          f"({fwd / theirs:.2f}x), forward_into {into:.4f} s ({into / theirs:.2f}x)")
print(f"  median ratio: forward() {statistics.median(x for x, _ in ratios):.2f}x, "
      f"forward_into {statistics.median(y for _, y in ratios):.2f}x")
