"""The headings pass: find section headings line by line with an ordered list of recognisers.

Each line (read without its indentation, and without the borders of an ASCII box of
``*``) goes through :data:`RECOGNISERS` in order; the first one that takes the line
decides it, either by recording a heading or by ruling the line out (a blank or list
line, a line inside a paragraph, a contents entry). The recognisers share one scan
state: the headings so far and where the numbering stands (:class:`Numbering`).

Rules, in recogniser order: a heading the format marks (HTML, DOCX) is always one, numbered
when it starts with a number or keyword. A line the format marks as a list item is never
one. In a preamble that has a ``Whereas`` line, ``(1)``, ``(2)``, ... paragraphs in sequence
are recitals (``Recital 1``). Any other heading must start a paragraph (the previous line is
blank, short, or ends a sentence) and must not read as a contents entry (ending in a page
number); the line after a bare keyword heading's title line always starts one (``Article
13`` / a title that fills its line / ``1. Where ...``). Then: Markdown ``#`` headings;
inside a numbered section, ``(a)``/``(i)``/``(A)``/``(1)`` items in sequence, cited the way
lawyers cite them (``4.2(a)``, ``4.2(a)(ii)``); keyword headings (``Article 17``, ``Section
3.2``, ``CHAPTER IV``, ``Schedule 2``), unless a cross-reference (``Section 3.2 of this
Agreement``, a statute's ``Section 19-28.1-14 of the ... Act``, a list ``Section 9.3
(generally regarding ...), Section 11 ...``); continental headings (``§ 3``, ``Art. 5``,
``Article 1er``, ``Cláusula Primera``: :mod:`~longdoc.ingest.chunk.continental`), whose
``(1)``/``1.`` paragraphs are items (``§ 3(2)``); bare numbers that fit the numbering
sequence and read as a heading (:func:`~longdoc.ingest.chunk.numbering.numbered_heading`);
and under an ``Article``/``Section N`` heading, numbered paragraphs ``1.``, ``2.`` as items
(``Article 33(1)``, and their points ``Article 33(3)(a)``).

In text whose paragraphs are separated by blank lines (every format but PDF), two or more
title-like numbered lines in a row with no text between them are a list (``1. Hardware``
/ ``2. Software``, or a contents page without page numbers), never headings. When the
format numbers paragraphs itself (Word's list numbering), only those numbers are section
numbers, title or not. Finally, runs of three or more Schedule/Exhibit/Annex headings
within a line or two are a list of schedules and are dropped.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field, replace

from longdoc.core.text import roman_to_int
from longdoc.ingest.chunk.continental import continental_heading
from longdoc.ingest.chunk.joints import LIST_LEAD_RE, LIST_START_RE, SENTENCE_END
from longdoc.ingest.chunk.numbering import (
    NUMERIC_RE,
    TOC_RE,
    dotted_numbers,
    first_child_line,
    heading_label,
    item_step,
    next_line_numbers,
    numbered_heading,
    parse_number,
    restart_in_other_style,
    table_row_of_dotted,
    toc_entry,
)
from longdoc.ingest.chunk.state import ChunkingState, Heading, Numbering

_KEYWORD_LEVEL = {
    "part": 1, "chapter": 1, "schedule": 1, "exhibit": 1, "annex": 1, "appendix": 1,
    "section": 2, "article": 3,
}
_NUMBER_WORDS = ["one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven", "twelve", "thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen", "nineteen", "twenty"]
_NUMBER_WORD = "|".join(f"{w.title()}|{w.upper()}" for w in reversed(_NUMBER_WORDS))
"""``PART ONE`` ... ``PART TWENTY`` (title or upper case only: ``Part one of ...`` is prose); longest first."""
_KEYWORD_RE = re.compile(
    r"^(?P<kw>PART|Part|CHAPTER|Chapter|SCHEDULE|Schedule|EXHIBIT|Exhibit|ANNEX|Annex|"
    r"APPENDIX|Appendix|SECTION|Section|ARTICLE|Article)\s+"
    # a statute's compound number ("Section 19-28.1-14 of the ... Act") is read whole
    rf"(?P<num>\d+[A-Za-z]?(?:\.\d+)*(?:[-–]\d+(?:\.\d+)*)*|[IVXLC]+(?:\.\d+)*|{_NUMBER_WORD}|[A-Z])"
    r"(?![\w.]*\w)(?!\()[.)]?"
    r"(?P<rest>\s*[:.\-–—]?\s*.*)$"
)
_BOX_RE = re.compile(r"^\*\s+(.*?)\s*\*$")
_RECITAL_RE = re.compile(r"^\((\d{1,3})\)(?:\s+[A-Z“\"]|$)")
_MD_RE = re.compile(r"^(?P<hashes>#{1,6})\s+(?P<rest>\S.*)$")
_ITEM_RE = re.compile(
    r"^\(\s?(?P<tok>[a-z]{1,2}|[ivxlc]{2,6}|[A-Z]{1,2}|[IVXLC]{2,6}|\d{1,2})\s?\)"
    r"(?:\s+(?P<rest>\S.*)|(?P<tight>[A-Z\"“].*))?$"  # "(c)The limitations": PDF text may drop the space
)
_PARA_RE = re.compile(r"^(?P<tok>\d{1,2})\.\s+(?P<rest>\S.*)$")
_LONG_LINE = 300  # chars: a whole paragraph on one line, no recital or Markdown heading
_LISTING_KINDS = ("Schedule ", "Exhibit ", "Annex ", "Appendix ", "Attachment ")
_LISTING_GAP = 200  # characters: an entry of a list of schedules, not a schedule's own text


@dataclass
class _Line:
    """One line as the recognisers see it: stripped, without a box's borders."""

    no: int  # line number in the text, from 0
    start: int  # where its text starts (after indentation; a boxed line: the box's top)
    end: int  # where the line ends (before its newline)
    text: str
    previous: str  # the line before, stripped the same way ("" when blank)

    @property
    def long(self) -> bool:
        """A whole paragraph on one line."""
        return len(self.text) > _LONG_LINE


@dataclass
class _Scan:
    """The heading scan's state: the chunking inputs, the headings so far, where the numbering stands."""

    state: ChunkingState
    line_numbers: set[tuple[int, ...]]  # every number that starts a line of the document
    headings: list[Heading] = field(default_factory=list)
    num: Numbering = field(default_factory=Numbering)
    whereas: bool = False  # the preamble has a "Whereas" line: (1), (2), ... are recitals
    last_recital: int = 0
    list_depth: int = 0  # a run of numbered list lines: their depth ...
    list_last: int = -2  # ... and the line number of the last one
    box_top: int | None = None  # start of the top border of the box being read
    prev: str = ""  # the previous line, stripped
    last_text: str = ""  # the last non-blank line before this one, stripped (blank-line formats too)
    bare_keyword_no: int = -2  # line number of the last keyword heading without a title on its line
    dotted_numbers: set[str] = field(default_factory=set)  # top-level numbers some line writes "N. Title"
    next_numbers: list[tuple[int, ...] | None] = field(default_factory=list)  # per line: the next line's number


Recogniser = Callable[[_Scan, _Line], bool]
"""Decides a line when it returns True (a heading recorded, or the line ruled out)."""


def _keyword_id(kw: str, num: str) -> str:
    """The section id of a keyword heading: ``Article 17``, ``Chapter IV`` (roman numerals upper case),
    ``Part Two`` (a number word title-cased)."""
    return f"{kw.capitalize()} {num.upper() if roman_to_int(num) else num.title() if num.lower() in _NUMBER_WORDS else num}"


def _marked(scan: _Scan, line: _Line) -> bool:
    """A heading the format marks (HTML ``<hN>``, DOCX heading style): number or keyword id."""
    level = scan.state.marks.get(line.start)
    if level is None or not line.text:
        return False
    section_id = None
    k = _KEYWORD_RE.match(line.text)
    n = None if k else re.match(r"^(\d{1,3}(?:\.\d{1,3}){0,4})(?:\.|\s|$)", line.text)
    if k:
        section_id = _keyword_id(k.group("kw"), k.group("num"))
    elif n:
        section_id = n.group(1)
    scan.headings.append(Heading(line.start, line.end, section_id, line.text[:100], level))
    number = re.match(r"\d+(?:\.\d+)*", section_id or "")
    keyword_parent = bool(section_id and re.fullmatch(r"(?:Article|Section) \d+[A-Z]?", section_id))
    scan.num = Numbering(parse_number(number.group()) if number else scan.num.last, section_id, keyword_parent)
    return True


def _blank_or_listed(scan: _Scan, line: _Line) -> bool:
    """A blank line, or one the format marks as a list item: never a heading."""
    return not line.text or line.start in scan.state.list_lines


def _recital(scan: _Scan, line: _Line) -> bool:
    """``(1)``, ``(2)``, ... in sequence in a preamble that has a ``Whereas`` line: ``Recital 1``."""
    if not scan.headings and re.match(r"^whereas\b", line.text, re.IGNORECASE):
        scan.whereas = True
    in_recitals = scan.whereas and (not scan.headings or (scan.headings[-1].section_id or "").startswith("Recital"))
    recital = _RECITAL_RE.match(line.text) if in_recitals and not line.long else None
    if not recital or int(recital.group(1)) != scan.last_recital + 1:
        return False
    scan.last_recital += 1
    scan.headings.append(Heading(line.start, line.end, f"Recital {scan.last_recital}", f"({scan.last_recital})", 2))
    scan.num = replace(scan.num, parent=None, items=())
    return True


def _inside_paragraph_or_contents(scan: _Scan, line: _Line) -> bool:
    """A line that continues a paragraph, or a contents entry ending in a page number: never a heading."""
    previous, text, typical = line.previous, line.text, scan.state.typical_line
    starts_paragraph = (
        not previous
        or line.no == scan.bare_keyword_no + 2  # after "Article 13" and its title line
        or previous.endswith(SENTENCE_END)
        or len(previous) < 0.75 * typical
        or bool(scan.headings and scan.headings[-1].line_no == line.no - 1  # a numbered heading's first child
                and first_child_line(text, scan.headings[-1].section_id))
        or bool(LIST_START_RE.match(text) and LIST_LEAD_RE.search(previous))  # "(b) ...; or"
    )
    if not starts_paragraph:
        return True
    # "Article 5" alone is a heading, not a contents entry
    bare_keyword = re.fullmatch(r"(?:[A-Za-zÀ-ÿ]+\.?\s+|§\s*)(?:\d+[A-Za-z]?|[IVXLC]+)\.?", text)
    return bool(TOC_RE.search(text) and len(text) < typical and not bare_keyword and toc_entry(text))


def _markdown(scan: _Scan, line: _Line) -> bool:
    """A Markdown ``#`` heading (Markdown documents only), numbered when its title starts with a number."""
    m = _MD_RE.match(line.text) if scan.state.markdown and not line.long else None
    if not m:
        return False
    title = m.group("rest").strip()
    num = re.match(r"^(\d+(?:\.\d+)*)\.?\s", title + " ")
    keyword = None if num else _KEYWORD_RE.match(title)  # "# PART 2 - Fees": Part 2, not the id above it
    section_id = num.group(1) if num else _keyword_id(keyword.group("kw"), keyword.group("num")) if keyword else None
    scan.headings.append(Heading(line.start, line.end, section_id, title[:100], len(m.group("hashes"))))
    scan.num = Numbering(parse_number(num.group(1)) if num else scan.num.last, section_id)
    return True


def _item(scan: _Scan, line: _Line) -> bool:
    """An ``(a)``/``(i)``/``(A)``/``(1)`` item inside a section, a sub-section when in sequence: ``4.2(a)``."""
    parent = scan.num.parent
    item = _ITEM_RE.match(line.text) if parent else None
    if not parent or not item:
        return False
    step = item_step(scan.num.items, item.group("tok"))
    if step is not None:  # out of sequence: body text
        scan.num = replace(scan.num, items=tuple(step))
        section_id = parent + "".join(f"({t})" for _, _, t in step)
        scan.headings.append(Heading(line.start, line.end, section_id, heading_label(line.text), 100 + len(step),
                                     item=True, marker_only=not (item.group("rest") or item.group("tight"))))
    return True


def _keyword(scan: _Scan, line: _Line) -> bool:
    """``Article 17``, ``Section 3.2``, ``CHAPTER IV``, ``Schedule 2``: a heading unless a cross-reference."""
    m = _KEYWORD_RE.match(line.text)
    if not m:
        return False
    rest = m.group("rest").strip(" :.-–—")
    if rest and not (rest[0].isupper() or rest[0].isdigit() or rest[0] in "\"“(["):
        return True  # "Section 3.2 of this Agreement ..." is a cross-reference
    if re.match(r"[(\[][a-z]{3}", rest):
        return True  # "Section 9.3 (generally regarding trademarks), Section 11 ...": a list of references
    kw, num = m.group("kw").lower(), m.group("num")
    section_id = _keyword_id(kw, num)
    scan.headings.append(Heading(line.start, line.end, section_id, heading_label(line.text), _KEYWORD_LEVEL[kw]))
    keyword_parent = kw in ("article", "section") and bool(re.fullmatch(r"\d+[A-Za-z]?", num))
    scan.num = Numbering(_keyword_number(kw, num, scan.num.last), section_id, keyword_parent)
    if not rest:
        scan.bare_keyword_no = line.no
    return True


def _continental(scan: _Scan, line: _Line) -> bool:
    """``§ 3``, ``Art. 5``, ``Article 1er``, ``Cláusula Primera``: a section whose paragraphs are items.

    See :mod:`~longdoc.ingest.chunk.continental`; its paragraphs ``(1)`` / ``1.`` cite as
    ``§ 3(2)``. A citation (``§ 3 Abs. 2 BGB ...``) is ruled out as body text.
    """
    found = continental_heading(line.text)
    if found is None:
        return False
    scan.headings.append(Heading(line.start, line.end, found.section_id, heading_label(line.text), 3))
    scan.num = Numbering((found.value,), found.section_id, keyword_parent=True)
    if not found.rest:
        scan.bare_keyword_no = line.no
    return True


def _keyword_number(kw: str, num: str, last: tuple[int, ...] | None) -> tuple[int, ...] | None:
    """The numbering after a keyword heading: ``Article 5`` is number 5, ``Section 3.2`` is 3.2."""
    if kw in ("article", "section") and num.isdigit():
        return (int(num),)
    if kw == "section" and re.fullmatch(r"\d+(\.\d+)+", num):
        return parse_number(num)
    return last


def _numbered(scan: _Scan, line: _Line) -> bool:
    """``4.2 Title``: a bare number that fits the sequence and reads as a heading (not a list entry)."""
    numbered_lines = scan.state.numbered_lines
    trusted = line.start in numbered_lines
    if numbered_lines and not trusted:
        # When the format numbers the clauses itself, a number it did not give (typed, or
        # from another list inside a clause) is no clause number.
        return False
    found = numbered_heading(line.text, scan.num.last, trusted, scan.line_numbers, scan.next_numbers[line.no])
    if found is None:
        return False
    cand, section_id, titled = found
    if not trusted and len(cand) == 1 and (section_id in scan.dotted_numbers or cand == (1,)):
        tops = [(h.label, h.level) for h in scan.headings if h.level < 4 or h.level == 4 and not h.item
                and h.section_id and h.section_id.isdigit()]  # built only for these rare lines: O(headings)
        if section_id in scan.dotted_numbers and table_row_of_dotted(line.text, [t for t, lv in tops if lv == 4],
                                                                      scan.dotted_numbers) or restart_in_other_style(
                line.text, cand, scan.num.last, tops, scan.last_text, scan.next_numbers[line.no]):
            return False
    if scan.state.blank_line_paragraphs and not trusted and titled and _list_entry(scan, line, cand):
        return True
    scan.headings.append(Heading(line.start, line.end, section_id, heading_label(line.text), 3 + len(cand),
                                 line_no=line.no, titled=titled, state_before=scan.num))
    scan.num = Numbering(cand, section_id)
    return True


def _list_entry(scan: _Scan, line: _Line, cand: tuple[int, ...]) -> bool:
    """Whether a titled number on this line is an entry of a list (then the heading before it is too)."""
    if len(cand) == scan.list_depth and line.no == scan.list_last + 1:
        scan.list_last = line.no  # the list goes on
        return True
    before = scan.headings[-1] if scan.headings else None
    if (before is None or before.state_before is None or not before.titled
            or before.line_no != line.no - 1 or before.level != 3 + len(cand)):
        return False
    # two numbered titles on consecutive lines, nothing between: a list, not headings
    scan.headings.pop()
    scan.num = before.state_before
    scan.list_depth, scan.list_last = len(cand), line.no
    return True


def _numbered_paragraph(scan: _Scan, line: _Line) -> bool:
    """``1.   In the case of ...`` under ``Article 33``: the item ``Article 33(1)``.

    Once ``(a)``-style items are open, ``1.`` lines are a list inside an item: body text.
    """
    num = scan.num
    if not (num.parent and num.keyword_parent and (not num.items or num.items[0][0] == "digit")):
        return False
    para = _PARA_RE.match(line.text)
    step = item_step(num.items, para.group("tok")) if para else None
    if para is None or step is None or len(step) != 1:
        return False
    scan.num = replace(num, items=tuple(step))
    scan.headings.append(Heading(line.start, line.end, f"{num.parent}({para.group('tok')})",
                                 heading_label(line.text), 101, item=True))
    return True


RECOGNISERS: tuple[Recogniser, ...] = (
    _marked,
    _blank_or_listed,
    _recital,
    _inside_paragraph_or_contents,
    _markdown,
    _item,
    _keyword,
    _continental,
    _numbered,
    _numbered_paragraph,
)
"""The heading recognisers in the order they see a line; the first that returns True decides it."""


def _read_line(scan: _Scan, no: int, raw: str, line_start: int) -> _Line | None:
    """The line as the recognisers see it; None for a box border or an empty box line."""
    stripped = raw.strip()
    boxed = _BOX_RE.match(stripped)
    border = set(stripped) == {"*"}
    if boxed:
        stripped = boxed.group(1).strip()
    elif border:
        stripped = ""
    previous, scan.prev = scan.prev, stripped
    scan.last_text = previous or scan.last_text
    lead = len(raw) - len(raw.lstrip())
    if boxed or border:
        if not stripped:  # a box border or an empty box line: a heading may start the box
            scan.box_top = line_start if scan.box_top is None else scan.box_top
            return None
        lead = (scan.box_top if scan.box_top is not None else line_start) - line_start
    scan.box_top = None
    return _Line(no, line_start + lead, line_start + len(raw), stripped, previous)


def find_headings(state: ChunkingState) -> None:
    """Pass 1 (headings): every line through :data:`RECOGNISERS`; writes ``state.headings`` in text order."""
    lines = state.text.split("\n")
    line_numbers = {parse_number(m.group("num")) for m in (NUMERIC_RE.match(ln.strip()) for ln in lines) if m}
    scan = _Scan(state, line_numbers)
    scan.dotted_numbers = dotted_numbers(lines)
    scan.next_numbers = next_line_numbers(lines)
    pos = 0
    for no, raw in enumerate(lines):
        line = _read_line(scan, no, raw, pos)
        pos += len(raw) + 1
        if line is None:
            continue
        for recognise in RECOGNISERS:
            if recognise(scan, line):
                break
    state.headings = _drop_listings(scan.headings)


def _drop_listings(headings: list[Heading]) -> list[Heading]:
    """Remove runs of three or more Schedule/Exhibit/Annex headings that follow each other
    within a line or two: that is a contents page or a list of schedules, and taking its
    entries for headings would put the whole contract under the last schedule listed."""
    keep = [True] * len(headings)
    i = 0
    while i < len(headings):
        j = i
        while (
            j + 1 < len(headings)
            and (headings[j].section_id or "").startswith(_LISTING_KINDS)
            and (headings[j + 1].section_id or "").startswith(_LISTING_KINDS)
            and headings[j + 1].line_start - headings[j].line_start < _LISTING_GAP
        ):
            j += 1
        if j - i >= 2:
            for k in range(i, j + 1):
                keep[k] = False
        i = j + 1
    return [h for h, kept in zip(headings, keep, strict=True) if kept]
