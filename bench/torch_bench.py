#!/usr/bin/env python3
"""Times torch.nn.MultiheadAttention(batch_first=True) at the benchmark's
shapes, with the same thread count, and prints ours / PyTorch.

    /usr/bin/python3 bench/torch_bench.py [--threads N] [--runs N]

It runs build/bench/mha_bench first (same sitting, same machine) and reads
its medians: the articles' shape from its last line, the other T from its
T table. Both sides compute the output and
the per-head weights (need_weights=True, average_attn_weights=False), with
a causal bool mask, under torch.no_grad() in eval mode.
"""
import argparse
import os
import pathlib
import re
import subprocess
import time

import torch

ap = argparse.ArgumentParser()
ap.add_argument("--threads", type=int, default=os.cpu_count())
ap.add_argument("--runs", type=int, default=7)
args = ap.parse_args()
torch.set_num_threads(args.threads)

repo = pathlib.Path(__file__).resolve().parent.parent
env = dict(os.environ, MHA_THREADS=str(args.threads))
ours_out = subprocess.run([str(repo / "build" / "bench" / "mha_bench"),
                           "--runs", str(args.runs)], env=env, check=True,
                          capture_output=True, text=True).stdout
last = ours_out.strip().splitlines()[-1]
ours = {64: float(re.search(r"median ([0-9.]+) s", last).group(1))}
reuse = float(re.search(r"trace_into, buffers reused: ([0-9.]+) s", ours_out).group(1))
for m in re.finditer(r"^\s+(\d+)\s+\d+\s+([0-9.]+)\s", ours_out, re.M):
    ours.setdefault(int(m.group(1)), float(m.group(2)))


def median_time(fn):
    fn()
    times = []
    for _ in range(args.runs):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return sorted(times)[len(times) // 2]


print(ours_out.rstrip())
print()
print(f"threads {args.threads}, median of {args.runs} runs after a warm-up")
print(f"{'shape':>22} {'PyTorch s':>10} {'ours s':>8} {'ours/PyTorch':>13}")
E, H = 512, 8
for T in [64, 128, 256, 512, 1024, 2048]:
    B = 8192 // T
    torch.manual_seed(0)
    mha = torch.nn.MultiheadAttention(E, H, batch_first=True).eval()
    x = torch.randn(B, T, E)
    mask = torch.ones(T, T, dtype=torch.bool).triu(1)

    def run():
        with torch.no_grad():
            mha(x, x, x, attn_mask=mask, need_weights=True, average_attn_weights=False)

    theirs = median_time(run)
    if T == 64:
        first_theirs = theirs
    print(f"{f'{B}x{T}x{E} h{H} causal':>22} {theirs:10.4f} {ours[T]:8.4f} "
          f"{ours[T] / theirs:12.2f}x")
print(f"at 128x64x512 with buffers reused (trace_into): ours/PyTorch = "
      f"{reuse / first_theirs:.2f}x")
