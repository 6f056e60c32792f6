"""Shared fixtures of the review tests: a small invented two-page lease, a run result over it, a service."""

from __future__ import annotations

from typing import Any

from longdoc.core.models import Chunk, DocumentRecord, PageSpan
from longdoc.core.ports import DecisionStore
from longdoc.review import ReviewService, ReviewSources

VERSION = "0123456789abcdef"
RUN = "run-review-1"
PAGE1 = "1. Rent is due monthly on the first day. 2. This lease is governed by the laws of Ohio. "
PAGE2 = "3. Either party may terminate on 30 days notice. 4. The landlord's liability is capped at $5,000."


def chunk(ordinal: int, start: int, text: str, page: int) -> Chunk:
    """A chunk of document ``lease`` at absolute offset ``start``, all on ``page``."""
    return Chunk(chunk_id=f"lease:{VERSION[:8]}:{ordinal:04d}", doc_id="lease", doc_version=VERSION, ordinal=ordinal,
                 source="lease.pdf", page_start=page, page_end=page, section_id=str(ordinal + 1), text=text,
                 char_start=start, char_end=start + len(text), token_count=len(text) // 4, content_hash="0" * 64,
                 page_spans=[PageSpan(page=page, char_start=start, char_end=start + len(text))], doc_type="lease")


CHUNKS = [chunk(0, 0, PAGE1, 1), chunk(1, len(PAGE1), PAGE2, 2)]
C0, C1 = CHUNKS[0].chunk_id, CHUNKS[1].chunk_id


def result(status: str = "SUCCEEDED") -> dict[str, Any]:
    """A run result: Governing Law found (high confidence), Cap found (low), Termination not_found with a
    strong unread candidate (a possible omission), Audit Rights not_found (confident)."""
    def found(clause: str, quote: str, cid: str, page: int, score: float) -> dict[str, Any]:
        return {"clause_type": clause, "status": "found", "clause_text": quote, "model": "m",
                "citations": [{"chunk_id": cid, "page": page, "section_id": None, "quote": quote}],
                "confidence": {"score": score, "reasons": [f"invented score {score}"]}}
    return {"run_id": RUN, "doc_id": "lease", "doc_version": VERSION, "status": status, "model": "m", "extractions": [
        found("Governing Law", "This lease is governed by the laws of Ohio.", C0, 1, 0.95),
        found("Cap On Liability", "Rent is due monthly on the first day.", C0, 1, 0.3),
        {"clause_type": "Termination For Convenience", "status": "not_found", "model": "m", "citations": [],
         "confidence": {"score": 0.4, "reasons": ["unread candidate"], "possible_omission": True,
                        "candidate": {"chunk_id": C1, "page": 2, "score": 0.71}}},
        {"clause_type": "Audit Rights", "status": "not_found", "model": "m", "citations": [],
         "confidence": {"score": 0.9, "reasons": ["no candidate"]}}]}


def service(store: DecisionStore, run_status: str = "SUCCEEDED", threshold: float = 0.8) -> ReviewService:
    """A :class:`ReviewService` over ``store`` and the lease above (one run, :data:`RUN`)."""
    record = DocumentRecord(doc_id="lease", doc_version=VERSION, source="/corpus/leases/lease.pdf", status="READY",
                            pages=2, chunks=2)
    times = iter(f"2026-12-01T10:00:{n:02d}Z" for n in range(60))
    sources = ReviewSources(result=lambda r: result(run_status), chunks=lambda d, v: list(CHUNKS),
                            document=lambda d, v: record, run_ids=lambda: [RUN])
    return ReviewService(store, sources, threshold, clock=lambda: next(times))
