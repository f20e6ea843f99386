#!/usr/bin/env python3
"""The explorer's poem page (docs/explorer/poem.html) in a real browser
(Debian's chromium, chromium-driver and python3-selenium).

    /usr/bin/python3 tests/browser/poem_check.py BUILD_DIR WORK_DIR [--model DIR] [--screenshot PNG]

Packs a model with docs/pack_model.py beside the page in WORK_DIR/site: DIR
(data/tang/ or any folder in its format) or, by default, the random model
tests/browser/make_tiny_tang.py writes (V 50, T_max 16, E 16, H 2, L 2).
Opens the page from file:// in headless Chromium in a 1024 x 768 window and
checks: no console error; on 5 strings (one with a character outside the
vocabulary, one holding <script>, one of exactly T_max - 1 characters) the
page's token ids are tang_spec.md's, its logits [T, V] and every layer's
weights [H, T, T] equal mha_forward --model ... --layer-weights on the same
tokens within 1e-4 of the largest |value|, its scores give its weights
through a softmax, its head scores (previous, partner, last_mark, start) are
this script's own reading of tang_spec.md within 1e-4, and hovering a cell
shows its weight; typed HTML is shown as text, never run; T_max characters
say "longer than" and draw nothing; the page fits the window; its erf is
math.erf within 1e-11; a cut, an altered and a missing model, and a model.js
cut mid-way, are each refused with a visible line; docs/pack_model.py refuses a
missing or spoilt file with one line, exit 2. Prints the largest differences measured.
Exit 0 when all hold, 1 when one does not, 77 (skipped) without selenium,
chromium or numpy.
"""
import json
import math
import os
import pathlib
import re
import shutil
import subprocess
import sys

try:
    import numpy as np
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait
except ImportError as e:
    print(f"skipped: needs python3-selenium and python3-numpy ({e})")
    sys.exit(77)
DRIVER = "/usr/bin/chromedriver"
if not os.path.exists(DRIVER) or not shutil.which("chromium"):
    print("skipped: needs Debian's chromium and chromium-driver")
    sys.exit(77)

LIMIT = 1e-4
argv = sys.argv[1:]
flags = {}
for flag in ("--model", "--screenshot"):
    if flag in argv:
        k = argv.index(flag)
        flags[flag] = argv[k + 1]
        del argv[k:k + 2]
build, work = pathlib.Path(argv[0]), pathlib.Path(argv[1])
root = pathlib.Path(__file__).resolve().parent.parent.parent
shutil.rmtree(work, ignore_errors=True)
site = work / "site"
site.mkdir(parents=True)
for f in (root / "docs" / "explorer").iterdir():
    if f.suffix in (".html", ".css", ".js"):
        shutil.copy(f, site)
model_dir = pathlib.Path(flags["--model"]) if "--model" in flags else work / "tiny"
if "--model" not in flags:
    subprocess.run([sys.executable, str(root / "tests" / "browser" / "make_tiny_tang.py"),
                    str(model_dir)], check=True, capture_output=True)
subprocess.run([sys.executable, str(root / "docs" / "pack_model.py"), str(model_dir),
                str(site / "model.js"), "--name", "the test's model"], check=True,
               capture_output=True)
vocab = json.loads((model_dir / "vocab.json").read_text(encoding="utf-8"))
config = json.loads((model_dir / "config.json").read_text(encoding="utf-8"))
T_max, H, L = config["t_max"], config["num_heads"], config["num_layers"]
index = {t: k for k, t in enumerate(vocab)}
chars = [t for t in vocab if len(t) == 1 and t != "\n"]
full = "".join(chars[(k * 7) % len(chars)] for k in range(T_max - 1))  # T_max - 1 characters
STRINGS = ["床前明月光，疑是地上霜。", "明月\u9f98光", "<script>", full,
           "春眠不觉晓，\n处处闻啼鸟。"]
assert len(full) == T_max - 1

opts = webdriver.ChromeOptions()
for a in ("--headless=new", "--no-sandbox", "--disable-gpu", "--window-size=1024,768"):
    opts.add_argument(a)
opts.set_capability("goog:loggingPrefs", {"browser": "ALL"})
browser = webdriver.Chrome(service=Service(DRIVER), options=opts)
failures = []


def check(what, ok):
    print(("ok      " if ok else "FAILED  ") + what)
    if not ok:
        failures.append(what)


def severe():
    return [e for e in browser.get_log("browser") if e["level"] == "SEVERE"]


def type_text(text):
    box = browser.find_element(By.ID, "text")
    box.clear()
    box.send_keys(text)  # a real keyboard's input events
    value = box.get_attribute("value")
    WebDriverWait(browser, 30).until(
        lambda b: b.execute_script("return window.poemText") == value)
    return browser.execute_script("return window.poemResult")


def tang_ids(text):
    return [index["<poem>"]] + [index.get(c, 0) for c in text if c != "\r"]


def tang_scores(s, w):
    """tang_spec.md's four scores of one head's weights w [T, T] over tokens s."""
    marks = set("，。？！；：、,.?!;:")
    T = len(s)
    segments, start = [], None  # (start, length) of each maximal run of plain tokens
    for q in range(T + 1):
        plain = q < T and s[q] not in marks and s[q] not in ("\n", "<poem>")
        if plain and start is None:
            start = q
        elif not plain and start is not None:
            segments.append((start, q - start))
            start = None
    targets = {"previous": {}, "partner": {}, "last_mark": {}, "start": {}}
    for q in range(1, T):
        targets["previous"][q] = q - 1
        targets["start"][q] = 0
        marked = [k for k in range(q) if s[k] in marks]
        if marked:
            targets["last_mark"][q] = marked[-1]
    for n, (a, length) in enumerate(segments[1:], 1):
        pa, plen = segments[n - 1]
        for j in range(length):
            if plen > j:
                targets["partner"][a + j] = pa + j
    return {k: (float(np.mean([w[q, t] for q, t in v.items()])) if v else float("nan"))
            for k, v in targets.items()}


def score_diff(a, b):
    """|a - b| for a score a (NaN: no target) and the page's b (None: NaN)."""
    b = float("nan") if b is None else b
    if math.isnan(a) or math.isnan(b):
        return 0.0 if math.isnan(a) and math.isnan(b) else float("inf")
    return abs(a - b)


# the packer's bad input: one line naming the file, exit 2
for what, spoil, says in [
        ("a file missing", lambda d: (d / "head.bias.npy").unlink(), "head.bias.npy: missing"),
        ("a file of other bytes",
         lambda d: (d / "norm.bias.npy").write_bytes(b"\x93NUMPY\x01\x00\x08\x00garbage!"),
         "norm.bias.npy: its header is not a .npy header"),
        ("vocab.json too short", lambda d: (d / "vocab.json").write_text('["<unk>"]'),
         "vocab.json: not a list of")]:
    spoilt = work / "spoilt"
    shutil.rmtree(spoilt, ignore_errors=True)
    shutil.copytree(model_dir, spoilt)
    spoil(spoilt)
    p = subprocess.run([sys.executable, str(root / "docs" / "pack_model.py"), str(spoilt),
                        str(work / "spoilt.js")], capture_output=True, text=True)
    check(f"pack_model.py with {what}: exit {p.returncode}, {p.stderr.strip()!r}",
          p.returncode == 2 and says in p.stderr and len(p.stderr.strip().splitlines()) == 1)

worst_logits = worst_weights = worst_scores = 0.0
try:
    page = (site / "poem.html").as_uri()
    browser.get(page)
    errors = severe()
    check(f"loads offline with no console errors ({len(errors)}: {errors[:2]})", not errors)
    erf_err = browser.execute_script(
        "return arguments[0].map((x, k) => Math.abs(erf(x) - arguments[1][k]))",
        [x / 20 for x in range(-140, 141)], [math.erf(x / 20) for x in range(-140, 141)])
    check(f"its erf is math.erf within 1e-11 on [-7, 7] (largest {max(erf_err):.1e})",
          max(erf_err) <= 1e-11)
    for n, text in enumerate(STRINGS):
        r = type_text(text)
        ids = tang_ids(text)
        if not r or r["ids"] != ids:
            check(f"{text!r}: the page's ids {r and r['ids']} are tang_spec.md's {ids}", False)
            continue
        T = len(ids)
        np.save(work / "ids.npy", np.array([ids], dtype=np.int64))
        out = work / f"cpp{n}"
        subprocess.run([str(build / "tools" / "mha_forward"), "--model", str(model_dir),
                        "--num-heads", str(H), "--tokens", str(work / "ids.npy"),
                        "--out", str(out), "--layer-weights"], check=True, capture_output=True)
        cpp = np.load(out / "logits.npy")[0]
        page_logits = np.array(r["logits"]).reshape(cpp.shape)
        e_logits = np.abs(page_logits - cpp).max() / np.abs(cpp).max()
        e_weights = e_soft = e_scores = 0.0
        for layer in range(L):
            w = np.load(out / f"layer{layer}.weights.npy")[0]
            mine = np.array(r["weights"][layer]).reshape(w.shape)
            e_weights = max(e_weights, np.abs(mine - w).max() / np.abs(w).max())
            sc = np.array([np.nan if v is None else v for v in r["scores"][layer]]).reshape(w.shape)
            soft = np.exp(sc - np.nanmax(sc, axis=2, keepdims=True))
            soft = np.nan_to_num(soft) / np.nansum(soft, axis=2, keepdims=True)
            e_soft = max(e_soft, np.abs(soft - mine).max())
            tokens = [vocab[i] for i in ids]
            for h in range(H):
                want = tang_scores(tokens, w[h])
                got = r["headScores"][layer * H + h]
                for k, v in want.items():
                    e_scores = max(e_scores, score_diff(v, got[k]))
        worst_logits, worst_weights = max(worst_logits, e_logits), max(worst_weights, e_weights)
        worst_scores = max(worst_scores, e_scores)
        check(f"{text!r} ({T} tokens): logits {e_logits:.1e}, {L} layers' weights "
              f"{e_weights:.1e} from mha_forward; softmax(scores) {e_soft:.1e}; "
              f"head scores {e_scores:.1e}",
              e_logits <= LIMIT and e_weights <= LIMIT and e_soft <= LIMIT and e_scores <= LIMIT)
        if n == 1:  # the unknown character
            status = browser.find_element(By.ID, "status").text
            unknown = browser.find_elements(By.CSS_SELECTOR, ".ticks.x .tick.unknown")
            check(f"the unknown character is named ({status!r}) and its labels marked",
                  "\u9f98" in status and "<unk>" in status and len(unknown) == L * H)
        if n == 2:  # <script>, typed; one grid enlarged, so that every label is drawn
            browser.find_element(By.CSS_SELECTOR, "canvas.heat").click()
            labels = "".join(t.text for t in
                             browser.find_elements(By.CSS_SELECTOR, ".ticks.x .tick"))
            check(f"'<script>' is drawn as text ({labels!r}), no script added",
                  labels.replace("\u25b8", "") == "<script>" and
                  len(browser.find_elements(By.TAG_NAME, "script")) == 3)
            browser.find_element(By.CSS_SELECTOR, "canvas.heat").click()
        if n == 3:  # T_max tokens: the longest that runs
            last = (T - 1, T - 2)
            cell = browser.find_element(By.CSS_SELECTOR, f'canvas[data-layer="{L - 1}"]'
                                        f'[data-head="{H - 1}"]')
            px = cell.size["width"] / T  # a cell's pixels
            ActionChains(browser).move_to_element_with_offset(  # from the canvas's centre
                cell, int((last[1] + 0.5) * px - cell.size["width"] / 2),
                int((last[0] + 0.5) * px - cell.size["height"] / 2)).perform()
            info = browser.find_element(By.ID, "info").text
            w = np.load(out / f"layer{L - 1}.weights.npy")[0, H - 1]
            check(f"hover shows query, key, weight and score ({info!r})",
                  f"weight {w[last]:.4f}" in info and "score " in info and
                  f"query {last[0]} {text[last[0] - 1]}" in info)
            size = browser.execute_script(
                "const d = document.documentElement; return [d.scrollWidth, d.scrollHeight, "
                "innerWidth, innerHeight]")
            check(f"{T} tokens, {L} x {H} grids fit the window: page {size[0]} x {size[1]}, "
                  f"window {size[2]} x {size[3]}", size[0] <= size[2] and size[1] <= size[3])
            browser.save_screenshot(str(work / "poem.png"))
            ticks = browser.find_elements(By.CSS_SELECTOR, ".panel .ticks.y .tick")
            check(f"every grid has tick labels ({len(ticks)} row ticks, one a token)",
                  len(ticks) == L * H * T)
            top5 = browser.find_elements(By.CSS_SELECTOR, "#top5 .bar-row")
            probs = [t["p"] for t in r["top5"]]
            p = np.exp(cpp[-1] - cpp[-1].max())
            p /= p.sum()
            check(f"the top 5 next tokens are the C++ logits' ({[round(x, 3) for x in probs]})",
                  len(top5) == 5 and abs(probs[0] - np.sort(p)[-1]) <= LIMIT and
                  probs == sorted(probs, reverse=True))
            # a click enlarges one grid with its tokens as labels; a second click goes back
            cell.click()
            panels = browser.find_elements(By.CSS_SELECTOR, ".panel")
            browser.find_element(By.CSS_SELECTOR, "canvas.heat").click()
            check(f"a click shows that one grid ({len(panels)} panel), a second all "
                  f"{len(browser.find_elements(By.CSS_SELECTOR, '.panel'))}",
                  len(panels) == 1 and
                  len(browser.find_elements(By.CSS_SELECTOR, ".panel")) == L * H)
    check(f"largest differences: logits {worst_logits:.1e}, weights {worst_weights:.1e}, "
          f"head scores {worst_scores:.1e} (limit {LIMIT:g})",
          max(worst_logits, worst_weights, worst_scores) <= LIMIT)
    too_long = full + chars[0]
    r = type_text(too_long)
    status = browser.find_element(By.ID, "status")
    check(f"{T_max} characters: '{status.text}', nothing drawn",
          r is None and f"longer than the model's T_max = {T_max}" in status.text and
          status.is_displayed() and not browser.find_elements(By.CSS_SELECTOR, "canvas.heat"))
    r = type_text('<img src=x onerror="document.title=1">')
    check("typed HTML is never run (no img element, title unchanged)",
          not browser.find_elements(By.TAG_NAME, "img") and browser.title != "1")
    errors = severe()
    check(f"no console errors after all that ({len(errors)}: {errors[:2]})", not errors)

    # model.js from outside: cut, altered, or no model at all: one visible line, no blank page
    good = (site / "model.js").read_text(encoding="utf-8")
    blob = re.search(r'"blob": "([^"]*)"', good)
    cases = [  # (what, model.js, the line the page must show)
        ("its blob cut by 400 characters",
         good[:blob.start(1)] + blob.group(1)[:-400] + good[blob.end(1):], "refused"),
        ("one character of its blob changed",
         good[:blob.start(1)] + blob.group(1)[:100] +
         ("A" if blob.group(1)[100] != "A" else "B") + good[blob.start(1) + 101:], "refused"),
        ("no model packaged", "window.MHA_MODEL = null;\n", "No model was packaged"),
        ("the file cut mid-way", good[:len(good) // 2],
         "model.js is missing next to this page, or cut short"),
    ]
    for k, (what, text, says) in enumerate(cases):
        bad = work / f"bad{k}"
        shutil.copytree(site, bad)
        (bad / "model.js").write_text(text, encoding="utf-8")
        browser.get((bad / "poem.html").as_uri())
        status = browser.find_element(By.ID, "status")
        errors = severe()
        if what == "the file cut mid-way":  # the browser's SyntaxError in model.js, only that
            errors = [e for e in errors if "model.js" not in e["message"]]
        check(f"model.js with {what}: '{status.text}', no console error from the page",
              says in status.text and status.is_displayed() and not errors and
              not browser.find_elements(By.CSS_SELECTOR, "canvas.heat"))
    if "--screenshot" in flags:
        browser.get(page + "?text=" + "床前明月光，疑是地上霜。")
        browser.save_screenshot(flags["--screenshot"])
        print("wrote", flags["--screenshot"])
finally:
    browser.quit()
sys.exit(1 if failures else 0)
