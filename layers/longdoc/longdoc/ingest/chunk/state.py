"""The one state the chunking passes share, and the shapes each pass writes into it.

Every offset is a character offset into :attr:`ChunkingState.text` (the parsed document's
text); every span is half-open ``[start, end)``. Sizes are estimated tokens
(:func:`~longdoc.core.tokens.estimate_tokens`) unless a name says ``chars``.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from longdoc.core.models import Chunk, DocumentMetadata
from longdoc.ingest.models import ParsedDocument

ItemLevel = tuple[str, int, str]
"""One open item of an item list: ``(kind, value, token)``, e.g. ``("lower", 3, "c")`` for ``(c)``."""


@dataclass(frozen=True)
class Numbering:
    """Where the heading scan stands in the document's numbering.

    ``last`` is the number tuple of the last numbered section (``(4, 2)`` for ``4.2``) or
    None before the first; ``parent`` is the id of the section that ``(a)``-style items
    belong to (None: such lines are body text); ``keyword_parent`` is True under an
    ``Article N`` / ``Section N`` heading, where ``1.`` paragraphs are items too;
    ``items`` is the stack of open items, outermost first.
    """

    last: tuple[int, ...] | None = None
    parent: str | None = None
    keyword_parent: bool = False
    items: tuple[ItemLevel, ...] = ()


@dataclass
class Heading:
    """A heading found by the heading pass.

    ``line_start`` is where its text starts (after indentation or a box border);
    ``body_start`` where its line ends (the body may continue on the same line).
    ``section_id`` is None for a heading without a number (a Markdown or HTML title);
    ``label`` is its text for ``heading_path``; ``level`` orders headings into a tree
    (1 outermost; items are 101 and deeper). ``item`` marks an ``(a)``-style item or a
    numbered paragraph of its parent; ``marker_only`` an item whose line is only its
    marker. ``line_no``, ``titled`` and ``state_before`` let the scan take back a numbered
    heading that turns out to be the first entry of a list.
    """

    line_start: int
    body_start: int
    section_id: str | None
    label: str
    level: int
    item: bool = False
    marker_only: bool = False
    line_no: int = -1
    titled: bool = False
    state_before: Numbering | None = None


@dataclass
class Section:
    """A stretch of text cited as one section: ``text[start:end]`` under ``heading_path``.

    ``section_id`` None is the preamble (or text under an unnumbered heading before any
    number). ``item_of`` is the enclosing section's id for an item; ``flush`` marks the
    text of a section after its last item (its split parts number on from the parts before
    it). ``item``, ``marker_only`` and ``flush_of`` are set by the sections pass for the
    items pass: an item section, whose marker stands alone on its line, and the
    ``item_of`` of the flush text that follows it.
    """

    section_id: str | None
    heading_path: list[str]
    start: int
    end: int
    item_of: str | None = None
    flush: bool = False
    item: bool = False
    marker_only: bool = False
    flush_of: str | None = None


@dataclass
class Draft:
    """A chunk before assembly: ``text[start:end]`` holding ``sections``.

    ``section_id`` is set for a part of a split section (``4.2#2``); a draft of whole
    sections leaves it None. ``overlap_chars`` is how many leading characters repeat the
    previous part; ``overlap_missing`` marks a continuation that could have none;
    ``oversize`` a draft over ``max_tokens``.
    """

    start: int
    end: int
    sections: list[Section] = field(default_factory=list)
    section_id: str | None = None
    oversize: bool = False
    overlap_chars: int = 0
    overlap_missing: bool = False


@dataclass
class SectionSplit:
    """One long section split into parts by the split pass, for the overlap pass.

    ``heads`` are the heading-only sections that open the first part (their tokens,
    ``head_tokens``, came off the budgets); ``target`` and ``max_tokens`` are the budgets
    the parts were packed to; ``unit_starts`` the paragraph and sentence starts the
    section was packed from (candidate joints for overlap and moved cuts). ``section``
    spans the whole family; ``members`` are the family's sections (the section, its items
    and flush text), each part's section spans are the members it touches.
    """

    section: Section
    heads: list[Section]
    head_tokens: int
    parts: list[Draft]
    unit_starts: list[int]
    target: int
    max_tokens: int
    members: list[Section] = field(default_factory=list)


@dataclass
class ChunkingState:
    """Everything the chunking passes read and write, in pass order.

    Inputs (from the parsed document): ``typical_line`` (chars, see
    :func:`typical_line_length`), ``markdown`` (read ``#`` headings), ``marks`` (heading
    start offset -> level, for headings the format marks), ``list_lines`` (line offsets
    the format marks as list items: never headings), ``numbered_lines`` (paragraph
    offsets the format numbers itself), ``blank_line_paragraphs`` (paragraphs are
    separated by blank lines: every format but PDF); sizes ``target_tokens``,
    ``max_tokens`` and ``overlap`` (a share of the target); ``metadata`` copied onto every
    chunk. Outputs, one per pass: ``headings``, ``sections`` (sections, then items),
    ``drafts`` and ``splits`` (split), overlap applied in place, ``chunks`` (assemble).
    """

    doc: ParsedDocument
    typical_line: int
    doc_id: str = ""
    markdown: bool = False
    marks: dict[int, int] = field(default_factory=dict)
    list_lines: set[int] = field(default_factory=set)
    numbered_lines: set[int] = field(default_factory=set)
    blank_line_paragraphs: bool = False
    target_tokens: int = 1000
    max_tokens: int = 2000
    overlap: float = 0.15
    metadata: dict[str, Any] = field(default_factory=dict)
    headings: list[Heading] = field(default_factory=list)
    sections: list[Section] = field(default_factory=list)
    drafts: list[Draft] = field(default_factory=list)
    splits: list[SectionSplit] = field(default_factory=list)
    chunks: list[Chunk] = field(default_factory=list)

    @property
    def text(self) -> str:
        """The document text every offset refers to."""
        return self.doc.text

    @classmethod
    def for_document(
        cls, doc: ParsedDocument, doc_id: str, *, target_tokens: int, max_tokens: int, overlap: float,
        metadata: DocumentMetadata | None,
    ) -> ChunkingState:
        """The state for chunking ``doc`` as ``doc_id``, with the inputs read from the document.

        Heading marks, list lines and numbered lines come from ``doc.headings`` by kind;
        Markdown headings are read for ``text/markdown``, and for ``text/plain`` that is written
        in Markdown (:func:`reads_as_markdown`); every format but PDF separates paragraphs with
        blank lines. Raises nothing; sizes are checked by the caller.
        """
        return cls(
            doc=doc,
            doc_id=doc_id,
            typical_line=typical_line_length(doc.text),
            markdown=doc.media_type == "text/markdown"
            or (doc.media_type == "text/plain" and reads_as_markdown(doc.text)),
            marks={h.char_start: h.level for h in doc.headings if h.kind == "heading"},
            list_lines={h.char_start for h in doc.headings if h.kind == "list_item"},
            numbered_lines={h.char_start for h in doc.headings if h.kind == "numbered"},
            blank_line_paragraphs=doc.media_type != "application/pdf",
            target_tokens=target_tokens,
            max_tokens=max_tokens,
            overlap=overlap,
            metadata=(metadata or DocumentMetadata()).model_dump(),
        )


MARKDOWN_MIN_HEADINGS = 3
"""A plain-text document with at least this many ``#`` heading lines is read as Markdown."""
_ATX_HEADING = re.compile(r"(?:^|\n\n)#{1,4}[ \t]+\S")


def reads_as_markdown(text: str) -> bool:
    """Whether plain ``text`` is written in Markdown: :data:`MARKDOWN_MIN_HEADINGS` or more ATX
    heading lines (``#`` to ``####``, a space, a title; CommonMark 0.31 section 4.2), each at the
    start of the text or after a blank line. A ``.txt`` wording exported as Markdown then gets its
    ``# Title`` / ``## Section`` / ``### Sub`` headings with their levels; one stray ``# 1`` line
    in a contract does not make it Markdown.
    """
    return len(_ATX_HEADING.findall(text)) >= MARKDOWN_MIN_HEADINGS


ChunkPass = Callable[[ChunkingState], None]
"""A chunking pass: reads what earlier passes wrote on the state and writes its own part."""


def typical_line_length(text: str) -> int:
    """The length in chars of a full line of ``text``: its 90th-percentile non-blank line, at least 20.

    Text without a non-blank line gives 80. A line much shorter than this ends a paragraph
    (or is a heading) rather than wrapping.
    """
    lengths = sorted(len(line) for line in text.split("\n") if line.strip())
    if not lengths:
        return 80
    return max(20, lengths[int(len(lengths) * 0.9) - 1 if len(lengths) > 1 else 0])
