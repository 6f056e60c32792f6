"""Segments of a page line and the gutters between columns: where a line is cut, which column a piece
belongs to, and which short pieces stand alone in a gutter (folios), for :mod:`.reading` and
:mod:`.layout` alike. Geometry in PDF points, y upwards (see :mod:`.columns`)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from longdoc.ingest.parse.columns import TOLERANCE, Box, same_line

Gutters = list[tuple[float, float]]
MIN_JUMP = 4.0
"""Least white, in points, between two characters of one PDFium line that sit in different columns."""
GUTTER_WHITE = 8.0
"""White, in points, before a character in a gutter that starts a new piece even when the line before
it already reaches into the gutter (wider than a word space up to 14-point type)."""
GUTTER_CHARS = 12
"""Most visible characters of a line standing in a gutter that is read as page furniture (a folio
``-12-``, ``Page 3``), not as column text; also the most a short label may hold that is read where
it stands rather than in content order (an aside's ``TIP`` or ``CAUTION`` icon, :func:`displaced`)."""
FOLIO = re.compile(r"^(?:-\s?\d{1,4}\s?-|[Pp]age\s+\d{1,4}(?:\s+of\s+\d{1,4})?)$")
"""A page number set on its own at a tab stop: ``-24-``, ``- 24 -``, ``Page 24``, ``Page 3 of 9``. A bare
number is not taken: at a tab stop it is as often a contents line's page or a table's last cell."""
BAND_WHITE = 1.5
"""White between a page's lowest line and the text above it, in heights of that line, over which the
line is a foot band (the white between two lines of one paragraph is under half a line; a paragraph
break adds about one line; set on the 2017 IRS Form 1040 instructions, whose footer sits 1.7 line
heights under a tax table, checked on the 2018 edition)."""
TAB_GAP = 24.0
"""White, in points, between two characters (or words) of one line that makes them two pieces set at
tab stops (a third of an inch: wider than any word space of justified text up to 12-point type, which
stays under one em). A running footer ``-21-`` .......... ``Need more information or forms?`` is two
pieces; in the page's head and foot bands each piece is a line of its own (:attr:`Segment.pieces`)."""


@dataclass
class Segment:
    """Characters ``start..end`` (PDFium char indexes, end exclusive) on one visual line: their box,
    count of visible characters, largest type size (points), column (-1: spanning), whether it was
    cut from the previous segment at a gutter, its text (without line-break characters), and the texts
    of its pieces when white of at least :data:`TAB_GAP` points parts it (``()`` for one piece)."""

    start: int
    end: int
    box: Box
    chars: int = 0
    size: float = 0.0
    column: int = -1
    cut: bool = False
    text: str = field(default="", repr=False)
    pieces: tuple[str, ...] = field(default=(), repr=False)

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
                              column_of(box, gutters), prev.cut, prev.text + seg.text, joined_pieces(prev, seg))
        else:
            out.append(seg)
    return out


def joined_pieces(first: Segment, second: Segment) -> tuple[str, ...]:
    """The :attr:`Segment.pieces` of ``first`` and ``second`` joined into one segment (``second`` right
    of ``first`` on one line): each side's pieces, the touching two fused unless :data:`TAB_GAP`
    points of white part them; ``()`` when the joined segment is one piece."""
    left, right = list(first.pieces or (first.text,)), list(second.pieces or (second.text,))
    if second.box.left - first.box.right < TAB_GAP:
        left[-1] += right.pop(0)
    out = tuple(p for p in left + right if p.strip())
    return out if len(out) > 1 else ()


def foot_band(segs: list[Segment]) -> list[Segment]:
    """The segments of a page's foot band: the lowest visual line, when white of more than
    :data:`BAND_WHITE` times its height parts it from every other segment above it (a running footer
    ``-21-  Need more information or forms?`` set under the columns, one piece under one column and
    one under another); ``[]`` when the lowest line sits close under the text (a column's last line)."""
    if len(segs) < 2:
        return []
    lowest = min(segs, key=lambda s: s.middle)
    band = [s for s in segs if same_line(s.box, lowest.box)]
    rest = [s for s in segs if s not in band]
    if not rest:
        return []
    top = max(s.box.top for s in band)
    height = max(s.box.height for s in band)
    white = min(s.box.bottom for s in rest) - top
    return band if white > BAND_WHITE * height else []


def band_lines(seg: Segment) -> list[str]:
    """A head- or foot-band line's text as lines: one per piece (:attr:`Segment.pieces`) when one of
    them is a page number (:data:`FOLIO`), else the whole line; stripped."""
    pieces = [p.strip(" ") for p in seg.pieces if p.strip(" ")]
    if any(FOLIO.match(p) for p in pieces):
        return pieces
    return [seg.text.strip(" ")] if seg.text.strip(" ") else []


def displaced(seg: Segment, before: Segment) -> bool:
    """Whether ``seg``, coming after ``before`` in content order, is a short label drawn out of place:
    at most :data:`GUTTER_CHARS` visible characters and wholly above ``before`` (an aside's icon,
    ``TIP`` or ``CAUTION`` over ``!``, drawn after the column's text, which would otherwise land at
    the column's foot, inside the sentence that runs on into the next column)."""
    return seg.chars <= GUTTER_CHARS and seg.box.bottom >= before.box.top


def in_reading_order(segs: list[Segment]) -> list[Segment]:
    """One column block's segments in content order (``start``), except short labels drawn out of
    place (:func:`displaced`), which go where they stand (:func:`_label_at`). A label stacked on or
    under a moved one (``!`` over ``CAUTION``: overlapping it across, within one line height) moves with it."""
    ordered = sorted(segs, key=lambda s: s.start)
    kept: list[Segment] = []
    groups: list[list[Segment]] = []
    for seg in ordered:
        group = groups[-1] if groups else None
        if group is not None and _stacked(group[-1], seg) and (not kept or group[-1].start > kept[-1].start):
            group.append(seg)
        elif kept and displaced(seg, kept[-1]):
            groups.append([seg])
        else:
            kept.append(seg)
    for group in groups:
        box = group[0].box
        for seg in group[1:]:
            box = box.union(seg.box)
        at = _label_at(kept, box)
        kept[at:at] = group
    return kept


def _label_at(lines: list[Segment], box: Box) -> int:
    """Where a label with ``box`` goes among a block's ``lines``: before the first line of the aside
    beside it (the lines right of it that it overlaps in height, and the adjacent lines above them
    that start right of it too: the icon sits at an aside's middle, the aside starts above it);
    without such lines, before the first line that is not wholly above it."""
    beside = [i for i, s in enumerate(lines) if s.box.left >= box.right - TOLERANCE
              and min(s.box.top, box.top) > max(s.box.bottom, box.bottom)]
    if not beside:
        return next((i for i, s in enumerate(lines) if s.box.bottom < box.top), len(lines))
    at = beside[0]
    while at > 0:
        above, line = lines[at - 1].box, lines[at].box
        if above.left < box.right - TOLERANCE or not 0 <= above.bottom - line.top <= line.height:
            break
        at -= 1
    return at


def _stacked(one: Segment, other: Segment) -> bool:
    """Whether ``other`` is a short label right over or under ``one`` (overlapping it across, within one
    of the taller one's heights): the two parts of one icon."""
    across = min(one.box.right, other.box.right) - max(one.box.left, other.box.left) > 0
    white = max(one.box.bottom - other.box.top, other.box.bottom - one.box.top)
    return other.chars <= GUTTER_CHARS and across and white <= max(one.box.height, other.box.height) + TOLERANCE
