"""Ingest one document: parse, chunk, store chunks, embed, upsert, register.

Everything that can fail on the document itself (parsing, chunking) runs before the
first write. Progress (chunks stored, embedded, upserted) is recorded in the registry
as it goes, so when a later step fails (embedding service down, index throttled, the
invocation running out of time) the version is marked ``FAILED`` with the reason and a
redelivery continues where it stopped. Re-ingesting bytes whose version is already
``READY`` is a no-op, unless only the document metadata changed: then that version's
chunk list is rewritten with the new metadata (same chunk ids and text, no parsing,
embedding or upserting). Embeddings are cached per version by text hash, model and
dimension, so a new version re-embeds only the chunks whose text changed.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
import struct
import time
import unicodedata
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from pydantic import ValidationError

from longdoc.ingest.chunk import chunk_document
from longdoc.ingest.parse import DEFAULT_MAX_BYTES, DEFAULT_MAX_PAGES, parse_document
from longdoc.core.tokens import estimate_tokens
from longdoc.core.errors import DocumentError, EmbeddingInputTooLong, IngestDeadline, NotFound
from longdoc.core.documents import INCOMING_PREFIX, chunks_key, embedding_text, load_chunks
from longdoc.core.models import Chunk, DocumentMetadata, DocumentRecord
from longdoc.core.ports import BlobStore, Embedder, StateStore, VectorIndex

METADATA_SUFFIX = ".metadata.json"
"""A sidecar ``<file>.metadata.json`` beside a document holds its optional metadata."""


def doc_id_for_key(key: str) -> str:
    """Derive a readable, stable doc id from an object key or file name.

    ``incoming/Master Services Agreement (v2) – Ünïcode.pdf`` -> ``master-services-agreement-v2-unicode``.
    Raises DocumentError when nothing usable remains.
    """
    name = key[len(INCOMING_PREFIX):] if key.startswith(INCOMING_PREFIX) else key
    stem = re.sub(r"\.[A-Za-z0-9]{1,8}$", "", name)
    ascii_ = unicodedata.normalize("NFKD", stem).encode("ascii", "ignore").decode()
    slug = re.sub(r"[^a-z0-9]+", "-", ascii_.lower()).strip("-")
    if not slug:
        raise DocumentError(key, "cannot derive a document id from this name")
    return slug[:96]






def _sidecar_values(blobs: BlobStore, key: str) -> dict:
    """The raw JSON object of ``<key>.metadata.json``; ``{}`` when absent.

    The sidecar is UTF-8 with or without a byte order mark (editors on Windows write one;
    RFC 8259 section 8.1 lets a parser ignore it). Raises :class:`DocumentError` (naming the sidecar) when it is not a JSON object.
    """
    try:
        raw = blobs.get(key + METADATA_SUFFIX)
    except NotFound:
        return {}
    try:
        values = json.loads(raw.decode("utf-8-sig"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise DocumentError(key + METADATA_SUFFIX, f"metadata sidecar is not valid JSON ({exc})") from None
    if not isinstance(values, dict):
        raise DocumentError(key + METADATA_SUFFIX, "metadata sidecar must be a JSON object")
    return values


def metadata_from_mapping(key: str, values: Mapping[str, Any] | None,
                          origins: Mapping[str, str] | None = None) -> DocumentMetadata:
    """Validate ``values`` into :class:`DocumentMetadata` (see :meth:`DocumentMetadata.from_mapping`).

    Raises :class:`DocumentError` for the object ``key`` naming each bad field, where its
    value came from (``origins[field]`` when given) and why, e.g.
    ``incoming/a.pdf: metadata term (sidecar incoming/a.pdf.metadata.json): String should
    have at most 200 characters``.
    """
    try:
        return DocumentMetadata.from_mapping(dict(values or {}))
    except ValidationError as exc:
        problems = []
        for error in exc.errors():
            name = str(error["loc"][0]) if error.get("loc") else "?"
            origin = f" ({origins[name]})" if origins and name in origins else ""
            problems.append(f"metadata {name}{origin}: {error['msg']}")
        raise DocumentError(key, "; ".join(problems)) from None


def _metadata_field(name: object) -> str:
    """A metadata name as a :class:`DocumentMetadata` field name (``Doc-Type`` -> ``doc_type``)."""
    return str(name).strip().lower().replace("-", "_")


def document_metadata(blobs: BlobStore, key: str) -> DocumentMetadata:
    """The document metadata of the object at ``key``: its own user metadata, then its sidecar.

    Two optional sources, merged key by key: the object's user metadata
    (:meth:`BlobStore.metadata`; on S3 ``x-amz-meta-doc-type``, ``-line-of-business``,
    ``-term``, set at upload), then the ``<key>.metadata.json`` sidecar, whose keys
    override the object's (the sidecar is the later, explicit correction; a sidecar value
    of ``null`` or ``""`` clears the object's value). Names may use ``-`` or ``_`` and any
    case; other names are ignored. A local folder has no object metadata, so there only
    the sidecar counts.

    Raises :class:`NotFound` when the object is absent, and :class:`DocumentError` naming
    the object key, the field and its source for a bad value (see
    :func:`metadata_from_mapping`) or the sidecar for a sidecar that is not a JSON object.
    """
    merged: dict[str, Any] = {}
    origins: dict[str, str] = {}
    for name, value in blobs.metadata(key).items():
        merged[_metadata_field(name)] = value
        origins[_metadata_field(name)] = "object metadata"
    for name, value in _sidecar_values(blobs, key).items():
        merged[_metadata_field(name)] = value
        origins[_metadata_field(name)] = f"sidecar {key}{METADATA_SUFFIX}"
    return metadata_from_mapping(key, merged, origins)


def read_sidecar(blobs: BlobStore, key: str) -> DocumentMetadata:
    """Read ``<key>.metadata.json`` from the blob store, if there is one.

    The sidecar is a JSON object with any of ``doc_type``, ``line_of_business``, ``term``
    (``-`` or ``_``, any case); other keys are ignored. Returns empty metadata when the
    sidecar is absent. Raises :class:`DocumentError` when it exists but is not a JSON
    object, or a value is invalid (field named). Ingest uses :func:`document_metadata`,
    which also reads the object's own metadata.
    """
    return metadata_from_mapping(key, _sidecar_values(blobs, key),
                                 {name: f"sidecar {key}{METADATA_SUFFIX}" for name in
                                  ("doc_type", "line_of_business", "term")})




EMBED_SLICE = 64
"""Chunks per embedding call for embedders without a ``batches()`` plan (progress is saved after each)."""

UPSERT_SLICE = 100
"""Chunks per index upsert call; progress is saved after each (the adapter splits further to its limits)."""

DEFAULT_DEADLINE_MARGIN = 60.0
"""Seconds of invocation time that must remain to start another embed or upsert step."""


def version_for(data: bytes) -> str:
    """The document version of ``data``: first 16 hex digits of its SHA-256."""
    return hashlib.sha256(data).hexdigest()[:16]


def embeddings_key(model: str, dimension: int, doc_id: str, doc_version: str) -> str:
    """Blob key of a version's embedding cache: ``embeddings/{model}/{dimension}/{doc_id}/{doc_version}.json``.

    The file maps the SHA-256 of each embedded text (:func:`embedding_text`) to its
    vector, so the cache key is (content hash, model, dimension).
    """
    safe_model = re.sub(r"[^A-Za-z0-9._-]+", "_", model)
    return f"embeddings/{safe_model}/{dimension}/{doc_id}/{doc_version}.json"


def _encode_vector(vector: list[float]) -> str:
    return base64.b64encode(struct.pack(f"<{len(vector)}f", *vector)).decode("ascii")


def _decode_vector(text: str) -> list[float]:
    raw = base64.b64decode(text)
    return list(struct.unpack(f"<{len(raw) // 4}f", raw))


def load_embedding_cache(blobs: BlobStore, key: str) -> dict[str, list[float]]:
    """Read an embedding cache file: ``{text_sha256: vector}`` (float32). Missing file -> ``{}``."""
    try:
        data = json.loads(blobs.get(key))
    except NotFound:
        return {}
    return {h: _decode_vector(v) for h, v in data.get("vectors", {}).items()}


def _save_embedding_cache(blobs: BlobStore, key: str, model: str, dimension: int,
                          cache: dict[str, list[float]]) -> None:
    body = {"model": model, "dimension": dimension,
            "vectors": {h: _encode_vector(v) for h, v in sorted(cache.items())}}
    blobs.put(key, json.dumps(body).encode("utf-8"))


@dataclass(frozen=True)
class IngestResult:
    """Outcome of one ingest.

    ``skipped`` is True when the version was already READY (nothing done).
    ``metadata_updated`` is True when the version was already READY and only its document
    metadata changed, so its stored chunks were rewritten with the new metadata. ``embedded``
    counts texts sent to the embedder in this attempt, ``reused`` vectors taken from the
    previous version's cache, ``resumed`` is True when an earlier attempt's progress was
    continued. ``tokens`` are embedding tokens used in this attempt (as the API reports
    them when it does, else estimated). ``timings`` are seconds per stage.
    ``oversize_chunks`` counts chunks flagged ``oversize`` (one sentence over ``max_tokens``)
    and ``overlap_missing_chunks`` continuations that could not repeat a whole sentence
    within 20 % of the target (both 0 when skipped).
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


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def _slices(embedder: Embedder, texts: list[str]) -> list[int]:
    """Sizes of the embedding calls for ``texts``: the embedder's own request plan if it has one."""
    plan = getattr(embedder, "batches", None)
    if callable(plan):
        return [len(batch) for batch in plan(texts)]
    return [min(EMBED_SLICE, len(texts) - i) for i in range(0, len(texts), EMBED_SLICE)]


def ingest_document(
    *,
    key: str,
    data: bytes,
    blobs: BlobStore,
    state: StateStore,
    embedder: Embedder,
    index: VectorIndex,
    doc_id: str | None = None,
    target_tokens: int = 1000,
    max_tokens: int = 2000,
    overlap: float = 0.15,
    metadata: DocumentMetadata | Mapping[str, Any] | None = None,
    read_metadata: bool = False,
    max_bytes: int = DEFAULT_MAX_BYTES,
    max_pages: int = DEFAULT_MAX_PAGES,
    time_left: Callable[[], float] | None = None,
    deadline_margin: float = DEFAULT_DEADLINE_MARGIN,
) -> IngestResult:
    """Ingest ``data`` (the object at ``key``) and return what was stored; resumable.

    ``metadata`` (a :class:`DocumentMetadata` or a dict such as S3 object metadata) is
    copied onto every chunk; with ``read_metadata=True`` it is instead read from the
    store by :func:`document_metadata` (object metadata, then the sidecar, sidecar wins).
    A bad metadata value is a :class:`DocumentError` like a bad file (object key and field
    named; nothing stored, a new version recorded ``FAILED``). ``max_bytes``/``max_pages`` are the parse caps
    (``Settings.max_document_bytes``/``max_document_pages``). A new ``doc_version`` never
    touches an older one: its chunks live under their own key and ids, so claims against
    old terms still resolve.

    Steps: parse and chunk (nothing written yet); register ``INGESTING``; write the chunk
    list to ``chunks/{doc_id}/{version}.jsonl``; embed the chunks whose text is not yet in
    this version's embedding cache (:func:`embeddings_key`), first copying vectors of
    identical texts from the previous version's cache, saving the cache and the registry
    progress after every embedding call; upsert vectors in slices of
    :data:`UPSERT_SLICE` chunks, saving ``upserted`` after each; register ``READY``.

    A redelivered message for a version that is ``INGESTING`` or ``FAILED`` continues from
    the recorded progress: cached vectors are not embedded again and slices below
    ``upserted`` are not upserted again (upserts are keyed by chunk id, so even a repeated
    slice never duplicates vectors).

    ``time_left()`` returns the invocation's remaining seconds; when fewer than
    ``deadline_margin`` remain before an embed or upsert step, :class:`IngestDeadline`
    is raised with progress saved, so the message is redelivered and resumes.

    Raises :class:`DocumentError` (file named, reason given) for unusable input, including
    a chunk too long for the embedding model, after recording the version as ``FAILED``
    and removing what was written for it. Other errors (embedder, index, store, deadline)
    are re-raised after recording ``FAILED`` with the reason and keeping the progress.
    """
    started = time.monotonic()
    timings: dict[str, float] = {}
    doc_id = doc_id or doc_id_for_key(key)
    source = key.rsplit("/", 1)[-1]
    version = version_for(data)
    existing = state.get_document(doc_id, version)

    def resolve_metadata() -> DocumentMetadata:
        if read_metadata:
            return document_metadata(blobs, key)
        return metadata if isinstance(metadata, DocumentMetadata) else metadata_from_mapping(key, metadata)

    if existing is not None and existing.status == "READY":
        # A bad metadata value raises here and leaves the READY version as it is.
        meta = resolve_metadata()
        if meta != existing.metadata:
            return _update_metadata(blobs, state, existing, meta, started)
        # The same bytes again: nothing to do, but this version becomes the latest again.
        state.put_document(existing.model_copy(update={"updated_at": _now()}))
        return IngestResult(doc_id, version, source, existing.pages, existing.chunks, True, 0.0)
    try:
        meta = resolve_metadata()
        parsed = parse_document(source, data, max_bytes=max_bytes, max_pages=max_pages)
        chunks = chunk_document(parsed, doc_id, target_tokens=target_tokens, max_tokens=max_tokens,
                                overlap=overlap, metadata=meta)
        if not chunks:
            raise DocumentError(source, "no text to chunk")
    except DocumentError as exc:
        state.put_document(DocumentRecord(doc_id=doc_id, doc_version=version, source=source, status="FAILED",
                                          reason=exc.reason, content_sha256=hashlib.sha256(data).hexdigest(),
                                          source_key=key, updated_at=_now()))
        raise
    timings["parse"] = time.monotonic() - started
    resuming = (existing is not None and existing.status in ("INGESTING", "FAILED")
                and existing.chunks == len(chunks) and existing.embedding_model == embedder.name)
    if existing is not None and existing.previous_version:
        previous_version: str | None = existing.previous_version
    else:
        latest = state.get_document(doc_id)
        previous_version = latest.doc_version if latest is not None and latest.doc_version != version else None
    record = DocumentRecord(
        doc_id=doc_id, doc_version=version, source=source, status="INGESTING", pages=parsed.page_count,
        chunks=len(chunks), content_sha256=parsed.content_sha256, embedding_model=embedder.name,
        updated_at=_now(), source_key=key, previous_version=previous_version, stage="chunked",
        upserted=existing.upserted if resuming and existing is not None else 0,
        reused=existing.reused if resuming and existing is not None else 0,
        embedding_tokens=existing.embedding_tokens if resuming and existing is not None else 0,
        attempts=(existing.attempts if resuming and existing is not None else 0) + 1,
        pages_needing_ocr=parsed.pages_needing_ocr, metadata=meta,
    )
    state.put_document(record)
    blob_key = chunks_key(doc_id, version)
    cache_key = embeddings_key(embedder.name, embedder.dimension, doc_id, version)
    texts = [embedding_text(c) for c in chunks]
    hashes = [hashlib.sha256(t.encode("utf-8")).hexdigest() for t in texts]
    embedded_now = reused_now = tokens_now = 0

    def save(**changes: object) -> None:
        nonlocal record
        record = record.model_copy(update={**changes, "updated_at": _now(),
                                           "timings": {k: f"{v:.3f}" for k, v in timings.items()}})
        state.put_document(record)

    def check_time(step: str) -> None:
        if time_left is not None and time_left() < deadline_margin:
            raise IngestDeadline(f"less than {deadline_margin:.0f} s left before {step}; progress saved: "
                                 f"{record.embedded}/{len(chunks)} embedded, {record.upserted}/{len(chunks)} upserted")

    try:
        blobs.put(blob_key, "".join(c.model_dump_json() + "\n" for c in chunks).encode("utf-8"))
        # --- embed (cache first) ---
        step = time.monotonic()
        cache = load_embedding_cache(blobs, cache_key) if resuming else {}
        cache = {h: v for h, v in cache.items() if len(v) == embedder.dimension}
        wanted = set(hashes)
        if previous_version is not None and wanted - cache.keys():
            previous = load_embedding_cache(
                blobs, embeddings_key(embedder.name, embedder.dimension, doc_id, previous_version))
            for h in wanted - cache.keys():
                if h in previous and len(previous[h]) == embedder.dimension:
                    cache[h] = previous[h]
                    reused_now += 1
            if reused_now:
                _save_embedding_cache(blobs, cache_key, embedder.name, embedder.dimension, cache)
        todo: list[tuple[str, str]] = []
        seen: set[str] = set()
        for h, t in zip(hashes, texts):
            if h not in cache and h not in seen:
                seen.add(h)
                todo.append((h, t))
        save(stage="embedding", embedded=sum(1 for h in hashes if h in cache), reused=record.reused + reused_now)
        position = 0
        for size in _slices(embedder, [t for _, t in todo]):
            check_time("embedding")
            part = todo[position : position + size]
            before = getattr(embedder, "total_tokens", None)
            try:
                vectors = embedder.embed_documents([t for _, t in part])
            except EmbeddingInputTooLong as exc:
                bad = part[exc.index][0]
                chunk_id = next(c.chunk_id for c, h in zip(chunks, hashes) if h == bad)
                raise DocumentError(source, f"chunk {chunk_id} is too long for embedding model "
                                            f"{embedder.name} ({exc})") from exc
            after = getattr(embedder, "total_tokens", None)
            used = (after - before) if isinstance(before, int) and isinstance(after, int) else \
                sum(estimate_tokens(t) for _, t in part)
            tokens_now += used
            embedded_now += len(part)
            for (h, _), vector in zip(part, vectors):
                cache[h] = [float(x) for x in vector]
            position += size
            _save_embedding_cache(blobs, cache_key, embedder.name, embedder.dimension, cache)
            timings["embed"] = time.monotonic() - step
            save(embedded=sum(1 for h in hashes if h in cache), embedding_tokens=record.embedding_tokens + used)
        timings["embed"] = time.monotonic() - step
        # --- upsert, in ordinal order, skipping what an earlier attempt already upserted ---
        step = time.monotonic()
        save(stage="upserting")
        vectors_all = [cache[h] for h in hashes]
        for start in range(record.upserted, len(chunks), UPSERT_SLICE):
            check_time("upserting")
            end = min(start + UPSERT_SLICE, len(chunks))
            index.upsert(chunks[start:end], vectors_all[start:end])
            timings["upsert"] = time.monotonic() - step
            save(upserted=end)
        timings["upsert"] = time.monotonic() - step
    except DocumentError as exc:
        index.delete_document(doc_id, version)
        blobs.delete(blob_key)
        blobs.delete(cache_key)
        save(status="FAILED", reason=exc.reason, stage=None, embedded=0, upserted=0)
        raise
    except Exception as exc:
        save(status="FAILED", reason=f"{type(exc).__name__}: {exc}")
        raise
    seconds = time.monotonic() - started
    timings["total"] = seconds
    save(status="READY", reason=None, stage="done", duration_seconds=f"{seconds:.3f}")
    return IngestResult(doc_id, version, source, parsed.page_count, len(chunks), False, seconds,
                        embedded=embedded_now, reused=reused_now, resumed=resuming, tokens=tokens_now,
                        timings=dict(timings), oversize_chunks=sum(c.oversize for c in chunks),
                        overlap_missing_chunks=sum(c.overlap_missing for c in chunks))


def _update_metadata(blobs: BlobStore, state: StateStore, existing: DocumentRecord, meta: DocumentMetadata,
                     started: float) -> IngestResult:
    """Rewrite a ``READY`` version's stored chunks with new document metadata, in place.

    Same bytes, so same chunk ids, text and vectors: the chunk list (the source of truth
    for chunk metadata; the vector index holds none of these fields) is rewritten in one
    atomic put, then the registry records the new metadata. Raises :class:`NotFound` when
    the version's chunk list is missing.
    """
    chunks = load_chunks(blobs, existing.doc_id, existing.doc_version)
    values = meta.model_dump()
    blobs.put(chunks_key(existing.doc_id, existing.doc_version),
              "".join(c.model_copy(update=values).model_dump_json() + "\n" for c in chunks).encode("utf-8"))
    state.put_document(existing.model_copy(update={"metadata": meta, "updated_at": _now()}))
    return IngestResult(existing.doc_id, existing.doc_version, existing.source, existing.pages, existing.chunks,
                        False, time.monotonic() - started, metadata_updated=True)


def delete_document_source(*, key: str, blobs: BlobStore, state: StateStore, index: VectorIndex,
                           doc_id: str | None = None) -> list[str]:
    """Handle the removal of the object at ``key``: drop its vectors, mark its versions ``DELETED``.

    Every registered version of the document whose ``source_key`` is ``key`` (or, for
    records written before ``source_key`` existed, whose ``source`` is the key's file
    name) loses its vectors in the index and is re-registered as ``DELETED``. Chunk
    lists, embedding caches and registry entries are kept, so past extraction results
    still resolve their citations. Versions are marked oldest first, so the latest
    pointer ends on the version that was latest. Repeating it is harmless. Returns the
    versions marked.

    S3 event notifications may arrive late, twice or out of order (an SQS standard queue
    reorders them; https://docs.aws.amazon.com/AmazonS3/latest/userguide/notification-how-to-event-types-and-destinations.html),
    so the bucket itself decides: when an object exists at ``key`` again (re-uploaded
    after the removal this event reports), nothing is marked and ``[]`` is returned.
    """
    if blobs.exists(key):
        return []
    doc_id = doc_id or doc_id_for_key(key)
    source = key.rsplit("/", 1)[-1]
    latest = state.get_document(doc_id)
    versions = [r for r in state.list_document_versions(doc_id)
                if (r.source_key == key if r.source_key else r.source == source) and r.status != "DELETED"]
    versions.sort(key=lambda r: (latest is not None and r.doc_version == latest.doc_version, r.updated_at))
    marked: list[str] = []
    for record in versions:
        index.delete_document(doc_id, record.doc_version)
        state.put_document(record.model_copy(update={"status": "DELETED", "reason": f"source object {key} removed",
                                                     "stage": None, "upserted": 0, "updated_at": _now()}))
        marked.append(record.doc_version)
    return marked


def describe(result: IngestResult) -> dict:
    """The CLI/JSON view of an ingest.

    ``{"doc_id", "doc_version", "source", "pages", "chunks", "skipped", "embedded", "reused"}``.
    """
    return {"doc_id": result.doc_id, "doc_version": result.doc_version, "source": result.source,
            "pages": result.pages, "chunks": result.chunks, "skipped": result.skipped,
            "embedded": result.embedded, "reused": result.reused}




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
