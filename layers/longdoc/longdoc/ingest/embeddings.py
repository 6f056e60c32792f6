"""The embedding cache and the embed step of an ingest.

A document version's vectors are cached in one blob per (model, dimension, doc_id,
doc_version), mapping the SHA-256 of each embedded text to its vector, so the cache key is
(content hash, model, dimension): a new version re-embeds only the texts that changed, and
a redelivered message never embeds a text twice.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
import struct
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from longdoc.core.errors import DocumentError, EmbeddingInputTooLong, NotFound
from longdoc.core.ports import BlobStore, Embedder
from longdoc.core.progress import reporter
from longdoc.core.tokens import estimate_tokens

EMBED_SLICE = 64
"""Texts per embedding call for embedders without a ``batches()`` plan (progress is saved after each)."""


def text_sha256(text: str) -> str:
    """The cache key of one embedded text: SHA-256 hex of its UTF-8 bytes."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def embeddings_key(model: str, dimension: int, doc_id: str, doc_version: str) -> str:
    """Blob key of a version's embedding cache: ``embeddings/{model}/{dimension}/{doc_id}/{doc_version}.json``.

    The file maps the SHA-256 of each embedded text (:func:`text_sha256` of
    :func:`longdoc.core.documents.embedding_text`) to its vector; characters of ``model``
    outside ``[A-Za-z0-9._-]`` become ``_``.
    """
    safe_model = re.sub(r"[^A-Za-z0-9._-]+", "_", model)
    return f"embeddings/{safe_model}/{dimension}/{doc_id}/{doc_version}.json"


def _encode_vector(vector: list[float]) -> str:
    """``vector`` as base64 of little-endian float32s (4 bytes per number)."""
    return base64.b64encode(struct.pack(f"<{len(vector)}f", *vector)).decode("ascii")


def _decode_vector(text: str) -> list[float]:
    """The inverse of :func:`_encode_vector` (values come back rounded to float32)."""
    raw = base64.b64decode(text)
    return list(struct.unpack(f"<{len(raw) // 4}f", raw))


def load_embedding_cache(blobs: BlobStore, key: str) -> dict[str, list[float]]:
    """Read an embedding cache file: ``{text_sha256: vector}`` (float32). Missing file -> ``{}``.

    Raises ``ValueError`` (``json.JSONDecodeError``) for a file that is not a cache.
    """
    try:
        data = json.loads(blobs.get(key))
    except NotFound:
        return {}
    return {h: _decode_vector(v) for h, v in data.get("vectors", {}).items()}


def save_embedding_cache(blobs: BlobStore, key: str, model: str, dimension: int,
                         cache: dict[str, list[float]]) -> None:
    """Write ``cache`` (``{text_sha256: vector}``) to ``key`` as ``{"model", "dimension", "vectors"}`` JSON.

    Vectors are stored as base64 float32, keys sorted, in one atomic put.
    """
    body = {"model": model, "dimension": dimension,
            "vectors": {h: _encode_vector(v) for h, v in sorted(cache.items())}}
    blobs.put(key, json.dumps(body).encode("utf-8"))


@dataclass
class EmbeddingCache:
    """One document version's cache for one embedder, held in memory and saved on demand.

    ``vectors`` maps text SHA-256 to a vector of ``embedder.dimension`` floats.
    """

    blobs: BlobStore
    embedder: Embedder
    doc_id: str
    doc_version: str
    vectors: dict[str, list[float]] = field(default_factory=dict)

    @property
    def key(self) -> str:
        """The blob key of this cache (:func:`embeddings_key`)."""
        return embeddings_key(self.embedder.name, self.embedder.dimension, self.doc_id, self.doc_version)

    def load(self) -> None:
        """Replace :attr:`vectors` with the stored cache (``{}`` when there is none).

        Stored vectors of another length than ``embedder.dimension`` are dropped.
        """
        self.vectors = {h: v for h, v in load_embedding_cache(self.blobs, self.key).items()
                        if len(v) == self.embedder.dimension}

    def missing(self, hashes: Sequence[str]) -> set[str]:
        """The text hashes among ``hashes`` that have no vector yet."""
        return set(hashes) - self.vectors.keys()

    def count(self, hashes: Sequence[str]) -> int:
        """How many of ``hashes`` (with repeats) have a vector."""
        return sum(1 for h in hashes if h in self.vectors)

    def reuse(self, previous: EmbeddingCache, hashes: Sequence[str]) -> int:
        """Copy vectors of ``hashes`` still missing here from ``previous``; returns how many were copied.

        Saves this cache when anything was copied.
        """
        copied = 0
        for h in self.missing(hashes):
            if h in previous.vectors:
                self.vectors[h] = previous.vectors[h]
                copied += 1
        if copied:
            self.save()
        return copied

    def reuse_version(self, doc_version: str | None, hashes: Sequence[str]) -> int:
        """Copy, from the same document's cache of ``doc_version`` (the version this one succeeds), the
        vectors of ``hashes`` still missing here (:meth:`reuse`); returns how many were copied. The other
        cache is read only when ``doc_version`` is given and something is missing (0 otherwise)."""
        if doc_version is None or not self.missing(hashes):
            return 0
        previous = EmbeddingCache(self.blobs, self.embedder, self.doc_id, doc_version)
        previous.load()
        return self.reuse(previous, hashes)

    def save(self) -> None:
        """Write the cache to its blob (:func:`save_embedding_cache`)."""
        save_embedding_cache(self.blobs, self.key, self.embedder.name, self.embedder.dimension, self.vectors)

    def delete(self) -> None:
        """Remove the cache blob (missing is fine)."""
        self.blobs.delete(self.key)


@dataclass(frozen=True)
class EmbedStats:
    """What :func:`embed_missing` did: ``embedded`` texts sent, ``tokens`` embedding tokens used."""

    embedded: int = 0
    tokens: int = 0


def _slices(embedder: Embedder, texts: list[str]) -> list[int]:
    """Sizes of the embedding calls for ``texts``: the embedder's own request plan if it has one."""
    plan = getattr(embedder, "batches", None)
    if callable(plan):
        return [len(batch) for batch in plan(texts)]
    return [min(EMBED_SLICE, len(texts) - i) for i in range(0, len(texts), EMBED_SLICE)]


def _call(embedder: Embedder, texts: list[str]) -> tuple[list[list[float]], int]:
    """Embed ``texts``; returns the vectors and the tokens used (as the embedder counts them, else estimated).

    Raises whatever the embedder raises (e.g. :class:`EmbeddingInputTooLong`).
    """
    before = getattr(embedder, "total_tokens", None)
    vectors = embedder.embed_documents(texts)
    after = getattr(embedder, "total_tokens", None)
    if isinstance(before, int) and isinstance(after, int):
        return vectors, after - before
    return vectors, sum(estimate_tokens(t) for t in texts)


def embed_missing(cache: EmbeddingCache, texts: Sequence[str], hashes: Sequence[str], *, source: str,
                  labels: Sequence[str], before_call: Callable[[], None] = lambda: None,
                  after_call: Callable[[int], None] = lambda tokens: None) -> EmbedStats:
    """Embed every text whose hash (``hashes[i]`` of ``texts[i]``) is not in ``cache``, once each.

    Texts are sent in the embedder's request plan (or slices of :data:`EMBED_SLICE`);
    ``before_call()`` runs before each call (it may raise, e.g. :class:`IngestDeadline`),
    and after each call the new vectors are put into ``cache``, the cache is saved and
    ``after_call(tokens_of_that_call)`` runs, so a failure later keeps what was embedded. Chunks
    embedded (cached ones first) are counted in the ``embed {source}`` progress stage when one is
    open (:mod:`longdoc.core.progress`).

    Raises :class:`DocumentError` for ``source`` naming ``labels[i]`` (the chunk id) when
    a text is too long for the embedding model; other embedder errors propagate.
    """
    todo: dict[str, str] = {}
    for h, t in zip(hashes, texts, strict=True):
        if h not in cache.vectors:
            todo.setdefault(h, t)
    pending = list(todo.items())
    embedded = tokens = 0
    position = 0
    per_hash = Counter(hashes)  # chunks per text, for the progress count
    progress, stage = reporter(), f"embed {source}"  # the ingest's embed stage, when one is open
    progress.advance(stage, len(hashes) - sum(per_hash[h] for h in todo))  # cached or reused
    for size in _slices(cache.embedder, [t for _, t in pending]):
        before_call()
        part = pending[position:position + size]
        try:
            vectors, used = _call(cache.embedder, [t for _, t in part])
        except EmbeddingInputTooLong as exc:
            label = labels[list(hashes).index(part[exc.index][0])]
            raise DocumentError(source, f"chunk {label} is too long for embedding model "
                                        f"{cache.embedder.name} ({exc})") from exc
        for (h, _), vector in zip(part, vectors, strict=True):
            cache.vectors[h] = [float(x) for x in vector]
        position += size
        embedded += len(part)
        tokens += used
        cache.save()
        after_call(used)
        progress.advance(stage, sum(per_hash[h] for h, _ in part))
    return EmbedStats(embedded=embedded, tokens=tokens)
