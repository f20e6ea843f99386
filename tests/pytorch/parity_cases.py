"""Parity cases: torch.nn.MultiheadAttention runs, saved as .npy files.

Shared by make_parity_fixtures.py (the committed fixtures) and
check_mha_forward.py (fresh random cases run through mha_forward).
Needs Debian's python3-torch and python3-numpy.
"""
import json
import pathlib
import sys

try:
    import numpy as np
    import torch
except ImportError as e:  # as the suite's scripts: skipped (77) without PyTorch
    print(f"skipped: needs Debian's python3-torch and python3-numpy ({e})")
    sys.exit(77)


def write_case(folder, seed, B, Tq, Tk, E, H, cross=False, attn_mask=None,
               padding=None):
    """Runs one case in PyTorch and saves everything mha_forward needs.

    attn_mask: None, "causal_bool", "causal_float", "float", "bool_3d".
    padding: None or a list of B key lengths (True past the length).
    """
    folder = pathlib.Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    g = torch.Generator().manual_seed(seed)
    torch.manual_seed(seed)
    mha = torch.nn.MultiheadAttention(E, H, batch_first=True)
    with torch.no_grad():  # non-zero biases, so that they are tested too
        mha.in_proj_bias.uniform_(-0.5, 0.5, generator=g)
        mha.out_proj.bias.uniform_(-0.5, 0.5, generator=g)
    for name, value in mha.state_dict().items():
        np.save(folder / f"{name}.npy", value.numpy())

    q = torch.randn(B, Tq, E, generator=g)
    k = torch.randn(B, Tk, E, generator=g) if cross else q
    v = torch.randn(B, Tk, E, generator=g) if cross else q
    np.save(folder / "query.npy", q.numpy())
    if cross:
        np.save(folder / "key.npy", k.numpy())
        np.save(folder / "value.npy", v.numpy())

    mask = None
    future = torch.ones(Tq, Tk, dtype=torch.bool).triu(1)  # True = not allowed
    if attn_mask == "causal_bool":
        mask = future
    elif attn_mask == "causal_float":
        mask = torch.zeros(Tq, Tk).masked_fill(future, float("-inf"))
    elif attn_mask == "float":
        mask = torch.randn(Tq, Tk, generator=g)
    elif attn_mask == "bool_3d":
        mask = torch.rand(B * H, Tq, Tk, generator=g) < 0.3
        mask[:, :, 0] = False  # every query keeps at least key 0
    if mask is not None:
        np.save(folder / "attn_mask.npy", mask.numpy())

    kpm = None
    if padding is not None:
        kpm = torch.arange(Tk)[None, :] >= torch.tensor(padding)[:, None]
        np.save(folder / "key_padding_mask.npy", kpm.numpy())

    with torch.no_grad():
        out, weights = mha(q, k, v, attn_mask=mask, key_padding_mask=kpm,
                           need_weights=True, average_attn_weights=False)
    assert not torch.isnan(out).any(), "a fully masked row: PyTorch gives NaN"
    np.save(folder / "expected_output.npy", out.numpy())
    np.save(folder / "expected_attn_weights.npy", weights.numpy())
    (folder / "case.json").write_text(json.dumps(
        {"seed": seed, "B": B, "Tq": Tq, "Tk": Tk, "E": E, "num_heads": H,
         "cross": cross, "attn_mask": attn_mask, "padding": padding}) + "\n")


# name: (B, Tq, Tk, E, H, cross, attn_mask, padding)
CASES = {
    "self_basic": (2, 5, 5, 8, 2, False, None, None),
    "cross_tq3_tk6": (2, 3, 6, 8, 2, True, None, None),
    "causal_bool": (2, 6, 6, 8, 4, False, "causal_bool", None),
    "causal_float": (2, 6, 6, 8, 4, False, "causal_float", None),
    "float_attn_mask": (2, 4, 4, 8, 2, False, "float", None),
    "bool_attn_mask_3d": (2, 4, 5, 8, 2, True, "bool_3d", None),
    "key_padding": (3, 5, 5, 8, 2, False, None, [5, 3, 1]),
    "causal_and_padding": (2, 5, 5, 12, 3, False, "causal_bool", [5, 2]),
    "cross_padding_float": (2, 3, 7, 8, 4, True, "float", [7, 4]),
    "one_head": (2, 4, 4, 8, 1, False, None, None),
    "heads_equal_e": (2, 4, 4, 8, 8, False, "causal_bool", None),
    "batch_one": (1, 6, 6, 16, 4, False, None, None),
    "time_one": (2, 1, 1, 8, 2, False, None, None),
    "larger": (2, 16, 16, 32, 4, False, "causal_bool", None),
}
