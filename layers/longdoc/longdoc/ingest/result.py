"""What one ingest did: :class:`IngestResult`."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class IngestResult:
    """Outcome of one ingest.

    ``skipped`` is True when the version was already READY (nothing done).
    ``metadata_updated`` is True when the version was already READY and only its document
    metadata changed, so its stored chunks were rewritten with the new metadata. ``pages``
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
