"""Vector indexes: LanceDB on local disk, Pinecone in AWS mode.

Both store one vector per :class:`longdoc.core.models.Chunk` under its ``chunk_id`` and answer
nearest-neighbour queries restricted to one document version. Scores are cosine
similarities in ``[-1, 1]`` (1 = same direction), best first. ``lancedb`` and
``pinecone`` are imported on first use, not when this module is imported.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Sequence
from datetime import timedelta
from pathlib import Path
from typing import Any

from longdoc.core.batching import pack
from longdoc.core.errors import ConfigError, IndexUnavailable
from longdoc.core.models import Chunk

PREVIEW_CHARS = 200


def _check_rows(chunks: Sequence[Chunk], vectors: Sequence[Sequence[float]], dimension: int) -> None:
    """Raise ``ValueError`` unless there is one ``dimension``-long vector per chunk."""
    if len(chunks) != len(vectors):
        raise ValueError(f"{len(chunks)} chunks but {len(vectors)} vectors")
    for chunk, vector in zip(chunks, vectors, strict=True):
        if len(vector) != dimension:
            raise ValueError(
                f"vector for {chunk.chunk_id} has dimension {len(vector)}, index expects {dimension}"
            )


def _check_top_k(top_k: int) -> None:
    if top_k < 1:
        raise ValueError(f"top_k must be at least 1, got {top_k}")


def _sql_string(value: str) -> str:
    """Quote ``value`` as an SQL string literal (DataFusion syntax: ``'`` doubled)."""
    return "'" + value.replace("'", "''") + "'"


class LanceDBIndex:
    """Embedded on-disk vector index (local mode), one LanceDB table under ``path``.

    Columns: ``id`` (chunk_id), ``vector`` (float32 fixed-size list of ``dimension``),
    ``doc_id``, ``doc_version``, ``ordinal`` (int32), ``page_start`` / ``page_end``
    (int32, nullable), ``section_id`` (nullable) and ``preview`` (first 200 characters
    of the chunk text). The connection and table are opened (or created) on first use.
    Opening a table whose vectors have another length raises
    :class:`longdoc.core.errors.ConfigError`. Searches are exact (no ANN index is built) with
    the cosine metric. Calls on one instance are serialised by a lock, so it may be
    shared with a worker thread. Several processes may share the table: the connection
    uses ``read_consistency_interval=0`` (LanceDB: every operation first checks for a newer
    table version, https://lancedb.github.io/lancedb/guides/tables/#consistency), so an
    upsert keyed by ``chunk_id`` (``merge_insert``) never inserts an id another process
    already wrote.
    """

    def __init__(self, path: Path, dimension: int, table: str = "chunks"):
        """Remember where the table lives; nothing is opened until the first call."""
        self.path = Path(path)
        self.dimension = dimension
        self.table_name = table
        self._table: Any = None
        self._lock = threading.RLock()

    def _schema(self) -> Any:
        import pyarrow as pa

        return pa.schema(
            [
                pa.field("id", pa.string(), nullable=False),
                pa.field("vector", pa.list_(pa.float32(), self.dimension), nullable=False),
                pa.field("doc_id", pa.string(), nullable=False),
                pa.field("doc_version", pa.string(), nullable=False),
                pa.field("ordinal", pa.int32(), nullable=False),
                pa.field("page_start", pa.int32(), nullable=True),
                pa.field("page_end", pa.int32(), nullable=True),
                pa.field("section_id", pa.string(), nullable=True),
                pa.field("preview", pa.string(), nullable=False),
            ]
        )

    def _open(self) -> Any:
        """Return the table, opening or creating it. Raises ConfigError on a dimension mismatch."""
        with self._lock:
            if self._table is None:
                import lancedb

                self.path.mkdir(parents=True, exist_ok=True)
                # Every read and merge checks the table's latest version: with the default (never),
                # a handle opened before another process wrote merges against its stale snapshot
                # and inserts the same chunk ids again (three concurrent ingests: 3 rows per chunk).
                db = lancedb.connect(str(self.path), read_consistency_interval=timedelta(0))
                try:
                    table = db.open_table(self.table_name)
                except ValueError:  # not found
                    table = None
                if table is not None:
                    stored = table.schema.field("vector").type.list_size
                    if stored != self.dimension:
                        raise ConfigError(
                            f"vector table {self.table_name!r} in {self.path} holds "
                            f"{stored}-dimensional vectors but the embedder produces "
                            f"{self.dimension}; use another LONGDOC_HOME or re-index"
                        )
                else:
                    table = db.create_table(self.table_name, schema=self._schema(), exist_ok=True)
                self._table = table
            return self._table

    def check_dimension(self) -> None:
        """Open (or create) the table now; raise ConfigError if its vectors have another length."""
        self._open()

    def upsert(self, chunks: Sequence[Chunk], vectors: Sequence[Sequence[float]]) -> int:
        """Insert or replace one row per chunk, keyed by ``chunk_id`` (re-upserting never duplicates).

        ``vectors[i]`` belongs to ``chunks[i]`` and has length ``dimension``. Returns the
        number of chunks upserted. Raises ``ValueError`` on a count or length mismatch and
        ConfigError when the stored table has another dimension (nothing is written).
        """
        _check_rows(chunks, vectors, self.dimension)
        if not chunks:
            return 0
        import pyarrow as pa

        schema = self._schema()
        data = pa.Table.from_pylist(
            [
                {
                    "id": chunk.chunk_id,
                    "vector": [float(x) for x in vector],
                    "doc_id": chunk.doc_id,
                    "doc_version": chunk.doc_version,
                    "ordinal": chunk.ordinal,
                    "page_start": chunk.page_start,
                    "page_end": chunk.page_end,
                    "section_id": chunk.section_id,
                    "preview": chunk.text[:PREVIEW_CHARS],
                }
                for chunk, vector in zip(chunks, vectors, strict=True)
            ],
            schema=schema,
        )
        with self._lock:
            table = self._open()
            (
                table.merge_insert("id")
                .when_matched_update_all()
                .when_not_matched_insert_all()
                .execute(data)
            )
        return len(chunks)

    def query(
        self, vector: Sequence[float], doc_id: str, doc_version: str, top_k: int
    ) -> list[tuple[str, float]]:
        """Return up to ``top_k`` ``(chunk_id, cosine similarity)`` pairs of one document version.

        Only rows with this ``doc_id`` and ``doc_version`` are searched (filter applied
        before the search). Best first; ties broken by chunk_id. Raises ``ValueError``
        for a wrong vector length or ``top_k < 1``.
        """
        _check_top_k(top_k)
        if len(vector) != self.dimension:
            raise ValueError(f"query vector has dimension {len(vector)}, index expects {self.dimension}")
        where = f"doc_id = {_sql_string(doc_id)} AND doc_version = {_sql_string(doc_version)}"
        with self._lock:
            table = self._open()
            rows = (
                table.search([float(x) for x in vector], vector_column_name="vector")
                .distance_type("cosine")
                .where(where, prefilter=True)
                .limit(top_k)
                .select(["id", "_distance"])
                .to_arrow()
                .to_pylist()
            )
        hits = [(row["id"], 1.0 - float(row["_distance"])) for row in rows]
        hits.sort(key=lambda hit: (-hit[1], hit[0]))
        return hits

    def delete_document(self, doc_id: str, doc_version: str) -> None:
        """Delete every row of one document version; deleting nothing is not an error."""
        where = f"doc_id = {_sql_string(doc_id)} AND doc_version = {_sql_string(doc_version)}"
        with self._lock:
            self._open().delete(where)

    def count(self) -> int:
        """Return the number of rows in the table (all documents)."""
        with self._lock:
            return int(self._open().count_rows())


# --- Pinecone (AWS mode) -----------------------------------------------------------------

# Documented operation limits (https://docs.pinecone.io/reference/api/database-limits/operation-limits
# and https://docs.pinecone.io/docs/limits): an upsert carries at most 1,000 records and
# at most 2 MB; metadata is at most 40 KB per vector; fetch/delete take at most 1,000 ids.
PINECONE_MAX_UPSERT_RECORDS = 1000
PINECONE_MAX_UPSERT_BYTES = 2 * 1024 * 1024
PINECONE_MAX_METADATA_BYTES = 40 * 1024
PINECONE_MAX_DELETE_IDS = 1000
# We fill at most 75% of the 2 MB request limit: our size estimate is the JSON encoding,
# and the SDK's own encoding of floats may be slightly longer.
PINECONE_UPSERT_BYTE_BUDGET = int(PINECONE_MAX_UPSERT_BYTES * 0.75)


class PineconeIndex:
    """Pinecone serverless index (AWS mode), one namespace, via the ``pinecone`` SDK.

    Vector id = ``chunk_id`` (``{doc_id}:{doc_version[:8]}:{ordinal:04d}``), so
    ``list(prefix="{doc_id}:{doc_version[:8]}:")`` finds one version's vectors; metadata
    is described in :meth:`metadata`. Scores are the index metric's scores, so the index
    must use ``cosine`` (see :meth:`check_dimension`).

    Limits (Pinecone docs, operation limits): upserts are split into requests of at most
    1,000 records and, by estimated JSON size, at most 75% of the 2 MB request limit;
    metadata is kept under 40 KB per vector; deletes send at most 1,000 ids per request.
    Pinecone is eventually consistent: upserted vectors may take a moment to be visible
    to queries. The SDK (v10) retries 408/429/5xx answers and connection errors itself
    (3 retries, decorrelated jitter); after that its errors (``pinecone.errors``)
    propagate unchanged. ``host`` may be ``https://...`` or, for a loopback test fake,
    ``http://127.0.0.1:port``; ``timeout`` is seconds per request.
    """

    def __init__(self, api_key: str, host: str, namespace: str, dimension: int, *, timeout: float = 30.0):
        """Create the SDK client for the index at ``host`` (no network call)."""
        from pinecone import Pinecone

        self.namespace = namespace
        self.dimension = dimension
        self._index: Any = Pinecone(api_key=api_key).Index(host=host)
        self._timeout = timeout

    def check_dimension(self) -> None:
        """Compare the live index with this adapter (one ``describe_index_stats`` call).

        Raises :class:`longdoc.core.errors.ConfigError` when the index's dimension differs from
        ``dimension`` (naming both) or when it reports a metric other than cosine.
        """
        stats = self._index.describe_index_stats()
        stored = getattr(stats, "dimension", None)
        if stored != self.dimension:
            raise ConfigError(
                f"Pinecone index holds {stored}-dimensional vectors but the embedder "
                f"produces {self.dimension}"
            )
        metric = getattr(stats, "metric", None)
        if metric is not None and metric != "cosine":
            raise ConfigError(f"Pinecone index uses metric {metric!r}; longdoc needs 'cosine'")

    @staticmethod
    def metadata(chunk: Chunk) -> dict[str, Any]:
        """Return the metadata stored with ``chunk``'s vector, always under 40 KB.

        Fields: ``doc_id``, ``doc_version``, ``ordinal``, ``source``, ``page_start``,
        ``page_end``, ``section_id``, ``heading_path`` (list of strings), ``preview`` (first
        200 characters of the chunk text), and ``ocr_low_confidence`` (True) on a chunk from a
        low-confidence OCR page (absent otherwise, issue 27). ``None`` values are omitted (Pinecone rejects
        null metadata). The chunk text itself is never stored: the chunks blob is its source
        of truth. If the JSON encoding would exceed :data:`PINECONE_MAX_METADATA_BYTES`,
        heading entries are cut to 200 characters, then the heading path and preview are
        dropped, so an upsert never fails on metadata size.
        """
        values: dict[str, Any] = {
            "doc_id": chunk.doc_id,
            "doc_version": chunk.doc_version,
            "ordinal": chunk.ordinal,
            "source": chunk.source,
            "page_start": chunk.page_start,
            "page_end": chunk.page_end,
            "section_id": chunk.section_id,
            "heading_path": list(chunk.heading_path) or None,
            "preview": chunk.text[:PREVIEW_CHARS],
            "ocr_low_confidence": True if chunk.ocr_low_confidence else None,
        }
        meta = {key: value for key, value in values.items() if value is not None}

        def size(m: dict[str, Any]) -> int:
            return len(json.dumps(m, ensure_ascii=False).encode("utf-8"))

        if size(meta) > PINECONE_MAX_METADATA_BYTES and "heading_path" in meta:
            meta["heading_path"] = [h[:PREVIEW_CHARS] for h in meta["heading_path"]][-8:]
        for key in ("heading_path", "preview", "source", "section_id"):
            if size(meta) <= PINECONE_MAX_METADATA_BYTES:
                break
            meta.pop(key, None)
        return meta

    def records(
        self, chunks: Sequence[Chunk], vectors: Sequence[Sequence[float]]
    ) -> list[list[dict[str, Any]]]:
        """Build upsert records and split them into request-sized batches (see class limits).

        Raises ``ValueError`` on a count/length mismatch.
        """
        _check_rows(chunks, vectors, self.dimension)
        records = [{"id": chunk.chunk_id, "values": [float(x) for x in vector], "metadata": self.metadata(chunk)}
                   for chunk, vector in zip(chunks, vectors, strict=True)]
        return list(pack(records, lambda r: len(json.dumps(r, ensure_ascii=False).encode("utf-8")) + 1,
                         max_items=PINECONE_MAX_UPSERT_RECORDS, max_cost=PINECONE_UPSERT_BYTE_BUDGET))

    def upsert(self, chunks: Sequence[Chunk], vectors: Sequence[Sequence[float]]) -> int:
        """Insert or overwrite one vector per chunk (id = ``chunk_id``), in request-sized batches.

        Returns the number of chunks sent. Validation (see :meth:`records`) happens before
        any request, so a bad input writes nothing.
        """
        batches = self.records(chunks, vectors)
        for batch in batches:
            self._index.upsert(vectors=batch, namespace=self.namespace)
        return sum(len(batch) for batch in batches)

    def query(
        self, vector: Sequence[float], doc_id: str, doc_version: str, top_k: int
    ) -> list[tuple[str, float]]:
        """Return up to ``top_k`` ``(chunk_id, score)`` pairs of one document version, best first.

        Filters on metadata ``doc_id`` and ``doc_version`` (``$eq``); metadata and values
        are not returned. Raises ``ValueError`` for a wrong vector length or ``top_k < 1``;
        :class:`~longdoc.core.errors.IndexUnavailable` for a 429/5xx or a failed connection left
        after the SDK's retries (the bulk state machine retries it, issue 26).
        """
        _check_top_k(top_k)
        if len(vector) != self.dimension:
            raise ValueError(f"query vector has dimension {len(vector)}, index expects {self.dimension}")
        try:
            response = self._index.query(
                vector=[float(x) for x in vector],
                top_k=top_k,
                namespace=self.namespace,
                filter={"doc_id": {"$eq": doc_id}, "doc_version": {"$eq": doc_version}},
                include_metadata=False,
                include_values=False,
            )
        except Exception as exc:
            if _transient(exc):
                raise IndexUnavailable(f"Pinecone query of {doc_id}@{doc_version} failed after the SDK's retries: "
                                       f"{type(exc).__name__}: {exc}") from exc
            raise
        hits = [(match.id, float(match.score)) for match in response.matches]
        hits.sort(key=lambda hit: (-hit[1], hit[0]))
        return hits[:top_k]

    def delete_document(self, doc_id: str, doc_version: str) -> None:
        """Delete every vector of one document version.

        Lists ids with the chunk-id prefix ``"{doc_id}:{doc_version[:8]}:"`` (every page),
        then deletes them in requests of at most 1,000 ids.
        """
        prefix = f"{doc_id}:{doc_version[:8]}:"
        ids = self.list_ids(prefix)
        for start in range(0, len(ids), PINECONE_MAX_DELETE_IDS):
            self._index.delete(ids=ids[start : start + PINECONE_MAX_DELETE_IDS], namespace=self.namespace)

    def list_ids(self, prefix: str) -> list[str]:
        """Return every vector id in the namespace starting with ``prefix`` (all pages)."""
        ids: list[str] = []
        for page in self._index.list(prefix=prefix, namespace=self.namespace):
            # SDK v10 yields ListResponse pages (``.vectors`` of items with ``.id``); older SDKs lists of str.
            items = getattr(page, "vectors", page)
            ids.extend(item if isinstance(item, str) else item.id for item in items)
        return ids


def _transient(exc: BaseException) -> bool:
    """Whether a Pinecone SDK error is worth retrying later: HTTP 429 or 5xx (``status_code`` on the
    v10 SDK's ``pinecone.errors.ApiError``, ``status`` on the older ``PineconeApiException``), or a
    connection that failed or timed out (the SDK's ``PineconeConnectionError``/``PineconeTimeoutError``
    when it has them, urllib3's or the standard library's otherwise)."""
    if type(exc).__name__ in ("PineconeConnectionError", "PineconeTimeoutError", "ConnectionError", "TimeoutError"):
        return True
    status = getattr(exc, "status_code", None) or getattr(exc, "status", None)
    if isinstance(status, int):
        return status == 429 or status >= 500
    import urllib3

    return isinstance(exc, urllib3.exceptions.HTTPError | ConnectionError | TimeoutError)
