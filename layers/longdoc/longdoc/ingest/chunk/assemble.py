"""The assemble pass: turn the drafts into :class:`~longdoc.core.models.Chunk` models.

Each draft becomes one chunk, in order, with ordinals from 0 and the id
``{doc_id}:{doc_version[:8]}:{ordinal:04d}``; its pages (clipped page spans with printed
labels), its sections (clipped section spans), its citing section, token estimate and
content hash, the document metadata, and whether OCR read its pages (``ocr``, ``ocr_confidence``).
"""

from __future__ import annotations

import bisect
import hashlib

from longdoc.core.models import Chunk, PageSpan, SectionSpan
from longdoc.core.tokens import estimate_tokens
from longdoc.ingest.chunk.state import ChunkingState, Draft
from longdoc.ingest.models import ParsedDocument


def _page_spans(doc: ParsedDocument, page_starts: list[int], d: Draft) -> list[PageSpan]:
    """The pages a draft touches, clipped to it (the first page alone when it covers none)."""
    first = max(0, bisect.bisect_right(page_starts, d.start) - 1)
    last = max(0, bisect.bisect_right(page_starts, max(d.start, d.end - 1)) - 1)
    spans = [
        PageSpan(page=p.page, char_start=max(p.char_start, d.start), char_end=min(p.char_end, d.end), label=p.label)
        for p in doc.pages[first : last + 1]
    ]
    return [s for s in spans if s.char_end > s.char_start] or spans[:1]


def _ocr_fields(doc: ParsedDocument, spans: list[PageSpan]) -> dict[str, object]:
    """``ocr``, ``ocr_confidence``, ``ocr_low_confidence``, ``ocr_pages`` and ``ocr_rotations`` of a chunk
    over ``spans``: the word-weighted mean confidence of its OCR pages, whether one of them is under the
    threshold, which pages they are and the turned ones' rotation; nothing (the defaults) when none of
    its pages was read by OCR."""
    read = {p.page: p for p in doc.ocr_pages}
    pages = [read[s.page] for s in spans if s.page in read]
    words = sum(p.words for p in pages)
    if not pages or not words:
        return {}
    fields: dict[str, object] = {"ocr": True,
                                 "ocr_confidence": round(sum(p.mean_confidence * p.words for p in pages) / words, 4),
                                 "ocr_pages": sorted({p.page for p in pages if p.words})}
    turned = {p.page: p.rotation for p in pages if p.rotation}
    if turned:
        fields["ocr_rotations"] = turned
    if any(p.low_confidence and not p.skipped for p in pages):
        fields["ocr_low_confidence"] = True
    return fields


def _citing_section(d: Draft) -> tuple[str | None, list[str]]:
    """The chunk's ``(section_id, heading_path)``.

    Its own section (a split section's ``4.2#2``), else the first numbered section it
    holds; the heading path is that section's, so the two always agree.
    """
    section_id = d.section_id if d.section_id is not None else next(
        (s.section_id for s in d.sections if s.section_id), None)
    heading_path = next((s.heading_path for s in d.sections if s.section_id == section_id),
                        d.sections[0].heading_path if d.sections else [])
    return section_id, heading_path


def _chunk(state: ChunkingState, ordinal: int, d: Draft, page_starts: list[int]) -> Chunk:
    """The chunk of one draft."""
    doc = state.doc
    body = state.text[d.start : d.end]
    spans = _page_spans(doc, page_starts, d)
    section_spans = [
        SectionSpan(section_id=s.section_id, heading_path=s.heading_path,
                    char_start=max(s.start, d.start), char_end=min(s.end, d.end))
        for s in d.sections
    ]
    section_id, heading_path = _citing_section(d)
    return Chunk(
        chunk_id=f"{state.doc_id}:{doc.doc_version[:8]}:{ordinal:04d}",
        doc_id=state.doc_id,
        doc_version=doc.doc_version,
        ordinal=ordinal,
        source=doc.source,
        page_start=spans[0].page if spans else None,
        page_end=spans[-1].page if spans else None,
        section_id=section_id,
        heading_path=heading_path,
        text=body,
        char_start=d.start,
        char_end=d.end,
        token_count=estimate_tokens(body),
        content_hash=hashlib.sha256(body.encode("utf-8")).hexdigest(),
        oversize=d.oversize,
        page_spans=spans,
        section_spans=section_spans,
        page_labels=[s.label for s in spans] if spans and spans[0].page is not None else [],
        overlap_chars=d.overlap_chars,
        overlap_missing=d.overlap_missing,
        **state.metadata,
        **_ocr_fields(doc, spans),
    )


def assemble(state: ChunkingState) -> None:
    """Pass 6 (assemble): ``state.drafts`` -> ``state.chunks``, in order."""
    page_starts = [p.char_start for p in state.doc.pages]
    state.chunks = [_chunk(state, ordinal, d, page_starts) for ordinal, d in enumerate(state.drafts)]
