"""The overlap pass: open each continuation of a split section with the end of the part before.

A continuation (``#2``, ``#3``, ...) starts with whole sentences or paragraphs from the end
of the previous part: as many as fit ``overlap * target_tokens`` tokens, or, when even the
last one does not, as many as fit 20 % of ``target_tokens`` (the top of the allowed
10-20 % range); never so many that the part passes its ``max_tokens``.

When nothing fits because the sentence just before the cut is over 20 %, the cut moves
(:func:`_rebalanced_cut`) to the nearest sentence or paragraph start after which whole
sentences making 10-20 % of the target fit. Only when no such joint exists (in practice:
the sentences around the cut are over 20 % too) is the part marked ``overlap_missing``
and left without overlap. Cuts whose overlap already fits never move.

Finally each part records its section spans (the family members it touches), the first part takes the heading-only
sections that open it, and every part over ``max_tokens`` is flagged ``oversize``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from itertools import pairwise

from longdoc.core.text import sentence_breaks, trim_span
from longdoc.core.tokens import CHARS_PER_TOKEN, estimate_tokens, weighted_chars
from longdoc.ingest.chunk.state import ChunkingState, Draft, Section, SectionSplit

MAX_OVERLAP = 0.20
"""Upper bound of the overlap share of the target (the issue's 10-20 % range)."""
MIN_OVERLAP = 0.10
"""Lower bound of that range: a cut moved to make room for overlap must give at least this."""
_CLAUSE_END_RE = re.compile(r"[.;:!?。；：！？．][\"'”’)\]」』）]*$")


@dataclass(frozen=True)
class _Budget:
    """The overlap budgets of one split section (chars) and the part budgets (tokens) that bound them."""

    text: str
    unit_starts: list[int]  # paragraph (and long paragraphs' sentence) starts of the section
    target: int  # tokens: the parts' target
    max_tokens: int  # tokens: the parts' maximum
    # The *_chars budgets are weighted chars (tokens x 4, core.tokens.weighted_chars: a CJK
    # character weighs 4), so a Chinese overlap holds as many tokens as an English one.
    share_chars: int  # the job's overlap share of the target
    wide_chars: int  # MAX_OVERLAP of the target
    min_chars: int  # MIN_OVERLAP of the target

    def weight(self, start: int, end: int) -> int:
        """``weighted_chars`` of ``text[start:end]`` (its length for text without CJK)."""
        return weighted_chars(self.text[start:end])

    def start(self, prev_start: int, prev_end: int, start: int, end: int, budget: int) -> int | None:
        """Where the overlap for content ``[start, end)`` begins inside ``[prev_start, prev_end)``:
        the earliest sentence/paragraph start whose tail fits ``budget`` chars and keeps the
        continuation within ``max_tokens``; None when not even the last sentence fits."""
        room = self.max_tokens * CHARS_PER_TOKEN - self.weight(prev_end, end)
        starts = sorted(
            {prev_start, *sentence_breaks(self.text, prev_start, prev_end)}
            | {u for u in self.unit_starts if prev_start < u < prev_end}
        )
        found = _overlap_start(self, starts, prev_end, min(budget, room))
        return None if found == prev_end else found


def _overlap_start(budget: _Budget, starts: list[int], prev_end: int, budget_chars: int) -> int:
    """The earliest of ``starts`` (sentence or paragraph starts, ascending) whose tail up to
    ``prev_end`` fits ``budget_chars`` (weighted chars); ``prev_end`` itself when none fits (no overlap)."""
    best = prev_end
    for s in reversed(starts):
        if budget.weight(s, prev_end) > budget_chars:
            break
        best = s
    return best


def _rebalanced_cut(budget: _Budget, prev: Draft, nxt: Draft, prev_start: int) -> tuple[int, int] | None:
    """Move the cut between two parts of one section so the continuation can have overlap.

    ``prev`` spans ``[prev.start, prev.end)`` (its own overlap included; its own text starts
    at ``prev_start``); ``nxt``'s own text is ``[nxt.start, nxt.end)``. Candidate cuts are the
    sentence and paragraph starts strictly inside ``(prev_start, nxt.end)`` that follow a
    sentence or clause end (``. ; : ! ?`` or a CJK ``。；：！？．``), tried nearest the original cut first (a paragraph
    start wins a tie). A cut is taken when:

    - backward: the previous part keeps at least ``target // 2`` tokens of its own text;
    - forward: the previous part stays within ``max_tokens`` even with the largest overlap
      it may start with (so the cut does not depend on the job's overlap share);
    - the whole trailing sentences that fit ``wide_chars`` (20 % of the target) before the
      cut, without pushing the continuation over ``max_tokens`` (:meth:`_Budget.start`),
      are at least ``min_chars`` (10 %: a page number alone is not an overlap) and do not
      reach back to the previous part's own start.

    Returns ``(new end of prev, new start of nxt's own text)``, or None when no cut works.
    """
    text, cut = budget.text, nxt.start
    paragraph = set(budget.unit_starts)
    candidates = sorted(
        {*sentence_breaks(text, prev_start, nxt.end), *(u for u in budget.unit_starts if prev_start < u < nxt.end)}
        - {cut},
        key=lambda c: (abs(c - cut), c not in paragraph),
    )
    # Chars before prev's own text when it starts with an overlap: at most 20 % plus whitespace.
    own = prev.start + prev.overlap_chars  # overlap_chars are plain chars; the budgets weighted ones
    lead = (max(budget.wide_chars + budget.weight(own, prev_start), budget.weight(prev.start, prev_start))
            if prev.start < prev_start else 0)
    for c in candidates:
        new_end = trim_span(text, prev_start, c)[1]
        if new_end <= prev_start or not _CLAUSE_END_RE.search(text[max(0, new_end - 4) : new_end]):
            continue  # a blank line after "5.6," is a page break inside a sentence, not a joint
        if c < cut and estimate_tokens(text[prev_start:new_end]) < budget.target // 2:
            continue
        if c > cut and lead + budget.weight(prev_start, new_end) > budget.max_tokens * CHARS_PER_TOKEN:
            continue
        start = budget.start(prev_start, new_end, c, nxt.end, budget.wide_chars)
        if start is not None and start > prev_start and budget.weight(start, new_end) >= budget.min_chars:
            return new_end, c
    return None


def _overlap_part(budget: _Budget, prev: Draft, part: Draft, content_start: int) -> int:
    """Open ``part`` with the end of ``prev`` (whose own text starts at ``content_start``); returns part's own start."""
    own_start = part.start
    widest = max(budget.wide_chars, budget.share_chars)
    start = budget.start(content_start, prev.end, part.start, part.end, widest)
    moved = False
    if start is None:
        cut = _rebalanced_cut(budget, prev, part, content_start)
        if cut is not None:
            (prev.end, own_start), moved = cut, True
            start = budget.start(content_start, prev.end, own_start, part.end, widest)
    if start is not None:
        # As much as fits the job's budget, else as much as fits 20 %. A moved cut was
        # moved to give 10-20 %: it keeps the 20 % overlap when the budget gives under 10 %.
        tight = budget.start(content_start, prev.end, own_start, part.end, budget.share_chars)
        if tight is not None and not (moved and budget.weight(tight, prev.end) < budget.min_chars):
            start = tight
    part.overlap_missing = start is None
    part.overlap_chars = 0 if start is None else prev.end - start
    part.start = own_start if start is None else start
    return own_start


def _overlap_split(state: ChunkingState, split: SectionSplit) -> None:
    """Give every continuation part of one split section its overlap, moving cuts where needed."""
    overlap_of = state.target_tokens or split.target  # the job's target, when heads shrank this one
    budget = _Budget(
        text=state.text,
        unit_starts=split.unit_starts,
        target=split.target,
        max_tokens=split.max_tokens,
        share_chars=int(overlap_of * state.overlap * CHARS_PER_TOKEN),
        wide_chars=int(overlap_of * MAX_OVERLAP * CHARS_PER_TOKEN),
        min_chars=int(overlap_of * MIN_OVERLAP * CHARS_PER_TOKEN),
    )
    content_start = split.parts[0].start  # where the previous part's own text begins (after its overlap)
    for prev, part in pairwise(split.parts):
        content_start = _overlap_part(budget, prev, part, content_start)


def part_sections(split: SectionSplit, part: Draft) -> list[Section]:
    """The section spans of one part: the family members it touches, clipped to it (overlap included).

    The section's own text (its lead-in, and its flush text after the items) is cited as
    the part (``4.2#2``); an item keeps its own id (``4.2(b)(ii)``), so a quote inside it
    still cites the item. A part inside one item (a long item split) is cited as that
    item with the part's suffix (``4.2(b)#3``): a chunk with one span cites by its own id.
    A part touching no member is the part alone.
    """
    own = split.section.section_id
    spans = [
        Section(part.section_id if m.section_id == own else m.section_id, m.heading_path,
                max(m.start, part.start), min(m.end, part.end))
        for m in split.members
        if max(m.start, part.start) < min(m.end, part.end)
    ]
    suffix = (part.section_id or "").rpartition("#")[2] if "#" in (part.section_id or "") else None
    if len(spans) == 1 and suffix and spans[0].section_id not in (None, part.section_id):
        part.section_id = spans[0].section_id = f"{spans[0].section_id}#{suffix}"
    return spans or [Section(part.section_id, split.section.heading_path, part.start, part.end)]


def _settle(state: ChunkingState, split: SectionSplit) -> None:
    """Record each part's section spans, open the first part with its heads, flag parts over ``max_tokens``."""
    for part in split.parts:
        part.sections = part_sections(split, part)
    if split.head_tokens:
        first = split.parts[0]
        first.start = split.heads[0].start
        first.sections = [*split.heads, *first.sections]
    for part in split.parts:
        part.oversize = part.oversize or estimate_tokens(state.text[part.start : part.end]) > state.max_tokens


def add_overlap(state: ChunkingState) -> None:
    """Pass 5 (overlap): for each of ``state.splits``, overlap its continuations and settle its parts in place."""
    for split in state.splits:
        _overlap_split(state, split)
        _settle(state, split)
