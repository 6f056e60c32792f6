"""Re-chunking a ``READY`` version under another chunk profile: embed first, swap after.

A version already ``READY`` stays ``READY`` (its old chunks listed, indexed and citable) while
the texts of its new chunks are embedded, because embedding is the slow step and the one that
fails (the embedding service down, the invocation's deadline, ``kill -9`` of a local ingest).
Only when every new chunk text has a vector in the version's embedding cache does the pipeline
register ``INGESTING`` and swap: delete the old vectors, write the new chunk list, upsert. That
window holds no embedding call, so an interrupted re-chunk leaves the old version as it was in
all but the seconds of the swap (and a swap cut short resumes from the cache, embedding nothing).
"""

from __future__ import annotations

from collections.abc import Callable

from longdoc.core.documents import embedding_text
from longdoc.core.errors import IngestDeadline
from longdoc.core.models import Chunk, DocumentRecord
from longdoc.ingest.attempt import IngestDeps
from longdoc.ingest.embeddings import EmbeddingCache, EmbedStats, embed_missing, text_sha256
from longdoc.ingest.lease import VersionClaim
from longdoc.ingest.source import IngestSource


def embed_ahead(source: IngestSource, deps: IngestDeps, chunks: list[Chunk], ready: DocumentRecord,
                claim: VersionClaim, *, time_left: Callable[[], float] | None = None,
                deadline_margin: float = 0.0) -> tuple[EmbedStats, int]:
    """Put a vector for every text of ``chunks`` into the version's embedding cache; no registry write.

    ``ready`` is the version's ``READY`` entry (left as it is). Vectors are taken from the
    version's own cache first, then from the cache of the version it succeeded
    (``ready.previous_version``), and only the rest is embedded, the cache saved after every
    call. Before each call the claim is renewed and, with ``time_left`` (seconds left), fewer
    than ``deadline_margin`` seconds raise :class:`IngestDeadline` (what was embedded stays
    cached). Returns (what was embedded: texts and embedding tokens, vectors copied from the
    previous version). Raises :class:`~longdoc.core.errors.DocumentError` for a chunk text
    too long for the embedding model; embedder errors propagate. Either way the ``READY``
    version is untouched.
    """
    cache = EmbeddingCache(deps.blobs, deps.embedder, source.doc_id, source.version)
    cache.load()
    texts = [embedding_text(c) for c in chunks]
    hashes = [text_sha256(t) for t in texts]
    reused = cache.reuse_version(ready.previous_version, hashes)

    def before_call() -> None:
        claim.renew()
        if time_left is not None and time_left() < deadline_margin:
            raise IngestDeadline(f"less than {deadline_margin:.0f} s left before embedding the re-chunked texts; "
                                 f"version {source.version} stays READY with its old chunks, "
                                 f"{cache.count(hashes)}/{len(chunks)} new texts cached")

    stats = embed_missing(cache, texts, hashes, source=source.name, labels=[c.chunk_id for c in chunks],
                          before_call=before_call)
    return stats, reused
