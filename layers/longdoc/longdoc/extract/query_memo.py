"""Query embeddings memoised per ``(model, text)``: a bulk round embeds each clause type's query once.

Every document of a bulk round asks retrieval for the same clause-type query texts
(:meth:`longdoc.extract.catalogue.ClauseType.query_text`), so without a memo a round of N documents
x K clause types pays N x K query embeddings (Voyage calls on AWS) for K distinct texts. A query
vector depends only on the embedding model and the text (``input_type="query"``), so it is kept
and reused; chunk embeddings (:meth:`embed_documents`) pass through untouched.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Sequence

from longdoc.core.ports import Embedder

DEFAULT_MEMO_ENTRIES = 256
"""Query vectors kept (least recently used dropped first): a catalogue has a few dozen clause types;
at 1,024 float dimensions a vector is about 8 KB as Python floats' list, so 256 are about 2 MB."""


class MemoisedQueries:
    """An :class:`~longdoc.core.ports.Embedder` that wraps ``inner`` and remembers query vectors.

    ``embed_query(text)`` returns the vector ``inner`` gave for ``(inner.name, text)`` the first
    time (a copy, so a caller changing it cannot change the memo); at most ``max_entries`` are
    kept, least recently used dropped. Safe to share between threads (one lock; the first call
    for a text embeds outside it, so two threads may both embed a new text once). ``calls``
    counts the queries passed to ``inner``. Raises what ``inner`` raises (nothing is memoised then).
    """

    def __init__(self, inner: Embedder, max_entries: int = DEFAULT_MEMO_ENTRIES) -> None:
        self.inner = inner
        self.name = inner.name
        self.dimension = inner.dimension
        self.max_entries = max_entries
        self.calls = 0
        self._memo: OrderedDict[tuple[str, str], list[float]] = OrderedDict()
        self._lock = threading.Lock()

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        """``inner.embed_documents(texts)`` unchanged (chunk vectors are never memoised)."""
        return self.inner.embed_documents(texts)

    def embed_query(self, text: str) -> list[float]:
        """The query vector of ``text`` under ``inner``'s model, embedded once per ``(model, text)``."""
        key = (self.inner.name, text)
        with self._lock:
            found = self._memo.get(key)
            if found is not None:
                self._memo.move_to_end(key)
                return list(found)
        vector = self.inner.embed_query(text)
        with self._lock:
            self.calls += 1
            self._memo[key] = list(vector)
            self._memo.move_to_end(key)
            while len(self._memo) > self.max_entries:
                self._memo.popitem(last=False)
        return list(vector)


def memoised(embedder: Embedder, max_entries: int = DEFAULT_MEMO_ENTRIES) -> Embedder:
    """``embedder`` wrapped in :class:`MemoisedQueries` (returned as is when it already is one)."""
    return embedder if isinstance(embedder, MemoisedQueries) else MemoisedQueries(embedder, max_entries)
