"""Section-aware chunking: split a document at its real joints.

Boundary precedence: numbered section, then paragraph, then sentence. A chunk never
ends mid-sentence and never holds part of one section together with part of another;
several small *whole* sections may share a chunk. A section longer than the target is
split at paragraph (then sentence) boundaries and keeps its number with a suffix
(``4.2#1``, ``4.2#2``); each continuation starts with an overlap of whole sentences
from the same section (10-20% of the target, :attr:`Settings.chunk_overlap`). When the
sentence before a cut is itself over 20% of the target, the cut moves to the nearest
sentence or paragraph start that leaves room for such an overlap; a continuation is
flagged ``overlap_missing`` only when every sentence around its cut is over 20%.

Section detection: ``4`` / ``4.2`` / ``4.2.1`` numbered headings, ``Section 3.2``,
``Article 17``, ``ARTICLE IV``, ``Chapter``/``Part``/``Schedule``/``Exhibit``/``Annex``
keyword headings, and Markdown ``#`` headings. A bare number only starts a section when it
fits the document's numbering sequence and reads as a heading, so a body line such as
``14 days after the leak`` is never section 14. Inside a numbered section, ``(a)``-style
items in sequence are sub-sections (``4.2(a)``, ``4.2(a)(ii)``), and numbered paragraphs
under an ``Article``/``Section N`` heading too (``Article 33(3)(a)``); an item is one
paragraph, and text after the last item is the section's own again (its flush text).

The chunker is a list of declared passes over one :class:`ChunkingState` (see
:data:`PASSES`), each in its own module:

1. ``headings`` (:mod:`.headings`): an ordered list of line recognisers (format marks,
   recitals, Markdown, items, keyword headings, numbered headings, numbered paragraphs);
2. ``sections`` (:mod:`.sections`): the text cut at the headings, with heading paths;
3. ``items``: an item is one paragraph, the rest is its owner's flush text;
4. ``split`` (:mod:`.split`): small whole sections packed together, long ones split into
   ``#n`` parts;
5. ``overlap`` (:mod:`.overlap`): continuations open with the end of the part before;
6. ``assemble`` (:mod:`.assemble`): drafts become :class:`~longdoc.core.models.Chunk` models.
"""

from __future__ import annotations

from longdoc.core.models import Chunk, DocumentMetadata
from longdoc.core.progress import reporter
from longdoc.ingest.chunk.assemble import assemble
from longdoc.ingest.chunk.headings import find_headings
from longdoc.ingest.chunk.overlap import add_overlap
from longdoc.ingest.chunk.sections import cut_items, cut_sections
from longdoc.ingest.chunk.split import split_sections
from longdoc.ingest.chunk.state import ChunkingState, ChunkPass
from longdoc.ingest.models import ParsedDocument

__all__ = ["PASSES", "SECTION_PASSES", "ChunkingState", "chunk_document"]

SECTION_PASSES: tuple[ChunkPass, ...] = (find_headings, cut_sections, cut_items)
"""The passes that find the document's sections (``state.sections``): headings, sections, items."""

PASSES: tuple[ChunkPass, ...] = (*SECTION_PASSES, split_sections, add_overlap, assemble)
"""Every chunking pass in order: headings, sections, items, split, overlap, assemble."""


def chunk_document(
    doc: ParsedDocument,
    doc_id: str,
    *,
    target_tokens: int = 1000,
    max_tokens: int = 2000,
    overlap: float = 0.15,
    metadata: DocumentMetadata | None = None,
) -> list[Chunk]:
    """Split a parsed document into chunks at section, paragraph and sentence boundaries.

    ``metadata`` (optional ``doc_type``, ``line_of_business``, ``term``) is copied onto
    every chunk. A heading-only section (``CHAPTER III`` and its title) always opens the
    chunk of its first child, never closes the previous one.

    Sizes are estimated tokens (:func:`~longdoc.core.tokens.estimate_tokens`); ``overlap`` is the share of
    ``target_tokens`` repeated (as whole sentences of the same section) at the start of
    each continuation chunk of a split section. A single sentence over ``max_tokens``
    stays whole and is flagged ``oversize``. Returns chunks in document order with
    ordinals from 0; ids depend only on ``doc_id``, the document bytes and position.
    Raises ValueError when ``target_tokens > max_tokens``.
    """
    if target_tokens > max_tokens:
        raise ValueError(f"target_tokens {target_tokens} exceeds max_tokens {max_tokens}")
    state = ChunkingState.for_document(doc, doc_id, target_tokens=target_tokens, max_tokens=max_tokens,
                                       overlap=overlap, metadata=metadata)
    progress, stage = reporter(), f"chunk {doc.source}"  # the ingest's chunk stage, when one is open
    progress.resize(stage, len(PASSES), "passes")
    for chunk_pass in PASSES:
        chunk_pass(state)
        progress.advance(stage)
    return state.chunks
