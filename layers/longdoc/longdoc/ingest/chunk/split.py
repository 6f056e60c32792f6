"""The split pass: pack whole sections into drafts, and split a long section into parts.

Sections are trimmed of surrounding whitespace (blank ones dropped), then grouped into
families: a section with the items and flush text that follow it (``4.2``, ``4.2(a)``,
``4.2(b)(i)``, ..., ``4.2`` again). Chunks are cut at the joints between families, never
at an item joint for its own sake: items only say which sub-section a quote cites (the
chunk's section spans). A heading-only section whose next section is its own first child
waits and opens that child's draft. A family (with its waiting heads) of at most
``target_tokens`` joins the open draft of whole sections while that stays within the
target, else opens a new one. A longer family is packed from its paragraphs (sentences
for a paragraph over the budget) into parts of up to the target, each cited as the
section with a suffix (``4.2#1``, ``4.2#2``), each part's items still spans of their own.
The overlap pass then opens each continuation with the end of the part before it.
"""

from __future__ import annotations

from itertools import pairwise

from longdoc.core.text import sentence_breaks, trim_span
from longdoc.core.tokens import estimate_tokens
from longdoc.ingest.chunk.joints import paragraph_breaks
from longdoc.ingest.chunk.oversize import cut_long_sentence, flag_cut_parts
from longdoc.ingest.chunk.state import ChunkingState, Draft, Section, SectionSplit

Span = tuple[int, int]


def heading_only(text: str, sec: Section, nxt: Section | None) -> bool:
    """Whether ``sec`` is just its heading and belongs with its first child ``nxt``.

    True for a short section (at most 200 chars and 3 lines, not ending in ``.`` or
    ``;``: ``CHAPTER III`` + title, or a lead-in such as ``3. The notification shall at
    least:``) whose next section is its own item or sub-section (a longer heading path
    under its own). Such a section opens the chunk of that child, never ends one. False
    when ``nxt`` is None.
    """
    body = text[sec.start : sec.end]
    if nxt is None or len(body) > 200 or body.count("\n") > 2 or body.rstrip().endswith((".", ";")):
        return False
    if nxt.item_of is not None:
        return nxt.item_of == sec.section_id
    return (
        len(nxt.heading_path) > len(sec.heading_path)
        and nxt.heading_path[: len(sec.heading_path)] == sec.heading_path
    )


def _trimmed(state: ChunkingState) -> list[Section]:
    """The sections with surrounding whitespace trimmed off; blank ones dropped."""
    out: list[Section] = []
    for sec in state.sections:
        start, end = trim_span(state.text, sec.start, sec.end)
        if start < end:
            out.append(Section(sec.section_id, sec.heading_path, start, end, sec.item_of, sec.flush))
    return out


def _units(text: str, sec: Section, typical_line: int, max_tokens: int) -> list[Span]:
    """Split a section into paragraphs, and paragraphs over ``max_tokens`` into sentences."""
    cuts = [sec.start, *paragraph_breaks(text, sec.start, sec.end, typical_line), sec.end]
    units: list[Span] = []
    for a, b in pairwise(cuts):
        a, b = trim_span(text, a, b)
        if a >= b:
            continue
        if estimate_tokens(text[a:b]) <= max_tokens:
            units.append((a, b))
            continue
        for sa, sb in pairwise([a, *sentence_breaks(text, a, b), b]):
            sa, sb = trim_span(text, sa, sb)
            if sa < sb:
                units.extend(cut_long_sentence(text, sa, sb, max_tokens))  # oversize.py: runs with no end
    return units


def _pack(text: str, units: list[Span], target: int, max_tokens: int) -> list[Draft]:
    """Pack units into drafts of up to ``target`` tokens (a draft under half the target may reach ``max_tokens``)."""
    drafts: list[Draft] = []
    cur: list[Span] = []
    cur_tokens = 0
    for unit in units:
        # Measure the joined span (units plus the whitespace between them), not a sum of parts.
        joined = estimate_tokens(text[cur[0][0] if cur else unit[0] : unit[1]])
        if cur and joined > target and not (cur_tokens < target // 2 and joined <= max_tokens):
            drafts.append(Draft(cur[0][0], cur[-1][1]))
            cur = []
            joined = estimate_tokens(text[unit[0] : unit[1]])
        cur.append(unit)
        cur_tokens = joined
    if cur:
        drafts.append(Draft(cur[0][0], cur[-1][1]))
    return drafts


def _merge(state: ChunkingState, open_draft: Draft | None, group: list[Section]) -> Draft:
    """Add a small group of whole sections to the open draft when it stays within the target, else open one."""
    end = group[-1].end
    if open_draft is not None and estimate_tokens(state.text[open_draft.start : end]) <= state.target_tokens:
        open_draft.end = end
        open_draft.sections.extend(group)
        return open_draft
    draft = Draft(group[0].start, end, group, None)
    state.drafts.append(draft)
    return draft


def families(sections: list[Section]) -> list[list[Section]]:
    """The sections grouped into families: each section with the items and flush text after it.

    A section that is neither an item (``item_of`` set) nor flush text opens a family;
    items, nested items and flush text join the family open before them.
    """
    out: list[list[Section]] = []
    for sec in sections:
        if out and (sec.item_of is not None or sec.flush):
            out[-1].append(sec)
        else:
            out.append([sec])
    return out


def _split(state: ChunkingState, heads: list[Section], family: list[Section]) -> None:
    """Split a long family (after its heading-only heads) into numbered parts of up to the target."""
    text, first = state.text, family[0]
    sec = Section(first.section_id, first.heading_path, first.start, family[-1].end)
    head_tokens = estimate_tokens(text[heads[0].start : sec.start]) if heads else 0
    target = max(1, state.target_tokens - head_tokens)
    max_tokens = max(1, state.max_tokens - head_tokens)
    units = [u for member in family for u in _units(text, member, state.typical_line, max_tokens)]
    parts = _pack(text, units, target, max_tokens)
    flag_cut_parts(parts, units)  # oversize.py
    numbered = bool(sec.section_id) and len(parts) > 1
    for i, part in enumerate(parts, start=1):
        part.section_id = f"{sec.section_id}#{i}" if numbered else sec.section_id
    state.drafts.extend(parts)
    state.splits.append(SectionSplit(sec, heads, head_tokens, parts, [u[0] for u in units], target, max_tokens,
                                     members=family))


def split_sections(state: ChunkingState) -> None:
    """Pass 4 (split): trimmed sections -> ``state.drafts`` (families merged or split) and ``state.splits``."""
    groups = families(_trimmed(state))
    heads: list[Section] = []  # heading-only sections waiting for their first child
    open_draft: Draft | None = None  # a draft of whole sections that may take more
    for i, family in enumerate(groups):
        nxt = groups[i + 1][0] if i + 1 < len(groups) else None
        if len(family) == 1 and heading_only(state.text, family[0], nxt):
            heads.append(family[0])
            continue
        group = [*heads, *family]
        if estimate_tokens(state.text[group[0].start : family[-1].end]) <= state.target_tokens:
            open_draft = _merge(state, open_draft, group)
        else:
            open_draft = None
            _split(state, heads, family)
        heads = []
