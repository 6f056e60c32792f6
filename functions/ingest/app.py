"""Ingest function: S3 ``ObjectCreated`` / ``ObjectRemoved`` events delivered through SQS.

Thin handler: Powertools batch processing with partial batch responses, so one bad file
never fails or repeats its neighbours. Each record's body is an S3 event notification;
the S3 test event sent when notifications are configured is acknowledged and ignored.
Object keys arrive URL-encoded (``+`` for spaces, ``%xx``) and are decoded before use.

``ObjectCreated``: the object is ingested (resumable, see
:func:`longdoc.ingest.pipeline.ingest_document`); the invocation's remaining time is passed
down, so a long document stops with its progress saved before Lambda's timeout and its
redelivery continues. ``ObjectRemoved``: the document's vectors are deleted and its
versions marked ``DELETED``. A created object that is gone by the time it is read is
acknowledged (its removal event does the rest).

Document metadata (``doc_type``, ``line_of_business``, ``term``) comes from the object's
S3 user metadata (``x-amz-meta-doc-type`` etc., set at upload) and its
``<key>.metadata.json`` sidecar, the sidecar winning key by key
(:func:`longdoc.ingest.pipeline.document_metadata`). The same bytes with changed metadata
(e.g. an in-place copy with new ``--metadata``) rewrite that version's chunk metadata.

Metrics (EMF, namespace ``POWERTOOLS_METRICS_NAMESPACE``): DocumentsIngested,
DocumentsSkipped, DocumentsRejected, DocumentsDeleted, MetadataUpdated, Pages, Chunks, EmbeddingTokens,
EmbeddingsReused, ChunksEmbedded, IngestResumed, and stage durations ParseSeconds,
EmbedSeconds, UpsertSeconds, IngestSeconds. Log lines carry ``doc_id`` and ``doc_version``.
"""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import unquote_plus

from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.batch import BatchProcessor, EventType, process_partial_response
from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord
from aws_lambda_powertools.utilities.typing import LambdaContext

from longdoc import wiring
from longdoc.config import get_settings
from longdoc.core.documents import INCOMING_PREFIX
from longdoc.ingest.pipeline import METADATA_SUFFIX, delete_document_source, doc_id_for_key, ingest_document, version_for
from longdoc.core.errors import DocumentError, NotFound
from longdoc.observability import logger, metrics, tracer

# A batch whose every record failed is still answered with batchItemFailures (not an
# exception), so a one-message batch reports its failure the same way as a larger one.
processor = BatchProcessor(event_type=EventType.SQS, raise_on_entire_batch_failure=False)

_STAGE_METRICS = {"parse": "ParseSeconds", "embed": "EmbedSeconds", "upsert": "UpsertSeconds",
                  "total": "IngestSeconds"}


def _remove(key: str) -> None:
    doc_id = doc_id_for_key(key)
    logger.append_keys(doc_id=doc_id, doc_version=None)
    marked = delete_document_source(key=key, blobs=wiring.blob_store(), state=wiring.state_store(),
                                    index=wiring.vector_index(), doc_id=doc_id)
    # No versions marked: already deleted, or the object exists again (a stale event).
    logger.info("document source removed", extra={"key": key, "versions": marked})
    metrics.add_metric(name="DocumentsDeleted", unit=MetricUnit.Count, value=len(marked))


def _create(key: str, lambda_context: LambdaContext | None) -> None:
    settings = get_settings()
    try:
        data = wiring.blob_store().get(key)
    except NotFound:
        logger.warning("object is gone; nothing to ingest", extra={"key": key})
        return
    doc_id = doc_id_for_key(key)
    logger.append_keys(doc_id=doc_id, doc_version=version_for(data))
    time_left = None
    if lambda_context is not None and hasattr(lambda_context, "get_remaining_time_in_millis"):
        time_left = lambda: lambda_context.get_remaining_time_in_millis() / 1000  # noqa: E731
    try:
        result = ingest_document(
            key=key, data=data, blobs=wiring.blob_store(), state=wiring.state_store(),
            embedder=wiring.embedder(), index=wiring.vector_index(), doc_id=doc_id,
            target_tokens=settings.chunk_target_tokens, max_tokens=settings.chunk_max_tokens,
            overlap=settings.chunk_overlap, read_metadata=True, max_bytes=settings.max_document_bytes,
            max_pages=settings.max_document_pages, time_left=time_left,
            deadline_margin=settings.ingest_deadline_margin_seconds,
        )
    except DocumentError as exc:
        # The document itself is unusable: recorded as FAILED; redelivery cannot help.
        logger.warning("document rejected", extra={"key": key, "reason": exc.reason})
        metrics.add_metric(name="DocumentsRejected", unit=MetricUnit.Count, value=1)
        return
    logger.info("ingested", extra={"chunks": result.chunks, "skipped": result.skipped, "embedded": result.embedded,
                                   "reused": result.reused, "resumed": result.resumed,
                                   "oversize_chunks": result.oversize_chunks,
                                   "overlap_missing_chunks": result.overlap_missing_chunks,
                                   "metadata_updated": result.metadata_updated})
    if result.metadata_updated:
        metrics.add_metric(name="MetadataUpdated", unit=MetricUnit.Count, value=1)
        return
    if result.skipped:
        metrics.add_metric(name="DocumentsSkipped", unit=MetricUnit.Count, value=1)
        return
    metrics.add_metric(name="DocumentsIngested", unit=MetricUnit.Count, value=1)
    metrics.add_metric(name="Pages", unit=MetricUnit.Count, value=result.pages)
    metrics.add_metric(name="Chunks", unit=MetricUnit.Count, value=result.chunks)
    metrics.add_metric(name="ChunksEmbedded", unit=MetricUnit.Count, value=result.embedded)
    metrics.add_metric(name="EmbeddingsReused", unit=MetricUnit.Count, value=result.reused)
    metrics.add_metric(name="EmbeddingTokens", unit=MetricUnit.Count, value=result.tokens)
    metrics.add_metric(name="IngestResumed", unit=MetricUnit.Count, value=1 if result.resumed else 0)
    for stage, seconds in result.timings.items():
        if stage in _STAGE_METRICS:
            metrics.add_metric(name=_STAGE_METRICS[stage], unit=MetricUnit.Seconds, value=round(seconds, 3))


def _record_handler(record: SQSRecord, lambda_context: LambdaContext | None = None) -> None:
    body = json.loads(record.body)
    if body.get("Event") == "s3:TestEvent":
        logger.info("ignoring S3 test event")
        return
    for item in body.get("Records", []):
        key = unquote_plus(item["s3"]["object"]["key"])
        if key.endswith(METADATA_SUFFIX):
            logger.info("metadata sidecar; read when its document is ingested", extra={"key": key})
            continue
        if not key.startswith(INCOMING_PREFIX) or key.endswith("/"):
            logger.info("ignoring key outside incoming/", extra={"key": key})
            continue
        try:
            if str(item.get("eventName", "")).startswith("ObjectRemoved"):
                _remove(key)
            else:
                _create(key, lambda_context)
        finally:
            logger.remove_keys(["doc_id", "doc_version"])


@logger.inject_lambda_context(log_event=False)
@tracer.capture_lambda_handler
@metrics.log_metrics
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    """Process an SQS batch; returns ``{"batchItemFailures": [...]}`` for records to redeliver."""
    return process_partial_response(event=event, record_handler=_record_handler, processor=processor,
                                    context=context)
