"""The sections and items passes: cut the text at its headings into cited sections.

Sections: each heading opens a section that runs to the next heading; text before the
first heading is the preamble (``section_id`` None). A heading without a number takes the
id of the nearest numbered heading above it; ``heading_path`` holds the labels of the
(non-item) headings above and including it.

Items: an item (``4.2(a)``) is one paragraph (two when its marker stands alone on its
line); the text after it up to the next heading is flush text of the enclosing section,
cited as that section again.
"""

from __future__ import annotations

import re
from dataclasses import replace

from longdoc.ingest.chunk.joints import paragraph_breaks
from longdoc.ingest.chunk.state import ChunkingState, Heading, Section

_ATTACHMENTS = ("Exhibit", "Schedule", "Annex", "Appendix", "Attachment")
_FIRST_NUMBER_RE = re.compile(
    r"^(?:(?:Article|Section|Clause|Part|Chapter|Art\.|Artikel|Articolo|Artículo|Artigo|Cláusula|Clausola)\s+|§\s)?"
    r"(?:1|I|1er|Premier|Primer[oa]|Prim[oa]|Primeir[oa])(?:\.[01])*(?:\.º|º)?$"
)
"""The id of a section numbered first: ``1``, ``1.1``, ``Article I``, ``§ 1``, ``Cláusula Primera``."""


def _section_id(h: Heading, stack: list[Heading]) -> str | None:
    """A heading's section id, or the nearest numbered heading's above it for one without a number."""
    if h.section_id is not None:
        return h.section_id
    return next((s.section_id for s in reversed(stack) if s.section_id), None)


def _item_section(h: Heading, stack: list[Heading], path: list[str], end: int) -> Section:
    """An item's section up to the next heading, with its owner and its owner's owner (for flush text)."""
    owner = stack[-2].section_id if len(stack) > 1 else None
    # the enclosing section again; when that is itself an item, it is its owner's item
    owner_of_owner = stack[-3].section_id if len(stack) > 2 and stack[-2].item else None
    return Section(_section_id(h, stack), path, h.line_start, end, item_of=owner, item=True,
                   marker_only=h.marker_only, flush_of=owner_of_owner)


def _opens_numbering(h: Heading) -> bool:
    """Whether a heading is numbered first of its kind (``1``, ``1.1``, ``Article I``, ``§ 1``, ``Section 1``).

    Schedules and exhibits are not: their number names the attachment, not a section.
    """
    sid = h.section_id or ""
    return not h.item and not sid.startswith(_ATTACHMENTS) and bool(_FIRST_NUMBER_RE.match(sid))


def _attachment(h: Heading) -> bool:
    """Whether a heading titles an attachment (``Exhibit A``, ``SCHEDULE 2``, ``Annex I``)."""
    return (h.section_id or h.label).upper().startswith(tuple(a.upper() for a in _ATTACHMENTS))


def cut_sections(state: ChunkingState) -> None:
    """Pass 2 (sections): ``state.headings`` -> ``state.sections``, each heading to the next, preamble first.

    A heading path never inherits an attachment's title that precedes the document's own
    first section (a filing that prints ``Exhibit A``'s title page before section ``1``):
    when the numbering opens, such titles leave the stack.
    """
    text, headings = state.text, state.headings
    sections: list[Section] = []
    if not headings or headings[0].line_start > 0:
        end = headings[0].line_start if headings else len(text)
        if text[:end].strip():
            sections.append(Section(None, [], 0, end))
    stack: list[Heading] = []
    opened = False
    for i, h in enumerate(headings):
        while stack and stack[-1].level >= h.level:
            stack.pop()
        if not opened and _opens_numbering(h):
            opened = True
            stack = [s for s in stack if not _attachment(s)]
        stack.append(h)
        end = headings[i + 1].line_start if i + 1 < len(headings) else len(text)
        path = [s.label for s in stack if not s.item]
        if h.item:
            sections.append(_item_section(h, stack, path, end))
        else:
            sections.append(Section(_section_id(h, stack), path, h.line_start, end))
    state.sections = sections


def cut_items(state: ChunkingState) -> None:
    """Pass 3 (items): cut each item section to its paragraph; the rest is flush text of its owner."""
    out: list[Section] = []
    for sec in state.sections:
        if not sec.item:
            out.append(sec)
            continue
        breaks = paragraph_breaks(state.text, sec.start, sec.end, state.typical_line)
        if sec.marker_only:
            breaks = breaks[1:]
        cut = breaks[0] if breaks else sec.end
        out.append(replace(sec, end=cut))
        if cut < sec.end and state.text[cut : sec.end].strip():
            out.append(Section(sec.item_of, sec.heading_path, cut, sec.end, item_of=sec.flush_of, flush=True))
    state.sections = out
