"""Paragraphs, heading lines and capped parts of one section's text, for triage's clause units.

A heading line inside a section is a short line with no closing punctuation that the next line
does not carry on (:func:`is_heading_line`); a heading in capitals or with a keyword (``SECTION 2``,
``Part A``) is the outer of two levels (:func:`is_outer`). :func:`parts` cuts a section's text at
paragraph joints into pieces of at most a cap of tokens, each with the heading path inside the section
that it sits under.
"""

from __future__ import annotations

import re
from collections import Counter

from longdoc.core.tokens import estimate_tokens

ENDS_SENTENCE = re.compile(r"[.:;!?)\]\"”]\s*$")
_STARTS_PARAGRAPH = re.compile(r"^\s*(?:[\"“(\[]|\d{1,3}[.)]\s|[a-z]{1,3}[.)]\s|[A-Z•\-–])")
_SENTENCE_END = re.compile(r"(?<=[.;:!?])\s+(?=[\"“(A-Z0-9])")
_JOINING_WORDS = frozenset({"a", "an", "and", "or", "the", "of", "to", "for", "with", "in", "on", "by", "if", "than"})
PAGE_LINE = re.compile(r"\bpage\s+\d+(?:\s+of\s+\d+)?\b", re.IGNORECASE)
OUTER_KEYWORD = re.compile(r"^(?:SECTION|Section|PART|Part|CHAPTER|Chapter)\s+[\dA-Z]")


def is_heading_line(line: str, previous: str, following: str = "") -> bool:
    """A short line without closing punctuation after a finished line: a heading inside a section.

    Not a heading: a line the next line carries on (``Then`` / ``we will pay ...``: the next line
    starts in lower case), one ending in a comma or in a word that joins it to the next line
    (``and``, ``of``, ...) or in a word broken at a hyphen (``non-``; ``DEFINITIONS -``, its dash set
    off by a space, is a heading), and page furniture or contact lines (``Page 2 of 12``, ``Fax: 020 ...``:
    digits are over a third of its characters).
    """
    words = line.split()
    if not (0 < len(words) <= 8 and len(line) <= 70 and not ENDS_SENTENCE.search(line) and line[:1].isupper()
            and (not previous or bool(ENDS_SENTENCE.search(previous)))):
        return False
    if line.endswith(",") or re.search(r"\w[-–]$", line) or words[-1].lower() in _JOINING_WORDS or PAGE_LINE.search(line):
        return False
    if sum(ch.isdigit() for ch in line) * 3 > len(line.replace(" ", "")):
        return False
    return not following[:1].islower()


def is_outer(heading: str) -> bool:
    """Whether a heading line opens a part of the wording (the outer of two heading levels): a keyword
    heading (``Section 1 - Buildings``, ``Part A: Liability to others``) or one in capitals
    (``GENERAL EXCLUSIONS``); ``What is covered`` below it is the inner level."""
    letters = [ch for ch in heading if ch.isalpha()]
    return bool(OUTER_KEYWORD.match(heading)) or (len(letters) >= 3 and all(ch.isupper() for ch in letters))


def paragraphs(text: str) -> list[tuple[int, int, bool]]:
    """``(start, end, is_heading)`` of the paragraphs of ``text``: blank lines, or a line that ends a
    sentence followed by one that starts a paragraph (a capital, a quote, an item marker), are joints."""
    out: list[tuple[int, int, bool]] = []
    pos, start, previous = 0, 0, ""
    lines = text.splitlines(keepends=True)
    for i, raw in enumerate(lines):
        line = raw.strip()
        following = next((n.strip() for n in lines[i + 1:] if n.strip()), "")
        heading = is_heading_line(line, previous, following) and i + 1 < len(lines)
        joint = (not line or heading or (previous and ENDS_SENTENCE.search(previous)
                                          and _STARTS_PARAGRAPH.match(line)))
        if joint and pos > start:
            out.append((start, pos, False))
            start = pos
        if heading:
            out.append((pos, pos + len(raw), True))
            start = pos + len(raw)
        pos += len(raw)
        previous = "" if heading else line if line else previous  # a heading ends its line: the next may be one
    if pos > start:
        out.append((start, pos, False))
    return [p for p in out if text[p[0]:p[1]].strip()]


def _cut_long(text: str, start: int, end: int, cap: int) -> list[tuple[int, int]]:
    """Pieces of ``text[start:end]`` of at most ``cap`` tokens each: at sentence ends, then at spaces."""
    cuts = [start] + [start + m.end() for m in _SENTENCE_END.finditer(text[start:end])] + [end]
    pieces: list[tuple[int, int]] = []
    a = start
    for i in range(1, len(cuts)):
        if estimate_tokens(text[a:cuts[i]]) > cap and cuts[i - 1] > a:
            pieces.append((a, cuts[i - 1]))
            a = cuts[i - 1]
    pieces.append((a, end))
    out: list[tuple[int, int]] = []
    for a, b in pieces:
        while estimate_tokens(text[a:b]) > cap:
            mid = text.rfind(" ", a, a + max(1, (b - a) * cap // max(estimate_tokens(text[a:b]), 1)))
            mid = mid if mid > a else a + (b - a) // 2
            out.append((a, mid))
            a = mid
        out.append((a, b))
    return out


_CALLOUTS = frozenset({"NOTICE", "NOTE", "PLEASE NOTE", "IMPORTANT", "IMPORTANT NOTE", "IMPORTANT NOTICE",
                       "WARNING", "CAUTION", "REMINDER"})
"""Labels of a boxed aside in a booklet wording (``NOTICE`` / ``Failure to contact ... could result in the
denial of your claim.``): a heading over the box, never a part of the wording of its own."""


MAX_JOINED_HEADING_CHARS = 120
"""Longest heading that a capitals line joins (:func:`_headed`): a title printed over two or three lines
(``EMERGENCY MEDICAL CARE COVERAGE IN CASE OF A MEDICAL EMERGENCY WHILE TRAVELLING``, 78 characters)
fits; a run of capitals lines each opening with a joining word (``IN PLACE 1`` ... ``IN PLACE 49``) stops
joining there, and the heading keeps its first lines (``BAGGAGE IN PLACE 1 ...``)."""


def _key(label: str) -> str:
    """A heading line compared whatever its punctuation and case: ``Warning – Exclusions`` -> ``WARNING EXCLUSIONS``."""
    return " ".join(re.sub(r"[^\w\s]", " ", label).split()).upper()


def _outer_levels(paras: list[tuple[int, int, bool]], text: str) -> tuple[set[str], set[str]]:
    """``(recurring, trailing)`` heading keys of one section's text (:func:`_key`).

    ``recurring``: an outer heading met at least twice after body text (``WARNING – EXCLUSIONS`` under
    each cover of a booklet, ``WHAT IS NOT COVERED`` under each section): a sub-part of the outer
    heading before it, not a part of its own, unless it is the first outer heading of the text (a cover
    printed again opens its part again). ``trailing``: a heading only ever met right under another
    heading (``TRIP CANCELLATION OR INTERRUPTION`` / ``COVERAGE``): the second line of that heading.
    """
    after_body: Counter[str] = Counter()
    after_head: Counter[str] = Counter()
    opens: set[str] = set()  # first met before any other outer heading: a part of its own however often it recurs
    headed = False  # a heading other than a callout's label has been met (one flag, not a rescan per heading)
    for i, (a, b, heading) in enumerate(paras):
        if heading:
            key = _key(text[a:b])
            if not headed and is_outer(text[a:b].strip()):
                opens.add(key)
            (after_head if i and paras[i - 1][2] else after_body)[key] += 1
            headed = headed or key not in _CALLOUTS
    recurring = {k for k, n in after_body.items() if n >= 2 and k not in _CALLOUTS and k not in opens}
    return recurring, set(after_head) - set(after_body)


def _headed(label: str, heads: tuple[str, ...], frame: tuple[str, ...], after_heading: bool,
            recurring: set[str], trailing: set[str]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """``(heads, frame)`` once heading line ``label`` is read (see :func:`parts`)."""
    key = _key(label)
    words = label.split()
    if (after_heading and heads and is_outer(label) and key not in _CALLOUTS
            and (words[0].lower() in _JOINING_WORDS or (key in trailing and len(words) <= 2 and is_outer(heads[-1])))):
        if len(heads[-1]) + 1 + len(label) > MAX_JOINED_HEADING_CHARS:
            return heads, frame  # a heading's further lines past the cap: the heading stays as it is
        joined = f"{heads[-1]} {label}"
        if frame and heads[-1] == frame[-1]:
            frame = (*frame[:-1], joined)
        return (*heads[:-1], joined), frame
    if is_outer(label) and key not in _CALLOUTS:
        part = frame[:1] if frame and _key(frame[0]) not in recurring and not _key(frame[0]).startswith(key) else ()
        frame = (*part, label) if key in recurring else (label,)
        return frame, frame
    return (*frame, label), frame


def parts(text: str, cap: int) -> list[tuple[int, int, tuple[str, ...]]]:
    """``(start, end, sub-headings)`` of the parts of one section's text, each at most ``cap`` tokens.

    The sub-headings are the heading lines above a part inside the section (:func:`paragraphs`): an
    outer heading (:func:`is_outer`) frames the inner ones below it (``BAGGAGE COVERAGE > What is
    covered``); a heading in capitals right under another heading is that heading's second line and
    joins it when it starts with a joining word (``EMERGENCY MEDICAL CARE COVERAGE`` / ``IN CASE OF A
    MEDICAL EMERGENCY WHILE TRAVELLING``; ``Emergency Medical Care`` / ``IN CANADA``), or when it is a
    word or two in capitals under capitals and never heads body text of its own (``TRIP CANCELLATION OR
    INTERRUPTION`` / ``COVERAGE``); otherwise it opens a part (a title, then ``WHAT IS COVERED``;
    ``Multi-trip solutions``, then ``ANNUAL``); an outer heading that recurs after body text
    (:func:`_outer_levels`) sits under the outer heading before it (``TRIP CANCELLATION OR INTERRUPTION
    COVERAGE > WARNING – EXCLUSIONS > B) Other exclusions``); a boxed aside's label (:data:`_CALLOUTS`)
    is an inner heading of the frame it sits in.
    """
    out: list[tuple[int, int, tuple[str, ...]]] = []
    paras = paragraphs(text)
    recurring, trailing = _outer_levels(paras, text)
    heads: tuple[str, ...] = ()
    frame: tuple[str, ...] = ()  # the outer headings over what follows: (part,) or (part, recurring sub-part)
    cur: tuple[int, int] | None = None
    for i, (a, b, heading) in enumerate(paras):
        if heading:
            if cur:
                out.append((*cur, heads))
                cur = None
            heads, frame = _headed(text[a:b].strip(), heads, frame, bool(i) and paras[i - 1][2], recurring, trailing)
            continue
        if estimate_tokens(text[a:b]) > cap:
            if cur:
                out.append((*cur, heads))
                cur = None
            out += [(x, y, heads) for x, y in _cut_long(text, a, b, cap)]
        elif cur is None:
            cur = (a, b)
        elif estimate_tokens(text[cur[0]:b]) > cap:
            out.append((*cur, heads))
            cur = (a, b)
        else:
            cur = (cur[0], b)
    if cur:
        out.append((*cur, heads))
    return out
