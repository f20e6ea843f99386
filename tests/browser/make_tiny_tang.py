#!/usr/bin/env python3
"""A small random language model in data/tang/'s format, for the explorer's tests.

    /usr/bin/python3 tests/browser/make_tiny_tang.py DIR [--seed S] [--sizes V,T,E,H,F,L]

Writes what tang_spec.md's checkpoint holds, at toy sizes (V 50, T_max 16,
E 16, H 2, F 32, L 2): one <name>.npy per parameter under mha::save_model's
names (float32, [V, E] tok_emb.weight ... head.bias), vocab.json ("<unk>",
"<poem>", "\\n", the marks, then CJK characters) and config.json. The weights
are random, so what it predicts means nothing; the in_proj scale is chosen so
that heads are peaked, not uniform, which makes a wrong score visible.
--sizes 3000,64,128,4,512,4 gives the real checkpoint's sizes (the characters
past the first 50 are CJK code points from U+4E00 on), to try the page at them.
Exit 77 (skipped) without NumPy.
"""
import json
import pathlib
import sys

try:
    import numpy as np
except ImportError as e:
    print(f"skipped: needs python3-numpy ({e})")
    sys.exit(77)

args = sys.argv[1:]
opts = {}
for flag in ("--seed", "--sizes"):
    if flag in args:
        k = args.index(flag)
        opts[flag] = args[k + 1]
        del args[k:k + 2]
if len(args) != 1:
    sys.exit("usage: make_tiny_tang.py DIR [--seed S] [--sizes V,T,E,H,F,L]")
out = pathlib.Path(args[0])
seed = int(opts.get("--seed", 34))
rng = np.random.default_rng(seed)

# 50 tokens: the two names, the line end, four marks, 43 characters of 静夜思 and 春晓 and more
chars = ("床前明月光疑是地上霜举头望低思故乡春眠不觉晓处闻啼鸟"
         "夜来风雨声花落知多少白日依山尽黄河入海流")
vocab = ["<unk>", "<poem>", "\n", "，", "。", "？", "！"] + list(dict.fromkeys(chars))[:43]
V, T_max, E, H, F, L = [int(n) for n in opts.get("--sizes", "50,16,16,2,32,2").split(",")]
extra = (chr(c) for c in range(0x4E00, 0xA000) if chr(c) not in vocab)
vocab = (vocab + [next(extra) for _ in range(max(0, V - len(vocab)))])[:V]


def save(name, shape, scale, offset=0.0):
    a = (offset + scale * rng.standard_normal(shape)).astype(np.float32)
    np.save(out / f"{name}.npy", a)


out.mkdir(parents=True, exist_ok=True)
save("tok_emb.weight", (V, E), 1.0)
save("pos_emb.weight", (T_max, E), 1.0)
for i in range(L):
    p = f"layers.{i}."
    # scores of std ~2: peaked heads
    save(p + "self_attn.in_proj_weight", (3 * E, E), 0.45 * (16 / E) ** 0.75)
    save(p + "self_attn.in_proj_bias", (3 * E,), 0.1)
    save(p + "self_attn.out_proj.weight", (E, E), 0.25)
    save(p + "self_attn.out_proj.bias", (E,), 0.1)
    save(p + "linear1.weight", (F, E), 0.25)
    save(p + "linear1.bias", (F,), 0.1)
    save(p + "linear2.weight", (E, F), 0.18)
    save(p + "linear2.bias", (E,), 0.1)
    for n in ("norm1", "norm2"):
        save(p + n + ".weight", (E,), 0.2, 1.0)
        save(p + n + ".bias", (E,), 0.1)
save("norm.weight", (E,), 0.2, 1.0)
save("norm.bias", (E,), 0.1)
save("head.weight", (V, E), 0.5)
save("head.bias", (V,), 0.1)
(out / "vocab.json").write_text(json.dumps(vocab, ensure_ascii=False))
(out / "config.json").write_text(json.dumps({"vocab": V, "t_max": T_max, "embed_dim": E,
                                             "num_heads": H, "ff_dim": F, "num_layers": L,
                                             "seed": seed}))
(out / "train_log.tsv").write_text("step\ttrain_loss\tval_loss\tlr\n")  # a random model: no steps
print(f"wrote {out}: a random model, V {V}, T_max {T_max}, E {E}, H {H}, F {F}, L {L}")
