"""Named errors. Their class names double as Step Functions error names (``errorType``)."""

from __future__ import annotations

import json

from longdoc.core.text import one_line


class LongdocError(Exception):
    """Base class for every error longdoc raises on purpose."""


class DocumentError(LongdocError):
    """A document cannot be ingested. ``source`` names the file, ``reason`` says why.

    Raised before anything is written, so a failed document leaves nothing half-ingested.
    """

    def __init__(self, source: str, reason: str):
        self.source = source
        self.reason = reason
        super().__init__(f"{source}: {reason}")


class UnknownClauseType(LongdocError):
    """A requested clause type is not in the catalogue; ``suggestions`` lists the closest names."""

    def __init__(self, name: str, suggestions: list[str]):
        self.name = name
        self.suggestions = suggestions
        hint = (f"; closest: {', '.join(suggestions)}" if suggestions
                else "; list the known ones with `longdoc clause-types`")
        super().__init__(f"unknown clause type {name!r}{hint}")


class NotFound(LongdocError):
    """A document, run or checkpoint does not exist."""


class ConfigError(LongdocError):
    """Settings are missing or contradictory (e.g. AWS mode without a table name)."""


class CheckpointConflict(LongdocError):
    """Another invocation saved the checkpoint first (conditional write lost)."""


class CheckpointSchemaError(LongdocError):
    """A checkpoint was written by an incompatible CASE_FACTS schema version."""


class ModelThrottled(LongdocError):
    """The model API kept answering 429/529 after the SDK's own retries; retry later."""


class ModelUnavailable(LongdocError):
    """The model API kept answering 5xx or dropped connections after the SDK's retries."""


class ModelRequestError(LongdocError):
    """The model API rejected the request (4xx other than 429); retrying will not help."""


class ModelRefused(LongdocError):
    """The model stopped with ``stop_reason == "refusal"``; the run fails with it recorded."""


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


class IngestDeadline(LongdocError):
    """Too little invocation time is left to embed or upsert another batch safely.

    Progress so far is recorded; the record fails and its redelivery resumes from there.
    """


class NoProgress(LongdocError):
    """Several sessions in a row resolved nothing new; the run fails instead of looping to the cap."""


class ExtractionFailed(LongdocError):
    """Raised by the failure-recording task so the execution fails (and can be redriven) there."""


class IterationCapReached(LongdocError):
    """The run used ``max_iterations`` sessions without resolving every clause type."""


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


class OcrPageError(LongdocError):
    """One page image could not be read by the OCR engine (corrupt, unsupported or too large).

    The page is named in the ingest result and the other pages still ingest.
    """


class OcrUnavailable(LongdocError):
    """The OCR engine cannot run (Tesseract not installed, Textract down or throttled after retries)."""
