"""Where a character of a chunk is: its page, printed page label, section and heading path.

The one place that resolves a chunk-relative offset (``str`` index into ``chunk.text``) to a
location. Citation verification (:func:`longdoc.extract.citations.verify_citation`) cites a
quote at the location of its first character; chunker tests check chunk spans with it.
Every rule reads the chunk's absolute ``page_spans`` / ``section_spans``: the span that
holds an offset is the last one (in list order) starting at or before it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, NamedTuple

if TYPE_CHECKING:  # only for annotations: core.models imports this module
    from longdoc.core.models import Chunk, PageSpan, SectionSpan


class Location(NamedTuple):
    """The location of one character of a chunk.

    ``page``: 1-based physical page (``None`` for formats without pages); ``page_label``:
    that page's printed label (``None`` when it prints none); ``section_id``: the section
    with its split suffix (``"4.2#2"``; ``None`` in a preamble); ``heading_path``: the
    headings above that section, outermost first.
    """

    page: int | None
    page_label: str | None
    section_id: str | None
    heading_path: list[str]


def _holding(spans: Sequence[PageSpan | SectionSpan], absolute: int) -> list[int]:
    """Indexes of the spans starting at or before ``absolute`` (document offset), in list order."""
    return [i for i, span in enumerate(spans) if absolute >= span.char_start]


def page_at(chunk: Chunk, offset: int) -> int | None:
    """The physical page (1-based) of chunk-relative ``offset``; ``page_start`` before any span, None without pages."""
    held = _holding(chunk.page_spans, chunk.char_start + offset)
    return chunk.page_spans[held[-1]].page if held else chunk.page_start


def label_at(chunk: Chunk, offset: int) -> str | None:
    """The printed page label of chunk-relative ``offset`` (``None`` if that page prints none or there are no pages)."""
    if not chunk.page_spans:
        return None
    held = _holding(chunk.page_spans, chunk.char_start + offset)
    return chunk.page_spans[held[-1] if held else 0].label


def section_at(chunk: Chunk, offset: int) -> str | None:
    """The section id (with split suffix) of chunk-relative ``offset``.

    A chunk with at most one section span answers its own ``section_id`` (which carries
    the ``#n`` suffix of a split section); otherwise the span holding the offset, or the
    first span for an offset before every span.
    """
    if len(chunk.section_spans) <= 1:
        return chunk.section_id
    held = _holding(chunk.section_spans, chunk.char_start + offset)
    return chunk.section_spans[held[-1] if held else 0].section_id


def heading_path_at(chunk: Chunk, offset: int) -> list[str]:
    """The heading path (a new list) of the section holding chunk-relative ``offset``; the chunk's own before any span."""
    held = _holding(chunk.section_spans, chunk.char_start + offset)
    return list(chunk.section_spans[held[-1]].heading_path if held else chunk.heading_path)


def locate(chunk: Chunk, offset: int) -> Location:
    """Resolve chunk-relative character ``offset`` to its :class:`Location` (never raises for any int)."""
    return Location(page_at(chunk, offset), label_at(chunk, offset), section_at(chunk, offset),
                    heading_path_at(chunk, offset))
