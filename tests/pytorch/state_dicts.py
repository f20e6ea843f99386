"""What check_block.py and check_model.py share: a PyTorch module's state_dict
saved as .npy files (the folder mha_forward --block / --model reads), the run
of mha_forward, and the comparison of what it wrote with autograd's tensors.

Importing it imports torch and numpy, or prints why not and exits 77, which
ctest reports as skipped (Debian's python3-torch is not on every machine).
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


def save_state_dict(module, folder):
    """np.save(f"{folder}/{k}.npy", v.numpy()) for every state_dict entry, in
    float32 (the C++ side's type): what the README tells a user to do."""
    os.makedirs(folder, exist_ok=True)
    for k, v in module.state_dict().items():
        np.save(f"{folder}/{k}.npy", v.detach().float().numpy())


def run(forward, weights_flag, module, flags, inputs):
    """Runs mha_forward with the module's state_dict in a folder given as
    WEIGHTS_FLAG ("--weights" for --block, "--model"), the other FLAGS, and
    each of INPUTS ({flag: tensor}) as a .npy file; returns every .npy file
    it wrote, by name without ".npy"."""
    with tempfile.TemporaryDirectory() as d:
        save_state_dict(module, f"{d}/w")
        args = [forward, weights_flag, f"{d}/w", "--out", f"{d}/out"] + flags
        for flag, t in inputs.items():
            np.save(f"{d}/{flag}.npy", t.detach().numpy())
            args += [f"--{flag}", f"{d}/{flag}.npy"]
        subprocess.run(args, check=True, capture_output=True)
        return {f[:-len(".npy")]: torch.from_numpy(np.load(f"{d}/out/{f}"))
                for f in os.listdir(f"{d}/out")}


def worst_diff(ours, theirs, names):
    """The largest |ours - theirs| over NAMES, each divided by the largest
    |value| of theirs (1 where that is 0: a gradient exactly zero), and the
    name where it is."""
    worst, where = 0.0, ""
    for name in names:
        t = theirs[name].detach().double()
        scale = t.abs().max().item() or 1.0
        err = (ours[name].double() - t).abs().max().item() / scale
        if err >= worst:
            worst, where = err, name
    return worst, where


def compare(case, ours, theirs, theirs32, first, first_limit, grad_limit):
    """Holds mha_forward's files OURS to THEIRS (PyTorch in float64): FIRST
    (output or logits) within FIRST_LIMIT, every gradient within GRAD_LIMIT,
    relative to the largest |value| of each tensor. THEIRS32 (PyTorch in
    float32, the same weights) is measured the same way, to show the size of
    float32 rounding beside ours. Prints one line; returns whether it holds."""
    if sorted(ours) != sorted(theirs):
        print(f"FAILED {case}: wrote {sorted(set(ours) - set(theirs))}, "
              f"autograd has {sorted(set(theirs) - set(ours))} besides")
        return False
    for name, t in theirs.items():
        if tuple(ours[name].shape) != tuple(t.shape):
            print(f"FAILED {case}: {name} is {list(ours[name].shape)}, not {list(t.shape)}")
            return False
    grads = [n for n in theirs if n != first]
    out_err, _ = worst_diff(ours, theirs, [first])
    grad_err, where = worst_diff(ours, theirs, grads)
    out32, _ = worst_diff(theirs32, theirs, [first])
    grad32, _ = worst_diff(theirs32, theirs, grads)
    ok = out_err <= first_limit and grad_err <= grad_limit
    if os.environ.get("VERBOSE"):
        for n in [first] + grads:
            print(f"    {n}: {worst_diff(ours, theirs, [n])[0]:.1e}")
    print(f"{'ok    ' if ok else 'FAILED'} {case}: {first} {out_err:.1e}, "
          f"{len(grads)} grads {grad_err:.1e} ({where}); torch f32 {out32:.1e}, {grad32:.1e}")
    return ok
