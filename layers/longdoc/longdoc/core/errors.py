"""Named errors: every error class of the product, grouped by the stage that raises it.

Their class names double as Step Functions error names (``errorType``): a Lambda function's
error payload names the exception's class, and the ``Retry``/``Catch`` rules of
``statemachine/*.asl.json`` match on those names (tests/infrastructure/test_error_names.py
checks that every name they use is a class here). The API answers a :class:`LongdocError` with a 4xx
(``functions/api/app.py``: 429, 422, 404 or 400), an outage (:data:`OUTAGES`) with 503 and a
configuration error with 500; the CLI prints it as one line on
stderr with exit status 1 (``longdoc.cli.main``). A class that also subclasses ``ValueError``
keeps the base it always had, so any ``except ValueError`` still sees it.

Adapters translate their SDK's errors into these classes (the Anthropic SDK's through
:mod:`longdoc.adapters.anthropic_errors`, for Messages and Message Batches alike), so no SDK
class name reaches a state machine. Two private control-flow exceptions stay inside the one
adapter that raises and catches them, and never leave it: ``_Transient`` and ``_Unauthorized``
of :mod:`longdoc.adapters.voyage_rest` (they become :class:`EmbeddingUnavailable`,
:class:`RerankUnavailable` or a request error before returning).

Every class here subclasses :class:`LongdocError` but one: :class:`ExecutionAlreadyExists`, the
local stand-in of an AWS error, which must be answered as AWS's own is.

This module imports nothing of longdoc: every stage can import it.
"""

from __future__ import annotations

import json

from longdoc.core.text import one_line


class LongdocError(Exception):
    """Base class for every error longdoc raises on purpose."""


# --- Shared: settings, lookups, checkpoints -------------------------------------------------


class NotFound(LongdocError):
    """A document, run or checkpoint does not exist."""


class ConfigError(LongdocError):
    """Settings are missing or contradictory (e.g. AWS mode without a table name)."""


class CheckpointConflict(LongdocError):
    """Another invocation saved the checkpoint first (conditional write lost)."""


class CheckpointSchemaError(LongdocError):
    """A checkpoint was written by an incompatible CASE_FACTS schema version."""


class RunLeaseLost(LongdocError):
    """A write fenced with a run lease's generation found another generation stored: another
    process took the run over (its lease had expired). Nothing was written; the process that
    raised it must stop working on the run. The message names the run, this writer's generation
    and the holder now (``docs/operations.md``, "How fencing protects a run")."""


class StoreBatchIncomplete(LongdocError):
    """A batched store write or read (DynamoDB ``BatchWriteItem`` / ``BatchGetItem``) still had
    unprocessed items after its retries with backoff (the table is throttled); nothing is
    committed by the caller, so a retry of the step writes the same items again."""


# --- Model, embedding and rerank APIs (raised by the adapters) ------------------------------


class ModelThrottled(LongdocError):
    """The model API kept answering 429/529 after the SDK's own retries; retry later."""


class ModelUnavailable(LongdocError):
    """The model API kept answering 5xx or dropped connections after the SDK's retries."""


class ModelRequestError(LongdocError):
    """The model API rejected the request (4xx other than 429); retrying will not help."""


class ModelRejectsRequest(ModelRequestError, ValueError):
    """A request the capability table says the model answers with HTTP 400 (a forced
    ``tool_choice``, an assistant prefill); refused before it is sent. The message names the
    model, the rule and the page it comes from (:mod:`longdoc.core.request_rules`)."""


class ModelRefused(LongdocError):
    """The model stopped with ``stop_reason == "refusal"``; the run fails with it recorded."""


class ModelAnswerMissing(LongdocError):
    """The model answered without the tool call the job asks for, and again after one re-ask.

    Summaries (``record_summary``) and triage (``record_triage``) ask for their tool with
    ``tool_choice: auto`` (current models reject a forced choice), so an answer without the call
    is possible; the harness re-asks once (:func:`longdoc.core.tool_answer.ask_for_tool`) and
    then fails with this error instead of returning an empty result. Not retried by the state
    machines (the same prompt would most likely get the same answer): the run fails, recorded.
    """


class ConversationMalformed(LongdocError):
    """A conversation the harness was about to send breaks a rule every model enforces.

    A bug in the harness, not a model error: roles that do not alternate, a ``tool_use`` without
    its ``tool_result`` first in the next user turn, a ``tool_result`` without its ``tool_use``,
    a conversation that does not start or end with a user turn
    (:func:`longdoc.core.conversation.conversation_problems` lists them). Raised before the
    request is sent, since the API would answer 400; never retried.
    """


class EmbeddingUnavailable(LongdocError):
    """The embedding API kept answering 429/5xx, timing out or dropping connections after retries.

    Transient: the ingest record fails and SQS redelivers it later.
    """


class EmbeddingRequestError(LongdocError):
    """The embedding API rejected a request (4xx other than 429); retrying will not help."""


class EmbeddingInputTooLong(LongdocError):
    """A text is longer than the embedding model reads; ``index`` is its position in the call.

    Raised before any request, so nothing is ever truncated silently.
    """

    def __init__(self, index: int, tokens: int, limit: int):
        self.index = index
        self.tokens = tokens
        self.limit = limit
        super().__init__(f"text {index} has about {tokens} tokens; the model reads at most {limit}")


class RerankUnavailable(LongdocError):
    """The rerank API kept answering 429/5xx, timing out or dropping connections after retries.

    Transient: the extract state machine retries the session (``statemachine/extract.asl.json``).
    """


class RerankRequestError(LongdocError):
    """The rerank API rejected a request (4xx other than 429: model, key, limits) or answered
    something that is not a ranking of the documents sent; retrying will not help."""


class IndexUnavailable(LongdocError):
    """The vector index (Pinecone) answered 429/5xx or the connection failed during a query.

    Transient: the bulk state machine retries the slice or harvest with backoff
    (``statemachine/bulk.asl.json``; issue 26).
    """


OUTAGES: tuple[type[LongdocError], ...] = (ModelThrottled, ModelUnavailable, EmbeddingUnavailable,
                                           RerankUnavailable, IndexUnavailable)
"""A service the product depends on is down or throttling (its adapter's retries spent): not the caller's
fault and worth retrying, so the API answers 503 with ``Retry-After`` (RFC 9110 section 15.6.4) and the
state machines retry them."""

OUTAGE_RETRY_AFTER_SECONDS = 30
"""``Retry-After`` of an outage answer (seconds): about the adapters' own retry budget, so a client's retry
lands after the service had time to recover; not tuned on any measurement."""


# --- Ingest ----------------------------------------------------------------------------------


class DocumentError(LongdocError):
    """A document cannot be ingested. ``source`` names the file, ``reason`` says why.

    Raised before anything is written, so a failed document leaves nothing half-ingested.
    """

    def __init__(self, source: str, reason: str):
        self.source = source
        self.reason = reason
        super().__init__(f"{source}: {reason}")


class IngestDeadline(LongdocError):
    """Too little invocation time is left to embed or upsert another batch safely.

    Progress so far is recorded; the record fails and its redelivery resumes from there.
    """


class VersionClaimed(LongdocError):
    """Another worker holds the ingest claim of this document version; this attempt did nothing.

    Not a failure of the document: the holder's own message stays in flight until its
    ingest ends and is redelivered if it fails, so the caller acknowledges this delivery
    (the ingest handler does) or waits and asks again (``longdoc ingest`` does).
    """

    def __init__(self, doc_id: str, doc_version: str, lease_seconds: float):
        self.doc_id = doc_id
        self.doc_version = doc_version
        super().__init__(f"version {doc_version} of {doc_id} is being ingested by another worker "
                         f"(its claim lasts up to {lease_seconds:.0f} s after its last renewal)")


class SourceRemoved(LongdocError):
    """The source object was removed while its version was being ingested; that version is ``DELETED``.

    What the attempt wrote is removed. Not a failure to retry: the caller acknowledges it
    (the ingest handler does). ``key`` is the object key.
    """

    def __init__(self, key: str, doc_id: str, doc_version: str):
        self.key, self.doc_id, self.doc_version = key, doc_id, doc_version
        super().__init__(f"{key}: removed while version {doc_version} of {doc_id} was being ingested; "
                         "what this ingest wrote is removed and the version is DELETED")


class IngestRestart(LongdocError):
    """The object was removed and uploaded again (same bytes) during this attempt; a redelivery ingests it anew.

    Raised after the removal marked the version ``DELETED`` and deleted its vectors, so the
    attempt's progress no longer holds; the caller lets the message be redelivered.
    """


class OcrPageError(LongdocError):
    """One page image could not be read by the OCR engine (corrupt, unsupported or too large).

    The page is named in the ingest result and the other pages still ingest.
    """


class OcrUnavailable(LongdocError):
    """The OCR engine cannot run (Tesseract not installed, Textract down or throttled after retries)."""


# --- Extract: starting a run (the API answers 400/404/422/429) and the state machine -------


class UnknownClauseType(LongdocError):
    """A requested clause type is not in the catalogue; ``suggestions`` lists the closest names."""

    def __init__(self, name: str, suggestions: list[str]):
        self.name = name
        self.suggestions = suggestions
        hint = (f"; closest: {', '.join(suggestions)}" if suggestions
                else "; list the known ones with `longdoc clause-types`")
        super().__init__(f"unknown clause type {name!r}{hint}")


class TooManyRuns(LongdocError):
    """Admission control refused a new run: ``cap`` executions are running; retry after ``retry_after_seconds``."""

    def __init__(self, cap: int, retry_after_seconds: int, what: str = "extraction runs"):
        self.cap = cap
        self.retry_after_seconds = retry_after_seconds
        super().__init__(f"{cap} {what} are running, the most allowed at once; retry later")


class IdempotencyConflict(LongdocError):
    """An Idempotency-Key was reused with a different request body; ``run_id`` is the key's run.

    The IETF draft "The Idempotency-Key HTTP Header Field" (draft-ietf-httpapi-idempotency-key-header,
    section 2.7) says such a reuse SHOULD get 422; no run starts.
    """

    def __init__(self, run_id: str):
        self.run_id = run_id
        super().__init__("Idempotency-Key was already used with a different request body")


class CitationError(LongdocError, ValueError):
    """A citation failed verification; the message says what is wrong (sent back to the model).

    Caught by the session's tool handling (a rejected ``extract_clause``); never leaves it.
    """


class NoProgress(LongdocError):
    """Several sessions in a row resolved nothing new; the run fails instead of looping to the cap."""


class ExtractionFailed(LongdocError):
    """Raised by the failure-recording task so the execution fails (and can be redriven) there."""


class IterationCapReached(LongdocError):
    """The run used ``max_iterations`` sessions without resolving every clause type."""


# --- Bulk (statemachine/bulk.asl.json) -------------------------------------------------------


class BatchNotFound(LongdocError):
    """The batch id is unknown (HTTP 404); right after create this is eventual consistency, retried."""


class BatchNotListedYet(LongdocError):
    """Submit was interrupted after its intent and the batch list does not show a batch for it
    yet; the state machine retries Submit (``statemachine/bulk.asl.json``)."""


class BulkFailed(LongdocError):
    """The bulk execution failed; the cause names the original error (stored items stay for a redrive)."""


class NoDocumentAccepted(LongdocError):
    """The CreateRuns state found no READY document in a bulk request: the job is recorded with
    zero runs and its rejections (``bulk/<id>/rejected.json``), and the execution fails."""


# --- Summarize (statemachine/summarize.asl.json) ---------------------------------------------


class SummaryInputError(LongdocError):
    """The request cannot be summarised as asked (document not READY, empty, focus too long)."""


class EmptyDocument(SummaryInputError):
    """The document version has no text to summarise."""


class StatementError(LongdocError, ValueError):
    """A statement failed a check; the message says what is wrong (sent back to the model)."""


class SummaryFailed(LongdocError):
    """The summary run failed; the cause names the original error (its partials stay for a resume)."""


class ReduceNotConverging(LongdocError):
    """The reduce levels did not bring the partial summaries within the final call's input budget:
    two levels in a row did not shrink the total, or the level bound was passed."""


class EmptySummary(LongdocError):
    """The summary has no verified statement: a failure, never a SUCCEEDED empty summary."""


# --- Triage (one clear line each; the CLI prints it, the API returns it) ---------------------


class TriageError(LongdocError):
    """A triage input is unusable: claim file, loss date, line of business, terms or budget.

    ``field`` names the input at fault (``claim``, ``loss_date``, ``line_of_business``,
    ``collection``, ``budget``) for the API's answer.
    """

    def __init__(self, message: str, field: str | None = None):
        """Keep ``message`` as the error text and ``field`` for the API."""
        self.field = field
        super().__init__(message)


class GoldFileInvalid(TriageError):
    """A ``longdoc eval triage`` gold file has bad lines; nothing was ranked.

    ``problems`` holds one line per problem, each naming ``FILE:LINE`` and the claim id when it has
    one (the CLI prints them one a line and exits 2); the message is the problems, one a line.
    """

    def __init__(self, problems: list[str]):
        """Keep every problem (at least one) for the CLI, and all of them, one a line, as the message."""
        self.problems = list(problems)
        super().__init__("\n".join(self.problems), "gold")


class UnknownCollection(TriageError, NotFound):
    """No READY document carries this collection name (the API answers 404)."""

    def __init__(self, name: str, known: list[str]):
        """Name the collection and list the known ones."""
        hint = f" (known: {', '.join(known)})" if known else " (no document has a collection yet: set `collection` in its metadata)"
        super().__init__(f"unknown collection {name!r}{hint}", "collection")


class AnswerRejected(LongdocError, ValueError):
    """A tool call failed verification; the message (one line per problem) goes back to the model."""


# --- Review (one clear line each; the CLI prints it, the API answers 409/422/404) -----------


class DecisionConflict(LongdocError):
    """A decision was made on an item version that is no longer the latest (another decision came first)."""


class CorrectionNotVerbatim(LongdocError, ValueError):
    """A correction's span is not verbatim in the document (or names no chunk or page of it)."""


class InvalidDecision(LongdocError, ValueError):
    """A decision that does not fit its item (``mark_present`` on a found clause, no quote for ``correct``)."""


# --- CLI and local mode ----------------------------------------------------------------------


class CliError(LongdocError):
    """A failure reported as one line on stderr with exit status 1."""


class RunLeaseHeld(LongdocError):
    """Another live process holds the run's lease: it is running the run now (nothing was started)."""


class HandlerNotFound(LongdocError):
    """``functions/<function>/app.py`` does not exist (e.g. the package was installed without the repo)."""


class IngestPathRefused(LongdocError):
    """An MCP ``ingest`` path is refused before anything is read: missing, a directory, not a regular
    file, or outside ``LONGDOC_MCP_ROOT`` (one line naming the path and where it resolved)."""


class InvalidToolArguments(LongdocError):
    """An MCP tool call's arguments are refused before the tool runs: an unknown argument, a value of
    the wrong JSON type, or an id that is not of the tool's form (one line naming the argument)."""


class ExecutionAlreadyExists(Exception):
    """An execution of this name was already started: the local stand-in of Step Functions' own
    ``ExecutionAlreadyExists`` (botocore's ``ClientError`` code), which callers match by name.

    The one class here that is deliberately not a :class:`LongdocError`: on AWS the same
    situation raises botocore's error, which the API answers 500 like any unexpected error, and
    the local starters must answer the same (a :class:`LongdocError` would become a 400).
    """


def short_cause(cause: str | None) -> str:
    """The readable part of a Step Functions cause: ``"ErrorType: message"``, one line.

    A Lambda task's cause is the function's error payload (``{"errorType", "errorMessage",
    "stackTrace"}``, https://docs.aws.amazon.com/lambda/latest/dg/python-exceptions.html),
    possibly behind a ``"Name: "`` prefix; the stack trace is dropped (it stays in the logs).
    """
    if not cause:
        return ""
    start = cause.find("{")
    if start >= 0:
        try:
            payload = json.loads(cause[start:])
            if isinstance(payload, dict) and "errorMessage" in payload:
                prefix = cause[:start].strip().rstrip(":")
                kind = payload.get("errorType", "")
                head = f"{prefix}: " if prefix and prefix != kind else ""
                return one_line(f"{head}{kind}: {payload['errorMessage']}")
        except ValueError:
            pass
    return one_line(cause)
