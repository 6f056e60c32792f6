"""Segments of a page line and the gutters between columns: where a line is cut, which column a piece
belongs to, and which short pieces stand alone in a gutter (folios), for :mod:`.reading` and
:mod:`.layout` alike. Geometry in PDF points, y upwards (see :mod:`.columns`)."""

from __future__ import annotations

from dataclasses import dataclass, field

from longdoc.ingest.parse.columns import TOLERANCE, Box

Gutters = list[tuple[float, float]]
MIN_JUMP = 4.0
"""Least white, in points, between two characters of one PDFium line that sit in different columns."""
GUTTER_WHITE = 8.0
"""White, in points, before a character in a gutter that starts a new piece even when the line before
it already reaches into the gutter (wider than a word space up to 14-point type)."""
GUTTER_CHARS = 12
"""Most visible characters of a line standing in a gutter that is read as page furniture (a folio
``-12-``, ``Page 3``), not as column text."""


@dataclass
class Segment:
    """Characters ``start..end`` (PDFium char indexes, end exclusive) on one visual line: their box,
    count of visible characters, largest type size (points), column (-1: spanning), whether it was
    cut from the previous segment at a gutter, and its text (without line-break characters)."""

    start: int
    end: int
    box: Box
    chars: int = 0
    size: float = 0.0
    column: int = -1
    cut: bool = False
    text: str = field(default="", repr=False)

    @property
    def vertical(self) -> bool:
        """Text written up or down the page: several characters stacked in a tall, narrow box."""
        return self.chars >= 3 and self.box.height > 3 * self.box.width

    @property
    def middle(self) -> float:
        """The height of the box's middle, in points."""
        return (self.box.top + self.box.bottom) / 2


def zone(box: Box, gutters: Gutters) -> float:
    """Where a character sits across the page: column ``k`` as ``k``, inside gutter ``k`` (its middle
    more than :data:`TOLERANCE` points within the gutter's edges) as ``k + 0.5``."""
    middle = (box.left + box.right) / 2
    for k, (a, b) in enumerate(gutters):
        if a + TOLERANCE < middle < b - TOLERANCE:
            return k + 0.5
    return float(sum(1 for a, b in gutters if (a + b) / 2 < middle))


def crosses(gutters: Gutters, before: Box, after: Box, start: Box | None = None) -> bool:
    """Whether the step from character box ``before`` to ``after`` leaves a column or a short line in a
    gutter, over at least :data:`MIN_JUMP` points of white: from left of a gutter's middle to the next
    column's left edge (two columns welded on one line), from a column into a gutter (a folio set
    between the columns; over :data:`GUTTER_WHITE` points also from a long line that ends in the
    gutter), or out of a gutter when the piece began in it (``start``: the box of the piece's first
    character). A heading running from a column through a gutter is not cut there."""
    if after.left - before.right < MIN_JUMP:
        return False
    if any(before.right < (a + b) / 2 and after.left >= b - TOLERANCE for a, b in gutters):
        return True
    was, now = zone(before, gutters), zone(after, gutters)
    if now % 1 and (not was % 1 or after.left - before.right >= GUTTER_WHITE):
        return True
    return bool(was % 1 and not now % 1 and start is not None and zone(start, gutters) % 1)


def column_of(box: Box, gutters: Gutters) -> int:
    """The index of the column holding ``box`` (by its middle, columns split at gutter middles),
    or -1 when it covers a whole gutter (spanning)."""
    if any(box.left < a and box.right > b for a, b in gutters):
        return -1
    middle = (box.left + box.right) / 2
    return sum(1 for a, b in gutters if (a + b) / 2 < middle)


def straddles(seg: Segment, gutters: Gutters) -> bool:
    """Whether ``seg`` starts inside a gutter and runs on into the next column: the rest of a line across
    the columns (a heading cut where one of its words stands in the gutter), never a column's line
    (a column's lines start at its left edge; a long one may end inside the gutter) nor a folio."""
    box = seg.box
    return any(a + TOLERANCE < box.left < b - TOLERANCE and box.right > b for a, b in gutters)


def in_gutter(seg: Segment, gutters: Gutters, others: list[Segment]) -> bool:
    """Whether ``seg`` is a short line standing alone in a gutter (a folio such as ``-2-`` set between
    the columns): at most :data:`GUTTER_CHARS` visible characters, within a gutter, and its
    left edge shared by none of ``others`` (list numbers and side headings hanging into a gutter
    line up with each other: they belong to the column on their right)."""
    middle, box = (seg.box.left + seg.box.right) / 2, seg.box
    inside = any(a + TOLERANCE < middle < b - TOLERANCE and box.left >= a - TOLERANCE and box.right <= b + TOLERANCE
                 for a, b in gutters)
    if seg.chars > GUTTER_CHARS or not inside:
        return False
    return not any(abs(o.box.left - seg.box.left) <= TOLERANCE for o in others if o is not seg)


def hung(flat: list[Segment], floating: list[Segment], gutters: Gutters) -> list[Segment]:
    """``flat`` without the ``floating`` segments, a list number hanging in a gutter (cut from its line
    there, :func:`crosses`) joined again to the text it was cut from."""
    out: list[Segment] = []
    for seg in flat:
        if seg in floating:
            continue
        prev = out[-1] if out else None
        if seg.cut and prev is not None and prev.end == seg.start and zone(prev.box, gutters) % 1:
            box = prev.box.union(seg.box)
            out[-1] = Segment(prev.start, seg.end, box, prev.chars + seg.chars, max(prev.size, seg.size),
                              column_of(box, gutters), prev.cut, prev.text + seg.text)
        else:
            out.append(seg)
    return out
