"""The audit page and an eval page in real headless Chromium: they render, and the highlight is on the quote.

Given an audit page written for a PDF whose geometry is known (``tests/unit/pdf_builder.py``:
11 pt lines from 72 pt below the top, 17.6 pt apart) and an eval page with both pictures,
when Chromium loads them, then the page image is decoded, the quote's boxes sit on the
quote's lines of that image (measured in the browser, and on the screenshot's pixels), the
eval pictures are laid out, and the blank-page detector used on the screenshots says
blank for an empty page and not blank for these.
"""

from __future__ import annotations

from pathlib import Path

import pypdfium2 as pdfium
import pytest
from PIL import Image

from longdoc.eval.html import eval_html, run_html
from longdoc.eval.pdfpage import quote_on_page
from tests.browser import chromium
from tests.unit.pdf_builder import PAGE_HEIGHT, text_pdf
from tests.unit.eval.test_audit_page import LINES, _chunk, _result
from tests.unit.eval.test_eval_plots import _retrieval_report

FIRST_BASELINE, LEADING = 72.0, 11.0 * 1.6


def looks_blank(png: Path, tolerance: float = 0.002) -> bool:
    """Whether a screenshot is (nearly) one colour: under ``tolerance`` of its pixels differ from the commonest."""
    image = Image.open(png).convert("RGB")
    colours = image.getcolors(maxcolors=image.width * image.height) or []
    commonest = max(count for count, _ in colours)
    return 1 - commonest / (image.width * image.height) < tolerance


@pytest.fixture(scope="module")
def audit_page(tmp_path_factory) -> Path:
    """An audit page for a two-line quote on a generated PDF page."""
    folder = tmp_path_factory.mktemp("audit")
    pdf = pdfium.PdfDocument(text_pdf([LINES]))
    html = run_html(_result(1, "iv", "0.000000"), {"d:v:0000": _chunk(True)},
                    lambda page, quote: quote_on_page(pdf, page, quote))
    path = folder / "audit.html"
    path.write_text(html, encoding="utf-8")
    return path


BOXES = """
const img = document.querySelector('.sheet img').getBoundingClientRect();
const image = document.querySelector('.sheet img');
window.__probe = {complete: image.complete, natural: [image.naturalWidth, image.naturalHeight],
  img: [img.left, img.top, img.width, img.height],
  boxes: [...document.querySelectorAll('[data-quote-box]')].map(b => {
    const r = b.getBoundingClientRect(); return [r.left, r.top, r.width, r.height]; })}
"""


def test_audit_page_image_renders_and_the_boxes_sit_on_the_quote_lines(audit_page: Path, tmp_path: Path) -> None:
    # When Chromium lays the page out
    probe = chromium.probe(audit_page, BOXES)
    # Then the inlined page image is decoded at its full size and shown
    assert probe["complete"] and probe["natural"][0] > 800 and probe["img"][2] > 300
    left, top, width, height = probe["img"]
    # And the two boxes lie inside the image, on the 3rd and 4th text lines (baselines known from the PDF)
    assert len(probe["boxes"]) == 2
    for (x, y, w, h), line in zip(probe["boxes"], (2, 3), strict=True):
        assert left <= x and x + w <= left + width and top <= y and y + h <= top + height
        baseline = FIRST_BASELINE + line * LEADING
        assert (y - top) / height * PAGE_HEIGHT < baseline < (y + h - top) / height * PAGE_HEIGHT

    # And on the screenshot, each box covers exactly one line of the image's dark (text) pixels: lines 3 and 4
    png = chromium.screenshot(audit_page, tmp_path / "audit.png")
    shot = Image.open(png).convert("L")
    rows = [sum(shot.getpixel((x, y)) < 110 for x in range(int(left) + 2, int(left + width) - 2, 2))
            for y in range(int(top) + 2, int(top + height) - 2)]
    lines: list[list[int]] = []
    for offset, dark in enumerate(rows):
        y = int(top) + 2 + offset
        if dark and lines and y - lines[-1][-1] <= 2:
            lines[-1].append(y)
        elif dark:
            lines.append([y])
    centres = [(ys[0] + ys[-1]) / 2 for ys in lines]
    assert len(centres) >= 4, "the four text lines of the page image are visible"
    for (_x, y, _w, h), line in zip(probe["boxes"], (2, 3), strict=True):
        inside = [n for n, c in enumerate(centres) if y <= c <= y + h]
        assert inside == [line], (inside, centres, (y, h))
    assert not looks_blank(png)


def test_eval_page_pictures_render(tmp_path: Path) -> None:
    page = tmp_path / "eval.html"
    page.write_text(eval_html(_retrieval_report(), "retrieval"), encoding="utf-8")
    # When Chromium lays the eval page out
    probe = chromium.probe(page, "window.__probe = [...document.querySelectorAll('svg.plot')].map(s => {"
                                 "const r = s.getBoundingClientRect(); return [r.left, r.top, r.width, r.height, "
                                 "s.querySelectorAll('text').length]; })")
    # Then both pictures are laid out with their text
    assert len(probe) == 2
    for _, _, width, height, texts in probe:
        assert width > 300 and height > 100 and texts > 5
    # And the heat map's cells show their colours on the screenshot: a red (0%) and a green (100%) cell
    png = chromium.screenshot(page, tmp_path / "eval.png")
    x, y, w, h, _ = probe[1]
    crop = Image.open(png).convert("RGB").crop((int(x), int(y), int(x + w), int(y + h)))
    colours = {colour for _, colour in crop.getcolors(maxcolors=crop.width * crop.height) or []}
    assert any(r > 200 and g < 160 and b < 150 for r, g, b in colours), "a red cell"
    assert any(g > 180 and r < 150 and b < 160 for r, g, b in colours), "a green cell"
    assert not looks_blank(png)


def test_the_screenshot_check_catches_an_empty_page(tmp_path: Path) -> None:
    # Given an empty page, and an audit page whose page image cannot be decoded
    empty = tmp_path / "empty.html"
    empty.write_text("<!doctype html><html><head><meta charset='utf-8'></head><body></body></html>")
    broken = tmp_path / "broken.html"
    broken.write_text("<!doctype html><html><body><div class='sheet'><img src='data:image/jpeg;base64,AAAA'>"
                      "</div></body></html>")
    # When they are screenshotted / Then the empty one is blank
    assert looks_blank(chromium.screenshot(empty, tmp_path / "empty.png"))
    # And the probe reports the undecodable image (what the audit test requires of a good one)
    probe = chromium.probe(broken, "const i = document.querySelector('img'); window.__probe = [i.complete, i.naturalWidth]")
    assert probe == [True, 0]
