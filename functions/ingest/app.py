"""Ingest function: S3 ``ObjectCreated`` events delivered through SQS.

Thin handler: Powertools batch processing with partial batch responses, so one bad file
never fails or repeats its neighbours. Each record's body is an S3 event notification;
the S3 test event sent when notifications are configured is acknowledged and ignored.
Object keys arrive URL-encoded (``+`` for spaces, ``%xx``) and are decoded before use.
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
from longdoc.domain.ingest import INCOMING_PREFIX, METADATA_SUFFIX, ingest_document, read_sidecar
from longdoc.errors import DocumentError
from longdoc.observability import logger, metrics, tracer

# A batch whose every record failed is still answered with batchItemFailures (not an
# exception), so a one-message batch reports its failure the same way as a larger one.
processor = BatchProcessor(event_type=EventType.SQS, raise_on_entire_batch_failure=False)


def _record_handler(record: SQSRecord) -> None:
    body = json.loads(record.body)
    if body.get("Event") == "s3:TestEvent":
        logger.info("ignoring S3 test event")
        return
    settings = get_settings()
    for item in body.get("Records", []):
        key = unquote_plus(item["s3"]["object"]["key"])
        if key.endswith(METADATA_SUFFIX):
            logger.info("metadata sidecar; read when its document is ingested", extra={"key": key})
            continue
        if not key.startswith(INCOMING_PREFIX) or key.endswith("/"):
            logger.info("ignoring key outside incoming/", extra={"key": key})
            continue
        data = wiring.blob_store().get(key)
        try:
            metadata = read_sidecar(wiring.blob_store(), key)
            result = ingest_document(
                key=key, data=data, blobs=wiring.blob_store(), state=wiring.state_store(),
                embedder=wiring.embedder(), index=wiring.vector_index(),
                target_tokens=settings.chunk_target_tokens, max_tokens=settings.chunk_max_tokens,
                overlap=settings.chunk_overlap, metadata=metadata,
                max_bytes=settings.max_document_bytes, max_pages=settings.max_document_pages,
            )
        except DocumentError as exc:
            # The document itself is unusable: recorded as FAILED; redelivery cannot help.
            logger.warning("document rejected", extra={"key": key, "reason": exc.reason})
            metrics.add_metric(name="DocumentsRejected", unit=MetricUnit.Count, value=1)
            continue
        logger.info("ingested", extra={"doc_id": result.doc_id, "doc_version": result.doc_version,
                                       "chunks": result.chunks, "skipped": result.skipped})
        metrics.add_metric(name="DocumentsIngested", unit=MetricUnit.Count, value=0 if result.skipped else 1)
        metrics.add_metric(name="Chunks", unit=MetricUnit.Count, value=0 if result.skipped else result.chunks)


@logger.inject_lambda_context(log_event=False)
@tracer.capture_lambda_handler
@metrics.log_metrics
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    """Process an SQS batch; returns ``{"batchItemFailures": [...]}`` for records to redeliver."""
    return process_partial_response(event=event, record_handler=_record_handler, processor=processor,
                                    context=context)
