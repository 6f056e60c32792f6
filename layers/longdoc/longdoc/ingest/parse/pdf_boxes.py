"""Characters' boxes from PDFium's text page, and the foot line of a page without columns cut at its
tab stops (:func:`split_foot_line`), for :mod:`longdoc.ingest.parse.reading`."""

from __future__ import annotations

import ctypes

import pypdfium2 as pdfium
import pypdfium2.raw as pdfium_c

from longdoc.ingest.parse.columns import Box, same_line
from longdoc.ingest.parse.gutters import BAND_WHITE, FOLIO, TAB_GAP


def char_boxes(textpage: pdfium.PdfTextPage, text: str, offset: int = 0) -> tuple[list[Box | None], list[float]]:
    """Each character's box in points (``FPDFText_GetCharBox``; ``None`` for white space, which PDFium
    also generates between words and lines) and its type size: the height of its loose box
    (``FPDFText_GetLooseCharBox``, font ascent to descent). ``text`` holds one character per char index,
    from char index ``offset`` on."""
    raw = textpage.raw
    left, right, bottom, top = (ctypes.c_double() for _ in range(4))
    loose = pdfium_c.FS_RECTF()
    get_box, get_loose = pdfium_c.FPDFText_GetCharBox, pdfium_c.FPDFText_GetLooseCharBox
    boxes: list[Box | None] = []
    sizes: list[float] = []
    for i, ch in enumerate(text, start=offset):
        if ch.isspace() or ch == "\0":
            boxes.append(None)
            sizes.append(0.0)
            continue
        get_box(raw, i, left, right, bottom, top)
        boxes.append(Box(left.value, bottom.value, right.value, top.value))
        get_loose(raw, i, loose)
        sizes.append(loose.top - loose.bottom if loose.top > loose.bottom else loose.bottom - loose.top)
    return boxes, sizes


def split_foot_line(textpage: pdfium.PdfTextPage, text: str, runs: list[Box]) -> str:
    """PDFium's text of a page without columns, its last line cut into lines at tab gaps when it is the
    page's foot band and one of its pieces is a page number (:data:`FOLIO`):
    ``-24- .......... Need more information or forms? Visit IRS.gov.`` set at two tab stops becomes two lines, so the running-furniture detection sees the folio and the footer each as
    the same line on every page (the column step does this for pages with columns, :func:`foot_band`).

    The last line is cut only when its characters can be matched to their boxes (PDFium's text leaves
    no character of it out) and it is the lowest visual line of the page's text runs (``runs``,
    :func:`text_runs`) with more than :data:`~longdoc.ingest.parse.gutters.BAND_WHITE` of its heights
    of white above it, at white of at least :data:`TAB_GAP` points; otherwise ``text`` is returned unchanged.
    """
    end = len(text.rstrip("\r\n "))
    start = text.rfind("\n", 0, end) + 1
    shift = textpage.count_chars() - len(text)  # chars PDFium's text leaves out, before the last line
    if end <= start or textpage.get_text_range(start + shift, end - start) != text[start:end]:
        return text  # the line's characters cannot be matched to their boxes
    boxes, _ = char_boxes(textpage, text[start:end], offset=start + shift)
    visible = [(i, b) for i, b in zip(range(start, end), boxes, strict=True) if b is not None]
    if len(visible) < 2:
        return text
    line = visible[0][1]
    for _, box in visible[1:]:
        line = line.union(box)
    above = [r for r in runs if not same_line(r, line)]
    tallest = max(box.height for _, box in visible)
    if (line.height > 1.5 * tallest or not above
            or min(r.bottom for r in above) - line.top <= BAND_WHITE * line.height):
        return text  # not one visual line, or not a band apart below the text
    cuts = [i for (_, before), (i, box) in zip(visible, visible[1:], strict=False) if box.left - before.right >= TAB_GAP]
    if not cuts:
        return text
    edges = [start, *cuts, end]
    pieces = [text[a:b].strip(" ") for a, b in zip(edges, edges[1:], strict=False)]
    if not any(FOLIO.match(p) for p in pieces):
        return text  # a table's last row, a signature line: body, kept as PDFium reads it
    return text[:start] + "\r\n".join(p for p in pieces if p) + text[end:]
