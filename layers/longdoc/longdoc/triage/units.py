"""Clause units for triage from the document's structure, whatever chunk size the ingest used.

A unit is one numbered section (its ``(a)``/``(i)`` items folded in) with its heading path,
rebuilt from the chunks' section spans (absolute offsets of whole sections, so a section the
chunker split over several chunks comes back whole, and overlap text is not repeated). A
section over :data:`UNIT_MAX_TOKENS` (estimated tokens; the design's policy chunk cap, so three
units fit the 1,200-token clause band) is split at paragraph joints into parts ``4.2#1``,
``4.2#2``, ...; a heading line inside a long section (a short line with no closing
punctuation, such as ``Exclusions``, that the next line does not carry on) starts a new part and
joins the heading path of the parts below it, under the keyword or capitals heading before it
(``Section 1 - Buildings > What is not covered``). A paragraph alone over the cap is split at
sentence ends, then at words.

Text outside every numbered section is cited by its heading path (``Definitions > Accessories``):
see :func:`clause_units`.

Each unit points at the chunk that holds most of its text (its vector ranks the unit in the
dense ranking; its id is what a citation names).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from longdoc.core.models import Chunk
from longdoc.core.tokens import estimate_tokens
from longdoc.triage.queries import is_definitions_heading
from longdoc.triage.unit_parts import ENDS_SENTENCE, OUTER_KEYWORD, PAGE_LINE, is_outer, paragraphs, parts

UNIT_MAX_TOKENS = 400
"""Cap of one clause unit's text (estimated tokens): the design's policy chunk cap (docs/architecture.md)."""
MIN_UNIT_TOKENS = 8
"""A span shorter than this (estimated tokens) is a heading alone, not a clause."""

_ID_LABEL_CHARS = 50
"""A heading label in a heading-path unit id is cut to this many characters (at a word end)."""


@dataclass(frozen=True)
class Unit:
    """One clause unit: cited id (``4.2``, ``4.2#1``), heading path, text, and where it sits.

    ``start`` / ``end`` are absolute character offsets in the document text; ``chunk_id`` is the
    chunk holding most of it.
    """

    unit_id: str
    heading_path: tuple[str, ...]
    text: str
    start: int
    end: int
    chunk_id: str


def document_text(chunks: Sequence[Chunk]) -> str:
    """The document text the chunks cover (``text == doc[char_start:char_end]``); gaps become newlines."""
    size = max((c.char_end for c in chunks), default=0)
    buf = ["\n"] * size
    for chunk in chunks:
        buf[chunk.char_start:chunk.char_end] = list(chunk.text)
    return "".join(buf)


def _sections(chunks: Sequence[Chunk]) -> list[tuple[str | None, tuple[str, ...], int, int]]:
    """Whole sections ``(id, heading path, start, end)`` in document order, items folded into their section."""
    seen: dict[tuple[int, int], tuple[str | None, tuple[str, ...]]] = {}
    for chunk in chunks:
        spans = chunk.section_spans or []
        if not spans:
            seen.setdefault((chunk.char_start, chunk.char_end), (chunk.section_id, tuple(chunk.heading_path)))
        for s in spans:
            seen.setdefault((s.char_start, s.char_end), (s.section_id, tuple(s.heading_path)))
    ordered = sorted(seen.items())
    out: list[tuple[str | None, tuple[str, ...], int, int]] = []
    for (start, end), (sid, path) in ordered:
        if out and start < out[-1][3]:  # nested or overlapping span: already inside the previous section
            prev = out[-1]
            out[-1] = (prev[0], prev[1], prev[2], max(prev[3], end))
            continue
        if out and _base(out[-1][0]) == _base(sid) and (sid is not None or out[-1][1] == path):
            # an item, or the rest, of the section before (text outside numbered sections: under the same headings)
            out[-1] = (out[-1][0] and _base(out[-1][0]), out[-1][1], out[-1][2], end)
        else:
            out.append((sid, path, start, end))
    return out


def _base(section_id: str | None) -> str | None:
    """A section id without split suffix and items: ``3(2)#5`` -> ``3``; None stays None."""
    if section_id is None:
        return None
    bare = section_id.split("#", 1)[0]
    return bare.split("(", 1)[0].strip() or bare


def _chunk_of(chunks: Sequence[Chunk], start: int, end: int) -> str:
    best = max(chunks, key=lambda c: (min(c.char_end, end) - max(c.char_start, start), -c.ordinal))
    return best.chunk_id


def _label(label: str) -> str:
    """A heading label as it stands in a unit id: emphasis marks and closing ``:``/``.`` dropped, spaces
    collapsed, cut at a word end to :data:`_ID_LABEL_CHARS` characters."""
    text = " ".join(re.sub(r"[*_`]+", "", label).split()).rstrip(" :.;,-–")
    if len(text) > _ID_LABEL_CHARS:
        cut = text.rfind(" ", 0, _ID_LABEL_CHARS + 1)
        text = text[:cut if cut > 0 else _ID_LABEL_CHARS].rstrip(" :.;,-–")
    return text


def path_id(path: Sequence[str], root: str | None = None) -> str:
    """The id of an unnumbered unit from its heading path: its last two levels, ``root`` (the title
    heading every unit of the document sits under) left out, as ``Section 1 - Buildings > What is not
    covered``; ``""`` for an empty path."""
    levels = list(path[1:]) if root is not None and len(path) > 1 and path[0] == root else list(path)
    return " > ".join(x for x in (_label(p) for p in levels[-2:]) if x)


def _numbered(sections: Sequence[tuple[str | None, tuple[str, ...], int, int]]) -> bool:
    """Whether a document is a numbered wording: at least half its section text lies in numbered sections."""
    total = sum(end - start for _, _, start, end in sections)
    return 2 * sum(end - start for sid, _, start, end in sections if sid is not None) >= total > 0


def restart_scopes(sections: Sequence[tuple[str | None, tuple[str, ...], int, int]], doc: str = "") -> dict[int, str]:
    """Scope headings of numbered sections whose numbering restarts: ``{section index: heading}``.

    A wording that numbers its clauses afresh under each part (``SECTION I`` 1-5, ``SECTION II`` 1-5,
    ``General Conditions`` 1-12) gives the same number to several sections. A run of numbered
    sections starts at the first one, after an outer heading (a ``Section``/``Part`` keyword section
    or an unnumbered heading in capitals: :func:`is_outer`), and wherever the number does not go up;
    the run's scope is the outer heading before it, or the unnumbered heading right before the run's
    first section (``General Conditions``, ``What is not covered``). A heading between two sections
    of one run (a definition set in the middle of ``SECTION I``) does not change the scope. Every
    numbered section of a scope in which some number also occurs elsewhere in the document is
    returned with that scope's heading; a wording that never repeats a number returns ``{}`` (its
    ids stay as they are). Sections before any heading have no scope and are left out. ``doc`` is the
    document text the offsets index: a capitals heading line inside an unnumbered or keyword section's
    text, or a capitals or title-case heading that ends any section's text (``GENERAL CONDITIONS`` /
    ``General Conditions`` that a plain-text chunker left in the span before, :func:`_trailing_heading`),
    is the outer heading of the sections after it. ``""``: no text read (empty strings find nothing).
    """
    scope_of: list[str | None] = []
    current: str | None = None
    pending: str | None = None  # an unnumbered heading since the last numbered section
    last: int | None = None
    for sid, path, start, end in sections:
        head = path[-1] if path else ""
        keyword = sid is not None and bool(OUTER_KEYWORD.match(sid))
        if sid is None or keyword:
            heading = head if head and not head[:1].isdigit() else (sid if keyword else None)
            if heading and (keyword or is_outer(heading)):
                current, pending, last = heading, None, None
            elif heading:
                pending = heading
            span = doc[start:end]
            later = [h for h in _inner_headings(span) if is_outer(h) and h != heading]
            tail = _trailing_heading(span)
            later += [tail] if tail and tail != heading and tail not in later else []
            if later:  # GENERAL CONDITIONS left inside the span before: it heads what follows
                current, pending, last = later[-1], None, None
            scope_of.append(None)
            continue
        number = _leading_number(sid)
        if (last is None or (number is not None and number <= last)) and pending:
            current = pending
        pending = None
        last = number if number is not None else last
        scope_of.append(current)
        tail = _trailing_heading(doc[start:end])
        if tail:  # "2. Pollution ... GENERAL CONDITIONS": the heading opens the part after this item
            current, pending, last = tail, None, None
    counts = Counter(_base(sid) or sid for sid, *_ in sections if sid is not None and not OUTER_KEYWORD.match(sid))
    restarting = {scope for (sid, *_), scope in zip(sections, scope_of, strict=True)
                  if scope is not None and sid is not None and counts.get(_base(sid) or sid, 0) > 1}
    return {i: scope for i, scope in enumerate(scope_of) if scope in restarting}


def _trailing_heading(text: str) -> str | None:
    """The heading a span ends with, after a blank line: a short line with no closing punctuation in
    capitals (``GENERAL CONDITIONS``) or in title case (``General Conditions``), which a plain-text
    chunker left at the end of the span before the part it heads; None when there is none."""
    body = text.rstrip()
    if "\n\n" not in body:
        return None
    last = body.rsplit("\n\n", 1)[1].strip().lstrip("#").strip()
    words = last.split()
    if not words or len(words) > 6 or "\n" in last or ENDS_SENTENCE.search(last) or last[:1].isdigit():
        return None
    if any(ch.isdigit() for ch in last) or not re.search(r"[^\W\d_]{3}", last) or PAGE_LINE.search(last):
        return None  # a rule (---), a form code (FA052408), page furniture: no heading
    titled = all(w[:1].isupper() for w in words if len(w) > 3 and w.isalpha())
    return last if is_outer(last) or titled else None


def _inner_headings(text: str) -> list[str]:
    """Heading lines inside one span's text (:func:`paragraphs`), its own first line left out."""
    out = [text[a:b].strip().lstrip("#").strip() for a, b, is_head in paragraphs(text) if is_head]
    first = text.strip().split("\n")[0].strip().lstrip("#").strip()
    return [h for h in out if h and h != first]  # the span's own heading line is not inside it


def _leading_number(section_id: str) -> int | None:
    """The first number of a section id: ``4.2`` -> 4, ``12`` -> 12; None when it does not open with one."""
    match = re.match(r"\d+", _base(section_id) or "")
    return int(match.group()) if match else None


def _scope_label(scope: str) -> str:
    """A scope heading as it leads a restarted clause's id: ``SECTION II – LIABILITY TO THIRD PARTIES``
    -> ``Section II`` (a keyword heading keeps its keyword and number), ``GENERAL CONDITIONS`` as it is."""
    keyword = OUTER_KEYWORD.match(scope)
    if keyword:
        number = scope[keyword.start():].split()[:2]
        return f"{number[0].capitalize()} {number[1].rstrip(':.–-')}"
    return _label(scope)


def _pieces(body: str, sid: str | None, cap: int, count: Callable[[str], int]) -> list[tuple[int, int, tuple[str, ...]]]:
    """``(start, end, inner headings)`` of one section's ``body``: the whole body when within ``cap``
    tokens, else its :func:`~longdoc.triage.unit_parts.parts`; a short body is cut at its own
    headings too when they are outer parts of an unnumbered text (``sid`` None) or a definitions run."""
    whole: list[tuple[int, int, tuple[str, ...]]] = [(0, len(body), ())]
    pieces = whole if count(body.strip()) <= cap else parts(body, cap)
    if sid is None and len(pieces) == 1:
        # a short wording's text outside numbered sections: its own outer headings still cut it
        # (WHAT IS COVERED / WHAT IS NOT COVERED / CONDITIONS), as they do a long one
        cut = parts(body, cap)
        if len(cut) > 1 and sum(1 for *_, heads in cut if heads and is_outer(heads[0])) >= 2:
            return cut
    elif len(pieces) == 1:
        # a short numbered section with a definitions run under a heading of its own after its text
        # (SECTION D) EXCLUSIONS ... then DEFINITIONS -, a .txt wording): the definitions are a unit of
        # their own, so the section's text is not weighted down as definitions with them
        cut = parts(body, cap)
        if any(heads and is_outer(heads[-1]) and is_definitions_heading(heads[-1]) for *_, heads in cut[1:]):
            return cut
    return pieces


_POLICY_WIDE = re.compile(r"^\W*(?:GENERAL|COMMON)\s+(?:CONDITIONS|EXCLUSIONS|PROVISIONS|DEFINITIONS|TERMS)\b",
                          re.IGNORECASE)


def is_policy_wide(heading: str) -> bool:
    """Whether a heading names a part of the whole policy, not of the section it follows:
    ``GENERAL EXCLUSIONS``, ``GENERAL CONDITIONS``, ``COMMON PROVISIONS``, ``General Definitions``.
    Insurance wordings print these once after their numbered covers (``Section 35: ...`` then
    ``GENERAL CONDITIONS``); a cover's own ``ADDITIONAL EXCLUSIONS``, ``WHAT IS NOT COVERED`` or
    ``DEFINITIONS`` are not (a section may define its own terms)."""
    return bool(_POLICY_WIDE.match(heading))


def clause_units(chunks: Sequence[Chunk], *, cap: int = UNIT_MAX_TOKENS, preamble: str = "preamble",
                 count: Callable[[str], int] = estimate_tokens) -> list[Unit]:
    """The clause units of one document version's chunks, in document order (see the module docstring).

    ``cap`` is the unit cap in tokens as ``count`` measures them. A section within the cap is one
    unit with its own id; a longer one gives ``id#1``, ``id#2``, ... Heading-only spans (under
    :data:`MIN_UNIT_TOKENS`) are left out. Returns ``[]`` for no chunks.

    Ids: a numbered section's number (``4.2``, ``Section 29``). Text outside every numbered section
    takes its id from its heading path (:func:`path_id`: ``Definitions > Accessories``). It stays
    ``preamble`` when it sits under no heading at all, and when it is the front of a numbered wording
    (before the first numbered section of a document with at least half its text in numbered
    sections) under no heading the chunker found but the title (a title page, an introduction). A wording that numbers afresh under each part qualifies those numbers with the part's heading
    (:func:`restart_scopes`): ``Section II > 1``, ``GENERAL CONDITIONS > 2``, the heading joining the
    unit's heading path. An id met again (the same number, the same heading path) counts on: ``id#2``, ...
    """
    chunks = sorted(chunks, key=lambda c: c.ordinal)
    if not chunks:
        return []
    doc = document_text(chunks)
    sections = _sections(chunks)
    numbered = _numbered(sections)
    roots = {path[0] for _, path, _, _ in sections if path}
    root = next(iter(roots)) if len(roots) == 1 else None
    scopes = restart_scopes(sections, doc)
    seen_number = False
    out: list[Unit] = []
    used: dict[str, int] = {}
    for index, (sid, path, start, end) in enumerate(sections):
        seen_number = seen_number or sid is not None
        scope = scopes.get(index)
        if scope is not None and scope not in path:
            other = next((i for i, p in enumerate(path) if p != root and is_outer(p)), None)
            if other is not None:  # the chunker's outer heading is another part's: the scope replaces it
                path = (*path[:other], scope, *path[other + 1:])
            else:
                path = (*path[:1], scope, *path[1:]) if root is not None and path[:1] == (root,) else (scope, *path)
        body = doc[start:end]
        pieces = _pieces(body, sid, cap, count)
        pieces = [p for p in pieces if estimate_tokens(body[p[0]:p[1]].strip()) >= MIN_UNIT_TOKENS]
        placed = []
        ended = False  # a part of the whole policy (GENERAL EXCLUSIONS) has ended this keyword section
        for a, b, heads in pieces:
            heads = heads[1:] if path and heads[:1] == path[-1:] else heads
            headed = any(p != root for p in path)  # under a heading of the chunker's besides the title
            by_path = sid is None and (headed or seen_number or not numbered)
            base = _base(sid) or (path_id(path + heads, root) if by_path else "") or preamble
            base = f"{_scope_label(scope)} > {base}" if scope is not None and sid is not None else base
            unit_path = path + heads
            ended = ended or bool(sid is not None and heads and is_outer(heads[0]) and is_policy_wide(heads[0]))
            if sid is not None and heads and is_outer(heads[0]) and (
                    (len(path) > 1 and not OUTER_KEYWORD.match(sid)) or ended):
                # a capitals heading inside a bare-numbered section ends it ("3. Prohibited Access." then
                # SPECIAL COVERAGE FEATURES): what follows is cited by its own headings, not as 3#N; a
                # keyword section ("Section 29") keeps its capitals parts (ADDITIONAL EXCLUSIONS), but not
                # a part of the whole policy and what follows it (GENERAL CONDITIONS, then DEFINITIONS,
                # after the last "Section 35")
                unit_path = path[:-1] + heads
                base = path_id(unit_path, root)
            placed.append((base, a, b, unit_path))
        per_base = {base: sum(1 for p in placed if p[0] == base) for base, *_ in placed}
        for base, a, b, unit_path in placed:
            first = used.get(base, 0)  # the same id met again (a parse that lost a heading): go on counting
            used[base] = first + 1
            uid = base if per_base[base] == 1 and not first else f"{base}#{first + 1}"
            text = body[a:b].strip()
            lead = len(body[a:b]) - len(body[a:b].lstrip())
            out.append(Unit(uid, unit_path, text, start + a + lead, start + a + lead + len(text),
                            _chunk_of(chunks, start + a, start + b)))
    return out
