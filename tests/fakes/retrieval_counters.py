"""In-process retrieval stand-ins that count their calls (bulk Prepare tests and the benchmark).

:class:`HashEmbedder` gives deterministic unit vectors from a text's SHA-256 (no model) and counts
``embed_query`` calls; :class:`CountingIndex` keeps vectors in memory, answers a document version's
query by dot product, and counts queries. Neither touches the network.
"""

from __future__ import annotations

import hashlib
import math
import threading
from collections.abc import Sequence

from longdoc.core.models import Chunk


class HashEmbedder:
    """Deterministic ``dimension``-long unit vectors from SHA-256 of the text; counts query embeddings."""

    name = "hash-embedder-v1"

    def __init__(self, dimension: int = 16) -> None:
        self.dimension = dimension
        self.query_calls = 0
        self._lock = threading.Lock()

    def _vector(self, text: str) -> list[float]:
        digest = hashlib.sha256(text.encode()).digest()
        raw = [digest[i % len(digest)] - 127.5 for i in range(self.dimension)]
        norm = math.sqrt(sum(x * x for x in raw)) or 1.0
        return [x / norm for x in raw]

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        return [self._vector(t) for t in texts]

    def embed_query(self, text: str) -> list[float]:
        with self._lock:
            self.query_calls += 1
        return self._vector("query: " + text)


class CountingIndex:
    """An in-memory vector index filtered by document version; counts ``query`` calls."""

    def __init__(self) -> None:
        self.rows: dict[tuple[str, str], dict[str, list[float]]] = {}
        self.queries = 0
        self._lock = threading.Lock()

    def upsert(self, chunks: Sequence[Chunk], vectors: Sequence[Sequence[float]]) -> int:
        for chunk, vector in zip(chunks, vectors, strict=True):
            self.rows.setdefault((chunk.doc_id, chunk.doc_version), {})[chunk.chunk_id] = list(vector)
        return len(chunks)

    def query(self, vector: Sequence[float], doc_id: str, doc_version: str, top_k: int) -> list[tuple[str, float]]:
        with self._lock:
            self.queries += 1
        rows = self.rows.get((doc_id, doc_version), {})
        hits = sorted(((cid, sum(a * b for a, b in zip(v, vector, strict=True))) for cid, v in rows.items()),
                      key=lambda h: (-h[1], h[0]))
        return hits[:top_k]

    def delete_document(self, doc_id: str, doc_version: str) -> None:
        self.rows.pop((doc_id, doc_version), None)
