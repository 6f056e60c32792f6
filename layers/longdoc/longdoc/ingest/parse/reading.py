"""Reading order of a multi-column PDF page: column by column, top to bottom.

PDFium returns a page's text in content-stream order. On a page set in two or three
columns that order can run a line of one column into the line beside it (one PDFium line
holding both) or read the footnotes of a column before its body. When
:func:`~longdoc.ingest.parse.columns.find_gutters` finds columns on a page, its text is
rebuilt here from PDFium's characters and their boxes; a page without columns keeps
PDFium's text exactly (:func:`reading_order`). Geometry is in PDF points, y upwards.

1. **Segments** (:func:`segments`): the characters (``FPDFText_GetCharBox``) are cut into
   visual-line pieces at PDFium's own line breaks, where the next character goes back to
   the left below the last one (a line joined to the next by PDFium's hyphen marker
   U+FFFE), and where the next character jumps over a gutter's middle onto the next
   column's left edge across :data:`MIN_JUMP` points of white (two columns welded into
   one line). Two pieces cut at a gutter are joined again when either of them crosses a
   gutter anyway (a table's header row, not two columns).
2. **Columns**: a segment that covers a whole gutter is *spanning* (a running header, a
   full-width heading, a table row); any other one belongs to the column its middle is in.
3. **Units and order** (:func:`ordered_text`): each column is cut into blocks wherever a
   spanning segment over that column lies (a block keeps PDFium's order inside it, which
   within one column runs top to bottom); the blocks and the spanning segments are
   ordered as Breuel does it (T. M. Breuel, "High performance document layout analysis",
   2003): A comes before B when their x-ranges overlap and A is above B, or when A lies
   wholly left of B and they share some height; ties go to the highest, then the leftmost.
   A table over columns 2-3 is thus read after column 1 and after the text of columns 2
   and 3 above it.
4. **Footnotes**: in each column, the block of lines at its foot set in a type smaller
   than :data:`NOTE_SIZE` times the line above it (the loose box height,
   ``FPDFText_GetLooseCharBox``) is read after every column's body, before the spanning
   lines below all columns (a running footer). Text written up or down the page (a
   margin note such as the Federal Register's ``jbell on DSK... with PROPOSALS``) goes last.
5. **Folios between columns** (issue 27): a piece is also cut where a character steps from a
   column into a gutter, or out of one when the piece began there (:func:`crosses`); a short
   line standing alone in a gutter (:func:`in_gutter`: a ``-2-`` set between the columns)
   goes after everything else, at the page's foot, where the running-furniture detection
   (:func:`~longdoc.ingest.parse.cleanup.find_furniture`) removes it when it repeats across
   pages (position here, repetition there). List numbers hanging into a gutter line up with
   each other and are joined back to their text; a heading's words either side of a gutter
   are joined again (:func:`straddles`).

6. **Boxed asides and the foot band** (measured on the IRS Form 1040 instructions, 3 columns): a
   short label drawn out of place, above the line before it in content order (an aside's ``TIP`` or
   ``CAUTION`` icon drawn after the column's text), is cut from that line (:func:`_breaks_line`)
   and read where it stands, before the aside beside it (:func:`in_reading_order`), not at the
   column's foot inside the sentence that runs on into the next column. The page's lowest line,
   set apart from the text above it (:func:`foot_band`), is read last, one line per piece set at a
   tab stop when one piece is a page number (``-21-`` and ``Need more information or forms?``):
   so the folio and the footer each repeat as one line on every page, whichever side of the footer
   the folio stands on, for the running-furniture detection to remove. On a page without columns
   only that cut is made, on PDFium's last line (:func:`split_foot_line`); the rest of its text is
   PDFium's.

Steps 2-6 (:func:`arrange`) are the one column step for every source of boxes: PDFium's
characters here, OCR words in :mod:`~longdoc.ingest.parse.layout`.

Lines are joined by ``"\\n"``; a segment ending with PDFium's hyphen marker is joined to the
next one in reading order directly (within a block, or the first line of the next block: a column's
last word hyphenated onto the next column, over an aside's icon drawn between them), as PDFium
does, so the hyphen is still resolved by :func:`~longdoc.ingest.parse.hyphens.resolve_hyphens`.
"""

from __future__ import annotations

from dataclasses import dataclass

import pypdfium2 as pdfium

from longdoc.ingest.parse.columns import TOLERANCE, Box, find_gutters, text_runs
from longdoc.ingest.parse.pdf_boxes import char_boxes, split_foot_line
from longdoc.ingest.parse.gutters import (
    MIN_JUMP,
    TAB_GAP,
    Gutters,
    Segment,
    band_lines,
    column_of,
    crosses,
    foot_band,
    hung,
    in_gutter,
    in_reading_order,
    joined_pieces,
    straddles,
)

__all__ = ["MIN_JUMP", "Gutters", "Segment", "arrange", "column_of", "crosses", "ordered_text", "reading_order"]
NOTE_SIZE = 0.85
"""Footnote lines are set smaller than this share of the type size of the line above them."""
GAP_LINES = 2.0
"""A white gap taller than this many line heights splits a column into two blocks."""
HYPHEN_MARKER = "\ufffe"



def _breaks_line(prev: Box, box: Box, size: float) -> bool:
    """Whether ``box`` starts a new visual line after ``prev`` (a character of type size ``size``,
    points): back to the left and wholly below it, or clear of it across and higher than a whole line
    of its type above its foot (an aside's icon drawn after the line that PDFium runs it into; a
    closing quote or a superscript after a full stop stays on its line, and so does text written up
    the page, each character above the last)."""
    if box.left < prev.left - TOLERANCE and box.top <= prev.bottom:
        return True
    clear = box.right < prev.left or box.left > prev.right
    return clear and box.bottom - prev.bottom > max(size, prev.height)


def _clean(text: str) -> str:
    """A segment's text without PDFium's line-break characters."""
    return text.replace("\r", "").replace("\n", "")


def segments(text: str, boxes: list[Box | None], sizes: list[float], gutters: Gutters) -> list[Segment]:
    """Cut a page's characters into :class:`Segment` s (see the module docstring, step 1).

    ``text`` is PDFium's page text, one character per char index; ``boxes`` and ``sizes``
    hold their boxes and type sizes (:func:`char_boxes`). Pieces without a visible character are dropped.
    A segment's :attr:`~Segment.pieces` are its parts between white of at least :data:`TAB_GAP` points.
    """
    out: list[Segment] = []
    start, visible, cut = 0, 0, False
    box: Box | None = None
    prev: Box | None = None
    prev_size = 0.0
    tabs: list[int] = []

    def close(end: int) -> None:
        if box is not None:
            edges = [start, *tabs, end]
            pieces = tuple(_clean(text[a:b]) for a, b in zip(edges, edges[1:], strict=False)) if tabs else ()
            out.append(Segment(start, end, box, visible, max(sizes[start:end]), cut=cut,
                               text=_clean(text[start:end]), pieces=pieces))

    for i, (ch, char_box) in enumerate(zip(text, boxes, strict=True)):
        if ch in "\r\n":
            close(i)
            start, box, prev, visible, cut, tabs = i + 1, None, None, 0, False, []
        elif char_box is not None:
            if prev is not None and ((jump := crosses(gutters, prev, char_box, box))
                                     | _breaks_line(prev, char_box, prev_size)):
                close(i)
                start, box, visible, cut, tabs = i, None, 0, jump, []
            elif prev is not None and char_box.left - prev.right >= TAB_GAP:
                tabs.append(i)
            box = char_box if box is None else box.union(char_box)
            prev, prev_size = char_box, sizes[i]
            visible += 1
    close(len(text))
    return out


def _placed(text: str, segs: list[Segment], gutters: Gutters) -> list[Segment]:
    """The segments with their columns, pieces cut at a gutter joined again when either one spans or
    :func:`straddles` a gutter."""
    out: list[Segment] = []
    for seg in segs:
        seg.column = column_of(seg.box, gutters)
        prev = out[-1] if out else None
        if (seg.cut and prev is not None and prev.end == seg.start
                and (min(prev.column, seg.column) < 0 or straddles(prev, gutters) or straddles(seg, gutters))):
            box = prev.box.union(seg.box)
            out[-1] = Segment(prev.start, seg.end, box, prev.chars + seg.chars, max(prev.size, seg.size),
                              column_of(box, gutters), prev.cut, _clean(text[prev.start:seg.end]),
                              joined_pieces(prev, seg))
        else:
            out.append(seg)
    return out


def _lines_text(segs: list[Segment]) -> list[str]:
    """The text of one block's segments, one per line, in PDFium's order (the content stream's, which
    within one column block runs top to bottom and keeps side-by-side sub-captions apart), short
    labels drawn out of place put where they stand (:func:`in_reading_order`)."""
    return [s.text.strip(" ") for s in in_reading_order(segs)]


def _join(lines: list[str]) -> str:
    """Lines of one block joined by ``"\\n"``, except after PDFium's hyphen marker, where PDFium itself
    joins them (the hyphen is resolved later with the document's words)."""
    out: list[str] = []
    for line in lines:
        if out and out[-1].endswith(HYPHEN_MARKER):
            out[-1] += line
        else:
            out.append(line)
    return "\n".join(out)


def _body_size(segs: list[Segment]) -> float:
    """The type size of most characters in the page's upper half (footnotes sit low), in points."""
    top = max(s.box.top for s in segs)
    bottom = min(s.box.bottom for s in segs)
    counts: dict[float, int] = {}
    for seg in segs:
        if seg.middle > (top + bottom) / 2:
            counts[round(seg.size, 1)] = counts.get(round(seg.size, 1), 0) + seg.chars
    return max(counts, key=lambda size: counts[size], default=0.0)


def _notes(segs: list[Segment], columns: int) -> set[int]:
    """Char starts of the footnote lines: in each column, the block of lines at its foot set in a type
    smaller than :data:`NOTE_SIZE` times the page's body type and the line just above the block."""
    notes: set[int] = set()
    body = _body_size(segs) if segs else 0.0
    for column in range(columns):
        ordered = sorted((s for s in segs if s.column == column), key=lambda s: s.box.top)
        foot = 0
        while foot < len(ordered) and ordered[foot].size <= ordered[0].size + 0.25:
            foot += 1
        if foot < len(ordered) and ordered[0].size < NOTE_SIZE * min(body, ordered[foot].size):
            notes.update(s.start for s in ordered[:foot])
    return notes


def _captions(placed: list[Segment], spanning: list[Segment]) -> set[int]:
    """Char starts of captions: a column's line just above a spanning line (within two line heights)
    and below all text of the other columns there (``ESTIMATED COSTS`` over a full-width table)."""
    out: set[int] = set()
    for under in spanning:
        above = [p for p in placed if p.box.bottom >= under.box.top - TOLERANCE
                 and p.box.left < under.box.right and p.box.right > under.box.left]
        for seg in above:
            if seg.box.bottom - under.box.top > 2 * seg.box.height:
                continue
            others = [q for q in above if q.column != seg.column]
            if others and all(q.box.bottom > seg.box.top for q in others):
                out.add(seg.start)
    return out


@dataclass
class _Unit:
    """A block of one column between spanning segments, or one spanning segment; ``box`` holds them all."""

    segs: list[Segment]
    box: Box


def _units(body: list[Segment], spanning: list[Segment], gutters: Gutters) -> list[_Unit]:
    """Each column cut into blocks at the spanning segments over it and at white gaps taller than
    :data:`GAP_LINES` lines (a masthead, a boxed notice), plus one unit per spanning segment."""
    edges = [float("-inf")] + [x for g in gutters for x in g] + [float("inf")]
    blocks: dict[tuple[int, int], list[Segment]] = {}
    for seg in body:
        left, right = edges[2 * seg.column], edges[2 * seg.column + 1]
        above = sum(1 for s in spanning if s.box.left < right and s.box.right > left and s.middle > seg.middle)
        blocks.setdefault((seg.column, above), []).append(seg)
    units: list[_Unit] = []
    for _, segs in sorted(blocks.items()):
        segs.sort(key=lambda s: -s.box.top)
        part = [segs[0]]
        for seg in segs[1:]:
            if part[-1].box.bottom - seg.box.top > GAP_LINES * max(seg.box.height, part[-1].box.height):
                units.append(_Unit(part, _bounds(part)))
                part = []
            part.append(seg)
        units.append(_Unit(part, _bounds(part)))
    return units + [_Unit([s], s.box) for s in spanning]


def _bounds(segs: list[Segment]) -> Box:
    """The union of the segments' boxes."""
    box = segs[0].box
    for seg in segs[1:]:
        box = box.union(seg.box)
    return box


def _before(a: Box, b: Box) -> bool:
    """Breuel's order: ``a`` above ``b`` with overlapping x-ranges, or ``a`` wholly left of ``b`` at a shared height."""
    if min(a.right, b.right) - max(a.left, b.left) > 0:
        return (a.top + a.bottom) > (b.top + b.bottom)
    return a.right <= b.left and min(a.top, b.top) > max(a.bottom, b.bottom)


def _sorted_units(units: list[_Unit]) -> list[_Unit]:
    """``units`` in reading order: a topological sort of :func:`_before`, the highest then leftmost first
    (a cycle, possible on odd layouts, is broken the same way)."""
    left = list(range(len(units)))
    order: list[_Unit] = []
    while left:
        ready = [i for i in left if not any(_before(units[j].box, units[i].box) for j in left if j != i)] or left
        pick = max(ready, key=lambda i: (units[i].box.top, -units[i].box.left))
        order.append(units[pick])
        left.remove(pick)
    return order


def ordered_text(text: str, boxes: list[Box | None], sizes: list[float], gutters: Gutters) -> str:
    """The page text in reading order (see the module docstring).

    ``text`` is PDFium's page text with one character per char index, ``boxes`` and ``sizes``
    their boxes and type sizes (:func:`char_boxes`), ``gutters`` from :func:`find_gutters` (not empty).
    """
    raw = segments(text, boxes, sizes, gutters)
    flat = _placed(text, [s for s in raw if not s.vertical], gutters)
    return arrange(flat, [s for s in raw if s.vertical], gutters)


def arrange(flat: list[Segment], vertical: list[Segment], gutters: Gutters) -> str:
    """The text of a page's segments in reading order: steps 2-4 of the module docstring.

    ``flat`` are the horizontal segments with their columns (:func:`column_of`), ``vertical`` the
    segments written up or down the page, ``gutters`` not empty. The one column step for every
    source of boxes: PDFium's characters (:func:`ordered_text`) and OCR words
    (:func:`~longdoc.ingest.parse.layout.page_text_from_words`). Short lines standing in a gutter
    (:func:`in_gutter`) go last, at the page's foot, where the running-furniture detection
    (:func:`~longdoc.ingest.parse.cleanup.find_furniture`) tests them for repetition across pages.
    """
    foot = foot_band(flat)
    flat = [s for s in flat if s not in foot]
    floating = [s for s in flat if in_gutter(s, gutters, flat)]
    flat = hung(flat, floating, gutters)
    lowest = min((s.box.bottom for s in flat if s.column >= 0), default=0.0)
    captions = _captions([s for s in flat if s.column >= 0], [s for s in flat if s.column < 0 and s.box.top > lowest])
    for seg in flat:
        seg.column = -1 if seg.start in captions else seg.column
    placed = [s for s in flat if s.column >= 0]
    notes = _notes(placed, len(gutters) + 1)
    spanning = [s for s in flat if s.column < 0 and s.box.top > lowest]
    units = _units([s for s in placed if s.start not in notes], spanning, gutters)
    highest = max((s.box.top for s in placed), default=0.0)
    blocks = [[line for s in unit.segs for line in band_lines(s)] if _in_head(unit, highest)
              else _lines_text(unit.segs) for unit in _sorted_units(units)]
    blocks += [_lines_text([s for s in placed if s.column == c and s.start in notes]) for c in range(len(gutters) + 1)]
    blocks.append([line for s in sorted((s for s in flat if s.column < 0 and s.box.top <= lowest), key=lambda s: s.start)
                   for line in band_lines(s)])
    blocks.append([s.text.strip(" ") for s in vertical])
    blocks.append([line for s in sorted(foot, key=lambda s: s.box.left) for line in band_lines(s)])
    blocks.append([s.text.strip(" ") for s in sorted(floating, key=lambda s: -s.box.top)])
    return _join([line for block in blocks for line in block])  # a word hyphenated at a block's end runs on


def _in_head(unit: _Unit, highest: float) -> bool:
    """Whether ``unit`` is one spanning line in the page's head band: above all column text (its
    pieces are lines of their own there: a running header and a date set at tab stops)."""
    return len(unit.segs) == 1 and unit.segs[0].column < 0 and unit.box.bottom >= highest


def reading_order(textpage: pdfium.PdfTextPage) -> str:
    """The page's text (PDFium's raw text, ``\\r\\n`` line ends) in reading order.

    When the page has no columns (:func:`find_gutters`): ``textpage.get_text_range()``, its last
    line cut at tab stops when it is a foot band holding a page number (:func:`split_foot_line`),
    otherwise exactly. PDFium's text unchanged when it does not hold one character per char index
    (then the boxes cannot be matched to the text); otherwise :func:`ordered_text`, lines joined by ``"\\n"``.
    """
    text: str = textpage.get_text_range()
    runs = text_runs(textpage)
    gutters = find_gutters(runs)
    if not gutters:
        return split_foot_line(textpage, text, runs)
    if len(text) != textpage.count_chars():
        return text
    return ordered_text(text, *char_boxes(textpage, text), gutters)
