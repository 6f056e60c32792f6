"""Ingest one document: parse, chunk, store chunks, embed, upsert, register.

Everything that can fail on the document itself (parsing, chunking) runs before the
first write. If a later step fails, what this attempt wrote (chunk blob, vectors) is
removed and the registry entry is marked ``FAILED`` with the reason, so nothing is left
half-ingested. Re-ingesting bytes whose version is already ``READY`` is a no-op.
"""

from __future__ import annotations

import hashlib
import json
import re
import time
import unicodedata
from dataclasses import dataclass
from datetime import UTC, datetime

from longdoc.domain.chunk import chunk_document
from longdoc.domain.parse import DEFAULT_MAX_BYTES, DEFAULT_MAX_PAGES, parse_document
from longdoc.errors import DocumentError, NotFound
from longdoc.models import Chunk, DocumentMetadata, DocumentRecord
from longdoc.ports import BlobStore, Embedder, StateStore, VectorIndex

INCOMING_PREFIX = "incoming/"
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


def chunks_key(doc_id: str, doc_version: str) -> str:
    """Blob key of a document version's chunks (JSON Lines, one :class:`Chunk` per line)."""
    return f"chunks/{doc_id}/{doc_version}.jsonl"


def embedding_text(chunk: Chunk) -> str:
    """The text embedded for a chunk: a one-line locator header, then the chunk's own words.

    ``[doc: contract_v2.pdf | section: 3.2 | path: 3 Terms > 3.2 Fees | page: 14 (p. 12)]``:
    the page is the physical page of the chunk's first character, with its printed label
    in brackets when it has one; ``path`` is left out when there is no heading path.
    """
    page = "n/a" if chunk.page_start is None else str(chunk.page_start)
    label = chunk.page_labels[0] if chunk.page_labels else None
    if label and label != page:
        page += f" (p. {label})"
    path = f" | path: {' > '.join(chunk.heading_path)}" if chunk.heading_path else ""
    return f"[doc: {chunk.source} | section: {chunk.section_id or '-'}{path} | page: {page}]\n{chunk.text}"


def read_sidecar(blobs: BlobStore, key: str) -> DocumentMetadata:
    """Read ``<key>.metadata.json`` from the blob store, if there is one.

    The sidecar is a JSON object with any of ``doc_type``, ``line_of_business``, ``term``
    (``-`` or ``_``, any case); other keys are ignored. Returns empty metadata when the
    sidecar is absent. Raises :class:`DocumentError` when it exists but is not a JSON object.
    """
    try:
        raw = blobs.get(key + METADATA_SUFFIX)
    except NotFound:
        return DocumentMetadata()
    try:
        values = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise DocumentError(key + METADATA_SUFFIX, f"metadata sidecar is not valid JSON ({exc})") from None
    if not isinstance(values, dict):
        raise DocumentError(key + METADATA_SUFFIX, "metadata sidecar must be a JSON object")
    return DocumentMetadata.from_mapping(values)


def load_chunks(blobs: BlobStore, doc_id: str, doc_version: str) -> list[Chunk]:
    """Read a document version's chunks from the blob store (the chunk text's source of truth).

    Raises :class:`NotFound` when the version was never ingested.
    """
    data = blobs.get(chunks_key(doc_id, doc_version))
    return [Chunk.model_validate_json(line) for line in data.decode("utf-8").splitlines() if line]


@dataclass(frozen=True)
class IngestResult:
    """Outcome of one ingest: ``skipped`` is True when the version was already READY."""

    doc_id: str
    doc_version: str
    source: str
    pages: int
    chunks: int
    skipped: bool
    seconds: float


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


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
    metadata: DocumentMetadata | dict | None = None,
    max_bytes: int = DEFAULT_MAX_BYTES,
    max_pages: int = DEFAULT_MAX_PAGES,
) -> IngestResult:
    """Ingest ``data`` (the object at ``key``) and return what was stored.

    ``metadata`` (a :class:`DocumentMetadata` or a dict such as S3 object metadata) is
    copied onto every chunk. ``max_bytes``/``max_pages`` are the parse caps
    (``Settings.max_document_bytes``/``max_document_pages``). A new ``doc_version`` never
    touches an older one: its chunks live under their own key and ids, so claims against
    old terms still resolve.

    Raises :class:`DocumentError` (file named, reason given) for unusable input, after
    recording the version as ``FAILED``; other errors (embedder, index, store) are re-raised
    after cleaning up this attempt's writes, so a retry starts clean.
    """
    started = time.monotonic()
    doc_id = doc_id or doc_id_for_key(key)
    source = key.rsplit("/", 1)[-1]
    version = hashlib.sha256(data).hexdigest()[:16]
    existing = state.get_document(doc_id, version)
    if existing is not None and existing.status == "READY":
        return IngestResult(doc_id, version, source, existing.pages, existing.chunks, True, 0.0)
    try:
        parsed = parse_document(source, data, max_bytes=max_bytes, max_pages=max_pages)
        meta = metadata if isinstance(metadata, DocumentMetadata) else DocumentMetadata.from_mapping(metadata)
        chunks = chunk_document(parsed, doc_id, target_tokens=target_tokens, max_tokens=max_tokens,
                                overlap=overlap, metadata=meta)
        if not chunks:
            raise DocumentError(source, "no text to chunk")
    except DocumentError as exc:
        state.put_document(DocumentRecord(doc_id=doc_id, doc_version=version, source=source, status="FAILED",
                                          reason=exc.reason, content_sha256=hashlib.sha256(data).hexdigest(),
                                          updated_at=_now()))
        raise
    record = DocumentRecord(doc_id=doc_id, doc_version=version, source=source, status="INGESTING",
                            pages=parsed.page_count, chunks=len(chunks), content_sha256=parsed.content_sha256,
                            embedding_model=embedder.name, updated_at=_now(),
                            pages_needing_ocr=parsed.pages_needing_ocr)
    state.put_document(record)
    blob_key = chunks_key(doc_id, version)
    try:
        blobs.put(blob_key, "".join(c.model_dump_json() + "\n" for c in chunks).encode("utf-8"))
        vectors = embedder.embed_documents([embedding_text(c) for c in chunks])
        index.upsert(chunks, vectors)
    except Exception as exc:
        index.delete_document(doc_id, version)
        blobs.delete(blob_key)
        state.put_document(record.model_copy(update={"status": "FAILED", "reason": f"{type(exc).__name__}: {exc}",
                                                     "updated_at": _now()}))
        raise
    seconds = time.monotonic() - started
    state.put_document(record.model_copy(update={"status": "READY", "updated_at": _now(),
                                                 "duration_seconds": f"{seconds:.3f}"}))
    return IngestResult(doc_id, version, source, parsed.page_count, len(chunks), False, seconds)


def describe(result: IngestResult) -> dict:
    """The CLI/JSON view of an ingest: ``{"doc_id", "doc_version", "source", "pages", "chunks", "skipped"}``."""
    return {"doc_id": result.doc_id, "doc_version": result.doc_version, "source": result.source,
            "pages": result.pages, "chunks": result.chunks, "skipped": result.skipped}

