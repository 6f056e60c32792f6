"""Dense vectors of clause units, embedded once and kept beside the document in the blob store.

Ingest embeds chunks; triage ranks clause units (:mod:`longdoc.triage.units`), which with large
extraction chunks are much smaller than their chunk. Each unit's text (heading path, then text)
is embedded with the same embedder as the chunks (``embed_documents``) the first time a triage
ranks that document version, and cached at
``triage/unit-vectors/{model}/{dimension}/{doc_id}/{doc_version}.json`` as
``{"vectors": {sha256 of the text: base64 little-endian float32}}``, so a unit whose text did not
change is never embedded again (the key is the content, as ingest's embedding cache). The units'
passage vectors (:mod:`longdoc.triage.passages`) share that file.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import logging
import re
import struct
from collections.abc import Sequence

from longdoc.core.errors import NotFound
from longdoc.core.ports import BlobStore, Embedder
from longdoc.triage.clauses import Clause
from longdoc.triage.passages import dot, passage_text, passages

log = logging.getLogger(__name__)

EMBED_SLICE = 64
"""Unit texts per ``embed_documents`` call."""


def unit_text(clause: Clause) -> str:
    """What is embedded for a unit: its heading path on the first line, then its text."""
    return " > ".join(clause.heading_path) + "\n" + clause.text


def vectors_key(model: str, dimension: int, doc_id: str, doc_version: str) -> str:
    """Blob key of one document version's unit vectors (characters outside ``[A-Za-z0-9._-]`` of ``model`` -> ``_``)."""
    safe = re.sub(r"[^A-Za-z0-9._-]+", "_", model)
    return f"triage/unit-vectors/{safe}/{dimension}/{doc_id}/{doc_version}.json"


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _load(blobs: BlobStore, key: str) -> dict[str, list[float]]:
    """The cached vectors at ``key``; ``{}`` when there are none, or when the file is damaged (not
    JSON, or not ``{"vectors": {sha: base64 float32}}``): it is only a cache, so it is logged with its
    key and rebuilt (the next save replaces it)."""
    try:
        data = json.loads(blobs.get(key))
        out = {}
        for h, v in data.get("vectors", {}).items():
            raw = base64.b64decode(v, validate=True)
            out[str(h)] = list(struct.unpack(f"<{len(raw) // 4}f", raw[:len(raw) // 4 * 4]))
        return out
    except NotFound:
        return {}
    except (ValueError, TypeError, AttributeError, binascii.Error, struct.error) as exc:
        log.warning("triage vector cache %s is damaged (%s); rebuilding it", key, exc)
        return {}


def _save(blobs: BlobStore, key: str, vectors: dict[str, list[float]]) -> None:
    body = {"vectors": {h: base64.b64encode(struct.pack(f"<{len(v)}f", *v)).decode("ascii")
                        for h, v in sorted(vectors.items())}}
    blobs.put(key, json.dumps(body).encode("utf-8"))


def _embedded(blobs: BlobStore, embedder: Embedder, doc_id: str, version: str, texts: Sequence[str]) -> dict[str, list[float]]:
    """``{sha256 of text: vector}`` for ``texts`` of one document version, embedding only those not in
    its cache file yet, and saving the file when any was (the embedder's errors propagate; nothing
    embedded before a failure is saved)."""
    key = vectors_key(embedder.name, embedder.dimension, doc_id, version)
    cache = _load(blobs, key)
    wanted = {_sha(t): t for t in texts}
    missing = [h for h in wanted if h not in cache]
    for i in range(0, len(missing), EMBED_SLICE):
        part = missing[i:i + EMBED_SLICE]
        cache.update(zip(part, embedder.embed_documents([wanted[h] for h in part]), strict=True))
    if missing:
        _save(blobs, key, cache)
    return cache


def pool_vectors(blobs: BlobStore, embedder: Embedder, clauses: Sequence[Clause]
                 ) -> tuple[dict[str, list[float]], dict[str, list[list[float]]]]:
    """``(unit vectors, passage vectors)`` of the pool, as :func:`unit_vectors` and :func:`passage_vectors`
    give them, with each document version's cache file read and written once for both (the texts not
    cached yet embedded in one pass). Errors as :func:`unit_vectors`."""
    units: dict[str, list[float]] = {}
    parts: dict[str, list[list[float]]] = {}
    for doc_id, version in sorted({(c.doc_id, c.doc_version) for c in clauses}):
        mine = [c for c in clauses if (c.doc_id, c.doc_version) == (doc_id, version)]
        split = {c.key: [passage_text(c, p) for p in passages(c.text)] for c in mine}
        split = {k: texts for k, texts in split.items() if len(texts) > 1}
        wanted = [unit_text(c) for c in mine] + [t for texts in split.values() for t in texts]
        cache = _embedded(blobs, embedder, doc_id, version, wanted)
        units.update({c.key: cache[_sha(unit_text(c))] for c in mine})
        parts.update({k: [cache[_sha(t)] for t in texts] for k, texts in split.items()})
    return units, parts


def unit_vectors(blobs: BlobStore, embedder: Embedder, clauses: Sequence[Clause]) -> dict[str, list[float]]:
    """``{clause key: vector}`` for every clause of the pool, embedding only texts not cached yet
    (the embedder's errors propagate; what was embedded before the failure is not saved)."""
    out: dict[str, list[float]] = {}
    for doc_id, version in sorted({(c.doc_id, c.doc_version) for c in clauses}):
        mine = [c for c in clauses if (c.doc_id, c.doc_version) == (doc_id, version)]
        cache = _embedded(blobs, embedder, doc_id, version, [unit_text(c) for c in mine])
        out.update({c.key: cache[_sha(unit_text(c))] for c in mine})
    return out


def passage_vectors(blobs: BlobStore, embedder: Embedder, clauses: Sequence[Clause]) -> dict[str, list[list[float]]]:
    """``{clause key: [vector per passage]}`` for the clauses of two or more
    :func:`~longdoc.triage.passages.passages` (a one-passage unit is its unit vector), cached in the
    same per-version file as the unit vectors (keyed by text), so an unchanged passage is never
    embedded again. Errors as :func:`unit_vectors`."""
    out: dict[str, list[list[float]]] = {}
    for doc_id, version in sorted({(c.doc_id, c.doc_version) for c in clauses}):
        mine = {c.key: [passage_text(c, p) for p in passages(c.text)]
                for c in clauses if (c.doc_id, c.doc_version) == (doc_id, version)}
        mine = {k: texts for k, texts in mine.items() if len(texts) > 1}
        if not mine:
            continue
        cache = _embedded(blobs, embedder, doc_id, version, [t for texts in mine.values() for t in texts])
        out.update({k: [cache[_sha(t)] for t in texts] for k, texts in mine.items()})
    return out


def dense_unit_ranking(clauses: Sequence[Clause], vectors: dict[str, list[float]],
                       query: Sequence[float]) -> list[str]:
    """Clause keys by the dot product (cosine: vectors are L2-normalised) of their unit vector with ``query``."""
    scored = [(dot(vectors[c.key], query), c.order, c.key)
              for c in clauses if c.key in vectors]
    return [key for _, _, key in sorted(scored, key=lambda s: (-s[0], s[1]))]
