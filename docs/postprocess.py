#!/usr/bin/env python3
"""After Doxygen: every page declares its language (lang="en"), and each run
of Chinese text from the articles is marked lang="zh-Hans", so that browsers
pick a CJK font (Noto Sans CJK, fonts-noto-cjk) and read it as Chinese.
Every SVG picture becomes an <img> that scales to the column (a viewBox added
where the SVG has none), and the pages with a tree load docs/projector.js.

    python3 docs/postprocess.py build/docs/html
    python3 docs/postprocess.py build/docs/html --front lesson05,lesson10,lesson19
                        (after docs/projector_shots.cmake: the front page's screenshots)
"""
import pathlib
import re
import sys

HTML = '<html xmlns="http://www.w3.org/1999/xhtml">'
CJK = re.compile(r"[\u3000-\u303f\u4e00-\u9fff\uff00-\uffef]+")
TAG = re.compile(r"(<[^>]*>)")


def mark(page):
    out, skip = [], False
    for part in TAG.split(page):
        if part.startswith("<"):
            low = part.lower()
            if low.startswith(("<title", "<script", "<style", "<textarea")):
                skip = True
            elif low.startswith(("</title", "</script", "</style", "</textarea")):
                skip = False
            out.append(part)
        elif skip:
            out.append(part)
        else:
            out.append(CJK.sub(lambda m: f'<span lang="zh-Hans">{m.group(0)}</span>', part))
    return "".join(out)


# Pictures that scale to the column (extra.css): Doxygen shows an SVG in an
# <object>, which keeps the SVG's own width; an <img> of an SVG with a viewBox
# scales, its caption as its alt text.
OBJECT = re.compile(r'<object type="image/svg\+xml" data="([^"]+)"[^>]*></object>'
                    r'(\s*<div class="caption">\s*([^<]*)</div>)?')
SIZE = re.compile(r"<svg ([^>]*?)width=(['\"])([\d.]+)\2 height=\2([\d.]+)\2")


def picture(m):
    alt = (m.group(3) or m.group(1)).strip().replace('"', "&quot;")
    return f'<img src="{m.group(1)}" alt="{alt}"/>' + (m.group(2) or "")


def front(html, pages):
    """The front page's figure: the lesson pages' screenshots (docs/projector_shots.cmake),
    at the end of its Documentation section, or a sentence saying none were taken."""
    index = html / "index.html"
    text = index.read_text(encoding="utf-8")
    shots = []
    for name in pages:
        small, large = f"projector/{name}.1024x768.png", f"projector/{name}.1920x1080.png"
        if not (html / small).exists() or not (html / large).exists():
            shots = []
            break
        title = re.search(r'<div class="title">(.*?)</div>',
                          (html / f"{name}.html").read_text(encoding="utf-8"), re.S)
        title = re.sub(r"<[^>]*>", "", title.group(1)).strip() if title else name
        shots.append(f'<a href="{name}.html" class="el">{title}</a>: '
                     f'<a href="{large}">1920 x 1080</a><br/>'
                     f'<a href="{small}"><img src="{small}" alt="{title} at 1024 x 768"/></a>')
    if shots:
        body = ("<p>The lesson pages as a class sees them on a projector, at 1024 x 768 "
                "(the tree folds away; its <em>contents</em> button brings it back) and at "
                "1920 x 1080. tests/browser/pages_check.py takes these screenshots and checks "
                "every lesson page at both sizes.</p>\n<div class=\"projector-shots\">"
                + "".join(f"<div>{s}</div>" for s in shots) + "</div>\n")
    else:
        body = ("<p><em>(No screenshots of the lesson pages here: headless Chromium could "
                "not start when these pages were built.)</em></p>\n")
    body = '<h2 class="projector">The pages on a projector</h2>\n' + body
    m = re.search(r"<h1>(?:(?!</h1>).)*Documentation</h1>.*?(?=<h1>|</div><!-- PageDoc -->)",
                  text, re.S)
    at = m.end() if m else text.index("</div><!-- PageDoc -->")
    index.write_text(text[:at] + body + text[at:], encoding="utf-8")
    print(f"postprocess: index.html shows {len(shots)} lesson pages on a projector")


if "--front" in sys.argv:
    front(pathlib.Path(sys.argv[1]), sys.argv[sys.argv.index("--front") + 1].split(","))
    sys.exit(0)

count = 0
for path in pathlib.Path(sys.argv[1]).glob("*.html"):
    text = path.read_text(encoding="utf-8")
    if HTML not in text:
        continue
    text = mark(text.replace(HTML, HTML[:-1] + ' lang="en" xml:lang="en">', 1))
    text = OBJECT.sub(picture, text)
    # The projector's "contents" button (docs/projector.js), on the pages with a tree.
    if 'id="side-nav"' in text:
        text = text.replace("</body>", '<script src="projector.js"></script>\n</body>', 1)
    path.write_text(text, encoding="utf-8")
    count += 1
for path in pathlib.Path(sys.argv[1]).glob("*.svg"):
    svg = path.read_text(encoding="utf-8")
    if "viewBox" not in svg[:400]:
        svg = SIZE.sub(lambda m: f"<svg {m.group(1)}width={m.group(2)}{m.group(3)}{m.group(2)} "
                       f"height={m.group(2)}{m.group(4)}{m.group(2)} viewBox="
                       f"{m.group(2)}0 0 {m.group(3)} {m.group(4)}{m.group(2)}", svg, count=1)
        path.write_text(svg, encoding="utf-8")
# Where the docs build could not start Chromium (docs/screenshot.cmake), the
# explorer's picture becomes a sentence saying so.
html = pathlib.Path(sys.argv[1])
if (html.parent / "images" / "explorer.png.missing").exists():
    for path in html.glob("*.html"):
        text = path.read_text(encoding="utf-8")
        new = re.sub(r'<div class="image">\s*<img src="explorer.png"[^>]*>.*?</div>\s*</div>',
                     "<p><em>(No screenshot here: headless Chromium could not start when "
                     "these pages were built.)</em></p>", text, flags=re.S)
        if new != text:
            path.write_text(new, encoding="utf-8")
            print(f"postprocess: {path.name} shows no explorer screenshot (none was taken)")
print(f"postprocess: {count} pages declare lang=\"en\", Chinese marked zh-Hans")
