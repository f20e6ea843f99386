#!/usr/bin/env python3
"""Times torch.nn.MultiheadAttention(batch_first=True) at the benchmark's
shapes, with the same thread count, and prints ours / PyTorch.

    /usr/bin/python3 bench/torch_bench.py [--threads N] [--runs N] [--rounds N]

It first names the kernels of the OpenBLAS PyTorch loaded. An environment
that sets OPENBLAS_CORETYPE (this machine's does, to Haswell, on a processor
whose AVX-512 OpenBLAS 0.3.21 would use) holds PyTorch, and the roofline's
sgemm, to that core's kernels: to compare with PyTorch at its best, run it
as `env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE /usr/bin/python3 ...`.

Both sides are timed the same way: the median of N consecutive runs after
a warm-up. PyTorch runs before and after build/bench/mha_bench (same
sitting, same machine), and its times are the median over both passes, so
that a drift of the machine's speed during the sitting hits both sides.
Ours are mha_bench's medians: at T = 64 its forward() and forward_into
rows, at the other T its T table. Both sides compute the output and the
per-head weights (need_weights=True, average_attn_weights=False), with a
causal bool mask, under torch.no_grad() in eval mode. At the end, the
articles' shape is timed again in rounds (7 unless --rounds) of PyTorch
then `mha_bench --article`, one ratio per round and their median, for the
forward and for a training step (PyTorch's forward with autograd recording,
need_weights True or False, whichever is faster, then backward; ours
trace() then backward(), every gradient filled on both sides): this
machine's speed drifts by +-20% over seconds, and more rounds make the
median steadier.

After that, the comparisons past the articles (--part picks one of
article, decode, long, train-long, model; all by default):
- decode: one new position per sequence through a KV cache, at T = 4096
  and B = 1, 8. PyTorch's side is a hand-written static cache, allocated
  once and written in place (k_cache[:, :, t] = k), then the attention math;
  ours is `mha_bench --decode`'s table. Time per token.
- long: B = 1, T = 8192, causal, without weights. PyTorch's
  nn.MultiheadAttention(need_weights=False) with a bool mask builds the
  [B*H, T, T] scores; ours is `mha_bench --long`'s row (the engine's tiles,
  no mask tensor). Time, and peak memory: PyTorch's runs in a child
  process, and its figure is what its peak rose above the process's
  resident size before the call (PyTorch's own libraries left out); ours is
  the whole process's peak.
- train-long: the same shape, a training step: PyTorch's forward
  (need_weights=False; autograd still keeps the [B*H, T, T] weights) and
  backward, median of 3, in a child process (peak as for long); ours is
  `mha_bench --long-backward`: trace_no_weights() (the log-sum-exp kept)
  and the FlashAttention-2 backward, its forward and backward times added,
  its peak RSS the whole process's.
- model: a training step of the language model of src/mha/model/ at B 32,
  T 128, E 256, H 8, F 1024, L 4, V 4000: in PyTorch, nn.Embedding twice,
  four nn.TransformerEncoderLayer(norm_first=True, GELU, dropout 0) under a
  causal bool mask, nn.LayerNorm, nn.Linear; F.cross_entropy, backward,
  clip_grad_norm_(1.0), Adam.step(). Ours is `mha_bench --model`'s
  train_step. In turns, --rounds times: PyTorch, then ours.
"""
import argparse
import ctypes
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
ap.add_argument("--part", choices=["all", "article", "decode", "long", "train-long", "model"],
                default="all")
ap.add_argument("--child-long", type=int, help=argparse.SUPPRESS)
ap.add_argument("--child-train-long", type=int, help=argparse.SUPPRESS)
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


def pytorch_train_times(B, T, need_weights):
    """A training step: the forward with autograd recording, then backward
    of sum(output * G), every parameter's and x's gradient filled."""
    torch.manual_seed(0)
    mha = torch.nn.MultiheadAttention(E, H, batch_first=True)
    x = torch.randn(B, T, E, requires_grad=True)
    g = torch.randn(B, T, E)
    mask = torch.ones(T, T, dtype=torch.bool).triu(1)

    def run():
        mha.zero_grad(set_to_none=True)
        x.grad = None
        out, _ = mha(x, x, x, attn_mask=mask, need_weights=need_weights,
                     average_attn_weights=False)
        out.backward(g)

    return times(run)


def time_pytorch():
    return {T: pytorch_times(B, T) for B, T in SHAPES}


def vm(key):
    """This process's VmRSS or VmHWM, in MB."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1]) / 1024
    return float("nan")


def long_child(T):
    """In a child process: need_weights=False at B = 1, T, causal; prints
    the median seconds and the peak's rise above the resident size before."""
    torch.manual_seed(0)
    mha = torch.nn.MultiheadAttention(E, H, batch_first=True).eval()
    x = torch.randn(1, T, E)
    mask = torch.ones(T, T, dtype=torch.bool).triu(1)
    before = vm("VmRSS")

    def run():
        with torch.no_grad():
            mha(x, x, x, attn_mask=mask, need_weights=False)

    t = statistics.median(times(run))
    print(f"{t} {vm('VmHWM') - before} {vm('VmHWM')}")


def train_long_child(T):
    """In a child process: a training step at B = 1, T, causal, through
    need_weights=False (autograd keeps the [H, T, T] weights for backward);
    prints the median seconds of 3 steps and the peak's rise as long_child()."""
    torch.manual_seed(0)
    mha = torch.nn.MultiheadAttention(E, H, batch_first=True)
    x = torch.randn(1, T, E, requires_grad=True)
    g = torch.randn(1, T, E)
    mask = torch.ones(T, T, dtype=torch.bool).triu(1)
    before = vm("VmRSS")

    def run():
        mha.zero_grad(set_to_none=True)
        x.grad = None
        out, _ = mha(x, x, x, attn_mask=mask, need_weights=False)
        out.backward(g)

    run()
    t = statistics.median(seconds_of(run) for _ in range(3))
    print(f"{t} {vm('VmHWM') - before} {vm('VmHWM')}")


def seconds_of(fn):
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def torch_decode(B, T):
    """Seconds per step of a hand-written static-cache decode at cache length T."""
    torch.manual_seed(0)
    D = E // H
    q_proj, k_proj, v_proj, o_proj = (torch.nn.Linear(E, E) for _ in range(4))
    k_cache = torch.randn(B, H, T + 1, D)  # allocated once, written in place
    v_cache = torch.randn(B, H, T + 1, D)
    x = torch.randn(B, 1, E)

    def step():
        with torch.no_grad():
            q = q_proj(x).view(B, 1, H, D).transpose(1, 2)   # [B, H, 1, D]
            k_cache[:, :, T] = k_proj(x).view(B, H, D)
            v_cache[:, :, T] = v_proj(x).view(B, H, D)
            w = (q @ k_cache.transpose(2, 3) / D ** 0.5).softmax(-1)  # [B, H, 1, T+1]
            o_proj((w @ v_cache).transpose(1, 2).reshape(B, 1, E))

    for _ in range(5):
        step()
    out = []
    for _ in range(5 * args.runs):
        t0 = time.perf_counter()
        step()
        out.append(time.perf_counter() - t0)
    return out


def run_ours(*flags):
    return subprocess.run([str(repo / "build" / "bench" / "mha_bench"),
                           "--runs", str(args.runs), *flags], env=env, check=True,
                          capture_output=True, text=True).stdout


def train_64(out):
    """The training step's median at the articles' shape."""
    return float(re.search(r"^  training step, trace\+backward: ([0-9.]+) s", out, re.M).group(1))


def at_64(out):
    """forward() and forward_into medians at the articles' shape."""
    return tuple(float(re.search(rf"^  {name}\s+([0-9.]+) s", out, re.M).group(1))
                 for name in [r"forward\(\)", "forward_into, output reused"])


def blas_kernels():
    """Which kernels the OpenBLAS that PyTorch loaded runs: its products, and
    the roofline's sgemm on our side, are that fast and no faster."""
    with open("/proc/self/maps") as f:
        libs = {line.split()[-1] for line in f if "libopenblas" in line}
    if not libs:
        return "PyTorch's BLAS: not OpenBLAS (no kernels named)"
    lib = ctypes.CDLL(sorted(libs)[0])
    lib.openblas_get_corename.restype = ctypes.c_char_p
    what = f"PyTorch's BLAS: OpenBLAS, {lib.openblas_get_corename().decode()} kernels"
    forced = os.environ.get("OPENBLAS_CORETYPE")
    if forced:
        what += (f", as OPENBLAS_CORETYPE={forced} says (mha_bench's too); unset it and "
                 f"OPENBLAS_L2_SIZE for the kernels OpenBLAS picks for this processor")
    return what


repo = pathlib.Path(__file__).resolve().parent.parent
env = dict(os.environ, MHA_THREADS=str(args.threads))
if args.child_long:
    long_child(args.child_long)
    sys.exit(0)
if args.child_train_long:
    train_long_child(args.child_train_long)
    sys.exit(0)
print(blas_kernels())


def compare_decode():
    print(f"\ndecode, T = 4096: PyTorch with a hand-written static cache, then mha_bench "
          f"--decode, then PyTorch again; threads {args.threads}")
    before = {B: torch_decode(B, 4096) for B in (1, 8)}
    out = run_ours("--decode")
    after = {B: torch_decode(B, 4096) for B in (1, 8)}
    print(out.rstrip())
    for B in (1, 8):
        # B = 1: the closing line (paired turns, steadier); B = 8: its table row
        closing = re.search(r"^decode T4096 B1 h8: median ([0-9.]+) ms", out, re.M)
        ms = float(closing.group(1) if B == 1 else
                   re.search(rf"^\s+{B}\s+4096\s+[0-9.]+\s+[0-9.]+\s+([0-9.]+)", out,
                             re.M).group(1))
        theirs = statistics.median(before[B] + after[B]) * 1e3
        print(f"  decode T4096 B{B}: PyTorch {theirs:.3f} ms/step, ours {ms:.3f} ms/step: "
              f"{ms / theirs:.2f}x")


def compare_long():
    T = 8192
    print(f"\nwithout weights, B 1, T {T}, causal: PyTorch need_weights=False (a child "
          f"process), then mha_bench --long, then PyTorch again; threads {args.threads}")

    def child():
        r = subprocess.run([sys.executable, __file__, "--child-long", str(T), "--runs",
                            str(args.runs), "--threads", str(args.threads)],
                           check=True, capture_output=True, text=True).stdout.split()
        return float(r[0]), float(r[1]), float(r[2])

    first = child()
    out = run_ours("--long")
    second = child()
    print(out.rstrip())
    m = re.search(rf"^\s+{T}\s+[0-9.]+\s+([0-9.]+)\s+[0-9.]+\s+[0-9.]+x\s+([0-9.]+)", out, re.M)
    ours_s, ours_mb = float(m.group(1)), float(m.group(2))
    theirs_s = statistics.median([first[0], second[0]])
    rise, peak = max(first[1], second[1]), max(first[2], second[2])
    print(f"  PyTorch need_weights=False: {theirs_s:.3f} s, peak {peak:.0f} MB, of it "
          f"{rise:.0f} MB for the call")
    print(f"  no-weights T{T} B1 h8 causal: ours {ours_s:.3f} s ({ours_s / theirs_s:.2f}x "
          f"PyTorch's time), peak RSS {ours_mb:.0f} MB ({ours_mb / rise:.3f}x what PyTorch's "
          f"call added)")


def compare_train_long():
    T = 8192
    print(f"\ntraining step without weights, B 1, T {T}, causal: PyTorch need_weights=False "
          f"(a child process, forward + backward, median of 3), then mha_bench "
          f"--long-backward, then PyTorch again; threads {args.threads}")

    def child():
        r = subprocess.run([sys.executable, __file__, "--child-train-long", str(T), "--threads",
                            str(args.threads)], check=True, capture_output=True,
                           text=True).stdout.split()
        return float(r[0]), float(r[1]), float(r[2])

    first = child()
    out = run_ours("--long-backward")
    second = child()
    print(out.rstrip())
    step = re.search(rf"^training step no-weights T{T} .*: median forward ([0-9.]+) s \+ "
                     rf"backward ([0-9.]+) s", out, re.M)
    peak_ours = float(re.search(rf"^backward no-weights T{T} .* peak RSS ([0-9.]+) MB", out,
                                re.M).group(1))
    ours_s = float(step.group(1)) + float(step.group(2))
    theirs_s = statistics.median([first[0], second[0]])
    rise, peak = max(first[1], second[1]), max(first[2], second[2])
    print(f"  PyTorch forward + backward, need_weights=False: {theirs_s:.3f} s, peak {peak:.0f} "
          f"MB, of it {rise:.0f} MB for the step")
    print(f"  training step no-weights T{T} B1 h8 causal: ours {ours_s:.3f} s "
          f"({ours_s / theirs_s:.2f}x PyTorch's time), peak RSS {peak_ours:.0f} MB "
          f"({peak_ours / rise:.3f}x what PyTorch's step added)")


if args.part == "train-long":
    compare_train_long()
    sys.exit(0)
if args.part == "decode":
    compare_decode()
    sys.exit(0)
if args.part == "long":
    compare_long()
    sys.exit(0)


def torch_model_step_times(B=32, T=128, E=256, H=8, F=1024, L=4, V=4000):
    """A training step of the same model, PyTorch's modules and autograd."""
    torch.manual_seed(0)
    nn = torch.nn
    model = nn.ModuleDict(dict(
        tok_emb=nn.Embedding(V, E), pos_emb=nn.Embedding(T, E),
        layers=nn.ModuleList(nn.TransformerEncoderLayer(E, H, F, dropout=0.0, activation="gelu",
                                                        batch_first=True, norm_first=True)
                             for _ in range(L)),
        norm=nn.LayerNorm(E), head=nn.Linear(E, V)))
    opt = torch.optim.Adam(model.parameters(), lr=1e-4)
    x = torch.randint(0, V, (B, T))
    y = torch.randint(0, V, (B, T))
    mask = torch.ones(T, T, dtype=torch.bool).triu(1)
    pos = torch.arange(T)

    def step():
        opt.zero_grad(set_to_none=True)
        h = model["tok_emb"](x) + model["pos_emb"](pos)
        for layer in model["layers"]:
            h = layer(h, src_mask=mask)
        logits = model["head"](model["norm"](h))
        loss = torch.nn.functional.cross_entropy(logits.view(-1, V), y.view(-1))
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()

    return times(step)


def compare_model():
    print(f"\ntraining step of the language model, B 32 T 128 E 256 H 8 F 1024 L 4 V 4000, "
          f"in turns (PyTorch, then mha_bench --model), {args.rounds} rounds; threads "
          f"{args.threads}")
    ratios = []
    for r in range(args.rounds):
        theirs = statistics.median(torch_model_step_times())
        out = run_ours("--model")
        m = re.search(r"^train step .*: median ([0-9.]+) s, ([0-9.]+)x roofline", out, re.M)
        ours_s, roof = float(m.group(1)), float(m.group(2))
        ratios.append(ours_s / theirs)
        print(f"  round {r + 1}: PyTorch {theirs:.3f} s, ours {ours_s:.3f} s "
              f"({ours_s / theirs:.2f}x PyTorch, {roof:.2f}x roofline)")
    print(f"  median ratio: training step {statistics.median(ratios):.2f}x PyTorch's time")


if args.part == "model":
    compare_model()
    sys.exit(0)
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
ratios, train = [], []
for r in range(args.rounds):
    theirs = statistics.median(pytorch_times(128, 64))
    # PyTorch's faster training step of the two: with or without the weights
    theirs_train = min(statistics.median(pytorch_train_times(128, 64, w)) for w in (True, False))
    out = run_ours("--article")
    fwd, into = at_64(out)
    step = train_64(out)
    ratios.append((fwd / theirs, into / theirs))
    train.append(step / theirs_train)
    print(f"  round {r + 1}: PyTorch {theirs:.4f} s, forward() {fwd:.4f} s "
          f"({fwd / theirs:.2f}x), forward_into {into:.4f} s ({into / theirs:.2f}x); "
          f"training step: PyTorch {theirs_train:.4f} s, ours {step:.4f} s "
          f"({step / theirs_train:.2f}x)")
print(f"  median ratio: forward() {statistics.median(x for x, _ in ratios):.2f}x, "
      f"forward_into {statistics.median(y for _, y in ratios):.2f}x, "
      f"training step {statistics.median(train):.2f}x")
if args.part == "all":
    compare_decode()
    compare_long()
    compare_train_long()
    compare_model()
