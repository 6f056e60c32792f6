"""Ingest function: S3 ``ObjectCreated`` / ``ObjectRemoved`` events delivered through SQS.

Thin handler: settings validated at entry, Powertools batch processing with partial batch
responses (so one bad file never fails or repeats its neighbours), each SQS record parsed
by a Powertools parser model (:class:`IngestQueueRecord`: an S3 event notification in the
body, or the ``s3:TestEvent`` S3 sends when notifications are configured, which is
acknowledged and ignored). A record that matches neither is reported for redelivery.
Object keys arrive URL-encoded (``+`` for spaces, ``%xx``) and are decoded before use.

``ObjectCreated``: the object is read once here (bytes, S3 user metadata, its
``<key>.metadata.json`` sidecar) and ingested (resumable, see
:func:`longdoc.ingest.pipeline.ingest_document`); the invocation's remaining time is passed
down, so a long document stops with its progress saved before Lambda's timeout and its
redelivery continues. ``ObjectRemoved``: the document's vectors are deleted and its
versions marked ``DELETED``. A created object that is gone by the time it is read is
acknowledged (its removal event does the rest). A delivery of a version another worker
is ingesting right now (its ingest claim, :mod:`longdoc.ingest.lease`) is acknowledged
without embedding anything: the holder's own message covers it. An object removed while
it is being ingested leaves its version ``DELETED``, never ``READY``
(:mod:`longdoc.ingest.attempt`); that delivery is acknowledged.

Document metadata (``doc_type``, ``line_of_business``, ``term``) comes from the object's
S3 user metadata (``x-amz-meta-doc-type`` etc., set at upload) and its sidecar, the
sidecar winning key by key (:func:`longdoc.ingest.metadata.document_metadata`). The same
bytes with changed metadata (e.g. an in-place copy with new ``--metadata``) rewrite that
version's chunk metadata.

Metrics (EMF, namespace ``POWERTOOLS_METRICS_NAMESPACE``): DocumentsIngested,
DocumentsSkipped, DocumentsRejected, DocumentsDeleted, MetadataUpdated, Pages, Chunks, EmbeddingTokens,
EmbeddingsReused, ChunksEmbedded, IngestResumed, DocumentsClaimedElsewhere, DocumentsRemovedDuringIngest,
OverlappingWordings (a wording in force on dates another of its collection and line is, logged naming both),
and stage durations ParseSeconds, EmbedSeconds, UpsertSeconds, IngestSeconds. Log lines carry ``doc_id`` and ``doc_version``.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any, Literal
from urllib.parse import unquote_plus

from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.batch import BatchProcessor, EventType, process_partial_response
from aws_lambda_powertools.utilities.batch.types import PartialItemFailureResponse
from aws_lambda_powertools.utilities.parser.models import S3Model, SqsRecordModel
from aws_lambda_powertools.utilities.typing import LambdaContext
from pydantic import BaseModel, Json

from longdoc import wiring
from longdoc.config import IngestFunctionSettings, function_settings
from longdoc.core.documents import INCOMING_PREFIX
from longdoc.core.errors import DocumentError, NotFound, SourceRemoved, VersionClaimed
from longdoc.core.ports import StateStore
from longdoc.ingest.ids import resolve_doc_id
from longdoc.ingest.metadata import METADATA_SUFFIX, sidecar_key
from longdoc.ingest.pipeline import IngestDeps, IngestOptions, ingest_document
from longdoc.ingest.removal import delete_document_source
from longdoc.ingest.result import IngestResult
from longdoc.ingest.source import IngestSource
from longdoc.observability import logger, metrics, tracer


class S3TestEvent(BaseModel):
    """The message S3 sends once when a notification is configured (``{"Event": "s3:TestEvent", ...}``)."""

    Event: Literal["s3:TestEvent"]
    Service: str | None = None
    Bucket: str | None = None


class IngestQueueRecord(SqsRecordModel):
    """One ingest queue message: Powertools' SQS record whose JSON body is an S3 notification or the test event.

    Extends :class:`SqsRecordModel` as Powertools' ``S3SqsEventNotificationRecordModel``
    does (``body: Json[S3Model]``), adding the test event, which that model rejects.
    """

    body: Json[S3Model | S3TestEvent]


# A batch whose every record failed is still answered with batchItemFailures (not an
# exception), so a one-message batch reports its failure the same way as a larger one.
processor = BatchProcessor(event_type=EventType.SQS, model=IngestQueueRecord, raise_on_entire_batch_failure=False)

_STAGE_METRICS = {"parse": "ParseSeconds", "embed": "EmbedSeconds", "upsert": "UpsertSeconds",
                  "total": "IngestSeconds"}


def _remove(key: str) -> None:
    """An ``ObjectRemoved`` event: drop the document's vectors, mark its versions DELETED (a stale event: nothing)."""
    state = wiring.state_store()
    doc_id = resolve_doc_id(key, state)
    logger.append_keys(doc_id=doc_id, doc_version=None)
    marked = delete_document_source(key=key, blobs=wiring.blob_store(), state=state,
                                    index=wiring.vector_index(), doc_id=doc_id)
    # No versions marked: already deleted, or the object exists again (a stale event).
    logger.info("document source removed", extra={"key": key, "versions": marked})
    metrics.add_metric(name="DocumentsDeleted", unit=MetricUnit.Count, value=len(marked))


def _read(key: str) -> IngestSource | None:
    """The object at ``key`` read once: bytes, user metadata and sidecar; None when it is gone.

    Its doc id is the one the key is registered under (:func:`longdoc.ingest.ids.resolve_doc_id`).
    """
    blobs = wiring.blob_store()
    try:
        data = blobs.get(key)
        object_metadata = blobs.metadata(key)
    except NotFound:
        return None
    try:
        sidecar: bytes | None = blobs.get(sidecar_key(key))
    except NotFound:
        sidecar = None
    return IngestSource(key=key, data=data, object_metadata=object_metadata, sidecar=sidecar,
                        doc_id=resolve_doc_id(key, wiring.state_store()))


def _publish(result: IngestResult) -> None:
    """Log and count one ingest outcome."""
    logger.info("ingested", extra={"chunks": result.chunks, "skipped": result.skipped, "embedded": result.embedded,
                                   "reused": result.reused, "resumed": result.resumed,
                                   "oversize_chunks": result.oversize_chunks,
                                   "overlap_missing_chunks": result.overlap_missing_chunks,
                                   "metadata_updated": result.metadata_updated, "rechunked": result.rechunked})
    if result.metadata_updated or result.skipped:
        name = "MetadataUpdated" if result.metadata_updated else "DocumentsSkipped"
        metrics.add_metric(name=name, unit=MetricUnit.Count, value=1)
        return
    for name, value in (("DocumentsIngested", 1), ("Pages", result.pages), ("Chunks", result.chunks),
                        ("ChunksEmbedded", result.embedded), ("EmbeddingsReused", result.reused),
                        ("EmbeddingTokens", result.tokens), ("IngestResumed", 1 if result.resumed else 0)):
        metrics.add_metric(name=name, unit=MetricUnit.Count, value=value)
    for stage, seconds in result.timings.items():
        if stage in _STAGE_METRICS:
            metrics.add_metric(name=_STAGE_METRICS[stage], unit=MetricUnit.Seconds, value=round(seconds, 3))
    if result.ocr_pages or result.ocr_failed_pages:  # issue 18: pages read by OCR, what they cost, what failed
        logger.info("ocr", extra={"ocr_pages": result.ocr_pages, "ocr_cost_usd": result.ocr_cost_usd,
                                  "ocr_low_confidence_pages": result.ocr_low_confidence_pages,
                                  "ocr_failed_pages": result.ocr_failed_pages})
        metrics.add_metric(name="OcrPages", unit=MetricUnit.Count, value=len(result.ocr_pages))
        metrics.add_metric(name="OcrCostMicroUsd", unit=MetricUnit.Count, value=round(result.ocr_cost_usd * 1e6))


def _reject(key: str, reason: str) -> None:
    """Log and count a document that cannot be ingested; its message is acknowledged (redelivery cannot help)."""
    logger.warning("document rejected", extra={"key": key, "reason": reason})
    metrics.add_metric(name="DocumentsRejected", unit=MetricUnit.Count, value=1)


def _warn_if_other_source(source: IngestSource, state: StateStore) -> None:
    """Warn when another object key already holds ``source.doc_id``: this object becomes its new version.

    Document ids come from file names (:func:`longdoc.ingest.ids.doc_id_for_key`), so
    ``incoming/contract.pdf`` and ``incoming/contract.docx`` are versions of one document
    by design (as are two names that shared an id under an earlier rule, see
    :func:`longdoc.ingest.ids.resolve_doc_id`); the warning names both keys so an accidental
    replacement is visible.
    """
    latest = state.get_document(source.doc_id)
    if latest is not None and latest.source_key and latest.source_key != source.key:
        logger.warning("another object already holds this document id; this one becomes its latest version",
                       extra={"key": source.key, "existing_key": latest.source_key,
                              "existing_version": latest.doc_version, "existing_status": latest.status})


def _create(key: str, options: IngestOptions, time_left: Callable[[], float] | None) -> None:
    """An ``ObjectCreated`` event: read the object once and ingest it; a bad document is final, not retried."""
    source = _read(key)
    if source is None:
        logger.warning("object is gone; nothing to ingest", extra={"key": key})
        return
    logger.append_keys(doc_id=source.doc_id, doc_version=source.version)
    deps = IngestDeps(blobs=wiring.blob_store(), state=wiring.state_store(), embedder=wiring.embedder(),
                      index=wiring.vector_index(), ocr=wiring.ocr_engine())
    _warn_if_other_source(source, deps.state)
    try:
        result = ingest_document(source, deps, options, time_left=time_left)
    except DocumentError as exc:
        # The document itself is unusable: recorded as FAILED; redelivery cannot help.
        _reject(key, exc.reason)
        return
    except VersionClaimed as exc:
        # Another worker is ingesting this version; its own message stays in flight until it
        # ends (and is redelivered if it fails), so this duplicate delivery is acknowledged.
        logger.info("version claimed by another worker; acknowledged", extra={"key": key, "reason": str(exc)})
        metrics.add_metric(name="DocumentsClaimedElsewhere", unit=MetricUnit.Count, value=1)
        return
    except SourceRemoved as exc:
        # The object was removed while it was being ingested: the version is DELETED and what
        # this attempt wrote is gone; nothing is left to retry.
        logger.info("object removed during ingest; acknowledged", extra={"key": key, "reason": str(exc)})
        metrics.add_metric(name="DocumentsRemovedDuringIngest", unit=MetricUnit.Count, value=1)
        return
    _publish(result)
    _warn_overlaps(source, deps.state)


def _warn_overlaps(source: IngestSource, state: StateStore) -> None:
    """Log a warning per wording of the same collection and line in force on dates this one is too
    (:mod:`longdoc.triage.overlaps`): ingested anyway, but triage on those dates fails until fixed; for an
    endorsement whose wording is not in its collection, one ``endorsement of a missing wording`` warning."""
    from longdoc.triage.overlaps import missing_wording, overlaps_of

    record = state.get_document(source.doc_id, source.version)
    if record is None or record.status != "READY":
        return
    if record.metadata.endorses:
        missing = missing_wording(state, record.metadata.collection, record.metadata.endorses)
        if missing:
            logger.warning("endorsement of a missing wording", extra={"key": source.key, "warning": missing,
                                                                       "endorses": record.metadata.endorses})
        return
    for overlap in overlaps_of(state, record.metadata.collection, record.doc_id):
        logger.warning("overlapping wordings", extra={"key": source.key, "overlap": overlap.message(),
                                                      "collection": overlap.collection,
                                                      "line_of_business": overlap.line_of_business,
                                                      "doc_ids": list(overlap.doc_ids), "from": overlap.start,
                                                      "to": overlap.end})
        metrics.add_metric(name="OverlappingWordings", unit=MetricUnit.Count, value=1)


def _time_left(lambda_context: LambdaContext | None) -> Callable[[], float] | None:
    """Seconds left in the invocation, read from the Lambda context (None without one)."""
    if lambda_context is None or not hasattr(lambda_context, "get_remaining_time_in_millis"):
        return None
    return lambda: lambda_context.get_remaining_time_in_millis() / 1000


def _record_handler(record: IngestQueueRecord, lambda_context: LambdaContext | None = None, *,
                    options: IngestOptions) -> None:
    """One SQS message: skip the test event, sidecars and keys outside ``incoming/``; create or remove the rest.

    Any exception fails this record only (it is redelivered); the others go on.
    """
    if isinstance(record.body, S3TestEvent):
        logger.info("ignoring S3 test event")
        return
    for item in record.body.Records:
        key = unquote_plus(item.s3.object.key if item.s3.object is not None else "")
        if key.endswith(METADATA_SUFFIX):
            logger.info("metadata sidecar; read when its document is ingested", extra={"key": key})
            continue
        if not key.startswith(INCOMING_PREFIX) or key.endswith("/"):
            logger.info("ignoring key outside incoming/", extra={"key": key})
            continue
        try:
            if item.eventName.startswith("ObjectRemoved"):
                _remove(key)
            else:
                _create(key, options, _time_left(lambda_context))
        except DocumentError as exc:  # e.g. no document id for this key: final, never a redelivery loop
            _reject(key, exc.reason)
        finally:
            logger.remove_keys(["doc_id", "doc_version"])


@logger.inject_lambda_context(log_event=False)
@tracer.capture_lambda_handler
@metrics.log_metrics
def handler(event: dict[str, Any], context: LambdaContext) -> PartialItemFailureResponse:
    """Process an SQS batch; returns ``{"batchItemFailures": [{"itemIdentifier": message_id}, ...]}``.

    Raises :class:`longdoc.core.errors.ConfigError` (naming the variable) before any record
    is touched when the ingest function's settings are invalid.
    """
    options = IngestOptions.from_settings(function_settings(IngestFunctionSettings))
    return process_partial_response(event=event, record_handler=partial(_record_handler, options=options),
                                    processor=processor, context=context)
