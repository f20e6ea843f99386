#!/usr/bin/env python3
"""Fits the polynomial that src/mha/fast/softmax_kernel.hpp uses for e^r on |r| <= ln2/2.

    /usr/bin/python3 scripts/fit_exp.py   (Debian's python3-numpy)

The kernel writes e^x = 2^k e^r and needs e^r only on the reduced range.
A Taylor series is most accurate near r = 0 and worst at the ends; a
minimax fit spreads the error evenly, so a degree-6 fit beats the
degree-7 Taylor series and costs one multiply-add less. The form keeps
1 + r exact:

    e^r ~ 1 + r + r^2 (c2 + c3 r + c4 r^2 + c5 r^3 + c6 r^4)

Fitted for the smallest worst *relative* error, by Lawson's algorithm
(least squares, reweighted towards the points where the error is largest,
until the weights settle on the equioscillation points). Prints the
coefficients as float32, ready to paste, and the worst error before and
after rounding them to float.
"""
import numpy as np

half_ln2 = np.log(2.0) / 2
r = np.linspace(-half_ln2, half_ln2, 20001)
e = np.exp(r)
powers = [2, 3, 4, 5, 6]
# Relative error of 1 + r + sum c_i r^i is (A c - b) with these A, b.
A = np.stack([r**p / e for p in powers], axis=1)
b = (e - 1 - r) / e

weights = np.ones_like(r)
for _ in range(300):
    c, *_ = np.linalg.lstsq(A * weights[:, None], b * weights, rcond=None)
    err = np.abs(A @ c - b)
    weights *= np.sqrt(err / err.max() + 1e-3)
    weights /= weights.max()

c32 = c.astype(np.float32)
print(f"worst relative error of the fit: {np.abs(A @ c - b).max():.3g}")
print(f"  with float32 coefficients:      {np.abs(A @ c32.astype(np.float64) - b).max():.3g}")
taylor = np.array([1 / np.prod(np.arange(1, p + 1)) for p in powers])
print(f"  the degree-6 Taylor series:     {np.abs(A @ taylor - b).max():.3g}")
for p, v in zip(powers, c32):
    print(f"c{p} = {np.format_float_positional(v, unique=True)}f")
