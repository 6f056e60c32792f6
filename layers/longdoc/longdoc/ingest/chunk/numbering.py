"""Numbering rules of the heading pass: sequences, titles, items and contents lines.

Pure functions over one line of text or a number tuple; no state. A section number is a
tuple of ints (``"4.2"`` -> ``(4, 2)``); an item token is the text inside an item's
brackets (``"c"`` in ``(c)``).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from longdoc.core.text import roman_to_int
from longdoc.ingest.chunk.state import ItemLevel

# "4.2 Title", "4.2. Title", "4.2" alone, and "1.Title" (PDF text often drops the space after the dot).
NUMERIC_RE = re.compile(
    r"^(?P<num>\d{1,3}(?:\.\d{1,3}){0,4})(?:(?P<dot>\.?)(?:\s+(?P<rest>.*))?|\.(?P<tight>[A-Z“\"].*))$"
)
"""A line starting with a section number: ``num``, then a ``dot``, a ``rest`` or a ``tight`` title."""
TOC_RE = re.compile(r"(?:\.{3,}|…+|\s)\s*(?:\d{1,4}|[ivxlc]{1,6})$")
"""A line ending in a page number (after dot leaders or a space), as contents entries do."""
_MAX_ITEM_DEPTH = 4


def heading_label(line: str) -> str:
    """A heading's label for ``heading_path``: the number and title, without inline body text.

    A line of up to 60 chars is its own label; a longer one is cut after its first ``.``
    or ``:`` within 80 chars (``4.2 Claims.`` of ``4.2 Claims. You must ...``), else at 80.
    """
    if len(line) <= 60:
        return line
    m = re.match(r"^(.{4,80}?[.:])(?=\s|$)", line)
    return m.group(1) if m else line[:80].rstrip()


def title_like(rest: str) -> bool:
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


def parse_number(num: str) -> tuple[int, ...]:
    """The number tuple of a dotted section number (``"4.2"`` -> ``(4, 2)``); ValueError if not digits."""
    return tuple(int(p) for p in num.split("."))


def plausible_next(prev: tuple[int, ...] | None, cand: tuple[int, ...]) -> tuple[bool, bool]:
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


def item_step(stack: Sequence[ItemLevel], token: str) -> list[ItemLevel] | None:
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
        open_at = next((d for d, (kind, _, _) in enumerate(stack) if kind == reading), None)
        if open_at is not None:  # a new list of that kind starts where the old one was
            return [*stack[:open_at], (reading, 1, token)]
        if len(stack) < _MAX_ITEM_DEPTH:
            return [*stack, (reading, 1, token)]
    return None


def toc_entry(line: str) -> bool:
    """Whether a line that ends in a number reads as a table-of-contents entry: dot leaders,
    or a heading-like title before the page number (``4.2 Escape of water 14``), not a
    sentence that happens to end in a number (``1.77 "Product" means ... amount of 3``). A dash
    before the page number is a leader too (``Section A – Damage including misfuelling - 7``)."""
    if re.search(r"\.{3,}|…|\s[-–—]\s*(?:\d{1,4}|[ivxlc]{1,6})$", line):
        return True
    title = TOC_RE.sub("", line).strip()
    title = re.sub(r"^(?:[A-Za-z]+\s+)?(?:\d+(?:\.\d+)*|[IVXLC]+)\.?\s*", "", title)
    return title_like(title)


def numbered_heading(
    stripped: str, last_numeric: tuple[int, ...] | None, trusted: bool = False,
    numbers: set[tuple[int, ...]] | None = None, next_number: tuple[int, ...] | None = None,
) -> tuple[tuple[int, ...], str, bool] | None:
    """``(number tuple, section id, title-like)`` when a paragraph-start line is a numbered
    heading (``4.2 Title``, ``9.0 DOCUMENTATION``, an exact-successor ``4.2.1 the term ...``);
    None for body text such as ``14 days after the leak`` or ``2.8 per cent``. A ``trusted``
    number (the format's own list numbering) only has to fit the sequence. The first
    numbered heading may start above 1 (an excerpt: ``4.1 Escape of water``) when no line
    of the document starts with 0 or 1 and its successor also starts a line somewhere
    (``numbers``: every number that starts a line). A line whose next line starts with its first
    child (``4. Personal accident benefit`` then ``4.1 Benefit``: ``next_number``) is a heading when it
    fits the sequence and its short title opens with a capital, title case or not
    (:func:`parent_of_next`)."""
    m = NUMERIC_RE.match(stripped)
    if not m:
        return None
    rest = (m.group("rest") or m.group("tight") or "").strip()
    cand = parse_number(m.group("num"))
    if len(cand) > 1 and cand[-1] == 0:
        cand = cand[:-1]  # "9.0 DOCUMENTATION" heads 9.1, 9.2, ...: it is section 9's level
    titled = bool(rest) and title_like(rest)
    # A number the format gives (trusted) only has to fit the sequence.
    fits = plausible_next(last_numeric, cand)[0] if trusted else _reads_as_heading(m, cand, rest, last_numeric, numbers)
    if not fits and not trusted and parent_of_next(cand, rest, next_number):
        fits = plausible_next(last_numeric, cand)[0]
    return (cand, m.group("num"), titled) if fits else None


MAX_PARENT_TITLE_WORDS = 12
"""Words at most in the title of a heading confirmed by its first child (:func:`parent_of_next`)."""


def parent_of_next(cand: tuple[int, ...], rest: str, next_number: tuple[int, ...] | None) -> bool:
    """Whether a numbered line is confirmed as a heading by the line after it: that line starts with
    the number's first child (``4.`` then ``4.1``, ``2.3`` then ``2.3.1``) and the title is short
    (at most :data:`MAX_PARENT_TITLE_WORDS` words), opens with a capital, ends no sentence and not in
    an amount (a schedule row ``4. Baggage 2,000`` over ``4.1 Single article 500`` is no heading). Wordings
    write their top-level titles in sentence case (``4. Personal accident benefit``), which the title
    test reads as a list entry; the first child right below it is what a reader sees as structure."""
    if next_number is None or next_number != (*cand, 1) or not rest or re.search(r"\d[\d,.]*\s*$", rest):
        return False  # "4. Baggage 2,000" / "4.1 Single article 500": a schedule's rows, not headings
    return _short_title(rest.rstrip().removesuffix(":"), MAX_PARENT_TITLE_WORDS)


def _short_title(rest: str, words: int) -> bool:
    """A title of at most ``words`` words that opens with a capital and ends no sentence."""
    rest = rest.strip()
    return bool(rest) and (rest[0].isupper() or rest[0] in "\"“(") and len(rest.split()) <= words \
        and not rest.endswith((".", ";", ",", ":", "?", "!"))


def first_child_line(text: str, section_id: str | None) -> bool:
    """Whether ``text`` starts with the first child of the numbered section ``section_id``
    (``2.1 Benefit`` under ``2. Top up inpatient medical expenses (...)``)."""
    m = NUMERIC_RE.match(text)
    if m is None or not section_id or not re.fullmatch(r"\d+(?:\.\d+)*", section_id):
        return False
    return parse_number(m.group("num")) == (*parse_number(section_id), 1)


def next_line_numbers(lines: Sequence[str]) -> list[tuple[int, ...] | None]:
    """For each line, the section number the next non-blank line starts with (None: it starts with none)."""
    out: list[tuple[int, ...] | None] = [None] * len(lines)
    following: tuple[int, ...] | None = None
    for no in range(len(lines) - 1, -1, -1):
        out[no] = following
        text = lines[no].strip()
        if text:
            m = NUMERIC_RE.match(text)
            following = parse_number(m.group("num")) if m else None
    return out


def _reads_as_heading(
    m: re.Match[str], cand: tuple[int, ...], rest: str, last_numeric: tuple[int, ...] | None,
    numbers: set[tuple[int, ...]] | None,
) -> bool:
    """Whether a numbered line the format does not number itself fits the sequence and reads as a heading."""
    lowercase = bool(rest) and not (rest[0].isupper() or rest[0] in "\"“'‘(")
    if lowercase and len(cand) < 3:
        return False  # "14 days after the leak", "2.8 per cent": a sentence, not a heading
    if len(cand) == 1 and not m.group("dot") and not m.group("tight") and not rest:
        return False  # a lone page or line number
    plausible, exact = plausible_next(last_numeric, cand)
    if not plausible and last_numeric is None and numbers and cand[0] <= 99 and not any(n[0] <= 1 for n in numbers):
        plausible = (*cand[:-1], cand[-1] + 1) in numbers  # an excerpt: no line starts with 1 anywhere
    if lowercase and not exact:
        return False  # "4.2.1 the term ..." is a section only as the exact next number
    if not plausible and cand == (1,) and rest and title_like(rest):
        plausible, exact = True, True  # numbering restarts (a schedule or exhibit)
    if not plausible:
        return False
    return title_like(rest) or (exact and len(cand) >= 2)


_DOTTED_TOP = re.compile(r"^\d{1,3}\.")
_BARE_TOP = re.compile(r"^(\d{1,3})(?![.\d])")
_DOTTED_LINE = re.compile(r"^(\d{1,3})\.(?!\d)\s*\S")


def dotted_numbers(lines: Sequence[str]) -> set[str]:
    """The top-level numbers that some line of the document writes with a dot (``7. SECTION 4`` -> ``"7"``)."""
    return {m.group(1) for m in (_DOTTED_LINE.match(ln.strip()) for ln in lines) if m}


def table_row_of_dotted(text: str, top_labels: Sequence[str], dotted: set[str]) -> bool:
    """Whether a bare ``7 Personal Money Benefit 3,000 2,000`` line is a row of a table (or a list)
    inside a section, not section 7: the labels of the document's top-level headings so far
    (``top_labels``) all carry a dot, at least two (``1. DEFINITIONS``, ``2. TABLE OF BENEFITS``), and
    some other line writes ``7.`` (``dotted``: :func:`dotted_numbers`). So the rows of a table of
    benefits numbered 1 to 15 do not take the numbers of the wording's own ``3. TERMS AND CONDITIONS``
    to ``15. SECTION 12``, while a bare number the document writes nowhere with a dot stays a section
    (``1. Scope``, ``2. Fees``, ``3 Term``), as do all numbers of a document written without dots."""
    bare = _BARE_TOP.match(text)
    if bare is None or bare.group(1) not in dotted:
        return False
    return top_level_style(top_labels) is True


def top_level_style(top_labels: Sequence[str]) -> bool | None:
    """How a document writes its top-level numbers so far: True when every one of ``top_labels`` (at
    least two) carries a dot (``1. DEFINITIONS``), False when none does (``5 EXCLUSIONS``), None when
    they are mixed or fewer than two. Read by :func:`table_row_of_dotted` and :func:`restart_in_other_style`."""
    if len(top_labels) < 2:
        return None
    dots = {bool(_DOTTED_TOP.match(label)) for label in top_labels}
    return dots.pop() if len(dots) == 1 else None


def restart_in_other_style(text: str, cand: tuple[int, ...], last: tuple[int, ...] | None,
                           tops: Sequence[tuple[str, int]], previous: str,
                           next_number: tuple[int, ...] | None = None) -> bool:
    """Whether a ``1.`` that would restart the numbering is the first entry of a list instead: the line
    before leads into a list (ends with ``:``, ``... is payable when the Confinement is caused by:``)
    and the top-level headings since the last part, exhibit or article heading (``tops``: the labels
    and levels of the headings so far, level 4 a top-level number, below 4 a keyword heading; at least
    two) are all written the other way, with a dot or without (:func:`top_level_style`:
    ``4 BENEFITS PROVISIONS``, ``5 EXCLUSIONS``, then ``1. Congenital Conditions.``). Read as a restart, such a list took every later section's number out of sequence
    (``6 CLAIM PROVISIONS`` became text of the list's ``2.``). Only a list whose ``2.`` is the very next
    line (``next_number``) is one: a schedule or exhibit that restarts with text under each number
    (``The benefits below are payable:`` / ``1. Medical Expenses`` / its text) still restarts."""
    if cand != (1,) or last is None or not previous.rstrip().endswith(":") or plausible_next(last, cand)[0] \
            or next_number != (2,):
        return False
    start = max((i + 1 for i, (_, level) in enumerate(tops) if level < 4), default=0)
    return top_level_style([label for label, _ in tops[start:]]) is (not _DOTTED_TOP.match(text))
