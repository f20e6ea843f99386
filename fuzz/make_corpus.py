#!/usr/bin/env python3
"""Writes the fuzz targets' seed corpus (fuzz/corpus/<target>/), committed
beside them: good .npy files of every dtype, order, rank and format version,
the bad ones the tests use, state_dicts of every layout, masks of every
shape mha_forward takes, argument lists for the flag parsers, changes to a
model's folder, and token ids.

    /usr/bin/python3 fuzz/make_corpus.py     (needs python3-numpy)
"""
import io
import pathlib
import struct

import numpy as np

root = pathlib.Path(__file__).resolve().parent / "corpus"
rng = np.random.RandomState(0)


def npy(a, version=None, fortran=False):
    b = io.BytesIO()
    a = np.asfortranarray(a) if fortran else a
    if version is None:
        np.save(b, a)
    else:
        np.lib.format.write_array(b, a, version=version)
    return b.getvalue()


def put(target, name, data):
    d = root / target
    d.mkdir(parents=True, exist_ok=True)
    (d / name).write_bytes(data)


def chunks(*files):
    return b"".join(struct.pack("<H", len(f)) + f for f in files)


f32 = rng.standard_normal((2, 3, 4)).astype(np.float32)
for rank in range(0, 5):
    a = rng.standard_normal((2,) * rank).astype(np.float32)
    put("npy", f"f32_rank{rank}", npy(a))
put("npy", "f64", npy(f32.astype(np.float64)))
put("npy", "bool", npy(rng.rand(3, 4) > 0.5))
put("npy", "int32", npy(np.arange(6, dtype=np.int32).reshape(2, 3)))
put("npy", "int64", npy(np.arange(6, dtype=np.int64)))
put("npy", "fortran", npy(f32, fortran=True))
put("npy", "version2", npy(f32, version=(2, 0)))
put("npy", "version3", npy(f32, version=(3, 0)))
put("npy", "empty_shape", npy(np.zeros((0, 4), np.float32)))
good = npy(f32)
put("npy", "truncated", good[:-20])
put("npy", "extra_bytes", good + b"\0" * 8)
put("npy", "magic", b"\x93NUMPX" + good[6:])
put("npy", "empty", b"")
put("npy", "big_endian", good.replace(b"<f4", b">f4"))
put("npy", "huge_shape", good.replace(b"(2, 3, 4)", b"(99999999999, 3, 4)"))
put("npy", "bad_header", good[:10] + b"{'descr': '<f4', 'shape': (2,,3), }".ljust(len(good) - 10 - 96) + good[-96:])

E, H = 4, 2
w = lambda *s: npy(rng.standard_normal(s).astype(np.float32))
layouts = {
    0: [w(3 * E, E), w(3 * E), w(E, E), w(E)],
    1: [w(E, E), w(E)] * 4,
    2: [w(E, E), w(E)] * 4,
    3: [w(E, E), w(E), w(E // H, E), w(E // H), w(E // H, E), w(E // H), w(E, E), w(E)],
}
for layout, files in layouts.items():
    kv = 1 if layout == 3 else 0
    put("state_dict", f"layout{layout}", bytes([layout, H, kv]) + chunks(*files))
    put("state_dict", f"layout{layout}_missing", bytes([layout, H, kv]) + chunks(*files[:3]))
put("state_dict", "layout0_wrong_e", bytes([0, H, 0]) + chunks(w(3 * E, E + 1), w(3 * E), w(E, E), w(E)))

b, h, tq, tk = 2, 2, 3, 4
sizes = bytes([b - 1, h - 1, tq - 1, tk - 1])
boolm = lambda *s: npy(rng.rand(*s) > 0.3)
put("masks", "attn_bool", sizes + chunks(boolm(tq, tk)))
put("masks", "attn_float", sizes + chunks(w(tq, tk)))
put("masks", "attn_bh", sizes + chunks(boolm(b * h, tq, tk)))
put("masks", "all_three", sizes + chunks(boolm(tq, tk), boolm(b, tk), npy(np.tril(np.ones((tq, tk), np.float32)))))
put("masks", "keep_rank4", sizes + chunks(b"", b"", boolm(b, 1, tq, tk)))
put("masks", "keep_rank3", sizes + chunks(b"", b"", boolm(b, tq, tk)))

args = lambda *a: b"\0".join(x.encode() for x in a)
for k, a in enumerate([("--tiny",), ("--batch", "3", "--time", "5"), ("--heads", "7"),
                       ("--steps", "100", "--lr", "0.1", "--vocab", "5"), ("--svg", "d", "--dump", "d"),
                       ("--help",), ("--seed", "0", "--tiny", "--predict"), ("--d-model", "8", "--heads", "16")]):
    put("lesson_flags", f"args{k}", bytes([k % 2]) + args(*a))
for name, answers in [("predict_right", b"1 5 8\n[1, 2, 5, 4]\n1,2,5,4\n"),
                      ("predict_wrong", b"[1, 4]\n99999999999999999999999 2\n\xff\xfe\n"),
                      ("predict_eof", b"1 5 8"),
                      ("predict_explained", b"1 8 5\n1 5 2 4\n5 8 1 1\n")]:
    put("lesson_flags", name, bytes([3]) + answers)  # first byte 3: --predict's answers
base = ["--weights", "w", "--num-heads", "3", "--query", "x.npy", "--out", "o"]
for k, more in enumerate([[], ["--causal"], ["--attn-mask", "m55.npy"], ["--key-padding-mask", "pad.npy"],
                          ["--attn-mask", "f55.npy", "--fill", "-1e10"], ["--grad-output", "x.npy"],
                          ["--incremental"], ["--no-weights", "--causal"], ["--keep-mask", "m55.npy"],
                          ["--key", "k.npy", "--value", "k.npy"], ["--query", "bad.npy"], ["--help"]]):
    put("forward_flags", f"args{k}", args(*(base + more)))
put("forward_flags", "gqa", args("--weights", "cur", "--num-heads", "3", "--num-kv-heads", "1",
                                 "--query", "x.npy", "--out", "o", "--grad-output", "x.npy"))

# model: byte 0 picks one of the 30 files of model_fuzzer.cpp's folder (V 5,
# T_max 4, E 4, H 2, F 8, L 2), sorted by name; byte 1 the heads; byte 2 bit 0
# removes it, bits 1-7 a stray layers.{i}.norm1.weight.npy; then its bytes.
V, T_max, E, F = 5, 4, 4, 8
block = {"self_attn.in_proj_weight": (3 * E, E), "self_attn.in_proj_bias": (3 * E,),
         "self_attn.out_proj.weight": (E, E), "self_attn.out_proj.bias": (E,),
         "linear1.weight": (F, E), "linear1.bias": (F,), "linear2.weight": (E, F),
         "linear2.bias": (E,), "norm1.weight": (E,), "norm1.bias": (E,),
         "norm2.weight": (E,), "norm2.bias": (E,)}
shapes = {"tok_emb.weight": (V, E), "pos_emb.weight": (T_max, E), "norm.weight": (E,),
          "norm.bias": (E,), "head.weight": (V, E), "head.bias": (V,)}
shapes.update({f"layers.{i}.{k}": s for i in range(2) for k, s in block.items()})
names = sorted(f"{k}.npy" for k in shapes)
assert len(names) == 30
for name in ["tok_emb.weight.npy", "layers.0.self_attn.in_proj_weight.npy",
             "layers.1.linear1.weight.npy", "head.bias.npy", "pos_emb.weight.npy"]:
    i = names.index(name)
    put("model", name[:-4], bytes([i, 1, 0]) + w(*shapes[name[:-4]]))
i = names.index("layers.1.linear1.weight.npy")
put("model", "linear1_other_f", bytes([i, 1, 0]) + w(F + 1, E))
put("model", "remove_norm_bias", bytes([names.index("norm.bias.npy"), 1, 1]))
put("model", "stray_layer3", bytes([names.index("norm.bias.npy"), 1, 3 << 1]) + w(E))
put("model", "int64_weight", bytes([names.index("head.bias.npy"), 1, 0]) + npy(np.arange(V)))

# tokens: the file itself (model V 5, T_max 4)
ids = lambda *s: npy(rng.randint(0, V, s).astype(np.int64))
put("tokens", "int64", ids(2, 3))
put("tokens", "int32", npy(rng.randint(0, V, (1, 4)).astype(np.int32)))
put("tokens", "fortran", npy(rng.randint(0, V, (3, 2)).astype(np.int64), fortran=True))
put("tokens", "version2", npy(rng.randint(0, V, (1, 2)).astype(np.int64), version=(2, 0)))
put("tokens", "too_long", ids(1, 5))
put("tokens", "out_of_range", npy(np.array([[0, 5, -1]], np.int64)))
put("tokens", "wraps", npy(np.array([[2**32 + 1, 2**63 - 1]], np.int64)))
put("tokens", "float", npy(np.zeros((2, 3), np.float32)))
put("tokens", "empty", npy(np.zeros((0, 3), np.int64)))
put("tokens", "rank1", ids(4))
put("tokens", "truncated", ids(2, 3)[:-5])
for k, a in enumerate([("--block", "--weights", "blk", "--num-heads", "3", "--query", "x.npy",
                        "--causal", "--grad-output", "x.npy", "--out", "o"),
                       ("--model", "lm", "--num-heads", "3", "--tokens", "ids.npy",
                        "--grad-output", "gl.npy", "--out", "o")]):
    put("forward_flags", ["block", "model"][k], args(*a))
print("corpus written to", root)

# corpus: a text cut into poems (lesson 23 --corpus); vocab: a vocab.json
fortune = ("\x1b[32m《登鸛雀樓》\x1b[m\n\x1b[33m作者：王之渙\x1b[m\n"
           "白日依山盡，黃河入海流。\n欲窮千里目，更上一層樓。\n%\n"
           "\x1b[32m《春曉》\x1b[m\n\x1b[33m作者：孟浩然\x1b[m\n序。\n\n"
           "春眠不覺曉，處處聞啼鳥。\n夜來風雨聲，花落知多少。\n%\n").encode()
put("corpus", "fortune", fortune)
put("corpus", "plain", "床前明月光，\n疑是地上霜。\n\n舉頭望明月，\n低頭思故鄉。\r\n".encode())
put("corpus", "titles_only", b"\x1b[32mT\x1b[m\n%\n")
put("corpus", "bad_utf8", fortune[:40] + b"\xc0\xaf" + fortune[40:])
put("corpus", "cut_short", fortune[:-5] + b"\xe6\x98")
put("corpus", "empty", b"")
put("vocab", "good", '["<unk>", "<poem>", "\\n", "，", "。", "明", "月"]'.encode())
put("vocab", "escapes", b'["<unk>", "<poem>", "\\n", "\\"", "\\\\", "\\u660e", "\\ud83d\\ude00", "\\/"]')
put("vocab", "lone_surrogate", b'["<unk>", "<poem>", "\\n", "\\ud800"]')
put("vocab", "twice", '["<unk>", "<poem>", "\\n", "明", "明"]'.encode())
put("vocab", "wrong_start", b'["<poem>", "<unk>", "\\n"]')
put("vocab", "not_strings", b'[1, 2, 3]')
put("vocab", "cut", b'["<unk>", "<poem>", "\\n", "\xe6\x98')
