"""What the side-by-side scripts share: loading a lesson's --dump folder,
printing tensors under the lesson's headings, and holding each to the C++.

    build/lessons/05_softmax --tiny --dump /tmp/dump
    /usr/bin/python3 lessons/pytorch/05_softmax.py /tmp/dump

Exit 0 when every tensor is within 1e-5 of the lesson's, 1 when one is not,
2 for a bad folder, and 77 (skipped) without PyTorch.
"""
import os
import sys

try:
    import numpy as np
    import torch
except ImportError as e:  # reported as skipped by ctest (SKIP_RETURN_CODE 77)
    print(f"skipped: needs Debian's python3-torch and python3-numpy ({e})")
    sys.exit(77)

TOLERANCE = 1e-5


class Lesson:
    """The tensors one lesson dumped, and the comparison of ours with them."""

    def __init__(self, name, argv):
        if len(argv) != 2:
            sys.exit(f"usage: {argv[0]} DUMP_DIR  (the folder given to {name} --dump)")
        self.dir = os.path.join(argv[1], name)
        if not os.path.isdir(self.dir):
            print(f"{argv[0]}: no {self.dir}: run build/lessons/{name} --dump {argv[1]}",
                  file=sys.stderr)
            sys.exit(2)
        self.name, self.worst, self.tiny, self.stated = name, 0.0, False, False
        torch.set_printoptions(precision=3, sci_mode=False)
        print(f"{name} in PyTorch, on the tensors the C++ lesson dumped in {self.dir}")

    def load(self, name):
        """A tensor the lesson dumped, as torch (bool masks stay bool)."""
        x = torch.from_numpy(np.load(os.path.join(self.dir, name + ".npy")))
        self.tiny = self.tiny or x.numel() <= 64
        return x

    def linear(self, name):
        """nn.Linear with the dumped name.weight and name.bias."""
        w = self.load(name + ".weight")
        layer = torch.nn.Linear(w.shape[1], w.shape[0])
        with torch.no_grad():
            layer.weight.copy_(w)
            layer.bias.copy_(self.load(name + ".bias"))
        return layer

    def section(self, title):
        print(f"\n== {title} " + "=" * max(3, 86 - len(title)))

    def show(self, what, name, ours, dump=None, seq0=False, relative=False, tolerance=None):
        """Prints ours under the lesson's heading and compares it with the
        C++ tensor dumped as `dump` (default: name); with seq0, with its
        sequence 0 only (a lesson that dumps only sequence 0's inputs); with
        relative, the difference over the largest |C++| (for gradients, whose
        size sets what a float's rounding is), with relative="each", each
        element's over its own (for statistics of unlike sizes); with
        tolerance, held to that instead of TOLERANCE (the line says so)."""
        theirs = self.load(dump or name)
        theirs = theirs[:1] if seq0 else theirs
        if ours.dtype == torch.bool or theirs.dtype == torch.bool:
            diff = float((ours.bool() != theirs.bool()).sum())
        else:
            both = torch.isinf(ours) & torch.isinf(theirs) & (ours == theirs)
            d = torch.where(both, torch.zeros_like(ours), (ours.double() - theirs.double()).abs())
            if relative == "each":
                d = d / theirs.double().abs().clamp_min(1e-30)
            diff = float(d.max())
            if relative is True:
                diff /= max(float(theirs.abs().max()), 1e-30)
        scaled = diff if tolerance is None else diff * TOLERANCE / tolerance
        self.stated = self.stated or tolerance is not None
        if not scaled <= self.worst:  # keeps a NaN
            self.worst = scaled
        how = {True: "max |diff| / max |C++|", "each": "max |diff / C++|"}.get(
            relative, "max |diff| vs C++")
        within = "" if tolerance is None else f" (held to {tolerance:g})"
        print(f"{what:<41} {name}.shape = {list(ours.shape)}  {how} = {diff:.2g}{within}")
        if ours.numel() <= 64:
            print(ours.int() if ours.dtype == torch.bool else ours)
        return ours

    def done(self):
        ok = self.worst <= TOLERANCE
        own = ", or the tolerance its line states" if self.stated else ""
        print(f"\n{'OK' if ok else 'FAILED'}, every tensor within {TOLERANCE:g} of the C++ "
              f"lesson's{own} (worst " +
              (f"{self.worst / TOLERANCE:.0%} of its tolerance)" if own else f"{self.worst:.2g})"))
        sys.exit(0 if ok else 1)
