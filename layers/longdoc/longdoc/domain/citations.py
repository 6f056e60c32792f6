"""Citation checks the harness runs before anything reaches the results.

A citation is kept only when its ``chunk_id`` belongs to the document version and its
``quote`` occurs in that chunk's text after whitespace normalisation (nothing else is
normalised); its page and section are then resolved from the quote's own position, so
a quote on page 14 of a chunk spanning pages 13-14 is cited as page 14.
"""

from __future__ import annotations

import re

from longdoc.models import Chunk, Citation

_WS = re.compile(r"\s+")


def _normalise_with_map(text: str) -> tuple[str, list[int]]:
    """Collapse whitespace runs to one space; return the text and each char's source offset."""
    out: list[str] = []
    offsets: list[int] = []
    for m in re.finditer(r"\s+|\S+", text):
        if m.group().isspace():
            if out and out[-1] != " ":
                out.append(" ")
                offsets.append(m.start())
        else:
            for i, ch in enumerate(m.group()):
                out.append(ch)
                offsets.append(m.start() + i)
    return "".join(out), offsets


def find_quote(text: str, quote: str) -> tuple[int, int] | None:
    """Locate ``quote`` in ``text`` ignoring whitespace differences.

    Returns ``(start, end)`` offsets into ``text`` of the first occurrence, or None.
    """
    needle = _WS.sub(" ", quote).strip()
    if not needle:
        return None
    hay, offsets = _normalise_with_map(text)
    at = hay.find(needle)
    if at < 0:
        return None
    return offsets[at], offsets[at + len(needle) - 1] + 1


class CitationError(ValueError):
    """A citation failed verification; the message says what is wrong (sent back to the model)."""


def resolve_location(chunk: Chunk, start: int) -> tuple[int | None, str | None, str | None]:
    """Resolve a chunk-relative character offset to ``(page, page_label, section_id)``.

    Exactly one of each: the physical page (1-based; ``None`` for formats without pages),
    that page's printed label (``None`` when it prints none) and the section (with its
    split suffix, ``None`` for a preamble) holding the character at ``start``. The extract
    path calls this through :func:`verify_citation` with the offset of a quote's first
    character, so a quote is cited on its own page, not the chunk's first page.
    """
    return chunk.page_of(start), chunk.label_of(start), chunk.section_of(start)


def verify_citation(citation: Citation, chunks: dict[str, Chunk]) -> Citation:
    """Check one citation and return it with its page, page label and section resolved.

    ``chunks`` maps chunk_id to the document version's chunks. The returned citation's
    ``page``, ``page_label`` and ``section_id`` come from the quote's first character
    (:func:`resolve_location`), whatever the model claimed; ``quote`` is the chunk's own
    text of it. Raises :class:`CitationError` when the chunk is unknown or the quote is
    not verbatim in it.
    """
    chunk = chunks.get(citation.chunk_id)
    if chunk is None:
        raise CitationError(f"chunk_id {citation.chunk_id!r} is not a chunk of this document")
    found = find_quote(chunk.text, citation.quote)
    if found is None:
        raise CitationError(
            f"quote not found verbatim in chunk {citation.chunk_id}: {citation.quote[:80]!r}"
        )
    start, end = found
    page, label, section_id = resolve_location(chunk, start)
    return Citation(
        chunk_id=chunk.chunk_id,
        page=page,
        section_id=section_id,
        quote=chunk.text[start:end],
        page_label=label,
        heading_path=chunk.heading_path_of(start),
    )
