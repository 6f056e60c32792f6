"""Ingest one document: parse, chunk, register, store chunks, embed, upsert, finish.

Everything that can fail on the document itself (metadata, parsing, chunking) runs before
the first write. Progress (chunks stored, embedded, upserted) is recorded in the registry
as it goes, so when a later step fails (embedding service down, index throttled, the
invocation running out of time) the version is marked ``FAILED`` with the reason and a
redelivery continues where it stopped. Re-ingesting bytes whose version is already
``READY`` is a no-op, unless only the document metadata changed: then that version's
chunk list is rewritten with the new metadata (same chunk ids and text, no parsing,
embedding or upserting); or unless the metadata now selects another chunk profile
(:mod:`longdoc.ingest.profiles`): then the version is chunked again, the texts not in its
embedding cache embedded while it stays ``READY``, and then its old vectors deleted and the new upserted. Embeddings are cached per version by text hash, model and
dimension (:mod:`longdoc.ingest.embeddings`), so a new version re-embeds only the chunks
whose text changed.

The caller reads the object once (:class:`~longdoc.ingest.source.IngestSource`: bytes, user metadata, sidecar)
and hands it over; nothing here reads that object or its sidecar again (only asks, before
``READY``, whether the object still exists; its bytes are read again only when a removal
raced the ingest, :mod:`longdoc.ingest.attempt`), and the bytes are hashed once, when the
source is built.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from longdoc.core.clock import utc_now
from longdoc.core.documents import chunks_key, embedding_text, load_chunks, save_chunks
from longdoc.core.errors import DocumentError, IngestDeadline, IngestRestart, SourceRemoved, VersionClaimed
from longdoc.core.models import Chunk, DocumentMetadata, DocumentRecord
from longdoc.core.ports import StateStore
from longdoc.core.progress import stage
from longdoc.ingest.attempt import IngestAttempt, IngestDeps
from longdoc.ingest.chunk import chunk_document
from longdoc.ingest.lease import CLAIM_LEASE_SECONDS, VersionClaim
from longdoc.ingest.embeddings import EmbeddingCache, embed_missing, text_sha256
from longdoc.ingest.ids import doc_id_for_key
from longdoc.ingest.models import ParsedDocument
from longdoc.ingest.ocr_cache import BlobOcrCache
from longdoc.ingest.profiles import chunking_label, options_for
from longdoc.ingest.rechunk import embed_ahead
from longdoc.ingest.parse import DEFAULT_MAX_BYTES, DEFAULT_MAX_PAGES, OcrOptions, parse_document
from longdoc.ingest.parse.damage import by_outcome
from longdoc.ingest.rejected import record_rejected
from longdoc.ingest.result import IngestResult, ocr_summary
from longdoc.ingest.source import IngestSource

log = logging.getLogger(__name__)

if TYPE_CHECKING:
    from longdoc.config import IngestFunctionSettings

UPSERT_SLICE = 100
"""Chunks per index upsert call; progress is saved after each (the adapter splits further to its limits)."""

DEFAULT_DEADLINE_MARGIN = 60.0
"""Seconds of invocation time that must remain to start another embed or upsert step."""


@dataclass(frozen=True)
class IngestOptions:
    """Tunables of one ingest: chunk sizes in tokens, parse caps in bytes and pages, the
    deadline margin in seconds (fewer left before an embed or upsert step, or an OCR page: stop,
    resumable), the lease of the version's ingest claim in seconds (:mod:`longdoc.ingest.lease`),
    and OCR: re-read poor OCR layers, the confidence (0-1) under which an OCR page is
    flagged, the target render resolution in dots per inch (300, Tesseract's recommendation; a finer
    page image raises it), whether pages are turned upright before OCR, and whether a low-confidence
    OCR page is indexed flagged (``index``) or left out (``skip``)."""

    target_tokens: int = 1000
    max_tokens: int = 2000
    overlap: float = 0.15
    max_bytes: int = DEFAULT_MAX_BYTES
    max_pages: int = DEFAULT_MAX_PAGES
    deadline_margin: float = DEFAULT_DEADLINE_MARGIN
    claim_lease_seconds: float = CLAIM_LEASE_SECONDS
    ocr_recheck_layers: bool = True
    ocr_min_confidence: float = 0.80
    ocr_dpi: int = 300
    ocr_orientation: bool = True
    ocr_low_confidence: Literal["index", "skip"] = "index"

    @classmethod
    def from_settings(cls, settings: IngestFunctionSettings) -> IngestOptions:
        """The options the ingest function's settings name (``LONGDOC_CHUNK_*``, ``LONGDOC_MAX_DOCUMENT_*``, ...)."""
        return cls(target_tokens=settings.chunk_target_tokens, max_tokens=settings.chunk_max_tokens,
                   overlap=settings.chunk_overlap, max_bytes=settings.max_document_bytes,
                   max_pages=settings.max_document_pages, deadline_margin=settings.ingest_deadline_margin_seconds,
                   ocr_recheck_layers=settings.ocr_recheck_layers, ocr_min_confidence=settings.ocr_min_confidence,
                   ocr_dpi=settings.ocr_dpi, ocr_orientation=settings.ocr_orientation,
                   ocr_low_confidence=settings.ocr_low_confidence)


def ingest_document(source: IngestSource, deps: IngestDeps, options: IngestOptions | None = None, *,
                    time_left: Callable[[], float] | None = None) -> IngestResult:
    """Ingest ``source`` (the object's bytes and metadata, read once) and return what was stored; resumable.

    The document metadata (:meth:`~longdoc.ingest.source.IngestSource.metadata`: object metadata, then the sidecar,
    sidecar wins) is copied onto every chunk. A bad metadata value is a
    :class:`DocumentError` like a bad file (object key and field named; nothing stored, a
    new version recorded ``FAILED``). ``options`` (default :class:`IngestOptions`) holds
    chunk sizes and parse caps. A new ``doc_version`` never touches an older one: its
    chunks live under their own key and ids, so claims against old terms still resolve.

    Steps: parse and chunk (nothing written yet); claim the version
    (:class:`~longdoc.ingest.lease.VersionClaim`: one conditional write; when another worker holds
    it, :class:`~longdoc.core.errors.VersionClaimed` is raised and nothing is registered, embedded
    or upserted; the claim is released when this call returns or raises); a re-chunk of a ``READY``
    version embeds its new texts now, the version still ``READY`` whatever fails or dies
    (:mod:`longdoc.ingest.rechunk`); register ``INGESTING``; write the chunk
    list to ``chunks/{doc_id}/{version}.jsonl``; embed the chunks whose text is not yet in
    this version's embedding cache, first copying vectors of identical texts from the
    previous version's cache, saving the cache and the registry progress after every
    embedding call; upsert vectors in slices of :data:`UPSERT_SLICE` chunks, saving
    ``upserted`` after each; check that the object at ``source.key`` still exists;
    register ``READY``.

    Every registry write is conditional (:class:`~longdoc.ingest.attempt.IngestAttempt`):
    when the object's removal marked the version ``DELETED`` meanwhile, or the object is
    gone at the end, what this attempt wrote is removed and
    :class:`~longdoc.core.errors.SourceRemoved` is raised, so a removed file never ends
    ``READY`` (so the object must be in ``deps.blobs`` at ``source.key``: callers that
    ingest bytes of their own store them there first). Removed and uploaded again with the
    same bytes meanwhile: :class:`~longdoc.core.errors.IngestRestart` (redeliver).

    A redelivered message for a version that is ``INGESTING`` or ``FAILED`` continues from
    the recorded progress: cached vectors are not embedded again and slices below
    ``upserted`` are not upserted again (upserts are keyed by chunk id, so even a repeated
    slice never duplicates vectors).

    ``time_left()`` returns the invocation's remaining seconds; when fewer than
    ``options.deadline_margin`` remain before an embed or upsert step,
    :class:`IngestDeadline` is raised with progress saved, so the message is redelivered
    and resumes.

    Raises :class:`DocumentError` (file named, reason given) for unusable input, including
    a chunk too long for the embedding model, after recording the version as ``FAILED``
    and removing what was written for it. Other errors (embedder, index, store, deadline)
    are re-raised after recording ``FAILED`` with the reason and keeping the progress.
    """
    options = options or IngestOptions()
    started = time.monotonic()
    existing = deps.state.get_document(source.doc_id, source.version)
    if existing is not None and existing.status == "READY" and not _rechunk(source, existing, options):
        return _ready_again(source, deps, existing, started)
    ocr = _ocr_options(source, deps, options, time_left)
    parsed, chunks, meta = _parse_and_chunk(source, deps.state, options, ocr, existing)
    timings = {"parse": time.monotonic() - started}
    for warning in source.warnings(parsed.warnings):
        log.warning("%s: %s", source.name, warning)
    claim = VersionClaim(deps.state, source.doc_id, source.version, lease_seconds=options.claim_lease_seconds)
    try:
        # Whoever held the claim before may have finished between the first read and the claim.
        existing = deps.state.get_document(source.doc_id, source.version)
        if existing is not None and existing.status == "READY" and not _rechunk(source, existing, options):
            return _ready_again(source, deps, existing, started)
        run = IngestAttempt(source=source, deps=deps, chunks=chunks, prior=existing, time_left=time_left,
                            deadline_margin=options.deadline_margin, started=started, timings=timings, claim=claim)
        if existing is not None and existing.status == "READY":  # a re-chunk: embed while the old chunks serve
            ahead, run.reused = embed_ahead(source, deps, chunks, existing, claim, time_left=time_left,
                                            deadline_margin=options.deadline_margin)
            run.embedded, run.tokens = ahead.embedded, ahead.tokens
        run.register(*_new_record(source, deps, existing, parsed, chunks, meta,
                                  chunking_label(options_for(options, meta))))
        _store_embed_upsert(run)
        return _finish(run, parsed)
    finally:
        claim.release()


def _rechunk(source: IngestSource, existing: DocumentRecord, options: IngestOptions) -> bool:
    """True when the ``READY`` version ``existing`` was chunked otherwise than its metadata's profile
    asks now (:mod:`longdoc.ingest.profiles`; an entry without ``chunking`` counts as chunked with
    ``options``). Bad metadata: False (the caller's :func:`_ready_again` reports it)."""
    try:
        meta = source.metadata()
    except DocumentError:
        return False
    return chunking_label(options_for(options, meta)) != (existing.chunking or chunking_label(options))


def _store_embed_upsert(run: IngestAttempt) -> None:
    """Write the chunk list, embed and upsert; on failure record ``FAILED`` and re-raise.

    A :class:`DocumentError` (a chunk the embedder cannot read) also removes what was
    written for the version; other errors keep the progress for the redelivery. Re-chunking a
    ``READY`` version (another profile) first deletes its vectors: the same chunk ids now hold
    other text, and there may be fewer of them.
    """
    source, deps = run.source, run.deps
    cache = EmbeddingCache(deps.blobs, deps.embedder, source.doc_id, source.version)
    try:
        if run.prior is not None and run.prior.status == "READY":
            deps.index.delete_document(source.doc_id, source.version)
        save_chunks(deps.blobs, source.doc_id, source.version, run.chunks)  # JSON Lines, one atomic put
        vectors = _embed(run, cache)
        _upsert(run, vectors)
    except DocumentError as exc:
        deps.index.delete_document(source.doc_id, source.version)
        deps.blobs.delete(chunks_key(source.doc_id, source.version))
        cache.delete()
        run.save(status="FAILED", reason=exc.reason, stage=None, embedded=0, upserted=0)
        raise
    except (VersionClaimed, SourceRemoved, IngestRestart):
        raise  # another writer owns the record now (the worker that took the claim over, or the removal)
    except Exception as exc:
        run.save(status="FAILED", reason=f"{type(exc).__name__}: {exc}")
        raise


def _ready_again(source: IngestSource, deps: IngestDeps, existing: DocumentRecord, started: float) -> IngestResult:
    """The same bytes as a ``READY`` version: rewrite its metadata if it changed, else a no-op.

    A bad metadata value raises :class:`DocumentError` here and leaves the version as it is.
    """
    meta = source.metadata()
    if meta != existing.metadata:
        return _update_metadata(source, deps, existing, meta, started)
    # The same bytes again: nothing to do, but this version becomes the latest again (its sidecar warnings anew).
    _rewrite_ready(source, deps, existing, existing.model_copy(update={"updated_at": utc_now(),
                                                                       "warnings": source.warnings(existing.warnings)}))
    return IngestResult(source.doc_id, source.version, source.name, existing.pages, existing.chunks, True, 0.0)


def _rewrite_ready(source: IngestSource, deps: IngestDeps, existing: DocumentRecord, record: DocumentRecord) -> None:
    """Write ``record`` over the ``READY`` entry ``existing``; raises :class:`SourceRemoved` when the
    removal marked it ``DELETED`` since it was read (another change since: left as it is)."""
    if deps.state.replace_document(record, existing) is None:
        stored = deps.state.get_document(existing.doc_id, existing.doc_version)
        if stored is not None and stored.status == "DELETED":
            raise SourceRemoved(source.key, existing.doc_id, existing.doc_version)


def _update_metadata(source: IngestSource, deps: IngestDeps, existing: DocumentRecord, meta: DocumentMetadata,
                     started: float) -> IngestResult:
    """Rewrite a ``READY`` version's stored chunks with new document metadata, in place.

    Same bytes, so same chunk ids, text and vectors: the chunk list (the source of truth
    for chunk metadata; the vector index holds none of these fields) is rewritten in one
    atomic put, then the registry records the new metadata. Raises :class:`NotFound` when
    the version's chunk list is missing.
    """
    chunks = load_chunks(deps.blobs, existing.doc_id, existing.doc_version)
    values = meta.model_dump()
    save_chunks(deps.blobs, existing.doc_id, existing.doc_version, [c.model_copy(update=values) for c in chunks])
    warnings = source.warnings(existing.warnings)
    _rewrite_ready(source, deps, existing, existing.model_copy(update={"metadata": meta, "updated_at": utc_now(),
                                                                       "warnings": warnings}))
    return IngestResult(existing.doc_id, existing.doc_version, existing.source, existing.pages, existing.chunks,
                        False, time.monotonic() - started, metadata_updated=True, warnings=warnings)


def _ocr_options(source: IngestSource, deps: IngestDeps, options: IngestOptions,
                 time_left: Callable[[], float] | None) -> OcrOptions | None:
    """OCR for this ingest (None when ``deps.ocr`` is None): pages saved as read, and before each page
    :class:`IngestDeadline` when fewer than the margin's seconds are left (a redelivery resumes)."""
    if deps.ocr is None:
        return None
    cache = BlobOcrCache(deps.blobs, source.doc_id, source.version, deps.ocr.name, options.ocr_dpi)

    def before_page() -> None:
        if time_left is not None and time_left() < options.deadline_margin:
            raise IngestDeadline(f"less than {options.deadline_margin:.0f} s left before the next OCR page; "
                                 f"progress saved: {cache.reused + cache.stored} pages read")

    return OcrOptions(deps.ocr, recheck_layers=options.ocr_recheck_layers, min_confidence=options.ocr_min_confidence,
                      dpi=options.ocr_dpi, cache=cache, before_page=before_page, orient=options.ocr_orientation,
                      low_confidence=options.ocr_low_confidence)


def _parse_and_chunk(source: IngestSource, state: StateStore, options: IngestOptions, ocr: OcrOptions | None,
                     existing: DocumentRecord | None) -> tuple[ParsedDocument, list[Chunk], DocumentMetadata]:
    """Resolve the metadata, parse and chunk; nothing is written unless it fails.

    On :class:`DocumentError` the version is registered ``FAILED`` with the reason over
    ``existing`` (:func:`~longdoc.ingest.rejected.record_rejected`: the entry read before; another
    write since, such as a ``DELETED`` mark, and a ``READY`` version are left as they are), then
    the error is re-raised.
    """
    try:
        meta = source.metadata()
        with stage(f"parse {source.name}", None, "pages"):  # parse_document counts the pages
            parsed = parse_document(source.name, source.data, max_bytes=options.max_bytes,
                                    max_pages=options.max_pages, ocr=ocr)
        sizes = options_for(options, meta)  # the document kind's profile (ingest/profiles.py)
        with stage(f"chunk {parsed.source}", None, "passes"):  # chunk_document counts its passes
            chunks = chunk_document(parsed, source.doc_id, target_tokens=sizes.target_tokens,
                                    max_tokens=sizes.max_tokens, overlap=sizes.overlap, metadata=meta)
        if not chunks:
            raise DocumentError(source.name, "no text to chunk")
    except DocumentError as exc:
        record_rejected(state, source, exc.reason, existing)  # a READY version (re-chunked) is kept as it is
        raise
    return parsed, chunks, meta


def _previous_version(source: IngestSource, state: StateStore, existing: DocumentRecord | None) -> str | None:
    """The version this one succeeds (its embeddings may be reused): recorded on an earlier attempt, else the latest."""
    if existing is not None and existing.previous_version:
        return existing.previous_version
    latest = state.get_document(source.doc_id)
    return latest.doc_version if latest is not None and latest.doc_version != source.version else None


def _new_record(source: IngestSource, deps: IngestDeps, existing: DocumentRecord | None, parsed: ParsedDocument,
                chunks: list[Chunk], meta: DocumentMetadata, chunking: str) -> tuple[DocumentRecord, bool]:
    """The version's ``INGESTING`` entry to register, and whether an earlier attempt is resumed.

    A ``FAILED`` or ``INGESTING`` attempt with the same chunk count and embedding model is
    resumed: its ``upserted``, ``reused`` and ``embedding_tokens`` progress is carried over.
    """
    resuming = (existing is not None and existing.status in ("INGESTING", "FAILED")
                and existing.chunks == len(chunks) and existing.embedding_model == deps.embedder.name)
    carried = existing if resuming else None
    record = DocumentRecord(
        doc_id=source.doc_id, doc_version=source.version, source=source.name, status="INGESTING",
        pages=parsed.page_count, chunks=len(chunks), content_sha256=source.sha256,
        embedding_model=deps.embedder.name, updated_at=utc_now(), source_key=source.key,
        previous_version=_previous_version(source, deps.state, existing), stage="chunked",
        upserted=carried.upserted if carried else 0, reused=carried.reused if carried else 0,
        embedding_tokens=carried.embedding_tokens if carried else 0,
        attempts=(carried.attempts if carried else 0) + 1,
        pages_needing_ocr=parsed.pages_needing_ocr, metadata=meta, chunking=chunking,
        page_outcomes=by_outcome(parsed.page_outcomes), warnings=source.warnings(parsed.warnings),
        ocr_rotations={p.page: p.rotation for p in parsed.ocr_pages if p.rotation},
        furniture_lines=parsed.furniture_lines,
    )
    return record, resuming


def _embed(run: IngestAttempt, cache: EmbeddingCache) -> list[list[float]]:
    """Embed what the cache lacks (after reusing the previous version's vectors); returns vectors in chunk order."""
    step = time.monotonic()
    if run.resuming or (run.prior is not None and run.prior.status == "READY"):  # resumed, or re-chunked
        cache.load()
    texts = [embedding_text(c) for c in run.chunks]
    hashes = [text_sha256(t) for t in texts]
    run.reused += cache.reuse_version(run.record.previous_version, hashes)
    run.save(stage="embedding", embedded=cache.count(hashes), reused=run.record.reused + run.reused,
             embedding_tokens=run.record.embedding_tokens + run.tokens)  # tokens embedded ahead of a re-chunk

    def saved(tokens: int) -> None:
        run.timings["embed"] = time.monotonic() - step
        run.save(embedded=cache.count(hashes), embedding_tokens=run.record.embedding_tokens + tokens)

    with stage(f"embed {run.source.name}", len(hashes), "chunks"):  # embed_missing counts the chunks
        stats = embed_missing(cache, texts, hashes, source=run.source.name, labels=[c.chunk_id for c in run.chunks],
                              before_call=lambda: run.check_time("embedding"), after_call=saved)
    run.embedded, run.tokens = run.embedded + stats.embedded, run.tokens + stats.tokens
    run.timings["embed"] = time.monotonic() - step
    return [cache.vectors[h] for h in hashes]


def _upsert(run: IngestAttempt, vectors: list[list[float]]) -> None:
    """Upsert in ordinal order, in slices of :data:`UPSERT_SLICE`, skipping what an earlier attempt upserted."""
    step = time.monotonic()
    run.save(stage="upserting")
    total = len(run.chunks)
    with stage(f"index {run.source.name}", total - run.record.upserted, "chunks") as advance:  # this attempt's
        for start in range(run.record.upserted, total, UPSERT_SLICE):
            run.check_time("upserting")
            end = min(start + UPSERT_SLICE, total)
            run.deps.index.upsert(run.chunks[start:end], vectors[start:end])
            run.timings["upsert"] = time.monotonic() - step
            run.save(upserted=end)
            advance(end - start)
    run.timings["upsert"] = time.monotonic() - step


def _finish(run: IngestAttempt, parsed: ParsedDocument) -> IngestResult:
    """Register the version ``READY`` (unless its object is gone: :class:`SourceRemoved`) and report what this attempt did."""
    seconds = time.monotonic() - run.started
    run.timings["total"] = seconds
    run.finish(status="READY", reason=None, stage="done", duration_seconds=f"{seconds:.3f}")
    chunks = run.chunks
    return IngestResult(run.source.doc_id, run.source.version, run.source.name, parsed.page_count, len(chunks),
                        False, seconds, embedded=run.embedded, reused=run.reused, resumed=run.resuming,
                        tokens=run.tokens, timings=dict(run.timings), oversize_chunks=sum(c.oversize for c in chunks),
                        overlap_missing_chunks=sum(c.overlap_missing for c in chunks),
                        **{**ocr_summary(parsed), "warnings": run.source.warnings(parsed.warnings)}, rechunked=run.prior is not None and run.prior.status == "READY")


def chunk_bytes(source: str, data: bytes, *, doc_id: str | None = None, target_tokens: int = 1000,
                max_tokens: int = 2000, overlap: float = 0.15,
                metadata: DocumentMetadata | None = None) -> list[Chunk]:
    """Parse and chunk one file's bytes with no store involved (the first half of an ingest).

    ``source`` is the file name (format detection, error messages, the default doc id via
    :func:`doc_id_for_key`); sizes are tokens (``Settings.chunk_*`` defaults). Returns the
    chunks in ordinal order; the same bytes always give the same chunk ids. Raises
    :class:`DocumentError` for unusable input.
    """
    parsed = parse_document(source, data)
    return chunk_document(parsed, doc_id or doc_id_for_key(source), target_tokens=target_tokens,
                          max_tokens=max_tokens, overlap=overlap, metadata=metadata or DocumentMetadata())
