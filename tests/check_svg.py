#!/usr/bin/env python3
"""The lessons' SVG pictures carry the numbers the lessons computed.

    /usr/bin/python3 tests/check_svg.py BUILD_DIR WORK_DIR

Runs lessons 00, 05, 19 and 21 at --tiny with --svg and --dump, then: every SVG
written is well-formed XML; in lesson 05's weights picture each cell's <title>
holds weights[0, 0, i, j] of the dumped weights.npy to 4 digits, and the cells
the causal mask hides say "masked" (and only those); in lesson 19's last
picture, head h's cell (i, j) holds the mean over the batch of the dumped
weights.end[:, h, i, j]; in lesson 00's two heads, head h's cell (i, j) holds
weights[0, h, i, j] and names both words, "query i (cat), key j (sat)", and every
grid's tick labels are the six words down and across; in lesson 21's last picture,
grid "layer l, head h" holds sequence 0 of layer<l>.weights.end and its cells' titles
name the tokens; the picture of tests/svg_cjk_check.cpp parses, and its tick labels
read back as the poem's tokens, "<poem>" and the Chinese characters. Exit 0 when all
hold, 1 when one does not, 77 (skipped) without python3-numpy.
"""
import glob
import os
import re
import subprocess
import sys
import xml.etree.ElementTree as ET

try:
    import numpy as np
except ImportError as e:
    print(f"skipped: needs python3-numpy ({e})")
    sys.exit(77)

build, work = sys.argv[1], sys.argv[2]
NS = "{http://www.w3.org/2000/svg}"
failures = []


def run(lesson):
    subprocess.run([f"{build}/lessons/{lesson}", "--tiny", "--svg", f"{work}/svg",
                    "--dump", f"{work}/dump"], check=True, capture_output=True)


def cells(path):
    """{(grid name, row, col): title text} of every cell of the picture."""
    out = {}
    for g in ET.parse(path).getroot().iter(NS + "g"):
        for r in g.iter(NS + "rect"):
            if r.get("data-row") is not None:
                key = (g.get("data-name"), int(r.get("data-row")), int(r.get("data-col")))
                out[key] = r.find(NS + "title").text
    return out


def value(title):
    return title.rsplit(": ", 1)[1]


run("00_what_attention_is_for")
run("05_softmax")
run("19_heads_learn")
run("21_induction_heads")
for path in sorted(glob.glob(f"{work}/svg/*.svg")):
    try:
        ET.parse(path)
    except ET.ParseError as e:
        failures.append(f"{path}: not well-formed XML: {e}")

w = np.load(f"{work}/dump/05_softmax/weights.npy")  # [B, H, T, T]
c = cells(f"{work}/svg/attention_weights.svg")
T = w.shape[2]
if len(c) != T * T:
    failures.append(f"lesson 05: {len(c)} cells, not {T * T}")
for (_, i, j), title in c.items():
    if j > i:  # above the diagonal: the causal mask hides it
        if value(title) != "masked":
            failures.append(f"lesson 05 cell ({i}, {j}) says {title!r}, not masked")
    elif value(title) == "masked" or abs(float(value(title)) - w[0, 0, i, j]) > 5e-5:
        failures.append(f"lesson 05 cell ({i}, {j}) says {title!r}, weights.npy {w[0, 0, i, j]:.6f}")

w19 = np.load(f"{work}/dump/19_heads_learn/weights.end.npy").mean(axis=0)  # [H, T, T]
c = cells(f"{work}/svg/19_weights_end.svg")
if len(c) != w19.size:
    failures.append(f"lesson 19: {len(c)} cells, not {w19.size}")
for (name, i, j), title in c.items():
    h = int(re.match(r"head (\d+)", name).group(1))
    if abs(float(value(title)) - w19[h, i, j]) > 5e-5:
        failures.append(f"lesson 19 {name} cell ({i}, {j}) says {title!r}, the dump's mean "
                        f"{w19[h, i, j]:.6f}")

words = ["the", "cat", "sat", "on", "the", "mat"]
w00 = np.load(f"{work}/dump/00_what_attention_is_for/weights.npy")[0]  # [H, T, T]
path = f"{work}/svg/00_two_heads.svg"
c = cells(path)
if len(c) != w00.size:
    failures.append(f"lesson 00: {len(c)} cells, not {w00.size}")
for (name, i, j), title in c.items():
    h = int(re.match(r"head (\d+)", name).group(1))
    if not title.startswith(f"query {i} ({words[i]}), key {j} ({words[j]}): "):
        failures.append(f"lesson 00 {name} cell ({i}, {j}) does not name its words: {title!r}")
    elif abs(float(value(title)) - w00[h, i, j]) > 5e-5:
        failures.append(f"lesson 00 {name} cell ({i}, {j}) says {title!r}, weights.npy "
                        f"{w00[h, i, j]:.6f}")
grids = [g for g in ET.parse(path).getroot().iter(NS + "g") if g.get("class") == "grid"]
for g in grids:
    ticks = [t.text for t in g.iter(NS + "text") if t.get("class") == "tick"]
    if ticks != words + words:  # down the left, then across the top
        failures.append(f"lesson 00 {g.get('data-name')}: tick labels {ticks}, not the words")
if len(grids) != w00.shape[0]:
    failures.append(f"lesson 00: {len(grids)} grids, not one per head")
c = cells(f"{work}/svg/21_heads_2.svg")  # the end: every layer x head of sequence 0
w21 = [np.load(f"{work}/dump/21_induction_heads/layer{l}.weights.end.npy")[0] for l in (0, 1)]
if len(c) != sum(w.size for w in w21):
    failures.append(f"lesson 21: {len(c)} cells, not {sum(w.size for w in w21)}")
for (name, i, j), title in c.items():
    l, h = map(int, re.match(r"layer (\d+), head (\d+)", name).groups())
    if not re.match(rf"query {i} \(.\), key {j} \(.\): ", title):
        failures.append(f"lesson 21 {name} cell ({i}, {j}): {title!r} does not name the tokens")
    elif abs(float(value(title)) - w21[l][h, i, j]) > 5e-5:
        failures.append(f"lesson 21 {name} cell ({i}, {j}) says {title!r}, the dump's "
                        f"{w21[l][h, i, j]:.6f}")

poem = ["<poem>", "白", "日", "依", "山", "盡", "，", "黃", "河", "入", "海", "流", "。", "↵"]
subprocess.run([f"{build}/tests/svg_cjk_check", f"{work}/svg/cjk_labels.svg"], check=True,
               capture_output=True)
try:
    cjk = ET.parse(f"{work}/svg/cjk_labels.svg").getroot()
except ET.ParseError as e:
    failures.append(f"svg_cjk_check: not well-formed XML: {e}")
    cjk = ET.Element("svg")
for g in cjk.iter(NS + "g"):
    ticks = [t.text for t in g.iter(NS + "text") if t.get("class") == "tick"]
    if ticks != poem + poem:
        failures.append(f"svg_cjk_check {g.get('data-name')}: tick labels {ticks}, not the poem")

for f in failures[:10]:
    print("FAILED", f)
print(f"{len(glob.glob(f'{work}/svg/*.svg'))} pictures, {len(failures)} failures")
sys.exit(1 if failures else 0)
