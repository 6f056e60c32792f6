"""A cited PDF page as a picture, with the quote's characters boxed: PDFium renders, its text page locates.

:func:`quote_on_page` renders one page with pypdfium2 and finds the quote in that page's
text as PDFium reads it (the same text the ingest read the page from, before clean-up):
both sides are compared after NFKC normalisation (ligatures spelt out, no-break spaces),
without whitespace and hyphens (so a line-end hyphenation or a rewrapped line still
matches). The matched characters' boxes (``FPDFText_GetCharBox``, PDF points) are merged
line by line into rectangles, given as fractions of the rendered page, so an HTML overlay
scales with the image. PDFium is not thread-safe: one thread at a time per process.
"""

from __future__ import annotations

import base64
import io
import unicodedata
from dataclasses import dataclass, field

import pypdfium2 as pdfium
import pypdfium2.raw as pdfium_c

RENDER_SCALE = 1.5
"""Pixels per PDF point of the rendered page (1.5: an A4 page is 893 x 1263 px)."""

_DROPPED = {"-", "\u00ad", "\ufffe", "\u0002", "\u2010", "\u2011"}


@dataclass
class PageView:
    """One rendered page: a JPEG data URI, its size in pixels, the quote's boxes and how it was located.

    ``boxes`` are ``(left, top, width, height)`` as fractions (0..1) of the page image;
    ``located`` is ``"full"`` (the whole quote), ``"partial"`` (a prefix: the quote goes on
    over the page break) or ``None`` (not found on this page; no boxes).
    """

    image: str
    width: int
    height: int
    boxes: list[tuple[float, float, float, float]] = field(default_factory=list)
    located: str | None = None


def _key(text: str) -> tuple[str, list[int]]:
    """``text`` NFKC-normalised without whitespace and hyphens, and the index in ``text`` of each kept character."""
    chars: list[str] = []
    where: list[int] = []
    for index, ch in enumerate(text):
        for out in unicodedata.normalize("NFKC", ch):
            if out.isspace() or out in _DROPPED:
                continue
            chars.append(out)
            where.append(index)
    return "".join(chars), where


def locate(page_text: str, quote: str) -> tuple[int, int, str] | None:
    """``(first, last, "full"|"partial")``: indices in ``page_text`` of the quote's first and last character.

    Exact (normalised) match first, then case-insensitive, then the longest prefix of at least
    20 characters (the rest of the quote is on the next page). None when nothing matches.
    """
    hay, where = _key(page_text)
    needle, _ = _key(quote)
    if not needle:
        return None
    for size, kind in ((len(needle), "full"), *((len(needle) * n // 4, "partial") for n in (3, 2, 1))):
        if size < min(20, len(needle)):
            break
        part = needle[:size]
        at = hay.find(part)
        if at < 0:
            at = hay.casefold().find(part.casefold())
        if at >= 0:
            return where[at], where[at + size - 1], kind
    return None


def _line_boxes(textpage: pdfium.PdfTextPage, first: int, last: int) -> list[tuple[float, float, float, float]]:
    """Char boxes ``first..last`` merged into one ``(left, bottom, right, top)`` rectangle per text line."""
    lines: list[list[float]] = []
    for index in range(first, last + 1):
        if chr(pdfium_c.FPDFText_GetUnicode(textpage, index)).isspace():
            continue
        left, bottom, right, top = textpage.get_charbox(index)
        if right <= left or top <= bottom:
            continue  # a generated character without a box
        line = lines[-1] if lines else None
        if line and abs(bottom - line[1]) < 0.5 * (top - bottom) and left >= line[0] - 1:
            line[0], line[1], line[2], line[3] = min(line[0], left), min(line[1], bottom), max(line[2], right), max(line[3], top)
        else:
            lines.append([left, bottom, right, top])
    return [(a, b, c, d) for a, b, c, d in lines]


def _jpeg_data_uri(page: pdfium.PdfPage, scale: float) -> tuple[str, int, int]:
    """The page rendered at ``scale`` as a JPEG data URI, with its pixel width and height."""
    image = page.render(scale=scale).to_pil()
    buffer = io.BytesIO()
    image.convert("RGB").save(buffer, format="JPEG", quality=80, optimize=True)
    return "data:image/jpeg;base64," + base64.b64encode(buffer.getvalue()).decode("ascii"), image.width, image.height


def quote_on_page(pdf: pdfium.PdfDocument, page_number: int, quote: str, *,
                  scale: float = RENDER_SCALE) -> PageView | None:
    """Render page ``page_number`` (1-based) of ``pdf`` and box ``quote`` on it; None for a page out of range."""
    if not 1 <= page_number <= len(pdf):
        return None
    page = pdf[page_number - 1]
    textpage = page.get_textpage()
    try:
        text = "".join(chr(pdfium_c.FPDFText_GetUnicode(textpage, i)) for i in range(textpage.count_chars()))
        image, width, height = _jpeg_data_uri(page, scale)
        crop_left, _, _, crop_top = page.get_cropbox()
        page_width, page_height = page.get_size()
        view = PageView(image=image, width=width, height=height)
        found = locate(text, quote)
        if found is None:
            return view
        first, last, view.located = found
        for left, bottom, right, top in _line_boxes(textpage, first, last):
            view.boxes.append(((left - crop_left - 1) / page_width, (crop_top - top - 1) / page_height,
                               (right - left + 2) / page_width, (top - bottom + 2) / page_height))
        return view
    finally:
        textpage.close()
        page.close()
