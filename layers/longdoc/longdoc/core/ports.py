"""Small typed interfaces between domain code and the outside world.

Each port has an AWS adapter and a local stand-in in :mod:`longdoc.adapters`; the
contract tests in ``tests/functional/test_*_contracts.py`` run against every adapter.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from longdoc.core.records import Checkpoint, Extraction, RunLease, RunRecord
from longdoc.core.models import Chunk, DocumentRecord
from longdoc.core.messages import ModelRequest, ModelResponse
from longdoc.core.reviews import DecisionStore  # noqa: F401 - the review port, defined beside its shapes
from longdoc.core.store_ports import RunsAndCollections


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
class StateStore(RunsAndCollections, Protocol):
    """Document registry, runs, checkpoints and extractions (DynamoDB, or SQLite locally); many
    runs at once and the collection index (:class:`~longdoc.core.store_ports.RunsAndCollections`)."""

    def put_document(self, record: DocumentRecord) -> None:
        """Create or replace the registry entry for ``(doc_id, doc_version)`` and mark it latest."""
        ...

    def replace_document(self, record: DocumentRecord, expected: DocumentRecord | None) -> DocumentRecord | None:
        """Write ``record`` as :meth:`put_document` does, only if the stored entry is still ``expected``.

        One conditional write: it succeeds when the stored entry of ``(doc_id, doc_version)``
        has ``expected``'s ``status`` and ``revision`` (``expected`` None: no entry stored).
        Returns the record as written, its ``revision`` one above ``expected``'s (1 for a new
        entry), or None when the stored entry is another (nothing written; read it to see
        which). Of concurrent callers expecting the same entry exactly one succeeds.
        """
        ...

    def get_document(self, doc_id: str, doc_version: str | None = None) -> DocumentRecord | None:
        """Return one version (the latest when ``doc_version`` is None) or None."""
        ...

    def list_document_versions(self, doc_id: str) -> list[DocumentRecord]:
        """Return every registered version of a document (any status), oldest ``updated_at`` first."""
        ...

    def claim_version(self, doc_id: str, doc_version: str, owner: str, lease_seconds: float) -> bool:
        """Take or renew the ingest claim of one document version for ``owner``; True when ``owner`` holds it now.

        One conditional write: it succeeds when no claim is held, when the holder's lease
        has ended, or when ``owner`` already holds it (a renewal); the lease then ends
        ``lease_seconds`` from now (a lease of 0 or less is over at once). Of concurrent
        callers with different owners exactly one gets True while the lease runs. The
        SQLite store (one machine) also takes over a claim whose holder process is gone
        (:func:`longdoc.ingest.lease.claim_holder_gone`); DynamoDB waits for the lease.
        """
        ...

    def release_version(self, doc_id: str, doc_version: str, owner: str) -> None:
        """Drop ``owner``'s claim on the version; a claim held by another owner (or none) is left alone."""
        ...

    def version_claim_owner(self, doc_id: str, doc_version: str) -> str | None:
        """The owner of the version's ingest claim while its lease runs (None: no claim, or its lease ended)."""
        ...

    def put_run(self, run: RunRecord, fence: int | None = None) -> None:
        """Create or replace a run record.

        ``fence``: a run lease's generation (:attr:`~longdoc.core.records.RunLease.generation`, from
        :func:`longdoc.core.run_fence.run_fence`). When given, the write happens only while the
        run's stored lease still has that generation, checked in the same conditional write
        (DynamoDB: a ``TransactWriteItems`` with a ``ConditionCheck`` on the ``LEASE`` item;
        SQLite: one ``BEGIN IMMEDIATE`` transaction); otherwise nothing is written and
        :class:`longdoc.core.errors.RunLeaseLost` names the holder now. None: unfenced (no lease
        exists, e.g. on AWS where Step Functions drives the run).
        """
        ...

    def get_run(self, run_id: str) -> RunRecord | None:
        """Return the run or None."""
        ...

    def load_checkpoint(self, run_id: str) -> Checkpoint | None:
        """Return the latest checkpoint of a run or None.

        Raises :class:`longdoc.core.errors.CheckpointSchemaError` for an unknown schema version.
        """
        ...

    def save_checkpoint(self, checkpoint: Checkpoint, fence: int | None = None) -> None:
        """Save ``checkpoint`` if the stored version is ``checkpoint.version - 1`` (or none at 0...1).

        Raises :class:`longdoc.core.errors.CheckpointConflict` when another writer won.

        ``fence``: a run lease's generation (:attr:`~longdoc.core.records.RunLease.generation`, from
        :func:`longdoc.core.run_fence.run_fence`). When given, the write happens only while the
        run's stored lease still has that generation, checked in the same conditional write
        (DynamoDB: a ``TransactWriteItems`` with a ``ConditionCheck`` on the ``LEASE`` item;
        SQLite: one ``BEGIN IMMEDIATE`` transaction); otherwise nothing is written and
        :class:`longdoc.core.errors.RunLeaseLost` names the holder now. None: unfenced (no lease
        exists, e.g. on AWS where Step Functions drives the run).
        """
        ...

    def put_extraction(self, run_id: str, extraction: Extraction, fence: int | None = None) -> None:
        """Store an extraction keyed by ``(run_id, clause_type)``; repeating it is a no-op overwrite.

        ``fence``: a run lease's generation (:attr:`~longdoc.core.records.RunLease.generation`, from
        :func:`longdoc.core.run_fence.run_fence`). When given, the write happens only while the
        run's stored lease still has that generation, checked in the same conditional write
        (DynamoDB: a ``TransactWriteItems`` with a ``ConditionCheck`` on the ``LEASE`` item;
        SQLite: one ``BEGIN IMMEDIATE`` transaction); otherwise nothing is written and
        :class:`longdoc.core.errors.RunLeaseLost` names the holder now. None: unfenced (no lease
        exists, e.g. on AWS where Step Functions drives the run).
        """
        ...

    def list_extractions(self, run_id: str) -> list[Extraction]:
        """Return a run's extractions in insertion order of their clause types."""
        ...

    # The run lease: at most one live driver of a run's executions (see :class:`RunLease`).

    def acquire_run_lease(self, run_id: str, owner: str, ttl_seconds: float) -> bool:
        """Take the run's lease for ``owner`` until now + ``ttl_seconds``, in one conditional write.

        Succeeds (True) when no lease is stored, the stored one has expired (or was released),
        or ``owner`` already holds it; False when another owner holds a live lease (nothing is
        written). A new owner gets the stored generation + 1 (1 for the first lease of a run);
        ``owner`` taking its own lease again keeps it. The SQLite store (one machine) also takes
        over a live lease whose holder process is gone (:func:`longdoc.ingest.lease.claim_holder_gone`:
        ``runs resume`` right after ``kill -9``); DynamoDB waits for the lease to expire.
        """
        ...

    def renew_run_lease(self, run_id: str, owner: str, ttl_seconds: float) -> bool:
        """Extend ``owner``'s lease to now + ``ttl_seconds``; False when ``owner`` does not hold it any more."""
        ...

    def release_run_lease(self, run_id: str, owner: str) -> None:
        """Give the lease up (only when ``owner`` holds it; otherwise a no-op): it ends now
        (``expires_at`` 0) and keeps its generation, so the next owner's is higher."""
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
class Reranker(Protocol):
    """Reorders retrieved chunks for a query (e.g. Voyage rerank on AWS); must not add chunks.

    Used by extraction's retrieval and by triage's clause ranking (which sends each clause as a
    chunk carrying the clause's text); :class:`longdoc.adapters.voyage_rerank.VoyageReranker` is the AWS one.
    """

    def rerank(self, query: str, chunks: Sequence[Chunk], top_k: int) -> list[Chunk]:
        """Return at most ``top_k`` of ``chunks``, best first."""
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


# --- Streaming (summaries): a Model that can also stream its text as it is generated ---


@runtime_checkable
class TokenCounter(Protocol):
    """How many input tokens a text takes for one model, for sizing token budgets (context budget,
    triage bands, summary groups).

    ``count_text(text) -> int`` (tokens, >= 0). Implementations: the calibrated offline estimate
    (:class:`longdoc.core.tokens.EstimatedTokens`; with no model, exactly
    :func:`~longdoc.core.tokens.estimate_tokens`, so offline runs do not change) and, with a key,
    the Claude token-counting endpoint cached by text hash
    (:class:`longdoc.adapters.claude_count.ClaudeTokenCounter`). Never raises for a model or network
    failure: an implementation falls back to the estimate.
    """

    def count_text(self, text: str) -> int:
        """Input tokens of ``text`` (tokens)."""
        ...


@runtime_checkable
class StreamingModel(Model, Protocol):
    """A :class:`Model` that can stream: the final synthesis of a summary prints text as it arrives."""

    def stream(self, request: ModelRequest, on_text: Callable[[str], None]) -> ModelResponse:
        """Run one call streamed (SSE on the Messages API), calling ``on_text`` with each text delta in order.

        Returns the whole reply as :meth:`Model.create` would (content, stop reason, usage).
        Raises the same errors as :meth:`Model.create`; ``on_text`` may have been called
        with part of the text before an error. An implementation that retries a failed attempt
        (an error inside the stream) calls ``on_text.discard(reason)`` when ``on_text`` has that
        method (:class:`TextSink`) before the next attempt's text and before raising, for every
        attempt that had sent text: that text is not part of the answer.
        """
        ...


@runtime_checkable
class TextSink(Protocol):
    """An ``on_text`` for :meth:`StreamingModel.stream` that can also be told to void what it got.

    ``sink(text)`` gets each text delta; ``sink.discard(reason)`` says the text since the last
    discard (of an attempt that failed, ``reason`` its one-line error) is void: a printer says so
    and the next text is the answer from its start (issue 28).
    """

    def __call__(self, text: str) -> None:
        """One text delta, in order."""
        ...

    def discard(self, reason: str) -> None:
        """The text received since the last discard is void (``reason``: why the attempt failed)."""
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


@dataclass(frozen=True)
class OcrWord:
    """One word an OCR engine read: its ``text``, ``confidence`` (0.0-1.0), ``line`` (0-based index of
    its line on the page, in reading order) and box as fractions of the page image (0.0-1.0, origin
    top left: ``left``, ``top``, ``width``, ``height``), the convention Textract uses."""

    text: str
    confidence: float
    line: int
    left: float
    top: float
    width: float
    height: float


@dataclass(frozen=True)
class OcrPage:
    """What an OCR engine read on one page image: its words in reading order, the engine's ``engine``
    name, and the ``cost_usd`` of the call (USD; 0.0 for a local engine). ``rotation`` is the clockwise
    turn (0, 90, 180 or 270 degrees) the rendered page was given before it was read (issue 27); the word
    boxes are always fractions of the *unturned* rendered page (:mod:`longdoc.ingest.parse.orient`)."""

    words: tuple[OcrWord, ...]
    engine: str
    cost_usd: float = 0.0
    rotation: int = 0

    @property
    def text(self) -> str:
        """The words, one line of the page per text line (words joined by a space, lines by ``"\\n"``)."""
        lines: dict[int, list[str]] = {}
        for word in self.words:
            lines.setdefault(word.line, []).append(word.text)
        return "\n".join(" ".join(words) for _, words in sorted(lines.items()))

    @property
    def mean_confidence(self) -> float | None:
        """The mean word confidence (0.0-1.0), or None when no word was read."""
        return sum(w.confidence for w in self.words) / len(self.words) if self.words else None


@runtime_checkable
class OcrEngine(Protocol):
    """Reads the words of a page image (Tesseract locally, Amazon Textract on AWS).

    ``name`` is recorded on every OCR result; ``cost_per_page_usd`` is what one page costs (USD).
    """

    name: str
    cost_per_page_usd: float

    def read_page(self, image: bytes) -> OcrPage:
        """Read one page image (PNG or JPEG bytes, rendered at the caller's resolution).

        Raises :class:`longdoc.core.errors.OcrPageError` when this image cannot be read (corrupt,
        unsupported, too large) and :class:`longdoc.core.errors.OcrUnavailable` when the engine
        itself cannot run (not installed, service down or throttled after retries).
        """
        ...


@dataclass(frozen=True)
class OrientationGuess:
    """Which way up a page image is: ``rotation`` is the clockwise turn (0, 90, 180 or 270 degrees)
    that makes its text upright, ``confidence`` the detector's own score (Tesseract OSD's
    ``Orientation confidence``: unbounded, higher is surer; measured 8.8-9.3 on a page of three
    printed lines)."""

    rotation: int
    confidence: float


@runtime_checkable
class OrientationDetector(Protocol):
    """Guesses a page image's orientation before OCR (Tesseract's OSD, ``--psm 0``)."""

    def detect_orientation(self, image: bytes) -> OrientationGuess | None:
        """The orientation of one page image (PNG bytes), or None when the detector cannot tell
        (too few characters, a blank page). Raises :class:`longdoc.core.errors.OcrUnavailable`
        when the detector itself cannot run."""
        ...

