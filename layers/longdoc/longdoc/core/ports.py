"""Small typed interfaces between domain code and the outside world.

Each port has an AWS adapter and a local stand-in in :mod:`longdoc.adapters`; the
contract tests in ``tests/functional/test_*_contracts.py`` run against every adapter.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

from longdoc.core.records import Checkpoint, Extraction, RunLease, RunRecord
from longdoc.core.models import Chunk, DocumentRecord
from longdoc.core.messages import ModelRequest, ModelResponse


@runtime_checkable
class BlobStore(Protocol):
    """Byte objects by key (S3 bucket, or a local folder). Keys use ``/`` separators."""

    def get(self, key: str) -> bytes:
        """Return the object's bytes. Raises :class:`longdoc.core.errors.NotFound` if absent."""
        ...

    def put(self, key: str, data: bytes) -> None:
        """Store ``data`` under ``key`` atomically (readers see old or new, never half)."""
        ...

    def exists(self, key: str) -> bool:
        """Return whether ``key`` exists."""
        ...

    def delete(self, key: str) -> None:
        """Delete ``key``; deleting a missing key is not an error."""
        ...

    def metadata(self, key: str) -> dict[str, str]:
        """Return the object's user metadata (lower-case names, string values); ``{}`` when none.

        On S3 this is the ``x-amz-meta-*`` metadata set at upload; a folder has none.
        Raises :class:`longdoc.core.errors.NotFound` if the object is absent.
        """
        ...


@runtime_checkable
class StateStore(Protocol):
    """Document registry, runs, checkpoints and extractions (DynamoDB, or SQLite locally)."""

    def put_document(self, record: DocumentRecord) -> None:
        """Create or replace the registry entry for ``(doc_id, doc_version)`` and mark it latest."""
        ...

    def get_document(self, doc_id: str, doc_version: str | None = None) -> DocumentRecord | None:
        """Return one version (the latest when ``doc_version`` is None) or None."""
        ...

    def list_document_versions(self, doc_id: str) -> list[DocumentRecord]:
        """Return every registered version of a document (any status), oldest ``updated_at`` first."""
        ...

    def put_run(self, run: RunRecord) -> None:
        """Create or replace a run record."""
        ...

    def get_run(self, run_id: str) -> RunRecord | None:
        """Return the run or None."""
        ...

    def load_checkpoint(self, run_id: str) -> Checkpoint | None:
        """Return the latest checkpoint of a run or None.

        Raises :class:`longdoc.core.errors.CheckpointSchemaError` for an unknown schema version.
        """
        ...

    def save_checkpoint(self, checkpoint: Checkpoint) -> None:
        """Save ``checkpoint`` if the stored version is ``checkpoint.version - 1`` (or none at 0...1).

        Raises :class:`longdoc.core.errors.CheckpointConflict` when another writer won.
        """
        ...

    def put_extraction(self, run_id: str, extraction: Extraction) -> None:
        """Store an extraction keyed by ``(run_id, clause_type)``; repeating it is a no-op overwrite."""
        ...

    def list_extractions(self, run_id: str) -> list[Extraction]:
        """Return a run's extractions in insertion order of their clause types."""
        ...

    # The run lease: at most one live driver of a run's executions (see :class:`RunLease`).

    def acquire_run_lease(self, run_id: str, owner: str, ttl_seconds: float) -> bool:
        """Take the run's lease for ``owner`` until now + ``ttl_seconds``, in one conditional write.

        Succeeds (True) when no lease is stored, the stored one has expired, or ``owner``
        already holds it; False when another owner holds a live lease (nothing is written).
        """
        ...

    def renew_run_lease(self, run_id: str, owner: str, ttl_seconds: float) -> bool:
        """Extend ``owner``'s lease to now + ``ttl_seconds``; False when ``owner`` does not hold it any more."""
        ...

    def release_run_lease(self, run_id: str, owner: str) -> None:
        """Give the lease up (only when ``owner`` holds it; otherwise a no-op)."""
        ...

    def get_run_lease(self, run_id: str) -> RunLease | None:
        """Return the stored lease (live or expired) or None."""
        ...


@runtime_checkable
class Embedder(Protocol):
    """Text to dense vectors. ``dimension`` is the vector length; vectors are L2-normalised."""

    name: str
    dimension: int

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        """Embed chunk texts for indexing (``input_type="document"``)."""
        ...

    def embed_query(self, text: str) -> list[float]:
        """Embed a retrieval query (``input_type="query"``)."""
        ...


@runtime_checkable
class VectorIndex(Protocol):
    """Vectors with chunk metadata, filtered by document (Pinecone, or LanceDB locally)."""

    def upsert(self, chunks: Sequence[Chunk], vectors: Sequence[Sequence[float]]) -> int:
        """Insert or replace one vector per chunk (id = ``chunk_id``); returns the count upserted."""
        ...

    def query(
        self, vector: Sequence[float], doc_id: str, doc_version: str, top_k: int
    ) -> list[tuple[str, float]]:
        """Return up to ``top_k`` ``(chunk_id, score)`` pairs of that document version, best first."""
        ...

    def delete_document(self, doc_id: str, doc_version: str) -> None:
        """Remove every vector of one document version."""
        ...


@runtime_checkable
class Model(Protocol):
    """One Messages-API-shaped call. ``name`` is recorded on every result it produces."""

    name: str

    def create(self, request: ModelRequest) -> ModelResponse:
        """Run one model call.

        Raises :class:`longdoc.core.errors.ModelThrottled`, :class:`longdoc.core.errors.ModelUnavailable`
        or :class:`longdoc.core.errors.ModelRequestError` after the client's own retries.
        """
        ...


@runtime_checkable
class ExecutionStarter(Protocol):
    """Starts executions of the extraction state machine (Step Functions, or the local engine)."""

    def start_execution(self, name: str, execution_input: dict[str, Any]) -> str:
        """Start an execution called ``name`` with ``execution_input`` (JSON-serialisable); return its ARN.

        ``name`` is unique per state machine, so starting the same name again cannot start a
        second, different execution (Step Functions answers the same one for the same
        input, or ``ExecutionAlreadyExists``). Errors of the service propagate unchanged.
        """
        ...
