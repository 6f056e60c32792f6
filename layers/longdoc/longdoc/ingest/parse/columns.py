"""Columns of a PDF page, found from PDFium's text boxes: the gutters between them.

Geometry is in PDF points (1/72 inch), PDF user space (y grows upwards).

The boxes of PDFium's text runs (``FPDFText_CountRects``/``FPDFText_GetRect``, one per
text object on a line, computed inside PDFium, so cheap) are projected onto the x axis.
A gutter is an x-range of at least :data:`MIN_GUTTER` points inside the text area that at
most :data:`SPANNING_SHARE` of the runs cross (running headers, full-width headings and
tables do) while text stands on both sides of it. Text written up or down the page (a
margin note) is left out. A gap that leaves a strip narrower than :data:`MARKER_WIDTH`
points left of it is the gap after a column's list numbers or bullets, not a gutter; a
gap that leaves any other column narrower than :data:`MIN_COLUMN_WIDTH` points or
:data:`MIN_COLUMN_SHARE` of the text width means a table, and the page has no columns.
The columns must also look like newspaper columns rather than a table: each holds at
least :data:`MIN_COLUMN_LINES` visual lines, the widest is at most
:data:`MAX_WIDTH_RATIO` times the narrowest, and at least :data:`MIN_FILLED_SHARE` of each
column's lines fill 60 % of its width (a table's cells mostly do not).

Measured on the shared corpus (1,230 PDF pages): columns are found on 9 of the 15
Federal Register pages (three columns; the others hold figures), 10 of the 13 pages of the
two-column Canadian homeowners wording and 4 pages of the two-column LaTeX paper, and on
no page of the single-column documents (the contracts, the GDPR, the Chubb wording with
its benefit tables, the DMCA summary) but one: the signature page of a CUAD contract, two
parties' signature blocks side by side, now read block by block. With :data:`MIN_COLUMN_LINES`
at 3 (it was 8, and 16 runs were needed) those two pages are the only change on the corpus.

The boxes may come from anywhere: PDFium's text runs (:func:`text_runs`) or an OCR engine's
words joined into runs (:mod:`~longdoc.ingest.parse.layout`).
"""

from __future__ import annotations

import ctypes
from dataclasses import dataclass

import pypdfium2 as pdfium
import pypdfium2.raw as pdfium_c

MIN_GUTTER = 6.0
"""Narrowest gutter between two columns, in points."""
SPANNING_SHARE = 0.12
"""Largest share of a page's text runs that may cross a gutter (headers, full-width headings)."""
MIN_COLUMN_LINES = 3
"""Fewest visual lines a column must hold (issue 27: a small page of a handful of lines in two
columns; it was 8, which with the 16-run floor left such pages row-welded)."""
MAX_WIDTH_RATIO = 1.6
"""Widest column over narrowest column, at most (newspaper columns are set to one measure)."""
MIN_FILLED_SHARE = 0.5
"""Share of a column's runs that must fill at least 60 % of its width (text, not table cells)."""
MIN_COLUMN_WIDTH = 72.0
"""Narrowest column, in points (one inch)."""
MIN_COLUMN_SHARE = 0.15
"""Narrowest column as a share of the page's text width."""
MARKER_WIDTH = 24.0
"""Widest strip of list numbers or bullets left of a column's text, in points."""
TOLERANCE = 2.0
"""Points a box may stick out of its column (kerning, italic overhang)."""


@dataclass(frozen=True)
class Box:
    """A rectangle in PDF points, y upwards: ``left < right``, ``bottom < top``."""

    left: float
    bottom: float
    right: float
    top: float

    @property
    def width(self) -> float:
        """Width in points."""
        return self.right - self.left

    @property
    def height(self) -> float:
        """Height in points."""
        return self.top - self.bottom

    def union(self, other: Box) -> Box:
        """The smallest box holding both."""
        return Box(min(self.left, other.left), min(self.bottom, other.bottom),
                   max(self.right, other.right), max(self.top, other.top))


def text_runs(textpage: pdfium.PdfTextPage) -> list[Box]:
    """The boxes of PDFium's text runs on a page (``FPDFText_GetRect``), in points; cheap, done in PDFium."""
    raw = textpage.raw
    count = pdfium_c.FPDFText_CountRects(raw, 0, -1)
    left, top, right, bottom = (ctypes.c_double() for _ in range(4))
    boxes: list[Box] = []
    for i in range(count):
        found = pdfium_c.FPDFText_GetRect(raw, i, left, top, right, bottom)
        if found and right.value - left.value > 0.5 and top.value - bottom.value > 0.5:
            boxes.append(Box(left.value, bottom.value, right.value, top.value))
    return boxes


def _uncovered(boxes: list[Box], lo: float, hi: float, allowed: int) -> list[tuple[float, float]]:
    """The x-ranges within ``lo..hi`` covered by at most ``allowed`` boxes (a sweep over box edges)."""
    events = sorted([(b.left, 1) for b in boxes] + [(b.right, -1) for b in boxes])
    ranges: list[tuple[float, float]] = []
    depth = 0
    open_at: float | None = lo
    for x, step in events:
        before = depth
        depth += step
        if before <= allowed < depth and open_at is not None:
            ranges.append((open_at, x))
            open_at = None
        elif depth <= allowed < before:
            open_at = x
    if open_at is not None:
        ranges.append((open_at, hi))
    return [(max(a, lo), min(b, hi)) for a, b in ranges if min(b, hi) - max(a, lo) > 0]


def _columns_of(gutters: list[tuple[float, float]], lo: float, hi: float) -> list[tuple[float, float]]:
    """The column x-ranges between the gutters, left to right."""
    edges = [lo] + [x for g in gutters for x in g] + [hi]
    return [(edges[i], edges[i + 1]) for i in range(0, len(edges), 2)]


def same_line(a: Box, b: Box) -> bool:
    """Whether two boxes share a visual line: they overlap over half the lower one's height."""
    overlap = min(a.top, b.top) - max(a.bottom, b.bottom)
    return overlap > 0.5 * min(a.height, b.height)


def visual_lines(boxes: list[Box]) -> list[Box]:
    """``boxes`` merged into visual lines (boxes sharing a line, :func:`_same_line`), top to bottom."""
    lines: list[Box] = []
    for box in sorted(boxes, key=lambda b: -b.top):
        if lines and same_line(lines[-1], box):
            lines[-1] = lines[-1].union(box)
        else:
            lines.append(box)
    return lines


def _newspaper_like(boxes: list[Box], columns: list[tuple[float, float]]) -> bool:
    """Whether the runs fill ``columns`` like set text: enough lines, similar widths, filled lines."""
    widths = [b - a for a, b in columns]
    if max(widths) / min(widths) > MAX_WIDTH_RATIO:
        return False
    for a, b in columns:
        lines = visual_lines([x for x in boxes if x.left >= a - TOLERANCE and x.right <= b + TOLERANCE])
        filled = sum(1 for x in lines if x.width >= 0.6 * (b - a))
        if len(lines) < MIN_COLUMN_LINES or filled < MIN_FILLED_SHARE * len(lines):
            return False
    return True


def _spaced(candidates: list[tuple[float, float]], lo: float, hi: float) -> list[tuple[float, float]] | None:
    """The candidate gutters that leave every column at least :data:`MIN_COLUMN_SHARE` of the text width.

    A gap that would leave a strip narrower than :data:`MARKER_WIDTH` left of it is the gap
    after a column's list numbers or bullets and is skipped; any other gap that leaves too
    narrow a column means a table: ``None``.
    """
    least = max(MIN_COLUMN_WIDTH, MIN_COLUMN_SHARE * (hi - lo))
    kept: list[tuple[float, float]] = []
    edge = lo
    for a, b in candidates:
        if a - edge >= least and hi - b >= least:
            kept.append((a, b))
            edge = b
        elif a - edge >= MARKER_WIDTH:
            return None
    return kept


def find_gutters(boxes: list[Box]) -> list[tuple[float, float]]:
    """The gutters (x-ranges in points, left to right) between text columns, or ``[]`` for one column.

    ``boxes`` are the page's text runs (:func:`text_runs`); see the module docstring for the rules.
    """
    flat = [b for b in boxes if not (b.height > 2 * b.width and b.height > 15)]  # vertical margin notes aside
    if len(flat) < 2 * MIN_COLUMN_LINES:  # two columns of MIN_COLUMN_LINES lines at the least
        return []
    lo, hi = min(b.left for b in flat), max(b.right for b in flat)
    allowed = int(SPANNING_SHARE * len(flat))
    inner = [(a, b) for a, b in _uncovered(flat, lo, hi, allowed) if b - a >= MIN_GUTTER and lo < a and b < hi]
    gutters = _spaced(inner, lo, hi)
    if not gutters:
        return []
    return gutters if _newspaper_like(flat, _columns_of(gutters, lo, hi)) else []
