"""What one ingest did: :class:`IngestResult`."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from longdoc.ingest.models import ParsedDocument
from longdoc.ingest.parse.damage import by_outcome


@dataclass(frozen=True)
class IngestResult:
    """Outcome of one ingest.

    ``skipped`` is True when the version was already READY (nothing done).
    ``metadata_updated`` is True when the version was already READY and only its document
    metadata changed, so its stored chunks were rewritten with the new metadata. ``rechunked``
    is True when the version was already READY but its metadata now selects another chunk profile
    (:mod:`longdoc.ingest.profiles`), so it was chunked again (new metadata included). ``pages``
    counts physical pages (0 for formats without pages) and ``chunks`` the version's chunks.
    ``seconds`` is the wall time of this call (0.0 when skipped). ``embedded`` counts texts
    sent to the embedder in this attempt, ``reused`` vectors taken from the previous
    version's cache, ``resumed`` is True when an earlier attempt's progress was continued.
    ``tokens`` are embedding tokens used in this attempt (as the API reports them when it
    does, else estimated). ``timings`` are seconds per stage (``parse``, ``embed``,
    ``upsert``, ``total``). ``oversize_chunks`` counts chunks flagged ``oversize`` (one
    sentence over ``max_tokens``, or a piece of a run with no sentence end cut at a clause,
    a word or a hard size: :mod:`longdoc.ingest.chunk.oversize`) and ``overlap_missing_chunks`` continuations that could not
    repeat a whole sentence within 20 % of the target (both 0 when skipped).
    OCR (issue 18): ``ocr_pages`` are the 1-based pages whose text OCR read (``ocr_engine``),
    ``ocr_cost_usd`` what those calls cost in USD (pages read by an earlier attempt included),
    ``ocr_low_confidence_pages`` the ones indexed with a mean word confidence under the
    threshold, ``ocr_failed_pages`` the pages OCR could not read with the reason,
    ``poor_layer_pages`` OCR layers that failed the quality check and were kept, and
    ``pages_needing_ocr`` scanned pages left unread (OCR off, or failed).
    Issue 27: ``page_outcomes`` are the 1-based pages by outcome (``text``, ``ocr``,
    ``ocr_low_confidence``, ``empty``, ``damaged``, ``unreadable``; :mod:`longdoc.ingest.parse.damage`; empty
    for formats without pages), ``ocr_rotations`` the OCR pages read turned (page -> clockwise
    degrees), ``furniture_lines`` the lines removed as running headers and footers (page -> lines,
    pages with none left out), and ``warnings`` one line per kind of trouble, naming the pages.
    """

    doc_id: str
    doc_version: str
    source: str
    pages: int
    chunks: int
    skipped: bool
    seconds: float
    embedded: int = 0
    reused: int = 0
    resumed: bool = False
    tokens: int = 0
    timings: dict[str, float] = field(default_factory=dict)
    metadata_updated: bool = False
    oversize_chunks: int = 0
    overlap_missing_chunks: int = 0
    ocr_pages: list[int] = field(default_factory=list)
    ocr_engine: str | None = None
    ocr_cost_usd: float = 0.0
    ocr_low_confidence_pages: list[int] = field(default_factory=list)
    ocr_failed_pages: dict[int, str] = field(default_factory=dict)
    poor_layer_pages: list[int] = field(default_factory=list)
    pages_needing_ocr: list[int] = field(default_factory=list)
    page_outcomes: dict[str, list[int]] = field(default_factory=dict)
    ocr_rotations: dict[int, int] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    rechunked: bool = False
    furniture_lines: dict[int, int] = field(default_factory=dict)


def ocr_summary(parsed: ParsedDocument) -> dict[str, Any]:
    """The OCR fields of an :class:`IngestResult` for a parsed document (keyword arguments)."""
    return {"ocr_pages": [p.page for p in parsed.ocr_pages],
            "ocr_engine": parsed.ocr_pages[0].engine if parsed.ocr_pages else None,
            "ocr_cost_usd": round(sum(p.cost_usd for p in parsed.ocr_pages) + parsed.ocr_check_cost_usd, 6),
            "ocr_low_confidence_pages": [p.page for p in parsed.ocr_pages if p.low_confidence],
            "ocr_failed_pages": {f.page: f.reason for f in parsed.ocr_failed},
            "poor_layer_pages": list(parsed.poor_layer_pages), "pages_needing_ocr": list(parsed.pages_needing_ocr),
            "page_outcomes": by_outcome(parsed.page_outcomes),
            "ocr_rotations": {p.page: p.rotation for p in parsed.ocr_pages if p.rotation},
            "furniture_lines": parsed.furniture_lines, "warnings": list(parsed.warnings)}
