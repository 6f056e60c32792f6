"""Dense vectors of clause units, embedded once and kept beside the document in the blob store.

Ingest embeds chunks; triage ranks clause units (:mod:`longdoc.triage.units`), which with large
extraction chunks are much smaller than their chunk. Each unit's text (heading path, then text)
is embedded with the same embedder as the chunks (``embed_documents``) the first time a triage
ranks that document version, and cached at
``triage/unit-vectors/{model}/{dimension}/{doc_id}/{doc_version}.json`` as
``{"vectors": {sha256 of the text: base64 little-endian float32}}``, so a unit whose text did not
change is never embedded again (the key is the content, as ingest's embedding cache).
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
import struct
from collections.abc import Sequence

from longdoc.core.errors import NotFound
from longdoc.core.ports import BlobStore, Embedder
from longdoc.triage.clauses import Clause

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
    try:
        data = json.loads(blobs.get(key))
    except NotFound:
        return {}
    out = {}
    for h, v in data.get("vectors", {}).items():
        raw = base64.b64decode(v)
        out[h] = list(struct.unpack(f"<{len(raw) // 4}f", raw))
    return out


def _save(blobs: BlobStore, key: str, vectors: dict[str, list[float]]) -> None:
    body = {"vectors": {h: base64.b64encode(struct.pack(f"<{len(v)}f", *v)).decode("ascii")
                        for h, v in sorted(vectors.items())}}
    blobs.put(key, json.dumps(body).encode("utf-8"))


def unit_vectors(blobs: BlobStore, embedder: Embedder, clauses: Sequence[Clause]) -> dict[str, list[float]]:
    """``{clause key: vector}`` for every clause of the pool, embedding only texts not cached yet
    (the embedder's errors propagate; what was embedded before the failure is not saved)."""
    out: dict[str, list[float]] = {}
    for doc_id, version in sorted({(c.doc_id, c.doc_version) for c in clauses}):
        key = vectors_key(embedder.name, embedder.dimension, doc_id, version)
        cache = _load(blobs, key)
        mine = [c for c in clauses if (c.doc_id, c.doc_version) == (doc_id, version)]
        texts = {_sha(unit_text(c)): unit_text(c) for c in mine}
        missing = [h for h in texts if h not in cache]
        for i in range(0, len(missing), EMBED_SLICE):
            part = missing[i:i + EMBED_SLICE]
            cache.update(zip(part, embedder.embed_documents([texts[h] for h in part]), strict=True))
        if missing:
            _save(blobs, key, cache)
        out.update({c.key: cache[_sha(unit_text(c))] for c in mine})
    return out


def dense_unit_ranking(clauses: Sequence[Clause], vectors: dict[str, list[float]],
                       query: Sequence[float]) -> list[str]:
    """Clause keys by the dot product (cosine: vectors are L2-normalised) of their unit vector with ``query``."""
    scored = [(sum(a * b for a, b in zip(vectors[c.key], query, strict=False)), c.order, c.key)
              for c in clauses if c.key in vectors]
    return [key for _, _, key in sorted(scored, key=lambda s: (-s[0], s[1]))]
