"""OCR words through the one column step: a scanned page read column by column (issue 27).

An OCR engine (:class:`~longdoc.core.ports.OcrEngine`) returns words with boxes as fractions
of the page image, origin top left, and a line index. Joined by that line index
(:attr:`~longdoc.core.ports.OcrPage.text`), a two-column scan comes out *row-welded* whenever
the engine's lines cross the gutter: each line of the left column followed by the line beside
it. :func:`page_text_from_words` sends the words through the same steps as a PDF text layer:

1. The boxes are put on a page of :data:`FRAME` points, y upwards (a US-Letter page, 612 x 792
   points; the fractions carry no page size, and the thresholds of
   :mod:`~longdoc.ingest.parse.columns` are in points: an A4 page reads 3 % narrower, well within them).
2. Words with a letter or digit sharing a visual line (:func:`~longdoc.ingest.parse.columns.same_line`), left to right,
   are joined into *runs* while the white between two words is under :data:`RUN_GAP` times the
   page's median character width (measured along x, so the page's unknown height does not
   enter; a ``|`` the engine reads off a gutter's edge or rule does not bridge it); the runs are what
   :func:`~longdoc.ingest.parse.columns.find_gutters` reads, as PDFium's text runs are.
3. Without gutters the page keeps the engine's own line order exactly (``OcrPage.text``). With
   them, each visual line is cut into segments wherever the next word stands in another column
   or gutter (:func:`~longdoc.ingest.parse.gutters.column_of`), and the segments are ordered by
   :func:`~longdoc.ingest.parse.reading.arrange`, the step the PDF text layer uses: columns top
   to bottom, spanning lines between them, short lines in a gutter (a folio) at the page's foot, and
   the foot band (a footer under the columns) last, one line per piece set at a tab stop (words
   :data:`~longdoc.ingest.parse.gutters.TAB_GAP` points apart on the frame).
   Footnotes are not told apart on OCR pages (word heights follow the letters, not the type size).
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence

from longdoc.core.ports import OcrPage, OcrWord
from longdoc.ingest.parse.columns import Box, find_gutters, same_line
from longdoc.ingest.parse.gutters import TAB_GAP, Gutters, Segment, column_of, crosses
from longdoc.ingest.parse.reading import arrange

FRAME = (612.0, 792.0)
"""The page the word boxes are put on, in points (width, height): US Letter."""
RUN_GAP = 1.5
"""White between two words of one run, at most, in median character widths (a word space is about
half a character's width; measured on Tesseract's words, not a Tesseract rule)."""


def _boxes(words: Sequence[OcrWord]) -> list[Box]:
    """Each word's box in points on :data:`FRAME`, y upwards."""
    width, height = FRAME
    return [Box(w.left * width, (1 - w.top - w.height) * height, (w.left + w.width) * width, (1 - w.top) * height)
            for w in words]


def _visual_lines(boxes: list[Box]) -> list[list[int]]:
    """Word indexes grouped into visual lines, top to bottom, each left to right."""
    bounds: list[Box] = []
    members: list[list[int]] = []
    for i in sorted(range(len(boxes)), key=lambda i: -boxes[i].top):
        if bounds and same_line(bounds[-1], boxes[i]):
            bounds[-1] = bounds[-1].union(boxes[i])
            members[-1].append(i)
        else:
            bounds.append(boxes[i])
            members.append([i])
    return [sorted(ids, key=lambda i: boxes[i].left) for ids in members]


def _runs(words: Sequence[OcrWord], boxes: list[Box], lines: list[list[int]]) -> list[Box]:
    """The text runs of the page: each visual line's words joined while the gaps stay under
    :data:`RUN_GAP` median character widths (step 2 of the module docstring)."""
    gap = RUN_GAP * statistics.median(b.width / max(1, len(w.text)) for b, w in zip(boxes, words, strict=True))
    runs: list[Box] = []
    for ids in lines:
        run = boxes[ids[0]]
        for i in ids[1:]:
            if boxes[i].left - run.right > gap:
                runs.append(run)
                run = boxes[i]
            else:
                run = run.union(boxes[i])
        runs.append(run)
    return runs


def _segments(words: Sequence[OcrWord], boxes: list[Box], lines: list[list[int]], gutters: Gutters) -> list[Segment]:
    """The visual lines cut wherever the next word stands in another column or gutter
    (:func:`~longdoc.ingest.parse.gutters.crosses`), in reading order of lines; ``start``
    numbers them so that a block keeps that order."""
    out: list[Segment] = []

    def close(ids: list[int]) -> None:
        box = boxes[ids[0]]
        parts: list[list[int]] = [[ids[0]]]
        for before, i in zip(ids, ids[1:], strict=False):
            box = box.union(boxes[i])
            if boxes[i].left - boxes[before].right >= TAB_GAP:
                parts.append([])
            parts[-1].append(i)
        text = " ".join(words[i].text for i in ids)
        pieces = tuple(" ".join(words[i].text for i in part) for part in parts) if len(parts) > 1 else ()
        seg = Segment(len(out), len(out) + 1, box, chars=sum(len(words[i].text) for i in ids), text=text,
                      pieces=pieces)
        seg.column = column_of(box, gutters)
        out.append(seg)

    for ids in lines:
        piece = [ids[0]]
        for i in ids[1:]:
            if crosses(gutters, boxes[piece[-1]], boxes[i], boxes[piece[0]]):
                close(piece)
                piece = []
            piece.append(i)
        close(piece)
    return out


def page_text_from_words(words: Sequence[OcrWord]) -> str:
    """The text of one OCR page in reading order, column by column (see the module docstring).

    ``words`` are an engine's words (boxes as fractions of the page image, origin top left).
    Returns lines joined by ``"\\n"``, words by a space; ``""`` for no words. A page without
    columns gets exactly the engine's line order (words of one ``line`` index on one line).
    """
    kept = [w for w in words if w.text]
    if not kept:
        return ""
    boxes = _boxes(kept)
    lines = _visual_lines(boxes)
    marked = [[i for i in ids if any(ch.isalnum() for ch in kept[i].text)] for ids in lines]
    gutters = find_gutters(_runs(kept, boxes, [ids for ids in marked if ids]))
    if not gutters:
        return OcrPage(tuple(words), engine="").text
    segs = _segments(kept, boxes, lines, gutters)
    return arrange([s for s in segs if not s.vertical], [s for s in segs if s.vertical], gutters)
