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

from dataclasses import replace

from longdoc.ingest.chunk.joints import paragraph_breaks
from longdoc.ingest.chunk.state import ChunkingState, Heading, Section


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


def cut_sections(state: ChunkingState) -> None:
    """Pass 2 (sections): ``state.headings`` -> ``state.sections``, each heading to the next, preamble first."""
    text, headings = state.text, state.headings
    sections: list[Section] = []
    if not headings or headings[0].line_start > 0:
        end = headings[0].line_start if headings else len(text)
        if text[:end].strip():
            sections.append(Section(None, [], 0, end))
    stack: list[Heading] = []
    for i, h in enumerate(headings):
        while stack and stack[-1].level >= h.level:
            stack.pop()
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
