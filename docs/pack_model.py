#!/usr/bin/env python3
"""Packs a language-model checkpoint (data/tang/) into one JavaScript file for
the explorer's poem page, which runs the model in the browser.

    /usr/bin/python3 docs/pack_model.py DIR OUT.js [--name NAME]

A page opened from file:// cannot fetch files beside it, but it can load a
<script>: OUT.js sets window.MHA_MODEL = {format, name, config, vocab,
tensors: [{name, shape}], bytes, crc32, blob}, where blob is every tensor's
float32 little-endian bytes, one after another in the order of tensors,
base64-encoded; bytes is their count and crc32 their CRC-32 (zlib's), so
that the page can refuse a truncated or altered blob. DIR holds what
tang_spec.md says: config.json, vocab.json and one <name>.npy per parameter
under mha::save_model's names. Without DIR, OUT.js sets MHA_MODEL to null
and the page says no model was packaged.
Standard library only: the docs build needs no NumPy.
Bad input: one line naming the file and what is wrong, exit 2.
"""
import ast
import base64
import json
import pathlib
import struct
import sys
import zlib


def fail(message):
    print(f"pack_model: {message}", file=sys.stderr)
    sys.exit(2)


def read_npy(path):
    """The shape and float32 little-endian bytes of a C-order .npy file."""
    raw = path.read_bytes()
    if raw[:6] != b"\x93NUMPY" or len(raw) < 10:
        fail(f"{path}: not a .npy file")
    major = raw[6]
    if major == 1:
        size, start = struct.unpack("<H", raw[8:10])[0], 10
    elif major in (2, 3) and len(raw) >= 12:
        size, start = struct.unpack("<I", raw[8:12])[0], 12
    else:
        fail(f"{path}: .npy version {major} is not 1, 2 or 3")
    try:
        header = ast.literal_eval(raw[start:start + size].decode("latin-1"))
        descr, fortran, shape = header["descr"], header["fortran_order"], tuple(header["shape"])
    except (ValueError, SyntaxError, KeyError, TypeError):
        fail(f"{path}: its header is not a .npy header")
    count = 1
    for n in shape:
        count *= n
    data = raw[start + size:]
    if fortran:
        fail(f"{path}: Fortran order; save it in C order")
    if descr == "<f4":
        if len(data) != 4 * count:
            fail(f"{path}: {len(data)} bytes of data, shape {list(shape)} needs {4 * count}")
        return list(shape), data
    if descr == "<f8":  # a float64 state_dict: the page computes from float32 as the core does
        if len(data) != 8 * count:
            fail(f"{path}: {len(data)} bytes of data, shape {list(shape)} needs {8 * count}")
        return list(shape), struct.pack(f"<{count}f", *struct.unpack(f"<{count}d", data))
    fail(f"{path}: dtype {descr}, not float32 ('<f4') or float64 ('<f8')")


def names(layers):
    """save_model's names, in the order the blob holds them."""
    block = ["self_attn.in_proj_weight", "self_attn.in_proj_bias", "self_attn.out_proj.weight",
             "self_attn.out_proj.bias", "linear1.weight", "linear1.bias", "linear2.weight",
             "linear2.bias", "norm1.weight", "norm1.bias", "norm2.weight", "norm2.bias"]
    return (["tok_emb.weight", "pos_emb.weight"] +
            [f"layers.{i}.{n}" for i in range(layers) for n in block] +
            ["norm.weight", "norm.bias", "head.weight", "head.bias"])


def main():
    args = sys.argv[1:]
    name = None
    if "--name" in args:
        k = args.index("--name")
        if k + 1 >= len(args):
            fail("--name needs a value")
        name = args[k + 1]
        del args[k:k + 2]
    if len(args) != 2:
        fail("usage: pack_model.py DIR OUT.js [--name NAME]")
    src, out = pathlib.Path(args[0]), pathlib.Path(args[1])
    name = name or str(src)
    if not (src / "config.json").exists():
        out.write_text("// No model was packaged: " + json.dumps(name) +
                       " held no config.json when these pages were built.\n"
                       "window.MHA_MODEL = null;\n", encoding="utf-8")
        print(f"pack_model: no model in {src}: {out} says so")
        return
    try:
        config = json.loads((src / "config.json").read_text(encoding="utf-8"))
        vocab = json.loads((src / "vocab.json").read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        fail(f"{src}: config.json or vocab.json unreadable ({e})")
    keys = ["vocab", "t_max", "embed_dim", "num_heads", "ff_dim", "num_layers"]
    if not isinstance(config, dict) or not all(isinstance(config.get(k), int) and config[k] > 0
                                               for k in keys):
        fail(f"{src}/config.json: needs positive integers {', '.join(keys)}")
    if not isinstance(vocab, list) or len(vocab) != config["vocab"] or \
            not all(isinstance(t, str) for t in vocab):
        fail(f"{src}/vocab.json: not a list of {config['vocab']} strings (config's vocab)")
    tensors, blob = [], bytearray()
    for n in names(config["num_layers"]):
        path = src / f"{n}.npy"
        if not path.exists():
            fail(f"{path}: missing")
        shape, data = read_npy(path)
        tensors.append({"name": n, "shape": shape})
        blob += data
    model = {"format": 1, "name": name,
             "config": {k: config[k] for k in keys}, "vocab": vocab, "tensors": tensors,
             "bytes": len(blob), "crc32": zlib.crc32(blob),
             "blob": base64.b64encode(bytes(blob)).decode("ascii")}
    # the page checks every shape against config; here only the files are read
    out.write_text("// The model the explorer's poem page runs, packed by docs/pack_model.py "
                   "from " +
                   json.dumps(name) + ".\nwindow.MHA_MODEL = " +
                   json.dumps(model, ensure_ascii=False) + ";\n", encoding="utf-8")
    print(f"pack_model: {out}: {len(tensors)} tensors, {len(blob)} bytes from {src}")


main()
