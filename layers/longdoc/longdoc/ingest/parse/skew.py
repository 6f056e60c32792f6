"""How far a scanned page's lines are tilted, measured on the words OCR read (issue 27).

A scan fed in at a slant (4 degrees measured in the tester's file) makes Tesseract break each line
into pieces that it then orders by their tops, so the halves of lines read out of order. This module
only measures and flags it (the deskew-and-re-read step is not built): for every OCR line of at least
:data:`MIN_LINE_WORDS` words, the least-squares slope of its word centres (in the upright frame,
scaled to the page's proportions) gives an angle; the page's skew is the median over its lines.
A page over :data:`SKEW_FLAG_DEGREES` is named in a warning (:mod:`.damage`).
"""

from __future__ import annotations

import math
import statistics
from collections import defaultdict

from longdoc.core.ports import OcrWord

MIN_LINE_WORDS = 3
"""Words a line needs for its slope to count."""
SKEW_FLAG_DEGREES = 2.0
"""Skew (degrees, absolute) over which a page is flagged: at 300 dpi a 2-degree tilt drops a line by
its own height over about 1.3 inches of a 12-point line, enough for Tesseract to split it."""


def skew_degrees(words: tuple[OcrWord, ...] | list[OcrWord], aspect: float) -> float | None:
    """The median tilt (degrees; positive when lines climb to the right) of the OCR lines of a page.

    ``words`` are in the upright frame (boxes as fractions of the upright page image), ``aspect`` the
    upright page's height / width. None when no line has :data:`MIN_LINE_WORDS` words.
    """
    lines: dict[int, list[OcrWord]] = defaultdict(list)
    for word in words:
        lines[word.line].append(word)
    angles: list[float] = []
    for members in lines.values():
        if len(members) < MIN_LINE_WORDS:
            continue
        xs = [w.left + w.width / 2 for w in members]
        ys = [(w.top + w.height / 2) * aspect for w in members]
        mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
        spread = sum((x - mx) ** 2 for x in xs)
        if spread <= 0:
            continue
        slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / spread
        angles.append(-math.degrees(math.atan(slope)))  # y grows downward: a climbing line has slope < 0
    return round(statistics.median(angles), 2) if angles else None
