"""Where a character of a chunk is: its page, printed page label, section and heading path.

The one place that resolves a chunk-relative offset (``str`` index into ``chunk.text``) to a
location. Citation verification (:func:`longdoc.extract.citations.verify_citation`) cites a
quote at the location of its first character; chunker tests check chunk spans with it.
Every rule reads the chunk's absolute ``page_spans`` / ``section_spans``: the span that
holds an offset is the last one (in list order) starting at or before it.

The rules read a chunk through the small protocols below (:class:`Located`), which
:class:`longdoc.core.models.Chunk` and its spans satisfy; so this module imports nothing of
``core.models``, which imports it for its delegates.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple, Protocol


class PageSpan(Protocol):
    """What the rules read of a page span (:class:`longdoc.core.models.PageSpan`)."""

    @property
    def page(self) -> int | None:
        """1-based physical page (None without pages)."""
        ...

    @property
    def label(self) -> str | None:
        """The page's printed label."""
        ...

    @property
    def char_start(self) -> int:
        """Document offset the page starts at."""
        ...


class SectionSpan(Protocol):
    """What the rules read of a section span (:class:`longdoc.core.models.SectionSpan`)."""

    @property
    def section_id(self) -> str | None:
        """The section id with its split suffix."""
        ...

    @property
    def heading_path(self) -> list[str]:
        """The headings above the section, outermost first."""
        ...

    @property
    def char_start(self) -> int:
        """Document offset the span starts at."""
        ...


class Located(Protocol):
    """What the rules read of a chunk (:class:`longdoc.core.models.Chunk`)."""

    @property
    def char_start(self) -> int:
        """Document offset of the chunk's first character."""
        ...

    @property
    def page_start(self) -> int | None:
        """The chunk's first page."""
        ...

    @property
    def section_id(self) -> str | None:
        """The chunk's own section id."""
        ...

    @property
    def heading_path(self) -> list[str]:
        """The chunk's own heading path."""
        ...

    @property
    def page_spans(self) -> Sequence[PageSpan]:
        """Absolute page spans, in order."""
        ...

    @property
    def section_spans(self) -> Sequence[SectionSpan]:
        """Absolute section spans, in order."""
        ...


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


def page_at(chunk: Located, offset: int) -> int | None:
    """The physical page (1-based) of chunk-relative ``offset``; ``page_start`` before any span, None without pages."""
    held = _holding(chunk.page_spans, chunk.char_start + offset)
    return chunk.page_spans[held[-1]].page if held else chunk.page_start


def label_at(chunk: Located, offset: int) -> str | None:
    """The printed page label of chunk-relative ``offset`` (``None`` if that page prints none or there are no pages)."""
    if not chunk.page_spans:
        return None
    held = _holding(chunk.page_spans, chunk.char_start + offset)
    return chunk.page_spans[held[-1] if held else 0].label


def section_at(chunk: Located, offset: int) -> str | None:
    """The section id (with split suffix) of chunk-relative ``offset``.

    A chunk with at most one section span answers its own ``section_id`` (which carries
    the ``#n`` suffix of a split section); otherwise the span holding the offset, or the
    first span for an offset before every span.
    """
    if len(chunk.section_spans) <= 1:
        return chunk.section_id
    held = _holding(chunk.section_spans, chunk.char_start + offset)
    return chunk.section_spans[held[-1] if held else 0].section_id


def heading_path_at(chunk: Located, offset: int) -> list[str]:
    """The heading path (a new list) of the section holding chunk-relative ``offset``; the chunk's own before any span."""
    held = _holding(chunk.section_spans, chunk.char_start + offset)
    return list(chunk.section_spans[held[-1]].heading_path if held else chunk.heading_path)


def locate(chunk: Located, offset: int) -> Location:
    """Resolve chunk-relative character ``offset`` to its :class:`Location` (never raises for any int)."""
    return Location(page_at(chunk, offset), label_at(chunk, offset), section_at(chunk, offset),
                    heading_path_at(chunk, offset))
