#!/usr/bin/env python3
"""The lesson pages as a class sees them on a projector, in a real browser
(Debian's chromium, chromium-driver and python3-selenium).

    /usr/bin/python3 tests/browser/pages_check.py HTML_DIR [--screenshots DIR]
                               [--pages lesson01,lesson05]

HTML_DIR is the built site (build/docs/html). Every lesson page (lessonNN.html,
or those --pages names) is opened in headless Chromium at 1024 x 768 and at
1920 x 1080, after MathJax has set its formulas, and must hold:
  - no horizontal scrolling: neither the page nor the tree's content pane
    (#doc-content) is wider than the window;
  - the content column (div.contents) gets most of the window (at least 70%):
    the navigation tree is narrow, or folded away on a narrow screen;
  - no element in the column reaches past its edges, unless it sits in a box
    that scrolls inside itself (the captured output, the source): a failure
    names the page, the size, the element and both widths;
  - every picture (an SVG's <object>, an <img>) fits the column.
Without a browser it checks what it can: each navigation link says where it
leads (the previous lesson's title after "←", the next one's before "→"),
the captured output holds no "wrote name.svg" line of the build, and no
paragraph shows markdown's ** as text.
With --screenshots DIR it saves DIR/<page>.<width>x<height>.png, the window
at the top of the page (the docs build puts three on the front page).
Exit 0 when all hold, 1 when one does not, 2 for a bad HTML_DIR, 77 (skipped)
without selenium or chromium (the static checks have run and passed then).
"""
import html
import os
import pathlib
import re
import shutil
import sys

SIZES = [(1024, 768), (1920, 1080)]
MIN_SHARE = 0.70  # of the window's width, for the content column

args = sys.argv[1:]
shots = pages_arg = None
if "--screenshots" in args:
    i = args.index("--screenshots")
    shots = pathlib.Path(args[i + 1])
    del args[i:i + 2]
if "--pages" in args:
    i = args.index("--pages")
    pages_arg = args[i + 1].split(",")
    del args[i:i + 2]
if len(args) != 1:
    sys.exit("usage: pages_check.py HTML_DIR [--screenshots DIR] [--pages lesson01,...]")
site = pathlib.Path(args[0]).resolve()
if not (site / "index.html").exists():
    print(f"pages_check.py: no {site}/index.html: build the docs first (scripts/docs.sh)")
    sys.exit(2)
names = pages_arg or sorted(p.stem for p in site.glob("lesson[0-9][0-9].html"))
missing = [n for n in names if not (site / f"{n}.html").exists()]
if not names or missing:
    print(f"pages_check.py: no lesson page {', '.join(missing) or 'lessonNN.html'} in {site}",
          file=sys.stderr)
    sys.exit(2)
failures = []


def check(what, ok):
    if not ok:
        print("FAILED  " + what)
        failures.append(what)
    return ok


# -- Without a browser: the navigation's labels and the captured output. ----------
def text(fragment):
    return html.unescape(re.sub(r"<[^>]*>", "", fragment)).strip()


def title(name):
    page = (site / f"{name}.html").read_text(encoding="utf-8")
    m = re.search(r'<div class="title">(.*?)</div>', page, re.S)
    return text(m.group(1)) if m else name


def short(t):
    """The title as a label gives it: "Lesson 08: heads that ..." without "(pitfall)"."""
    return re.sub(r" \([^)]*\):", ":", t)


for name in names:
    page = (site / f"{name}.html").read_text(encoding="utf-8")
    navs = re.findall(r'<div class="lesson-nav">(.*?)</div>', page, re.S)
    check(f"{name}: a lesson navigation bar at the top and at the bottom", len(navs) >= 2)
    number = int(name[-2:])
    for nav in navs:
        for href, label in re.findall(r'<a [^>]*href="([^"]+)"[^>]*>(.*?)</a>', nav, re.S):
            label, target = text(label), href.split("#")[0][:-len(".html")]
            if target == "lessons":
                check(f"{name}: the link to the list says \"all lessons\", not {label!r}",
                      label == "all lessons")
                continue
            m = re.fullmatch(r"lesson(\d\d)", target)
            if not check(f"{name}: navigation link {label!r} leads to a lesson ({href})", m):
                continue
            step = int(m.group(1)) - number
            want = (f"← {short(title(target))}" if step == -1 else
                    f"{short(title(target))} →" if step == 1 else None)
            check(f"{name}: navigation link {label!r} to {target} should read {want!r}"
                  if want else f"{name}: navigation link {label!r} skips to {target}",
                  label == want)
    for para in re.findall(r"<p\b[^>]*>(.*?)</p>", page, re.S):  # ** that stayed **
        check(f"{name}: markdown bold left as text (a line of a comment block that starts "
              f"with ** loses it): {text(para)[:60]!r}", "**" not in text(para))
    for box in re.findall(r'<pre class="fragment">(.*?)</pre>', page, re.S):
        for line in text(box).split("\n"):
            check(f"{name}: captured output carries build noise: {line.strip()!r}",
                  not re.fullmatch(r"\s*wrote \S+\.svg", line))
static = len(failures)
print(f"{'ok' if not static else 'FAILED'}: navigation labels and captured output "
      f"of {len(names)} lesson pages")

# -- In a browser: the layout at both sizes. ------------------------------------
try:
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
except ImportError as e:
    print(f"skipped: the layout needs python3-selenium ({e})")
    sys.exit(1 if failures else 77)
DRIVER = "/usr/bin/chromedriver"
if not os.path.exists(DRIVER) or not shutil.which("chromium"):
    print("skipped: the layout needs Debian's chromium and chromium-driver")
    sys.exit(1 if failures else 77)

# In the page: what is too wide. An element inside a box that scrolls by itself
# (overflow-x auto, scroll or hidden) is that box's business, not the page's;
# only the outermost offender is named, with its tag, class and first words.
MEASURE = r"""
const col = document.querySelector('#doc-content div.contents') ||
            document.querySelector('div.contents');
const doc = document.getElementById('doc-content') || document.scrollingElement;
const root = document.documentElement;
if (!col) return {error: 'no div.contents'};
const cs = getComputedStyle(col);
const r = col.getBoundingClientRect();
const left = r.left + parseFloat(cs.borderLeftWidth);
const right = r.right - parseFloat(cs.borderRightWidth);
const bad = [];
function name(e) {
  let s = e.tagName.toLowerCase();
  if (e.id) s += '#' + e.id;
  if (typeof e.className === 'string' && e.className.trim())
    s += '.' + e.className.trim().split(/\s+/).join('.');
  const src = e.getAttribute('data') || e.getAttribute('src');
  if (src) s += ' (' + src + ')';
  const words = (e.textContent || '').trim().replace(/\s+/g, ' ').slice(0, 50);
  if (words) s += ' "' + words + '"';
  return s;
}
function walk(e) {
  for (const c of e.children) {
    const b = c.getBoundingClientRect();
    if (b.width > 0 && (b.right > right + 1 || b.left < left - 1)) {
      bad.push({what: name(c), width: Math.round(b.width),
                over: Math.round(Math.max(b.right - right, left - b.left))});
      continue;
    }
    const ox = getComputedStyle(c).overflowX;
    if (ox === 'auto' || ox === 'scroll' || ox === 'hidden') continue;
    walk(c);
  }
}
walk(col);
const pics = [];
for (const p of col.querySelectorAll('object, img')) {
  const b = p.getBoundingClientRect();
  pics.push({what: name(p), width: Math.round(b.width), height: Math.round(b.height)});
}
return {column: Math.round(right - left), window: window.innerWidth,
        pageScroll: root.scrollWidth - root.clientWidth,
        paneScroll: doc.scrollWidth - doc.clientWidth, bad: bad, pics: pics};
"""
# In the page, polled there every 20 ms (no round trip to the driver): MathJax
# has set every formula and every picture in the column has its size. The
# answer is true, or false after 15 s (then the measures tell what is wrong).
SETTLED = r"""
const done = arguments[arguments.length - 1];
const end = Date.now() + 15000;
function settled() {
  if (typeof MathJax !== 'undefined' && MathJax.Hub) {
    const q = MathJax.Hub.queue;
    if (q.pending !== 0 || q.running !== 0) return false;
    if (document.querySelectorAll('script[type^="math/tex"]').length !==
        document.querySelectorAll('script[type^="math/tex"][id^="MathJax-Element"]').length)
      return false;
  }
  for (const p of document.querySelectorAll('div.contents object, div.contents img')) {
    const b = p.getBoundingClientRect();
    if (!(b.width > 0 && b.height > 0)) return false;
  }
  return document.readyState === 'complete';
}
(function poll() {
  if (settled()) done(true);
  else if (Date.now() > end) done(false);
  else setTimeout(poll, 20);
})();
"""

opts = webdriver.ChromeOptions()
for a in ("--headless=new", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
          "--force-device-scale-factor=1"):
    opts.add_argument(a)
try:
    browser = webdriver.Chrome(service=Service(DRIVER), options=opts)
    browser.set_script_timeout(30)
except Exception as e:  # a container where Chromium cannot start
    print(f"skipped: headless Chromium did not start ({str(e).splitlines()[0]})")
    sys.exit(1 if failures else 77)
if shots:
    shots.mkdir(parents=True, exist_ok=True)
# One load per page: it is measured at the first size, the window is then
# resized to the second (the layout is CSS's, by media queries) and measured
# again, once the resize has been laid out (two animation frames) and has settled.
RESIZED = r"""
const done = arguments[arguments.length - 1];
requestAnimationFrame(() => requestAnimationFrame(() => done(true)));
"""
try:
    # The window's inner size is what a projector shows: make it exact. The
    # browser's own frame around it is the same at every size.
    browser.set_window_size(*SIZES[0])
    inner = browser.execute_script("return [window.innerWidth, window.innerHeight]")
    frame = (SIZES[0][0] - inner[0], SIZES[0][1] - inner[1])
    for k, name in enumerate(names):
        # Alternate the order of the sizes, so that half the pages load at each.
        for j, (w, h) in enumerate(SIZES if k % 2 == 0 else SIZES[::-1]):
            browser.set_window_size(w + frame[0], h + frame[1])
            if j == 0:
                browser.get((site / f"{name}.html").as_uri())
            else:
                browser.execute_async_script(RESIZED)
            browser.execute_async_script(SETTLED)
            m = browser.execute_script(MEASURE)
            where = f"{name} at {w}x{h}"
            if not check(f"{where}: {m.get('error')}", "error" not in m):
                continue
            check(f"{where}: the window is {m['window']} px wide, not {w}", m["window"] == w)
            check(f"{where}: the page scrolls sideways by {m['pageScroll']} px",
                  m["pageScroll"] <= 0)
            check(f"{where}: the content pane scrolls sideways by {m['paneScroll']} px",
                  m["paneScroll"] <= 0)
            check(f"{where}: the content column is {m['column']} px of {w}, under "
                  f"{MIN_SHARE:.0%}: the tree takes the room", m["column"] >= MIN_SHARE * w)
            for b in m["bad"]:
                check(f"{where}: {b['what']} is {b['width']} px wide, {b['over']} px past "
                      f"the {m['column']}-px content column", False)
            for p in m["pics"]:
                check(f"{where}: picture {p['what']} is not shown ({p['width']} x "
                      f"{p['height']} px)", p["width"] > 0 and p["height"] > 0)
            if shots:
                browser.save_screenshot(str(shots / f"{name}.{w}x{h}.png"))
            print(f"{where}: column {m['column']} px, {len(m['pics'])} pictures, "
                  f"{len(m['bad'])} too wide")
finally:
    browser.quit()
print(f"{'OK' if not failures else 'FAILED'}: {len(names)} lesson pages at "
      f"{' and '.join(f'{w}x{h}' for w, h in SIZES)}"
      + (f", {len(failures)} failures" if failures else ", nothing wider than the column"))
sys.exit(1 if failures else 0)
