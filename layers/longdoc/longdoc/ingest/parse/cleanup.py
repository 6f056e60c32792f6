"""PDF text clean-up that does not change meaning: furniture, hyphens, ligatures, page labels.

All functions work on the per-page texts of one PDF *before* they are joined into the
document text, so the cleaned text is the one text every offset refers to (the removed
lines are returned separately and kept on :attr:`ParsedDocument.furniture`).

* **Running headers and footers** (:func:`find_furniture`): a line among the first or last
  :data:`EDGE_LINES` lines of a page is furniture when its *template* (the line with every
  digit run replaced by ``#`` and spaces collapsed) occurs in the same edge window on at
  least half of the pages with text, or on :data:`PARITY_SHARE` of the odd or of the even
  pages (footers that alternate between left- and right-hand pages are one family each),
  and on at least :data:`MIN_REPEATS` pages (a template of 20 characters or more, or of
  the same family with another page label, that carries a number is then removed wherever it
  stands on a page, e.g. below a footnote that PDFium reads first, or a printer's job line set
  mid-page; without a number, or introducing a list, the same words away from the edge are body,
  and a line ending in ``:`` is never furniture: :func:`_clean_page`).
  A footer block set with other line breaks on some pages is removed too
  (:mod:`~longdoc.ingest.parse.rewrap`). Page
  numbers, ``Page 55 of 80``, ``5419/16 AV/NT/sr 163`` + ``DGD 2 EN``, the Federal
  Register's GPO printer lines all fit; a heading or table row that happens to repeat on a
  few pages does not. The same footer printed with page labels of another shape
  (``ii``, ``C-3``) is one family with it (:func:`loose`); and when PDFium runs the last
  body line into a long footer (``... from Soekarno-VerDate Sep<11>2014 ...``), the
  footer is cut off the end of that line and the body text stays.
  A line that reads as a section heading (:func:`heading_number`: ``ARTICLE 7``,
  ``Section 4 - Exclusions``, ``4. Conditions``, ``4.2 Claims``) is furniture only when its
  number is the same on every page it repeats on (a running header naming the current
  section); when the number changes (a document that opens each page with the next
  Article) the lines are headings and stay.
* **Page labels**: :mod:`~longdoc.ingest.parse.page_labels` reads them from the furniture found here.
* **Line-end hyphens**: :mod:`~longdoc.ingest.parse.hyphens`.
* **Ligatures** (:data:`LIGATURES`): the Unicode presentation forms U+FB00-U+FB06
  (``ﬁ`` ``ﬂ`` ``ﬀ`` ``ﬃ`` ``ﬄ`` ``ﬅ`` ``ﬆ``) are spelt out as letters, nothing else.
"""

from __future__ import annotations

import math
import re
from collections import Counter, defaultdict
from dataclasses import dataclass
from itertools import pairwise

from longdoc.ingest.models import Furniture
from longdoc.ingest.parse.bodylines import body_lines, introduces_list
from longdoc.ingest.parse.copies import copy_groups
from longdoc.ingest.parse.rewrap import drop_rewrapped, furniture_runs

EDGE_LINES = 3
"""How many lines at the top and at the bottom of a page may be furniture."""

MIN_REPEATS = 3
"""A template or page-number offset must hold on at least this many pages."""
_ANYWHERE_MIN_CHARS = 20
"""A furniture template this long is also removed away from the page edges."""
BAND_SHARE = 0.25
"""Share of a page's non-blank lines, from the top and from the bottom, where a repeated long line
without a number may be furniture off the edge window (:func:`_clean_page`)."""
PARITY_SHARE = 0.75
"""A template at the edge of this share of the odd (or of the even) pages is furniture: a
footer printed one way on left-hand pages and another way on right-hand ones."""

LIGATURES: dict[int, str] = {
    0xFB00: "ff", 0xFB01: "fi", 0xFB02: "fl", 0xFB03: "ffi", 0xFB04: "ffl", 0xFB05: "st", 0xFB06: "st",
}
"""Unicode alphabetic presentation forms (ligatures) and the letters they stand for."""

_DIGITS = re.compile(r"\d+")
_ROMAN = re.compile(r"^[ivxlc]{1,7}$")
_DASH_FOLIO = re.compile(r"^-\s?\d{1,4}\s?-$")
_SPACES = re.compile(r"\s+")
_SECTION_NUMBER = re.compile(r"^#(?:\.#)+\.?$")
_HEADING = re.compile(
    r"^(?:(?:ARTICLE|Article|SECTION|Section|CHAPTER|Chapter|PART|Part|SCHEDULE|Schedule|CLAUSE|Clause)"
    r"\s+(\d+(?:\.\d+)*)|(\d+\.(?:\d+\.?)*)\s+[^\W\d_])"
)


def template(line: str) -> str:
    """The shape of a line: digit runs as ``#`` with a number at either end dropped (odd and
    even pages print the page number on opposite sides), ``"#"`` for a bare number,
    ``"#r"`` for a lone lower-case roman numeral and ``"-#-"`` for a dashed folio with or without
    spaces inside (``-62-``, ``- 62 -``: one booklet sets its table pages' folios spaced)."""
    line = _SPACES.sub(" ", line.strip())
    if _ROMAN.match(line):
        return "#r"
    if _DASH_FOLIO.match(line):  # -62- and - 62 -: one folio family however a page spaces it
        return "-#-"
    shape = _DIGITS.sub("#", line)
    core = re.sub(r"^#\s+|\s+#$", "", shape)
    return core or "#"


_LABEL_TOKEN = re.compile(r"^(?:(?:[A-Za-z]{1,2}-)?#(?:-#)?|[ivxlc]{1,7}|[Pp]age)$")


def heading_number(line: str) -> str | None:
    """The section number of a line that reads as a numbered heading, else None.

    A heading is a keyword (``ARTICLE``, ``SECTION``, ``CHAPTER``, ``PART``, ``SCHEDULE``,
    ``CLAUSE``, upper case or capitalised) and a number (``Article 17`` -> ``"17"``,
    ``Section 4.2 Fees`` -> ``"4.2"``), or a leading dotted number followed by a word
    (``4. Conditions`` -> ``"4"``, ``4.2 Claims`` -> ``"4.2"``). ``Page 4``, a bare number
    and ``14 days after`` are not headings.
    """
    m = _HEADING.match(_SPACES.sub(" ", line.strip()))
    if not m:
        return None
    return (m.group(1) or m.group(2)).rstrip(".")


def _changing_headings(split: list[list[str]], shapes: set[str]) -> set[str]:
    """The templates among ``shapes`` whose edge lines read as headings with more than one
    section number across the pages (``ARTICLE 1`` .. ``ARTICLE 10``): headings, not furniture."""
    numbers: dict[str, set[str | None]] = defaultdict(set)
    for lines in split:
        for i, _ in _edge_indexes(lines):
            shape = template(lines[i])
            if shape in shapes:
                numbers[shape].add(heading_number(lines[i]))
    return {shape for shape, found in numbers.items() if len(found - {None}) > 1}


def loose(shape: str) -> str:
    """A template without its page-label tokens (``#``, ``C-#``, ``#-#``, ``ii``, ``Page``).

    One running footer printed with differently shaped page labels (``12``, ``ii``,
    ``C-3``, or none on the cover) is one family: ``Proprietary to Bank of America Page 4
    vTIP2010``, ``... C-3 vTIP2010`` and ``... ii vTIP2010`` all become ``Proprietary to
    Bank of America vTIP#``.
    """
    return " ".join(tok for tok in shape.split(" ") if not _LABEL_TOKEN.match(tok))


def _template_regex(shape: str) -> re.Pattern[str]:
    """A pattern that finds a line of template ``shape`` at the *end* of a longer line.

    ``#`` matches a digit run, a space any white space, and the number :func:`template`
    drops at either end may be there or not.
    """
    parts = [re.escape(piece).replace(r"\ ", r"\s+").replace(" ", r"\s+") for piece in shape.split("#")]
    return re.compile(r"(?:\d+\s+)?" + r"\d+".join(parts) + r"(?:\s+\d+)?\s*$")


def _edge_indexes(lines: list[str]) -> list[tuple[int, str]]:
    """Indexes of the first and last :data:`EDGE_LINES` non-blank lines, with their position."""
    filled = [i for i, line in enumerate(lines) if line.strip()]
    top = filled[:EDGE_LINES]
    bottom = [i for i in filled[-EDGE_LINES:] if i not in top]
    return [(i, "header") for i in top] + [(i, "footer") for i in bottom]


def find_furniture(pages: list[str], passes: int = 3) -> tuple[list[str], list[Furniture]]:
    """Remove running headers and footers from page texts, in up to ``passes`` rounds.

    A footer stacked above other footer lines sits outside the edge window until those are
    gone, so detection repeats on the cleaned pages while it still finds something.

    Args:
        pages: the text of each physical page, in order (``"\\n"`` between lines).

    Returns:
        ``(cleaned_pages, furniture)``: the page texts without the furniture lines (blank
        lines left at the page's top or bottom dropped too), and the removed lines with
        their 1-based page and position, in page order. Documents with fewer than
        :data:`MIN_REPEATS` pages with text are returned unchanged.
    """
    runs: list[list[str]] = [[] for _ in pages]
    groups = copy_groups(pages)
    bands = [_Band.of(page.split("\n")) for page in pages]
    cleaned, furniture = _find_furniture_once(pages, runs, groups, bands)
    for _ in range(passes - 1):
        if not furniture:
            break
        again, more = _find_furniture_once(cleaned, runs, groups, bands)
        if not more:
            break
        cleaned, furniture = again, furniture + more
    cleaned, rewrapped = drop_rewrapped(cleaned, runs, MIN_REPEATS)
    return cleaned, sorted(furniture + rewrapped, key=lambda f: f.page)


@dataclass
class _Band:
    """Where a page's head and foot bands are: the first and the last ``size`` non-blank lines of the
    page as read (:func:`band_size`), and which line of the page as it is now (after earlier rounds
    of :func:`find_furniture`) each line was (``origin``: index now -> index as read)."""

    rank: dict[int, int]  # index as read -> distance in non-blank lines from the nearer page edge
    size: int
    origin: list[int]

    @classmethod
    def of(cls, lines: list[str]) -> _Band:
        """The band of a page as read, ``lines`` its lines."""
        filled = [i for i, line in enumerate(lines) if line.strip()]
        rank = {i: min(k, len(filled) - 1 - k) for k, i in enumerate(filled)}
        return cls(rank=rank, size=band_size(len(filled)), origin=list(range(len(lines))))

    def holds(self, index: int) -> bool:
        """Whether line ``index`` of the page as it is now was in the head or foot band as read."""
        return self.rank.get(self.origin[index], 0) < self.size


def band_size(filled: int) -> int:
    """How many non-blank lines at the top and at the bottom of a page of ``filled`` non-blank lines
    form its head and foot bands: :data:`EDGE_LINES`, or :data:`BAND_SHARE` of the page when more."""
    return max(EDGE_LINES, math.ceil(BAND_SHARE * filled))


@dataclass(frozen=True)
class _Templates:
    """The furniture templates of one document, in the three forms a page is matched against."""

    repeating: set[str]  # templates of edge lines that repeat on enough pages
    families: set[str]  # their :func:`loose` forms, for long templates (other page-label shapes)
    tails: list[re.Pattern[str]]  # long templates as a regex for a footer run onto a body line
    placed: set[str]  # the repeating templates found in the bands (removed anywhere when long) ...
    placed_families: set[str]  # ... and their families


def _repeating_templates(split: list[list[str]], groups: list[int], bands: list[_Band]) -> _Templates:
    """The templates of edge lines that repeat on at least half the pages with text (and MIN_REPEATS),
    or on :data:`PARITY_SHARE` of the odd or of the even pages (a footer that alternates).

    On pages that are copies of one another (``groups``: :func:`~longdoc.ingest.parse.copies.copy_groups`)
    a line counts on the first copy only, when it is the same line each time: the lines copies share
    repeat because the page does. A line that changes from copy to copy (a page number) counts on each.

    ``placed`` counts only the edge lines in the head or foot band of the page as read (``bands``), or
    first or last on the page as it is now: a template a later round finds only because the lines
    above it went is never removed away from the edge."""
    pages_with_text = [0, 0]
    seen: set[tuple[int, str]] = set()  # (group, line) counted already
    shapes: list[set[str]] = []
    in_band: list[set[str]] = []
    for index, lines in enumerate(split):
        shapes.append(set())
        in_band.append(set())
        edges = _edge_indexes(lines)
        ends = {edges[0][0], edges[-1][0]} if edges else set()
        for i, _ in edges:
            key = (groups[index], " ".join(lines[i].split()))
            if key not in seen:
                seen.add(key)
                shapes[-1].add(template(lines[i]))
                if i in ends or bands[index].holds(i):
                    in_band[-1].add(template(lines[i]))
        pages_with_text[index % 2] += any(line.strip() for line in lines)
    repeating = _repeating(shapes, pages_with_text)
    repeating -= _changing_headings(split, repeating)
    placed = _repeating(in_band, pages_with_text) & repeating
    families = {loose(t) for t in repeating if len(loose(t)) >= _ANYWHERE_MIN_CHARS}
    tails = [_template_regex(t) for t in repeating if len(t) >= _ANYWHERE_MIN_CHARS]
    return _Templates(repeating, families, tails, placed, {loose(t) for t in placed} & families)


def _repeating(shapes: list[set[str]], pages_with_text: list[int]) -> set[str]:
    """The templates among each page's ``shapes`` on at least half the pages with text (and MIN_REPEATS), or on
    :data:`PARITY_SHARE` of the odd or of the even pages; ``pages_with_text`` counts the even and odd indexes."""
    counts: Counter[str] = Counter()
    by_parity: tuple[Counter[str], Counter[str]] = (Counter(), Counter())
    for index, found in enumerate(shapes):
        counts.update(found)
        by_parity[index % 2].update(found)
    threshold = max(MIN_REPEATS, math.ceil(0.5 * sum(pages_with_text)))
    parity_thresholds = [max(MIN_REPEATS, math.ceil(PARITY_SHARE * n)) for n in pages_with_text]
    # A bare dotted number ("4.2." alone on a line) is a section number, never furniture.
    return {
        t for t, n in counts.items()
        if (n >= threshold or any(c[t] >= m for c, m in zip(by_parity, parity_thresholds, strict=True)))
        and not _SECTION_NUMBER.match(t)
    }


def _edge_drops(number: int, lines: list[str], found: _Templates, furniture: list[Furniture]) -> dict[int, str]:
    """Edge lines of page ``number`` that are furniture (index -> position); cuts footers run onto body lines.

    Two edge lines, next to each other once the furniture between them is left out, that join
    into a long furniture template (``BLUE CROSS | POLICY`` / ``| 16``) are both furniture. A
    footer cut off the end of a body line is appended to ``furniture`` and the line is shortened in
    ``lines`` (in place).
    """
    drop: dict[int, str] = {}
    edges = _edge_indexes(lines)
    for i, pos in edges:
        shape = template(lines[i])
        if shape in found.repeating or loose(shape) in found.families:
            drop[i] = pos
            continue
        for tail in found.tails:  # body text that PDFium ran into the footer on one line
            m = tail.search(lines[i])
            if m and m.start() > 0 and lines[i][: m.start()].strip():
                furniture.append(Furniture(page=number, position=pos, text=m.group().strip()))
                lines[i] = lines[i][: m.start()].rstrip(" ")
                break
    rest = [(i, pos) for i, pos in edges if i not in drop]
    for (i, pos), (j, after) in pairwise(rest):  # a header broken over two lines (furniture between)
        shape = template(f"{lines[i].strip()} {lines[j].strip()}")
        if pos == after and len(shape) >= _ANYWHERE_MIN_CHARS and shape in found.repeating:
            drop[i] = drop[j] = pos
    return drop


def _clean_page(
    number: int, page_lines: list[str], found: _Templates, furniture: list[Furniture], runs: list[str],
    band: _Band,
) -> str:
    """Page ``number``'s text without its furniture lines, which are appended to ``furniture``
    (and their runs of consecutive lines to ``runs``, for :func:`drop_rewrapped`); ``band.origin``
    is updated to the lines kept.

    Position first: a line found at the edge of the page as it is now (after earlier rounds) is
    furniture only when it was in the head or foot band of the page as read (``band``:
    :func:`band_size` lines from either edge) or is stacked onto the furniture at the edge (every line
    between it and the page's edge is furniture), so rounds that peel a stacked footer never eat
    into the body.

    Position and repetition together (issue 27): away from the edge window a repeated long line is
    removed only when it carries a number (a page label, a date, a job number: ``#`` in its
    template), the mark of a printer's line pushed inward, or when it sits in the furniture band
    (the first or last :data:`BAND_SHARE` of the page's lines: a title footer above the folio and a
    redaction notice) or is stacked onto the edge furniture; the same words in the middle of the
    body are body. A line ending with ``:``,
    and the list items after it (:func:`~.bodylines.body_lines`), are never furniture; nor, off the edge, a
    line followed by a list item (:func:`~.bodylines.introduces_list`)."""
    lines = list(page_lines)
    drop = _edge_drops(number, lines, found, furniture)
    body = body_lines(lines)
    drop = _in_band({i: pos for i, pos in drop.items() if i not in body}, lines, band)
    candidates: set[int] = set()
    for i, line in enumerate(lines):  # a long, distinctive one pushed inward by a footnote
        shape = template(line)
        long_furniture = shape in found.placed or loose(shape) in found.placed_families
        if (i not in drop and i not in body and len(shape) >= _ANYWHERE_MIN_CHARS and long_furniture
                and not introduces_list(lines, i)):
            if "#" in shape:
                drop[i] = "header" if i < len(lines) / 2 else "footer"
            else:
                candidates.add(i)
    filled = [i for i, line in enumerate(lines) if line.strip()]
    size = band_size(len(filled))
    for order, position in ((filled, "header"), (filled[::-1], "footer")):
        for rank, i in enumerate(order):  # in the band at the edge, or stacked onto edge furniture
            if i in candidates and band.holds(i) and (rank < size or all(j in drop for j in order[:rank])):
                drop[i] = position
    runs.extend(furniture_runs(lines, set(drop)))
    for i in sorted(drop):
        furniture.append(Furniture(page=number, position=drop[i], text=lines[i].strip()))
    kept = [i for i in range(len(lines)) if i not in drop]
    while kept and not lines[kept[0]]:  # blank lines left at the page's top or bottom go too
        kept.pop(0)
    while kept and not lines[kept[-1]]:
        kept.pop()
    band.origin = [band.origin[i] for i in kept]
    return "\n".join(lines[i] for i in kept)


def _in_band(drop: dict[int, str], lines: list[str], band: _Band) -> dict[int, str]:
    """The entries of ``drop`` (line index -> position) in the head or foot band of the page as read,
    or stacked onto such lines from the page's edge (the docstring of :func:`_clean_page`)."""
    filled = [i for i, line in enumerate(lines) if line.strip()]
    kept: dict[int, str] = {}
    for order in (filled, filled[::-1]):
        stacked = True
        for i in order:
            stacked = stacked and i in drop
            if i in drop and (stacked or band.holds(i)):
                kept[i] = drop[i]
    return kept


def _find_furniture_once(pages: list[str], runs: list[list[str]], groups: list[int],
                         bands: list[_Band]) -> tuple[list[str], list[Furniture]]:
    """One round of :func:`find_furniture`: ``(cleaned pages, furniture found)``; runs added to ``runs``,
    each page's ``bands`` entry updated to the lines kept."""
    split = [page.split("\n") for page in pages]
    with_text = sum(1 for page in pages if page.strip())
    if with_text < MIN_REPEATS:
        return list(pages), []
    found = _repeating_templates(split, groups, bands)
    furniture: list[Furniture] = []
    cleaned = [_clean_page(number, lines, found, furniture, runs[number - 1], bands[number - 1])
               for number, lines in enumerate(split, start=1)]
    return cleaned, furniture
