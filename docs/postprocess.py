#!/usr/bin/env python3
"""After Doxygen: every page declares its language (lang="en"), and each run
of Chinese text from the articles is marked lang="zh-Hans", so that browsers
pick a CJK font (Noto Sans CJK, fonts-noto-cjk) and read it as Chinese.

    python3 docs/postprocess.py build/docs/html
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


count = 0
for path in pathlib.Path(sys.argv[1]).glob("*.html"):
    text = path.read_text(encoding="utf-8")
    if HTML not in text:
        continue
    text = mark(text.replace(HTML, HTML[:-1] + ' lang="en" xml:lang="en">', 1))
    path.write_text(text, encoding="utf-8")
    count += 1
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
