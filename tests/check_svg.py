#!/usr/bin/env python3
"""The lessons' SVG pictures carry the numbers the lessons computed.

    /usr/bin/python3 tests/check_svg.py BUILD_DIR RUNS WORK_DIR

Reads what the suite's own runs of the lessons wrote: the tests lesson.NN.tiny and
lesson.NN.default run every lesson with --svg and --dump from RUNS and save what it
printed as RUNS/NN.tiny.txt and NN.default.txt, and only the pictures a run says it
wrote count (so a picture left from an earlier run is never checked in its place). Each
lesson runs once for all its tests (the default runs of lessons 19, 21, 25 and 29 take
seconds). Then: every SVG written is well-formed XML; at --tiny, in lesson 05's weights
picture each cell's <title> holds weights[0, 0, i, j] of the dumped weights.npy to 4
digits, and the cells the causal mask hides say "masked" (and only those); in lesson
19's last picture, head h's cell (i, j) holds the mean over the batch of the dumped
weights.end[:, h, i, j]; in lesson 00's two heads, head h's cell (i, j) holds
weights[0, h, i, j] and names both words, "query i (cat), key j (sat)", and every
grid's tick labels are the six words down and across; in lesson 21's last picture,
grid "layer l, head h" holds sequence 0 of layer<l>.weights.end and its cells' titles
name the tokens; the picture of tests/svg_cjk_check.cpp parses, and its tick labels
read back as the poem's tokens, "<poem>" and the Chinese characters; in lesson 32's
bars, one per row of the cache table it printed, each bar's label and value are the row's
cache and floats by the formula, written after it, all on one linear scale.

The pictures of the stages (lessons 02, 06, 07, 10 at --tiny): every block cell holds
the dumped number at its place (Q and q of 02; x and the merged x of 06; x, fc_out.weight
transposed and output of 07; x, right and wrong of 10), in a tint of the colour of the
head its column goes to (data-head e // D, h in q[0, h]); in 10 each merged cell's
data-head and data-step name where its number was in x [B, H, T, D] (the number there is
the cell's), the right merge's step is its row, the wrong one's is not. Lesson 04's
masks: each cell holds the dumped mask, hatched exactly where it is 0, a legend
"allowed" / "masked" and no colour bar. Lesson 29's tiles: "full" or "empty" as masks
written out here say, each in its kind's swatch, under a legend of the three kinds of
tile and no colour bar. Every colour-bar and axis tick label is a run of
round numbers (a step of 1, 2 or 5 times a power of 10). At its default sizes every
lesson that draws (the lessons are the build's, BUILD_DIR/lessons/order.txt; one draws
when its --help offers pictures for --svg) writes at least one picture and each is
under 300 KB; those of lessons 02, 04, 05, 06, 07 and 10, at the articles' sizes, say
what part they show; and lesson 05's every-head figure is at most 1000 px wide.
Exit 0 when all hold, 1 when one does not,
77 (skipped) without python3-numpy.
"""
import colorsys
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

build, runs, work = sys.argv[1], sys.argv[2], sys.argv[3]
NS = "{http://www.w3.org/2000/svg}"
failures = []
with open(f"{build}/lessons/order.txt") as f:
    lessons = f.read().split()


def written(lesson, size):
    """{file name: path} of the pictures that the suite's run of lesson at size ("tiny"
    or "default") says it wrote; None when the run was skipped (its data missing)."""
    try:
        with open(f"{runs}/{lesson}.{size}.txt", encoding="utf-8", errors="replace") as f:
            out = f.read()
    except OSError as e:
        failures.append(f"{lesson}: no saved {size} run ({e}): run lesson.{lesson}.{size}")
        return {}
    if out.startswith("exit 77\n") and "skipped: needs" in out:
        return None
    if not out.startswith("exit 0\n"):
        failures.append(f"{lesson}'s {size} run failed: {out.splitlines()[0]}")
    return {os.path.basename(p)[:-4]: os.path.join(runs, p)
            for p in re.findall(r"^  wrote (\S+\.svg)$", out, re.M)}


drawing = [name for name in lessons
           if "also write the pictures" in subprocess.run(
               [f"{build}/lessons/{name}", "--help"], capture_output=True, text=True).stdout]
# The --tiny runs: their folders are svg_tiny/NN and dump_tiny/NN (tests/CMakeLists.txt).
tiny = {lesson: written(lesson, "tiny") or {} for lesson in drawing}
NEEDED = {"00_what_attention_is_for": ["00_two_heads"], "05_softmax": ["attention_weights"],
          "19_heads_learn": ["19_weights_end"], "21_induction_heads": ["21_heads_2"],
          "29_mask_gallery": ["mask_gallery"], "02_split_heads": ["split_heads"],
          "04_mask": ["causal_mask", "causal_padding_mask"],
          "06_attend_merge": ["merge_heads"], "07_output_layer": ["output_layer"],
          "10_merge_without_permute": ["merge"], "32_latent_attention": ["mla_cache"]}
for lesson, names in NEEDED.items():
    for name in names:
        if name not in tiny.get(lesson, {}):
            failures.append(f"{lesson} --tiny --svg did not write {name}.svg")
if failures:
    for f in failures[:10]:
        print("FAILED", f)
    sys.exit(1)


def svg(lesson, name):
    return tiny[lesson][name]


def dump(lesson, name):
    return np.load(f"{runs}/dump_tiny/{lesson}/{name}.npy")


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


for path in sorted(p for pictures in tiny.values() for p in pictures.values()):
    try:
        ET.parse(path)
    except ET.ParseError as e:
        failures.append(f"{path}: not well-formed XML: {e}")

w = dump("05_softmax", "weights")  # [B, H, T, T]
c = cells(svg("05_softmax", "attention_weights"))
T = w.shape[2]
if len(c) != T * T:
    failures.append(f"lesson 05: {len(c)} cells, not {T * T}")
for (_, i, j), title in c.items():
    if j > i:  # above the diagonal: the causal mask hides it
        if value(title) != "masked":
            failures.append(f"lesson 05 cell ({i}, {j}) says {title!r}, not masked")
    elif value(title) == "masked" or abs(float(value(title)) - w[0, 0, i, j]) > 5e-5:
        failures.append(f"lesson 05 cell ({i}, {j}) says {title!r}, weights.npy {w[0, 0, i, j]:.6f}")

w19 = dump("19_heads_learn", "weights.end").mean(axis=0)  # [H, T, T]
c = cells(svg("19_heads_learn", "19_weights_end"))
if len(c) != w19.size:
    failures.append(f"lesson 19: {len(c)} cells, not {w19.size}")
for (name, i, j), title in c.items():
    h = int(re.match(r"head (\d+)", name).group(1))
    if abs(float(value(title)) - w19[h, i, j]) > 5e-5:
        failures.append(f"lesson 19 {name} cell ({i}, {j}) says {title!r}, the dump's mean "
                        f"{w19[h, i, j]:.6f}")

words = ["the", "cat", "sat", "on", "the", "mat"]
w00 = dump("00_what_attention_is_for", "weights")[0]  # [H, T, T]
path = svg("00_what_attention_is_for", "00_two_heads")
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
c = cells(svg("21_induction_heads", "21_heads_2"))  # the end: every layer x head, sequence 0
w21 = [dump("21_induction_heads", f"layer{l}.weights.end")[0] for l in (0, 1)]
if len(c) != sum(w.size for w in w21):
    failures.append(f"lesson 21: {len(c)} cells, not {sum(w.size for w in w21)}")
for (name, i, j), title in c.items():
    l, h = map(int, re.match(r"layer (\d+), head (\d+)", name).groups())
    if not re.match(rf"query {i} \(.\), key {j} \(.\): ", title):
        failures.append(f"lesson 21 {name} cell ({i}, {j}): {title!r} does not name the tokens")
    elif abs(float(value(title)) - w21[l][h, i, j]) > 5e-5:
        failures.append(f"lesson 21 {name} cell ({i}, {j}) says {title!r}, the dump's "
                        f"{w21[l][h, i, j]:.6f}")

# Lesson 29's tiles at --tiny (T 5: tiles of 1, W 2, S 1, prefix 2, documents by
# 3 t / T): each tile of one pair is "full" when the mask lets it through, else
# "empty" (skipped), in the fill of its kind's swatch; the masks written out here,
# apart from the core's. Its legend: the three kinds of tile, no colour bar.
T29 = 5
ids = [3 * t // T29 for t in range(T29)]
want29 = {
    "causal": lambda q, k: k <= q,
    "window 2": lambda q, k: q - 2 < k <= q,
    "sinks 1+2": lambda q, k: k <= q and (k < 1 or q - 2 < k),
    "prefix 2": lambda q, k: k < 2 or k <= q,
    "documents": lambda q, k: k <= q and ids[k] == ids[q],
    "window|prefix": lambda q, k: q - 2 < k <= q or k < 2 or k <= q,
}
c = cells(svg("29_mask_gallery", "mask_gallery"))
if {name for name, _, _ in c} != set(want29) or len(c) != len(want29) * T29 * T29:
    failures.append(f"lesson 29: grids {sorted({n for n, _, _ in c})}, {len(c)} cells")
for (name, q, k), title in c.items():
    expected = "full" if want29.get(name, lambda q, k: False)(q, k) else "empty"
    if value(title) != expected:
        failures.append(f"lesson 29 {name} tile ({q}, {k}) says {title!r}, not {expected}")
root = ET.parse(svg("29_mask_gallery", "mask_gallery")).getroot()
swatch = {r.get("data-kind"): r.get("fill") for r in root.iter(NS + "rect")
          if r.get("class") == "legend"}
legend = [t.text for t in root.iter(NS + "text") if t.get("class") == "legend"]
if (list(swatch) != ["empty", "partial", "full"] or len(set(swatch.values())) != 3
        or [line.split(" (")[0] for line in legend] != list(swatch)
        or any(r.get("class") == "bar" for r in root.iter(NS + "rect"))):
    failures.append(f"lesson 29: legend {legend!r}, swatches {swatch}, not the three "
                    "kinds of tile without a colour bar")
for r in root.iter(NS + "rect"):
    if r.get("data-row") is not None:
        kind = value(r.find(NS + "title").text)
        if r.get("fill") != swatch.get(kind):
            failures.append(f"lesson 29 tile {r.find(NS + 'title').text!r}: fill "
                            f"{r.get('fill')}, not its legend's {swatch.get(kind)}")
            break

# Lesson 32's bars: one per row of the cache table its --tiny run printed, in order,
# each bar's label that row's cache and its value the floats by the formula, written
# after it with the formula; lengths on one linear scale from 0 (width / value the same
# for every bar, within 1e-4: the widths are written to 6 digits), the shortest still 2
# pixels long.
with open(f"{runs}/32_latent_attention.tiny.txt", encoding="utf-8") as f:
    table = re.findall(r"^(.{10}) (.{10}) +(\d+) +(\d+) +[\d.]+ +[\d.]+$", f.read(), re.M)
root = ET.parse(svg("32_latent_attention", "mla_cache")).getroot()
bars = [r for r in root.iter(NS + "rect") if r.get("class") == "hbar"]
written32 = [t.text for t in root.iter(NS + "text") if t.get("class") == "bar-value"]
if len(table) != 4 or len(bars) != len(table) or len(written32) != len(table):
    failures.append(f"lesson 32: {len(bars)} bars and {len(written32)} values written "
                    f"for the {len(table)} rows of its table (4 expected)")
scale = []
for (name, formula, by_formula, _), bar, text in zip(table, bars, written32):
    name, formula, v = name.strip(), formula.strip(), int(by_formula)
    got = (bar.get("data-label"), float(bar.get("data-value")), bar.find(NS + "title").text)
    if got != (name, v, f"{name}: {v}") or text != f"{v}  = {formula}":
        failures.append(f"lesson 32 bar {got}, written {text!r}: the table's row is "
                        f"{name} {formula} {v}")
    scale.append(float(bar.get("width")) / v)
widths = [float(bar.get("width")) for bar in bars]
if scale and (max(scale) - min(scale) > 1e-4 * max(scale) or min(widths) < 2):
    failures.append(f"lesson 32: bars {widths} px wide, {scale} px a float: not one scale, "
                    "or one too thin to see")

# The stages' pictures: every block cell, its number, its head (and its step).
HEAD_COLOURS = ["#0072b2", "#e69f00", "#009e73", "#cc79a7", "#56b4e9", "#d55e00", "#f0e442",
                "#555555"]  # svg.cpp's head_colour()


def hue(hex_colour):
    r, g, b = (int(hex_colour[k:k + 2], 16) / 255 for k in (1, 3, 5))
    return colorsys.rgb_to_hsv(r, g, b)[:2]  # hue, saturation


def block_cells(path):
    """{grid name: {(row, col): (number, head, step or None)}} of a blocks picture;
    every cell of a head drawn in a tint of that head's colour (its hue)."""
    out = {}
    for g in ET.parse(path).getroot().iter(NS + "g"):
        for r in g.iter(NS + "rect"):
            if r.get("data-row") is not None:
                h = int(r.get("data-head"))
                if h >= 0:
                    (want, sat), (got, got_sat) = hue(HEAD_COLOURS[h % 8]), hue(r.get("fill"))
                    off = abs(want - got) > 0.03 and got_sat > 0.02 if sat > 0 else got_sat > 0.02
                    if off:
                        failures.append(f"{os.path.basename(path)} {g.get('data-name')} cell "
                                        f"({r.get('data-row')}, {r.get('data-col')}): fill "
                                        f"{r.get('fill')} is not a tint of head {h}'s colour")
                step = r.get("data-step")
                out.setdefault(g.get("data-name"), {})[int(r.get("data-row")),
                                                       int(r.get("data-col"))] = (
                    float(value(r.find(NS + "title").text)), int(r.get("data-head")),
                    None if step is None else int(step))
    return out


def expect_block(what, grid, want, head):
    """Every cell of grid holds want[row, col], with head(row, col) as its head."""
    if grid is None or len(grid) != want.size:
        failures.append(f"{what}: {0 if grid is None else len(grid)} cells, not {want.size}")
        return
    for (i, j), (v, h, _) in grid.items():
        if abs(v - want[i, j]) > 5e-5:
            failures.append(f"{what} cell ({i}, {j}) holds {v}, the dump {want[i, j]:.6f}")
        elif h != head(i, j):
            failures.append(f"{what} cell ({i}, {j}) in head {h}'s colour, not {head(i, j)}")


Q, q = dump("02_split_heads", "Q")[0], dump("02_split_heads", "q.2")[0]  # [T, E], [H, T, D]
H, T, D = q.shape
b = block_cells(svg("02_split_heads", "split_heads"))
expect_block("lesson 02 Q", b.get("Q[0]  [T, E]"), Q, lambda i, e: e // D)
for h in range(H):
    expect_block(f"lesson 02 q[0, {h}]", b.get(f"q[0, {h}]"), q[h], lambda i, d: h)

x, merged = dump("06_attend_merge", "x")[0], dump("06_attend_merge", "x.3")[0]
b = block_cells(svg("06_attend_merge", "merge_heads"))
for h in range(H):
    expect_block(f"lesson 06 x[0, {h}]", b.get(f"x[0, {h}]"), x[h], lambda i, d: h)
expect_block("lesson 06 merged x", b.get("x[0]  [T, E]"), merged, lambda i, e: e // D)

b = block_cells(svg("07_output_layer", "output_layer"))
expect_block("lesson 07 x", b.get("x[0]  [T, E]"), dump("07_output_layer", "x")[0],
             lambda i, e: e // D)
expect_block("lesson 07 W_o^T", b.get("W_o^T  [E, E]"),
             dump("07_output_layer", "fc_out.weight").T, lambda k, j: k // D)
expect_block("lesson 07 output", b.get("output[0]  [T, E]"),
             dump("07_output_layer", "output")[0], lambda i, j: -1)

x10 = dump("10_merge_without_permute", "x")[0]  # [H, T, D]
b = block_cells(svg("10_merge_without_permute", "merge"))
for h in range(H):
    expect_block(f"lesson 10 x[0, {h}]", b.get(f"x[0, {h}]"), x10[h], lambda i, d: h)
for name, right in (("right", True), ("wrong", False)):
    grid = b.get(f"{name}[0]  [T, E]", {})
    want = dump("10_merge_without_permute", name)[0]
    if len(grid) != want.size:
        failures.append(f"lesson 10 {name}: {len(grid)} cells, not {want.size}")
    glued = False
    for (t, e), (v, h, step) in grid.items():
        if abs(v - want[t, e]) > 5e-5:
            failures.append(f"lesson 10 {name} cell ({t}, {e}) holds {v}, the dump {want[t, e]}")
        elif step is None or abs(v - x10[h, step, e % D]) > 5e-5:
            failures.append(f"lesson 10 {name} cell ({t}, {e}) says head {h} step {step}; "
                            f"its number {v} is not there")
        glued = glued or step != t
        if right and (step != t or h != e // D):
            failures.append(f"lesson 10 right cell ({t}, {e}) from head {h} step {step}")
    if not right and not glued:
        failures.append("lesson 10: the wrong merge's cells all keep their time step")

for name, mask in (("causal_mask", dump("04_mask", "mask")),
                   ("causal_padding_mask", dump("04_mask", "both")[0, 0])):
    root = ET.parse(svg("04_mask", name)).getroot()
    for r in root.iter(NS + "rect"):
        if r.get("data-row") is None:
            continue
        i, j = int(r.get("data-row")), int(r.get("data-col"))
        v = float(value(r.find(NS + "title").text))
        if v != float(mask[i, j]) or (r.get("fill") == "url(#hatch)") != (not mask[i, j]):
            failures.append(f"lesson 04 {name} cell ({i}, {j}): {v}, fill {r.get('fill')}, "
                            f"the mask {mask[i, j]}")
    legend = " ".join(t.text for t in root.iter(NS + "text") if t.get("class") == "legend")
    bars = [r for r in root.iter(NS + "rect") if r.get("class") == "bar"]
    if "allowed" not in legend or "masked" not in legend or bars:
        failures.append(f"lesson 04 {name}: legend {legend!r} and {len(bars)} colour-bar steps")


def round_run(labels):
    """Whether labels are evenly spaced round numbers, a step of 1, 2 or 5 x 10^k."""
    v = [float(t) for t in labels]
    if len(v) < 2:
        return len(v) == 1
    step = v[1] - v[0]
    mantissa = step / 10 ** np.floor(np.log10(step)) if step > 0 else 0
    return (any(abs(mantissa - m) < 1e-6 for m in (1, 2, 5, 10))
            and all(abs((b - a) - step) < 1e-6 * step for a, b in zip(v, v[1:]))
            and all(abs(x / step - round(x / step)) < 1e-6 for x in v))


for path in sorted(p for pictures in tiny.values() for p in pictures.values()):
    try:
        root = ET.parse(path).getroot()
    except ET.ParseError:
        continue  # said above
    for cls in ("bar-tick", "y-tick", "x-tick"):
        labels = [t.text for t in root.iter(NS + "text") if t.get("class") == cls]
        if labels and not round_run(labels):
            failures.append(f"{os.path.basename(path)}: {cls} labels {labels} are not round")

# At its default sizes every lesson that draws writes small files; the articles'
# stages say what part they show; 05's heads fit a page.
if len(drawing) < 10:
    failures.append(f"only {drawing} of {len(lessons)} lessons offer pictures for --svg")
STAGES = ("02_split_heads", "04_mask", "05_softmax", "06_attend_merge", "07_output_layer",
          "10_merge_without_permute")
skipped = []  # the poem lessons without fortunes-zh: "skipped: needs ...", exit 77
big = {}
for lesson in drawing:
    pictures = written(lesson, "default")
    if pictures is None:
        skipped.append(lesson)
        continue
    big[lesson] = pictures
    if not pictures:
        failures.append(f"{lesson} draws but wrote no picture at its default sizes "
                        "(is it in tests/CMakeLists.txt's DRAWING_LESSONS?)")
    for path in sorted(pictures.values()):
        root = ET.parse(path).getroot()
        shown = [t.text for t in root.iter(NS + "text") if t.get("class") == "shown"]
        size = os.path.getsize(path)
        if size > 300_000 or (lesson in STAGES and not shown):
            failures.append(f"{path}: {size} bytes, saying what it shows: {shown}")
sizes = [os.path.getsize(p) for pictures in big.values() for p in pictures.values()]
print(f"at the default sizes: {len(sizes)} pictures from {len(drawing)} lessons: "
      f"{' '.join(d[:2] for d in drawing)}; the largest {max(sizes + [0])} bytes")
if skipped:
    print(f"skipped at the default sizes (their data missing): {' '.join(skipped)}")
heads = big.get("05_softmax", {}).get("attention_weights_heads")
width = int(ET.parse(heads).getroot().get("width")) if heads else 0
if heads is None:
    failures.append("lesson 05 wrote no attention_weights_heads.svg at the default sizes")
elif width > 1000:
    failures.append(f"lesson 05's every-head figure is {width} px wide at the default sizes")

os.makedirs(work, exist_ok=True)
poem = ["<poem>", "白", "日", "依", "山", "盡", "，", "黃", "河", "入", "海", "流", "。", "↵"]
subprocess.run([f"{build}/tests/svg_cjk_check", f"{work}/cjk_labels.svg"], check=True,
               capture_output=True)
try:
    cjk = ET.parse(f"{work}/cjk_labels.svg").getroot()
except ET.ParseError as e:
    failures.append(f"svg_cjk_check: not well-formed XML: {e}")
    cjk = ET.Element("svg")
for g in cjk.iter(NS + "g"):
    ticks = [t.text for t in g.iter(NS + "text") if t.get("class") == "tick"]
    if ticks != poem + poem:
        failures.append(f"svg_cjk_check {g.get('data-name')}: tick labels {ticks}, not the poem")

for f in failures[:10]:
    print("FAILED", f)
print(f"{sum(len(p) for p in tiny.values())} pictures at --tiny, {len(failures)} failures")
sys.exit(1 if failures else 0)
