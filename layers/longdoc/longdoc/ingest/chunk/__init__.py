"""Section-aware chunking: split a document at its real joints.

Boundary precedence: numbered section, then paragraph, then sentence. A chunk never
ends mid-sentence and never holds part of one section together with part of another;
several small *whole* sections may share a chunk. A section longer than the target is
split at paragraph (then sentence) boundaries and keeps its number with a suffix
(``4.2#1``, ``4.2#2``); each continuation starts with an overlap of whole sentences
from the same section (10-20% of the target, :attr:`Settings.chunk_overlap`). When the
sentence before a cut is itself over 20% of the target, the cut moves to the nearest
sentence or paragraph start that leaves room for such an overlap; a continuation is
flagged ``overlap_missing`` only when every sentence around its cut is over 20%.

Section detection: ``4`` / ``4.2`` / ``4.2.1`` numbered headings, ``Section 3.2``,
``Article 17``, ``ARTICLE IV``, ``Chapter``/``Part``/``Schedule``/``Exhibit``/``Annex``
keyword headings, and Markdown ``#`` headings. A bare number only starts a section when it
fits the document's numbering sequence and reads as a heading, so a body line such as
``14 days after the leak`` is never section 14. Inside a numbered section, ``(a)``-style
items in sequence are sub-sections (``4.2(a)``, ``4.2(a)(ii)``), and numbered paragraphs
under an ``Article``/``Section N`` heading too (``Article 33(3)(a)``); an item is one
paragraph, and text after the last item is the section's own again (its flush text).
"""

from __future__ import annotations

import bisect
import hashlib
import re
from collections.abc import Callable
from dataclasses import dataclass, field

from longdoc.core.text import roman_to_int, sentence_breaks, trim_span
from longdoc.core.tokens import CHARS_PER_TOKEN, estimate_tokens
from longdoc.core.models import Chunk, DocumentMetadata, PageSpan, SectionSpan
from longdoc.ingest.models import ParsedDocument

_KEYWORD_LEVEL = {
    "part": 1, "chapter": 1, "schedule": 1, "exhibit": 1, "annex": 1, "appendix": 1,
    "section": 2, "article": 3,
}
_KEYWORD_RE = re.compile(
    r"^(?P<kw>PART|Part|CHAPTER|Chapter|SCHEDULE|Schedule|EXHIBIT|Exhibit|ANNEX|Annex|"
    r"APPENDIX|Appendix|SECTION|Section|ARTICLE|Article)\s+"
    r"(?P<num>\d+[A-Za-z]?(?:\.\d+)*|[IVXLC]+(?:\.\d+)*|[A-Z])(?![\w.]*\w)(?!\()\.?"
    r"(?P<rest>\s*[:.\-–—]?\s*.*)$"
)
# "4.2 Title", "4.2. Title", "4.2" alone, and "1.Title" (PDF text often drops the space after the dot).
_NUMERIC_RE = re.compile(
    r"^(?P<num>\d{1,3}(?:\.\d{1,3}){0,4})(?:(?P<dot>\.?)(?:\s+(?P<rest>.*))?|\.(?P<tight>[A-Z“\"].*))$"
)
_BOX_RE = re.compile(r"^\*\s+(.*?)\s*\*$")
_RECITAL_RE = re.compile(r"^\((\d{1,3})\)(?:\s+[A-Z“\"]|$)")
_MD_RE = re.compile(r"^(?P<hashes>#{1,6})\s+(?P<rest>\S.*)$")
# List items: (a) (ii) (A) (12), bullets, "3. ", "a) ". Not "(DPC)": an acronym in brackets
# that starts a wrapped line is the middle of a sentence.
_LIST_START_RE = re.compile(
    r"^\s*(?:\((?:[a-z]{1,2}|[ivxlc]{1,6}|[A-Z]|\d{1,3})\)|[•●▪◦·\-–]\s|\d{1,3}\.\s|[a-z]\)\s)"
)
_BULLET_START_RE = re.compile(r"^\s*[•●▪◦·\-–]\s")
_LIST_LEAD_RE = re.compile(r"(?:[.:;!?]|\band|\bor|\band/or|\bbut)[\"'”’)\]]*$", re.IGNORECASE)
"""A line that may precede a list item: it closes a clause, or ends "; and" / "; or"."""
_CLAUSE_END_RE = re.compile(r"[.;:!?][\"'”’)\]]*$")
MAX_OVERLAP = 0.20
"""Upper bound of the overlap share of the target (the issue's 10-20 % range)."""
MIN_OVERLAP = 0.10
"""Lower bound of that range: a cut moved to make room for overlap must give at least this."""

@dataclass
class _Heading:
    line_start: int
    body_start: int  # where the heading's own line ends (body may continue on the same line)
    section_id: str | None
    label: str
    level: int
    item: bool = False  # an (a)-style item or a numbered paragraph of its parent section
    marker_only: bool = False  # the item's line is just its marker ("(a)"), its text follows
    line_no: int = -1  # the heading's line number in the text
    titled: bool = False  # a numbered heading whose title reads as one ("4.2 Escape of water")
    state_before: tuple | None = None  # scanner state before a numbered heading, to undo it


@dataclass
class _Section:
    section_id: str | None
    heading_path: list[str]
    start: int
    end: int
    item_of: str | None = None  # the enclosing section's id, for an item
    flush: bool = False  # text of a section after its last item: its parts number on


@dataclass
class _Draft:
    start: int
    end: int
    sections: list[_Section] = field(default_factory=list)
    section_id: str | None = None
    oversize: bool = False
    overlap_chars: int = 0
    overlap_missing: bool = False


def _label(line: str) -> str:
    """A heading's label for ``heading_path``: the number and title, without inline body text."""
    if len(line) <= 60:
        return line
    m = re.match(r"^(.{4,80}?[.:])(?=\s|$)", line)
    return m.group(1) if m else line[:80].rstrip()


def _title_like(rest: str) -> bool:
    """Whether text after a number reads as a heading title (short, capitalised words)."""
    rest = rest.strip()
    if not rest:
        return True
    if not (rest[0].isupper() or rest[0] in "\"“'‘("):
        return False
    head = re.split(r"[.:;]\s|[.:;]$", rest, maxsplit=1)[0].strip(" .:;\"“”")
    words = head.split()
    if not words or len(words) > 10:
        return False
    if head.isupper():
        return True
    content = [w for w in words if len(w) > 3]
    if not content:
        return True
    capitalised = sum(1 for w in content if w[0].isupper() or w[0] in "\"“(")
    return capitalised / len(content) >= 0.6


def _parse_number(num: str) -> tuple[int, ...]:
    return tuple(int(p) for p in num.split("."))


def _plausible_next(prev: tuple[int, ...] | None, cand: tuple[int, ...]) -> tuple[bool, bool]:
    """Return ``(plausible, exact)``: can ``cand`` follow ``prev`` in a numbering sequence?

    ``exact`` is True for the immediate successor (4.2 -> 4.3, 4.2 -> 5, 4.2 -> 4.2.1).
    A gap of up to two numbers (deleted or reserved sections) is plausible but not exact.
    """
    if prev is None:
        return cand[0] <= 1 and all(p <= 1 for p in cand[1:]), cand[0] <= 1
    if cand[: len(prev)] == prev and len(cand) == len(prev) + 1 and cand[-1] in (0, 1):
        return True, True
    for i in range(min(len(prev), len(cand))):
        if cand[:i] != prev[:i]:
            break
        step = cand[i] - prev[i]
        tail_ok = all(p in (0, 1) for p in cand[i + 1 :])
        if 1 <= step <= 3 and tail_ok:
            return True, step == 1
    return False, False


_TOC_RE = re.compile(r"(?:\.{3,}|…+|\s)\s*(?:\d{1,4}|[ivxlc]{1,6})$")


_ITEM_RE = re.compile(
    r"^\(\s?(?P<tok>[a-z]{1,2}|[ivxlc]{2,6}|[A-Z]{1,2}|[IVXLC]{2,6}|\d{1,2})\s?\)"
    r"(?:\s+(?P<rest>\S.*)|(?P<tight>[A-Z\"“].*))?$"  # "(c)The limitations": PDF text may drop the space
)
_PARA_RE = re.compile(r"^(?P<tok>\d{1,2})\.\s+(?P<rest>\S.*)$")
_MAX_ITEM_DEPTH = 4


def _item_readings(token: str) -> list[tuple[str, int]]:
    """Every way to read an item token: ``"c"`` -> letter 3 or roman 100, ``"ii"`` -> roman 2,
    ``"aa"`` -> letter 27, ``"4"`` -> 4. Letters double after ``z`` as Word and drafters do."""
    if token.isdigit():
        return [("digit", int(token))]
    upper = token.isupper()
    out: list[tuple[str, int]] = []
    if len(token) == 1 or (len(token) == 2 and token[0] == token[1]):
        out.append(("upper" if upper else "lower", (ord(token[0].lower()) - 96) + 26 * (len(token) - 1)))
    value = roman_to_int(token)
    if value:
        out.append(("upper_roman" if upper else "roman", value))
    return out


def _item_step(stack: list[tuple[str, int, str]], token: str) -> list[tuple[str, int, str]] | None:
    """The item stack after an item ``(token)``, or None when it does not fit the sequence.

    ``stack`` holds ``(kind, value, token)`` from the outermost item inwards. An item is
    the exact successor of an open item of its kind (closing any deeper ones) or, when it
    is the first of a kind (``(a)``, ``(i)``, ``(A)``, ``(1)``): one level deeper when
    that kind is not open, else a new list in place of the open one (the definitions of a
    section each with their own ``(a)``, ``(b)``). ``(i)`` after ``(h)`` is the letter;
    anywhere else it opens a roman list.
    """
    readings = _item_readings(token)
    for depth in range(len(stack) - 1, -1, -1):
        kind, value, _ = stack[depth]
        for reading, number in readings:
            if reading == kind and number == value + 1:
                return [*stack[:depth], (kind, number, token)]
    for reading, number in readings:
        if number != 1:
            continue
        depth = next((d for d, (kind, _, _) in enumerate(stack) if kind == reading), None)
        if depth is not None:  # a new list of that kind starts where the old one was
            return [*stack[:depth], (reading, 1, token)]
        if len(stack) < _MAX_ITEM_DEPTH:
            return [*stack, (reading, 1, token)]
    return None


def _toc_entry(line: str) -> bool:
    """Whether a line that ends in a number reads as a table-of-contents entry: dot leaders,
    or a heading-like title before the page number (``4.2 Escape of water 14``), not a
    sentence that happens to end in a number (``1.77 "Product" means ... amount of 3``)."""
    if re.search(r"\.{3,}|…", line):
        return True
    title = _TOC_RE.sub("", line).strip()
    title = re.sub(r"^(?:[A-Za-z]+\s+)?(?:\d+(?:\.\d+)*|[IVXLC]+)\.?\s*", "", title)
    return _title_like(title)


def _find_headings(
    text: str, typical_line: int, markdown: bool = False, marks: dict[int, int] | None = None,
    list_lines: set[int] | None = None, numbered_lines: set[int] | None = None,
    blank_line_paragraphs: bool = False,
) -> list[_Heading]:
    """Scan line starts for section headings, validating bare numbers against the sequence.

    A heading must start a paragraph (the previous line is blank, short, or ends a
    sentence); table-of-contents lines (ending in a page number) are skipped. ``marks``
    maps the start offset of a heading the format marks itself (HTML, DOCX) to its level;
    such a line is always a heading, numbered when it starts with a number or keyword.
    In a preamble that has a ``Whereas`` line, ``(1)``, ``(2)``, ... paragraphs in sequence
    are recitals (``Recital 1``). Inside a numbered section, ``(a)``/``(i)``/``(A)``/``(1)``
    items that start a paragraph and follow their sequence are sub-sections cited the way
    lawyers cite them: ``4.2(a)``, ``4.2(a)(ii)``; under an ``Article``/``Section N``
    heading, numbered paragraphs ``1.``, ``2.`` are ``Article 33(1)``, and their points
    ``Article 33(3)(a)``. Lines inside an ASCII box of ``*`` are read without the box.
    In text whose paragraphs are separated by blank lines (``blank_line_paragraphs``: every
    format but PDF, whose extracted lines have no blank lines between paragraphs), two or
    more title-like numbered lines in a row with no text between them are a list
    (``1. Hardware`` / ``2. Software``, or a contents page without page numbers), never
    headings. ``list_lines`` are line offsets the format marks as list items (HTML ``<li>``):
    never headings; ``numbered_lines`` are paragraphs the format numbers itself (Word's
    decimal list numbering): a section whenever the number fits the sequence, title or not,
    and when there are any, other numbered lines are not headings.
    """
    headings: list[_Heading] = []
    last_numeric: tuple[int, ...] | None = None
    marks = marks or {}
    whereas = False
    last_recital = 0
    parent: str | None = None  # id of the section items belong to; None: items are body text
    keyword_parent = False  # parent is "Article 33" / "Section 5": "1." paragraphs are items
    items: list[tuple[str, int, str]] = []
    list_lines = list_lines or set()
    numbered_lines = numbered_lines or set()
    list_depth, list_last = 0, -2  # a run of numbered list lines: their depth, last line no
    lines = text.split("\n")
    line_numbers = {_parse_number(m.group("num")) for m in (_NUMERIC_RE.match(ln.strip()) for ln in lines) if m}
    box_top: int | None = None
    pos = 0
    prev = ""
    for line_no, line in enumerate(lines):
        line_start = pos
        pos += len(line) + 1
        stripped = line.strip()
        boxed = _BOX_RE.match(stripped)
        if boxed:
            stripped = boxed.group(1).strip()
        elif set(stripped) == {"*"}:
            stripped = ""
        previous, prev = prev, stripped
        lead = len(line) - len(line.lstrip())
        if boxed or set(line.strip()) == {"*"}:
            if not stripped:  # a box border or an empty box line: a heading may start the box
                box_top = line_start if box_top is None else box_top
                continue
            lead = (box_top if box_top is not None else line_start) - line_start
        box_top = None
        if line_start + lead in marks and stripped:
            h = _marked_heading(stripped, line_start + lead, pos - 1, marks[line_start + lead])
            headings.append(h)
            num = re.match(r"\d+(?:\.\d+)*", h.section_id or "")
            if num:
                last_numeric = _parse_number(num.group())
            parent, items = h.section_id, []
            keyword_parent = bool(h.section_id and re.fullmatch(r"(?:Article|Section) \d+[A-Z]?", h.section_id))
            continue
        if not stripped or line_start + lead in list_lines:
            continue
        long_line = len(stripped) > 300  # a whole paragraph on one line: no recital or Markdown heading
        if not headings and re.match(r"^whereas\b", stripped, re.IGNORECASE):
            whereas = True
        in_recitals = whereas and (not headings or (headings[-1].section_id or "").startswith("Recital"))
        recital = _RECITAL_RE.match(stripped) if in_recitals and not long_line else None
        if recital and int(recital.group(1)) == last_recital + 1:
            last_recital += 1
            headings.append(_Heading(line_start + lead, pos - 1, f"Recital {last_recital}",
                                     f"({last_recital})", 2))
            parent, items = None, []
            continue
        starts_paragraph = (
            not previous
            or previous.endswith((".", ":", ";", "?", "!"))
            or len(previous) < 0.75 * typical_line
            or bool(_LIST_START_RE.match(stripped) and _LIST_LEAD_RE.search(previous))  # "(b) ...; or"
        )
        bare_keyword = re.fullmatch(r"[A-Za-z]+\s+(?:\d+[A-Za-z]?|[IVXLC]+)\.?", stripped)
        toc_like = (_TOC_RE.search(stripped) and len(stripped) < typical_line and not bare_keyword
                    and _toc_entry(stripped))
        if not starts_paragraph or toc_like:  # "Article 5" alone is a heading, not a TOC entry
            continue
        m = _MD_RE.match(stripped) if markdown and not long_line else None
        if m:
            title = m.group("rest").strip()
            num = re.match(r"^(\d+(?:\.\d+)*)\.?\s", title + " ")
            headings.append(_Heading(line_start + lead, pos - 1, num.group(1) if num else None,
                                     title[:100], len(m.group("hashes"))))
            parent, items, keyword_parent = (num.group(1) if num else None), [], False
            if num:
                last_numeric = _parse_number(num.group(1))
            continue
        item = _ITEM_RE.match(stripped) if parent else None
        if item:
            step = _item_step(items, item.group("tok"))
            if step is not None:
                items = step
                headings.append(_Heading(line_start + lead, pos - 1,
                                         parent + "".join(f"({t})" for _, _, t in items),
                                         _label(stripped), 100 + len(items), item=True,
                                         marker_only=not (item.group("rest") or item.group("tight"))))
            continue
        m = _KEYWORD_RE.match(stripped)
        if m:
            rest = m.group("rest").strip(" :.-–—")
            if rest and not (rest[0].isupper() or rest[0].isdigit() or rest[0] in "\"“(["):
                continue  # "Section 3.2 of this Agreement ..." is a cross-reference
            kw = m.group("kw").lower()
            num = m.group("num")
            section_id = f"{kw.capitalize()} {num.upper() if roman_to_int(num) else num}"
            headings.append(_Heading(line_start + lead, pos - 1, section_id,
                                     _label(stripped), _KEYWORD_LEVEL[kw]))
            parent, items = section_id, []
            keyword_parent = kw in ("article", "section") and bool(re.fullmatch(r"\d+[A-Za-z]?", num))
            value = int(num) if num.isdigit() else None
            if kw in ("article", "section") and value is not None:
                last_numeric = (value,)
            elif kw in ("section",) and re.fullmatch(r"\d+(\.\d+)+", num):
                last_numeric = _parse_number(num)
            continue
        trusted = line_start + lead in numbered_lines
        # When the format numbers the clauses itself, a number it did not give (typed, or
        # from another list inside a clause) is no clause number.
        numbered = (_numbered_heading(stripped, last_numeric, trusted, line_numbers)
                    if trusted or not numbered_lines else None)
        if numbered is not None:
            cand, section_id, titled = numbered
            before = headings[-1] if headings else None
            in_list = blank_line_paragraphs and not trusted and titled
            if in_list and len(cand) == list_depth and line_no == list_last + 1:
                list_last = line_no  # the list goes on
                continue
            if (in_list and before is not None and before.titled and before.state_before
                    and before.line_no == line_no - 1 and before.level == 3 + len(cand)):
                # two numbered titles on consecutive lines, nothing between: a list, not headings
                headings.pop()
                last_numeric, parent, items, keyword_parent = before.state_before
                list_depth, list_last = len(cand), line_no
                continue
            state = (last_numeric, parent, items, keyword_parent)
            last_numeric = cand
            headings.append(_Heading(line_start + lead, pos - 1, section_id, _label(stripped), 3 + len(cand),
                                     line_no=line_no, titled=titled, state_before=state))
            parent, items, keyword_parent = section_id, [], False
            continue
        # "1.   In the case of a personal data breach, ..." under "Article 33"; once (a)-style
        # items are open, "1." lines are a list inside an item, body text.
        para = _PARA_RE.match(stripped) if parent and keyword_parent and (
            not items or items[0][0] == "digit") else None
        if para:
            step = _item_step(items, para.group("tok"))
            if step is not None and len(step) == 1:
                items = step
                headings.append(_Heading(line_start + lead, pos - 1, f"{parent}({para.group('tok')})",
                                         _label(stripped), 101, item=True))
    return headings


def _numbered_heading(
    stripped: str, last_numeric: tuple[int, ...] | None, trusted: bool = False,
    numbers: set[tuple[int, ...]] | None = None,
) -> tuple[tuple[int, ...], str, bool] | None:
    """``(number tuple, section id, title-like)`` when a paragraph-start line is a numbered
    heading (``4.2 Title``, ``9.0 DOCUMENTATION``, an exact-successor ``4.2.1 the term ...``);
    None for body text such as ``14 days after the leak`` or ``2.8 per cent``. A ``trusted``
    number (the format's own list numbering) only has to fit the sequence. The first
    numbered heading may start above 1 (an excerpt: ``4.1 Escape of water``) when no line
    of the document starts with 0 or 1 and its successor also starts a line somewhere
    (``numbers``: every number that starts a line)."""
    m = _NUMERIC_RE.match(stripped)
    if not m:
        return None
    rest = (m.group("rest") or m.group("tight") or "").strip()
    cand = _parse_number(m.group("num"))
    if len(cand) > 1 and cand[-1] == 0:
        cand = cand[:-1]  # "9.0 DOCUMENTATION" heads 9.1, 9.2, ...: it is section 9's level
    titled = bool(rest) and _title_like(rest)
    if trusted:
        return (cand, m.group("num"), titled) if _plausible_next(last_numeric, cand)[0] else None
    lowercase = bool(rest) and not (rest[0].isupper() or rest[0] in "\"“'‘(")
    if lowercase and len(cand) < 3:
        return None  # "14 days after the leak", "2.8 per cent": a sentence, not a heading
    if len(cand) == 1 and not m.group("dot") and not m.group("tight") and not rest:
        return None  # a lone page or line number
    plausible, exact = _plausible_next(last_numeric, cand)
    if not plausible and last_numeric is None and numbers and cand[0] <= 99 and not any(n[0] <= 1 for n in numbers):
        plausible = (*cand[:-1], cand[-1] + 1) in numbers  # an excerpt: no line starts with 1 anywhere
    if lowercase and not exact:
        return None  # "4.2.1 the term ..." is a section only as the exact next number
    if not plausible and cand == (1,) and rest and _title_like(rest):
        plausible, exact = True, True  # numbering restarts (a schedule or exhibit)
    if not plausible:
        return None
    if not _title_like(rest) and not (exact and len(cand) >= 2):
        return None
    return cand, m.group("num"), titled


def _marked_heading(line: str, start: int, end: int, level: int) -> _Heading:
    """A heading the format marks (HTML ``<hN>``, DOCX heading style): number or keyword id."""
    section_id = None
    k = _KEYWORD_RE.match(line)
    if k:
        num = k.group("num")
        section_id = f"{k.group('kw').capitalize()} {num.upper() if roman_to_int(num) else num}"
    else:
        n = re.match(r"^(\d{1,3}(?:\.\d{1,3}){0,4})(?:\.|\s|$)", line)
        if n:
            section_id = n.group(1)
    return _Heading(start, end, section_id, line[:100], level)


_LISTING_KINDS = ("Schedule ", "Exhibit ", "Annex ", "Appendix ", "Attachment ")
_LISTING_GAP = 200  # characters: an entry of a list of schedules, not a schedule's own text


def _drop_listings(headings: list[_Heading]) -> list[_Heading]:
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
    return [h for h, kept in zip(headings, keep) if kept]


def _sections(
    text: str, typical_line: int, markdown: bool = False, marks: dict[int, int] | None = None,
    list_lines: set[int] | None = None, numbered_lines: set[int] | None = None,
    blank_line_paragraphs: bool = False,
) -> list[_Section]:
    """Cut the text into sections at headings; text before the first heading is the preamble."""
    headings = _drop_listings(_find_headings(text, typical_line, markdown, marks, list_lines, numbered_lines,
                                             blank_line_paragraphs))
    sections: list[_Section] = []
    stack: list[_Heading] = []
    if not headings or headings[0].line_start > 0:
        end = headings[0].line_start if headings else len(text)
        if text[:end].strip():
            sections.append(_Section(None, [], 0, end))
    for i, h in enumerate(headings):
        while stack and stack[-1].level >= h.level:
            stack.pop()
        stack.append(h)
        end = headings[i + 1].line_start if i + 1 < len(headings) else len(text)
        section_id = h.section_id
        if section_id is None:
            section_id = next((s.section_id for s in reversed(stack) if s.section_id), None)
        path = [s.label for s in stack if not s.item]
        if not h.item:
            sections.append(_Section(section_id, path, h.line_start, end))
            continue
        owner = stack[-2].section_id if len(stack) > 1 else None
        # An item is one paragraph (two when its marker stands alone on a line); what follows
        # it up to the next heading is flush text of the enclosing section, cited as that.
        breaks = _paragraph_breaks(text, h.line_start, end, typical_line)
        if h.marker_only:
            breaks = breaks[1:]
        cut = breaks[0] if breaks else end
        sections.append(_Section(section_id, path, h.line_start, cut, item_of=owner))
        if cut < end and text[cut:end].strip():
            # the enclosing section again; when that is itself an item, it is its owner's item
            owner_of_owner = stack[-3].section_id if len(stack) > 2 and stack[-2].item else None
            sections.append(_Section(owner, path, cut, end, item_of=owner_of_owner, flush=True))
    return sections


def _paragraph_breaks(text: str, start: int, end: int, typical_line: int) -> list[int]:
    """Offsets (absolute) where a new paragraph starts inside ``text[start:end]``.

    A paragraph starts after a blank line, at a bullet, after a short line that ends a
    sentence, or at a list marker (``(b)``, ``2.``, ``b)``) when the line before closes a
    clause (``.``, ``;``, ``:``, or ``and``/``or``): ``claims under paragraph`` + ``(b)
    above ...`` is one sentence wrapped at a cross-reference, not a new item.
    """
    breaks: list[int] = []
    pos = start
    lines = text[start:end].split("\n")
    prev: str | None = None
    for line in lines:
        if prev is not None:
            p = prev.rstrip()
            if (
                not p
                or not line.strip()
                or _BULLET_START_RE.match(line)
                or (_LIST_START_RE.match(line) and _LIST_LEAD_RE.search(p))
                or (p.endswith((".", ":", ";", "?", "!")) and len(p) < 0.75 * typical_line)
            ):
                if line.strip():
                    breaks.append(pos)
        prev = line
        pos += len(line) + 1
    return breaks


def _units(text: str, sec: _Section, typical_line: int, max_tokens: int) -> list[tuple[int, int]]:
    """Split a section into paragraphs, and paragraphs over ``max_tokens`` into sentences."""
    cuts = [sec.start, *_paragraph_breaks(text, sec.start, sec.end, typical_line), sec.end]
    units: list[tuple[int, int]] = []
    for a, b in zip(cuts, cuts[1:]):
        a, b = trim_span(text, a, b)
        if a >= b:
            continue
        if estimate_tokens(text[a:b]) <= max_tokens:
            units.append((a, b))
            continue
        s_cuts = [a, *sentence_breaks(text, a, b), b]
        for sa, sb in zip(s_cuts, s_cuts[1:]):
            sa, sb = trim_span(text, sa, sb)
            if sa < sb:
                units.append((sa, sb))
    return units


def _overlap_start(text: str, starts: list[int], prev_end: int, budget_chars: int) -> int:
    """The earliest of ``starts`` (sentence or paragraph starts, ascending) whose tail up to
    ``prev_end`` fits ``budget_chars``; ``prev_end`` itself when none fits (no overlap)."""
    best = prev_end
    for s in reversed(starts):
        if prev_end - s > budget_chars:
            break
        best = s
    return best


def _split_section(
    text: str, sec: _Section, target: int, max_tokens: int, overlap: float, typical_line: int,
    overlap_of: int | None = None, first_part: int = 1,
) -> list[_Draft]:
    """Split one long section into drafts at paragraph/sentence joints, with overlap.

    Drafts are packed from paragraphs (sentences for a paragraph over ``max_tokens``) up to
    ``target`` tokens. A continuation (``#2``, ``#3``, ...) starts with whole sentences or
    paragraphs from the end of the previous draft: as many as fit ``overlap * overlap_of``
    tokens, or, when even the last one does not, as many as fit 20 % of ``overlap_of`` (the
    top of the allowed 10-20 % range); never so many that the draft passes ``max_tokens``.
    ``overlap_of`` defaults to ``target``.

    When nothing fits because the sentence just before the cut is over 20 %, the cut moves
    (see :func:`_rebalanced_cut`) to the nearest sentence or paragraph start after which
    whole sentences making 10-20 % of ``overlap_of`` fit. Only when no such joint exists
    (in practice: the sentences around the cut are over 20 % too) is the draft marked
    ``overlap_missing`` and left without overlap. Cuts whose overlap already fits never move.
    Returns the drafts in order; never empty for a non-empty section.
    """
    units = _units(text, sec, typical_line, max_tokens)
    drafts: list[_Draft] = []
    cur: list[tuple[int, int]] = []
    cur_tokens = 0
    for unit in units:
        # Measure the joined span (units plus the whitespace between them), not a sum of parts.
        joined = estimate_tokens(text[cur[0][0] if cur else unit[0] : unit[1]])
        if cur and joined > target and not (cur_tokens < target // 2 and joined <= max_tokens):
            drafts.append(_Draft(cur[0][0], cur[-1][1]))
            cur = []
            joined = estimate_tokens(text[unit[0] : unit[1]])
        cur.append(unit)
        cur_tokens = joined
    if cur:
        drafts.append(_Draft(cur[0][0], cur[-1][1]))
    overlap_of = overlap_of or target  # the job's target, when heads shrank this one
    budget_chars = int(overlap_of * overlap * CHARS_PER_TOKEN)
    wide_chars = int(overlap_of * MAX_OVERLAP * CHARS_PER_TOKEN)
    min_chars = int(overlap_of * MIN_OVERLAP * CHARS_PER_TOKEN)
    unit_starts = [u[0] for u in units]

    def overlap_start(prev_start: int, prev_end: int, start: int, end: int, budget: int) -> int | None:
        """Where the overlap for content ``[start, end)`` begins inside ``[prev_start, prev_end)``:
        the earliest sentence/paragraph start whose tail fits ``budget`` chars and keeps the
        continuation within ``max_tokens``; None when not even the last sentence fits."""
        room = max_tokens * CHARS_PER_TOKEN - (end - start) - (start - prev_end)
        starts = sorted(
            {prev_start, *sentence_breaks(text, prev_start, prev_end)}
            | {u for u in unit_starts if prev_start < u < prev_end}
        )
        found = _overlap_start(text, starts, prev_end, min(budget, room))
        return None if found == prev_end else found

    content_start = 0  # where the previous draft's own text begins (after its overlap)
    for i, d in enumerate(drafts):
        own_start = d.start
        if i > 0:
            prev = drafts[i - 1]
            widest = max(wide_chars, budget_chars)
            start = overlap_start(content_start, prev.end, d.start, d.end, widest)
            moved = False
            if start is None:
                cut = _rebalanced_cut(text, prev, d, content_start, unit_starts, target, max_tokens,
                                      (min_chars, wide_chars), overlap_start)
                if cut is not None:
                    (prev.end, own_start), moved = cut, True
                    start = overlap_start(content_start, prev.end, own_start, d.end, widest)
            if start is not None:
                # As much as fits the job's budget, else as much as fits 20 %. A moved cut was
                # moved to give 10-20 %: it keeps the 20 % overlap when the budget gives under 10 %.
                tight = overlap_start(content_start, prev.end, own_start, d.end, budget_chars)
                if tight is not None and not (moved and prev.end - tight < min_chars):
                    start = tight
            d.overlap_missing = start is None
            d.overlap_chars = 0 if start is None else prev.end - start
            d.start = own_start if start is None else start
        content_start = own_start
        split = len(drafts) > 1 or first_part > 1
        d.section_id = f"{sec.section_id}#{first_part + i}" if sec.section_id and split else sec.section_id
    for d in drafts:
        d.oversize = estimate_tokens(text[d.start : d.end]) > max_tokens
        d.sections = [_Section(d.section_id, sec.heading_path, d.start, d.end)]
    return drafts


def _rebalanced_cut(
    text: str, prev: _Draft, nxt: _Draft, prev_start: int, unit_starts: list[int], target: int,
    max_tokens: int, overlap_range: tuple[int, int],
    overlap_start: Callable[[int, int, int, int, int], int | None],
) -> tuple[int, int] | None:
    """Move the cut between two drafts of one section so the continuation can have overlap.

    ``prev`` spans ``[prev.start, prev.end)`` (its own overlap included; its own text starts
    at ``prev_start``); ``nxt``'s own text is ``[nxt.start, nxt.end)``. Candidate cuts are the
    sentence and paragraph starts strictly inside ``(prev_start, nxt.end)`` that follow a
    sentence or clause end (``. ; : ! ?``), tried nearest the original cut first (a paragraph
    start wins a tie). A cut is taken when:

    - backward: the previous draft keeps at least ``target // 2`` tokens of its own text;
    - forward: the previous draft stays within ``max_tokens`` even with the largest overlap
      it may start with (so the cut does not depend on the job's overlap share);
    - the whole trailing sentences that fit ``overlap_range[1]`` chars (20 % of the target)
      before the cut, without pushing the continuation over ``max_tokens``
      (``overlap_start``), are at least ``overlap_range[0]`` chars (10 %: a page number
      alone is not an overlap) and do not reach back to the previous draft's own start.

    Returns ``(new end of prev, new start of nxt's own text)``, or None when no cut works.
    """
    min_chars, wide_chars = overlap_range
    cut = nxt.start
    paragraph = set(unit_starts)
    candidates = sorted(
        {*sentence_breaks(text, prev_start, nxt.end), *(u for u in unit_starts if prev_start < u < nxt.end)}
        - {cut},
        key=lambda c: (abs(c - cut), c not in paragraph),
    )
    # Chars before prev's own text when it starts with an overlap: at most 20 % plus whitespace.
    lead = (max(wide_chars, prev.overlap_chars) + (prev_start - prev.start - prev.overlap_chars)
            if prev.start < prev_start else 0)
    for c in candidates:
        new_end = trim_span(text, prev_start, c)[1]
        if new_end <= prev_start or not _CLAUSE_END_RE.search(text[max(0, new_end - 4) : new_end]):
            continue  # a blank line after "5.6," is a page break inside a sentence, not a joint
        if c < cut and estimate_tokens(text[prev_start:new_end]) < target // 2:
            continue
        if c > cut and lead + new_end - prev_start > max_tokens * CHARS_PER_TOKEN:
            continue
        start = overlap_start(prev_start, new_end, c, nxt.end, wide_chars)
        if start is not None and start > prev_start and new_end - start >= min_chars:
            return new_end, c
    return None


def _heading_only(text: str, sec: _Section, nxt: _Section | None) -> bool:
    """A section that is just its heading (``CHAPTER III`` + title, or a lead-in such as
    ``3. The notification shall at least:``) and whose next section is its own first child
    (a sub-section or an item): it belongs with that child, never at the end of a chunk."""
    body = text[sec.start : sec.end]
    if nxt is None or len(body) > 200 or body.count("\n") > 2 or body.rstrip().endswith((".", ";")):
        return False
    if nxt.item_of is not None:
        return nxt.item_of == sec.section_id
    return (
        len(nxt.heading_path) > len(sec.heading_path)
        and nxt.heading_path[: len(sec.heading_path)] == sec.heading_path
    )


def _typical_line_length(text: str) -> int:
    lengths = sorted(len(line) for line in text.split("\n") if line.strip())
    if not lengths:
        return 80
    return max(20, lengths[int(len(lengths) * 0.9) - 1 if len(lengths) > 1 else 0])


def chunk_document(
    doc: ParsedDocument,
    doc_id: str,
    *,
    target_tokens: int = 1000,
    max_tokens: int = 2000,
    overlap: float = 0.15,
    metadata: DocumentMetadata | None = None,
) -> list[Chunk]:
    """Split a parsed document into chunks at section, paragraph and sentence boundaries.

    ``metadata`` (optional ``doc_type``, ``line_of_business``, ``term``) is copied onto
    every chunk. A heading-only section (``CHAPTER III`` and its title) always opens the
    chunk of its first child, never closes the previous one.

    Sizes are estimated tokens (:func:`estimate_tokens`); ``overlap`` is the share of
    ``target_tokens`` repeated (as whole sentences of the same section) at the start of
    each continuation chunk of a split section. A single sentence over ``max_tokens``
    stays whole and is flagged ``oversize``. Returns chunks in document order with
    ordinals from 0; ids depend only on ``doc_id``, the document bytes and position.
    Raises ValueError when ``target_tokens > max_tokens``.
    """
    if target_tokens > max_tokens:
        raise ValueError(f"target_tokens {target_tokens} exceeds max_tokens {max_tokens}")
    text = doc.text
    typical_line = _typical_line_length(text)
    meta = (metadata or DocumentMetadata()).model_dump()
    drafts: list[_Draft] = []
    open_merge: _Draft | None = None  # a chunk of whole sections that may take more
    marks = {h.char_start: h.level for h in doc.headings if h.kind == "heading"}
    list_lines = {h.char_start for h in doc.headings if h.kind == "list_item"}
    numbered_lines = {h.char_start for h in doc.headings if h.kind == "numbered"}
    sections = []
    for sec in _sections(text, typical_line, doc.media_type == "text/markdown", marks, list_lines, numbered_lines,
                         doc.media_type != "application/pdf"):
        start, end = trim_span(text, sec.start, sec.end)
        if start < end:
            sections.append(_Section(sec.section_id, sec.heading_path, start, end, sec.item_of, sec.flush))
    heads: list[_Section] = []  # heading-only sections waiting for their first child
    parts_of: dict[str | None, int] = {}  # parts a split section has so far (flush text numbers on)
    for i, sec in enumerate(sections):
        if _heading_only(text, sec, sections[i + 1] if i + 1 < len(sections) else None):
            heads.append(sec)
            continue
        start, end = sec.start, sec.end
        group_start = heads[0].start if heads else start
        group, heads = [*heads, sec], []
        tokens = estimate_tokens(text[group_start:end])
        if tokens <= target_tokens:
            if open_merge and estimate_tokens(text[open_merge.start : end]) <= target_tokens:
                open_merge.end = end
                open_merge.sections.extend(group)
                continue
            open_merge = _Draft(group_start, end, group, None)
            drafts.append(open_merge)
            continue
        open_merge = None
        head_tokens = estimate_tokens(text[group_start:start]) if group_start < start else 0
        first = parts_of.get(sec.section_id, 0) + 1 if sec.flush else 1
        parts = _split_section(text, sec, max(1, target_tokens - head_tokens),
                               max(1, max_tokens - head_tokens), overlap, typical_line, target_tokens, first)
        parts_of[sec.section_id] = first + len(parts) - 1
        if head_tokens:
            parts[0].start = group_start
            parts[0].sections = [*group[:-1], *parts[0].sections]
        for part in parts:
            part.oversize = estimate_tokens(text[part.start : part.end]) > max_tokens
        drafts.extend(parts)

    page_starts = [p.char_start for p in doc.pages]
    chunks: list[Chunk] = []
    for ordinal, d in enumerate(drafts):
        body = text[d.start : d.end]
        first = max(0, bisect.bisect_right(page_starts, d.start) - 1)
        last = max(0, bisect.bisect_right(page_starts, max(d.start, d.end - 1)) - 1)
        spans = [
            PageSpan(page=p.page, char_start=max(p.char_start, d.start), char_end=min(p.char_end, d.end),
                     label=p.label)
            for p in doc.pages[first : last + 1]
        ]
        spans = [s for s in spans if s.char_end > s.char_start] or spans[:1]
        sections = [
            SectionSpan(section_id=s.section_id, heading_path=s.heading_path,
                        char_start=max(s.start, d.start), char_end=min(s.end, d.end))
            for s in d.sections
        ]
        # The chunk's section: its own (a split section's "4.2#2"), else the first numbered
        # section it holds; the heading path is that section's, so the two always agree.
        section_id = d.section_id if d.section_id is not None else next(
            (s.section_id for s in d.sections if s.section_id), None)
        heading_path = next((s.heading_path for s in d.sections if s.section_id == section_id),
                            d.sections[0].heading_path if d.sections else [])
        chunks.append(
            Chunk(
                chunk_id=f"{doc_id}:{doc.doc_version[:8]}:{ordinal:04d}",
                doc_id=doc_id,
                doc_version=doc.doc_version,
                ordinal=ordinal,
                source=doc.source,
                page_start=spans[0].page if spans else None,
                page_end=spans[-1].page if spans else None,
                section_id=section_id,
                heading_path=heading_path,
                text=body,
                char_start=d.start,
                char_end=d.end,
                token_count=estimate_tokens(body),
                content_hash=hashlib.sha256(body.encode("utf-8")).hexdigest(),
                oversize=d.oversize,
                page_spans=spans,
                section_spans=sections,
                page_labels=[s.label for s in spans] if spans and spans[0].page is not None else [],
                overlap_chars=d.overlap_chars,
                overlap_missing=d.overlap_missing,
                **meta,
            )
        )
    return chunks
