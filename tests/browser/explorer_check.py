#!/usr/bin/env python3
"""The attention explorer in a real browser (Debian's chromium, chromium-driver
and python3-selenium).

    /usr/bin/python3 tests/browser/explorer_check.py BUILD_DIR WORK_DIR [--screenshot PNG]
                                                     [--runs RUNS]

Runs lessons 05, 16, 19 and 21 at --tiny with --dump (with --runs, reads what the
suite's --tiny runs of them dumped instead, RUNS/dump_tiny: tests/CMakeLists.txt),
puts their explorer.js data beside docs/explorer/ in WORK_DIR/site, opens the page in headless
Chromium and checks: no console errors; hovering head 0's cell (query 3,
key 1) shows weights.npy[0, 0, 3, 1] to 4 digits; a masked cell says so;
switching to head 1 shows head 1's cells only, whose values differ and
match weights.npy[0, 1]; clicking a query draws its row as bars; lesson 16's
data has a position slider and lesson 19's a frame slider whose last frame
matches the dump; lesson 21's data is a grid of layers x heads whose last frame's
hover shows layer1.weights.end.npy[0, h, i, j] with the tokens; bad data files (a frame of the wrong length, masks not 0/1,
a name holding HTML, not an object, no data.js) are left out with a line
saying why, names shown as text; in a 1024 x 768 window every dataset fits
without scrolling, each grid with tick labels and the page a colour bar.
With --screenshot it saves a picture of the page (the docs build's).
Exit 0 when all hold, 1 when one does not, 77 (skipped)
without selenium, chromium or numpy.
"""
import json
import os
import pathlib
import shutil
import subprocess
import sys

try:
    import numpy as np
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select
except ImportError as e:
    print(f"skipped: needs python3-selenium and python3-numpy ({e})")
    sys.exit(77)
DRIVER = "/usr/bin/chromedriver"
if not os.path.exists(DRIVER) or not shutil.which("chromium"):
    print("skipped: needs Debian's chromium and chromium-driver")
    sys.exit(77)

args = [a for a in sys.argv[1:] if not a.startswith("--")]
shot = sys.argv[sys.argv.index("--screenshot") + 1] if "--screenshot" in sys.argv else None
if shot:
    args.remove(shot)
runs = sys.argv[sys.argv.index("--runs") + 1] if "--runs" in sys.argv else None
if runs:
    args.remove(runs)
    runs = pathlib.Path(runs)
build, work = pathlib.Path(args[0]), pathlib.Path(args[1])
dump = runs / "dump_tiny" if runs else work / "dump"
source = pathlib.Path(__file__).resolve().parent.parent.parent / "docs" / "explorer"
site = work / "site"
shutil.rmtree(work, ignore_errors=True)
site.mkdir(parents=True)
for f in source.iterdir():
    if f.suffix in (".html", ".css", ".js"):
        shutil.copy(f, site)
data = []
for lesson in ("05_softmax", "16_kv_cache", "19_heads_learn", "21_induction_heads"):
    if not runs:
        subprocess.run([str(build / "lessons" / lesson), "--tiny", "--dump", str(dump)],
                       check=True, capture_output=True)
    data.append((dump / lesson / "explorer.js").read_text())
(site / "data.js").write_text("".join(data))

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


def fits(what):
    """The page, scrolled nowhere, inside the 1024 x 768 window; the grids have tick labels."""
    size = browser.execute_script("const d = document.documentElement; "
                                  "return [d.scrollWidth, d.scrollHeight, innerWidth, innerHeight]")
    panels = len(browser.find_elements(By.CSS_SELECTOR, ".panel"))
    ticks = len(browser.find_elements(By.CSS_SELECTOR, ".panel .ticks.x"))
    bar = browser.find_elements(By.CSS_SELECTOR, "#scale .bar-numbers span")
    check(f"{what}: page {size[0]} x {size[1]} in a window of {size[2]} x {size[3]}, "
          f"{ticks} of {panels} grids with tick labels, a colour bar "
          f"{[b.text for b in bar]}", size[0] <= size[2] and size[1] <= size[3] and
          panels == ticks > 0 and len(bar) == 5)


def hover(h, i, j):
    cell = browser.find_element(By.CSS_SELECTOR,
                                f'.cell[data-head="{h}"][data-row="{i}"][data-col="{j}"]')
    ActionChains(browser).move_to_element(cell).perform()
    return browser.find_element(By.ID, "info").text


try:
    browser.get((site / "explorer.html").as_uri() + "?data=05_softmax&size=tiny")
    w = np.load(dump / "05_softmax" / "weights.npy")
    errors = [e for e in browser.get_log("browser") if e["level"] == "SEVERE"]
    check(f"loads with no console errors ({len(errors)}: {errors[:2]})", not errors)
    cells = browser.find_elements(By.CSS_SELECTOR, ".cell")
    H, T = w.shape[1], w.shape[2]  # --tiny's, lesson 16's too
    check(f"all heads: {len(cells)} cells, {H} heads of {T} x {T}", len(cells) == w[0].size)
    text = hover(0, 3, 1)
    check(f"hover head 0 (3, 1): '{text}' shows {w[0, 0, 3, 1]:.4f}",
          text == f"head 0, query 3, key 1: weight {w[0, 0, 3, 1]:.4f}")
    text = hover(0, 0, 2)
    check(f"hover a masked cell: '{text}'", text.endswith("key 2: masked"))
    Select(browser.find_element(By.ID, "head")).select_by_value("1")
    heads = {c.get_attribute("data-head") for c in browser.find_elements(By.CSS_SELECTOR, ".cell")}
    check(f"head 1 picked: only its cells are shown ({sorted(heads)})", heads == {"1"})
    text = hover(1, 3, 1)
    check(f"hover head 1 (3, 1): '{text}' shows {w[0, 1, 3, 1]:.4f}, not head 0's",
          text == f"head 1, query 3, key 1: weight {w[0, 1, 3, 1]:.4f}" and
          f"{w[0, 1, 3, 1]:.4f}" != f"{w[0, 0, 3, 1]:.4f}")
    browser.find_element(By.CSS_SELECTOR, '.cell[data-head="1"][data-row="2"][data-col="0"]').click()
    bars = browser.find_elements(By.CSS_SELECTOR, "#row .bar-row")
    check(f"a click on query 2 draws its {len(bars)} keys as bars",
          len(bars) == T and bars[0].text.endswith(f"{w[0, 1, 2, 0]:.4f}"))
    fits("lesson 05, head 1, a row drawn")

    sets = Select(browser.find_element(By.ID, "dataset"))
    sets.select_by_index(1)  # lesson 16: decoding
    check("lesson 16's data shows the position slider",
          browser.find_element(By.ID, "position-box").is_displayed())
    future = browser.find_elements(By.CSS_SELECTOR, ".cell.future")
    check(f"at position 0 the later queries are dimmed ({len(future)} cells)",
          len(future) == H * (T - 1) * T)
    sets.select_by_index(2)  # lesson 19: training frames
    frame = browser.find_element(By.ID, "frame")
    check("lesson 19's data shows the frame slider", frame.is_displayed())
    browser.execute_script("arguments[0].value = arguments[0].max; "  # the last frame
                           "arguments[0].dispatchEvent(new Event('input'))", frame)
    end = np.load(dump / "19_heads_learn" / "weights.end.npy").mean(axis=0)
    text = hover(0, 0, 3)
    check(f"the last frame, head 0 (0, 3): '{text}' shows {end[0, 0, 3]:.4f}",
          text == f"head 0, query 0, key 3: weight {end[0, 0, 3]:.4f}")
    fits("lesson 19, the last frame")
    sets.select_by_index(3)  # lesson 21: every layer x head of a two-layer model
    model = json.loads(data[3].split("push(", 1)[1].rsplit(");", 1)[0])
    layers, heads, tok = model["layers"], model["heads"], model["tokens"]
    titles = [e.text for e in browser.find_elements(By.CSS_SELECTOR, ".panel h3")]
    check(f"lesson 21's data: {len(titles)} panels, layers x heads = {layers} x {heads}, "
          f"one row a layer", len(titles) == layers * heads and titles[heads].startswith(
              "layer 1, head 0") and len(browser.find_elements(By.CSS_SELECTOR, ".layer-break"))
          == layers - 1)
    frame = browser.find_element(By.ID, "frame")
    browser.execute_script("arguments[0].value = arguments[0].max; "
                           "arguments[0].dispatchEvent(new Event('input'))", frame)
    w21 = np.load(dump / "21_induction_heads" / "layer1.weights.end.npy")[0]
    i, j = len(tok) - 1, len(tok) // 2 + 1  # the last query, the key after r's last token
    cell = browser.find_element(By.CSS_SELECTOR,
                                f'.cell[data-layer="1"][data-head="1"][data-row="{i}"][data-col="{j}"]')
    ActionChains(browser).move_to_element(cell).perform()
    text = browser.find_element(By.ID, "info").text
    want = f"layer 1, head 1, query {i} ({tok[i]}), key {j} ({tok[j]}): weight {w21[1, i, j]:.4f}"
    check(f"the last frame, layer 1 head 1 ({i}, {j}): '{text}'", text == want)
    cell.click()
    check("a click draws layer 1's row, the keys named by their tokens",
          browser.find_element(By.ID, "row-title").text.startswith(f"layer 1, head 1, query {i}")
          and browser.find_elements(By.CSS_SELECTOR, "#row .key")[1].text == f"key 1 {tok[1]}")
    fits("lesson 21, 2 layers x 2 heads, a row drawn")
    tick = browser.find_elements(By.CSS_SELECTOR, ".panel .ticks.x .tick")
    check(f"lesson 21's grids are labelled with its tokens ({[t.text for t in tick[:4]]})",
          [t.text for t in tick[:len(tok)] if t.text] ==
          [t for k, t in enumerate(tok) if tick[k].text])
    for k in range(len(sets.options)):  # every dataset of the docs build fits too
        sets.select_by_index(k)
        fits(f"dataset {k}, all heads")
    errors = [e for e in browser.get_log("browser") if e["level"] == "SEVERE"]
    check(f"no console errors after all that ({len(errors)})", not errors)

    # The docs build's middle sizes fit too (lesson 21's takes half a minute: not here)
    middle = work / "middle"
    shutil.copytree(site, middle)
    joined = []
    for lesson in ("05_softmax", "16_kv_cache", "19_heads_learn"):
        flags = [] if lesson == "19_heads_learn" else \
            ["--batch", "2", "--time", "12", "--d-model", "32", "--heads", "4"]
        subprocess.run([str(build / "lessons" / lesson)] + flags +
                       ["--dump", str(work / "dump_middle")], check=True, capture_output=True)
        joined.append((work / "dump_middle" / lesson / "explorer.js").read_text())
    (middle / "data.js").write_text("".join(joined))
    browser.get((middle / "explorer.html").as_uri())
    sets = Select(browser.find_element(By.ID, "dataset"))
    for k in range(len(sets.options)):
        sets.select_by_index(k)
        fits(f"middle-sized dataset {k}, all heads")
    browser.find_elements(By.CSS_SELECTOR, ".cell")[-1].click()  # the last query's row
    fits("middle-sized dataset 2, its last row drawn")

    # Data files from outside: a dataset that does not hold together is left
    # out with a line saying why; names are shown as text, never as HTML.
    bad = work / "bad"
    shutil.copytree(site, bad)
    good = data[0].split("push(", 1)[1].rsplit(");", 1)[0]
    short = good.replace('"w":[', '"w":[0.5,', 1)
    html = good.replace('"title":"', '"title":"<img src=x onerror=document.title=1>', 1)
    badmask = good.replace('"masked":[', '"masked":[7,', 1)
    (bad / "data.js").write_text("window.MHA_DATA = [" + ",".join([good, short, html, badmask, "42"]) + "];")
    browser.get((bad / "explorer.html").as_uri())
    problems = browser.find_element(By.ID, "problems").text
    options = Select(browser.find_element(By.ID, "dataset")).options
    check(f"bad datasets left out, each with its reason ({problems!r})",
          f"data 1 (05_softmax) left out: frame 0 has {w[0].size + 1} weights, "
          f"not heads x rows x cols = {w[0].size}" in problems
          and f"data 3 (05_softmax) left out: masked is not null or {w[0].size} flags" in problems
          and "data 4 (?) left out: not an object" in problems and len(options) == 2)
    check("a name holding HTML is shown as text",
          not browser.find_elements(By.TAG_NAME, "img") and "<img" in options[1].text)
    errors = [e for e in browser.get_log("browser") if e["level"] == "SEVERE"]
    check(f"no console errors with bad data ({len(errors)})", not errors)
    (bad / "data.js").unlink()
    browser.get((bad / "explorer.html").as_uri())
    check("without data.js the page says so",
          "no data: data.js is missing" in browser.find_element(By.ID, "problems").text)
    if shot:
        browser.get((site / "explorer.html").as_uri() +
                    "?data=19_heads_learn&size=tiny&frame=last&query=0,1")
        browser.save_screenshot(shot)
        print("wrote", shot)
finally:
    browser.quit()
sys.exit(1 if failures else 0)
