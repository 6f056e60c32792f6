"""Concurrent deliveries of one new version: the ingest claim lets exactly one worker embed it.

AWS mode with the real Voyage and Pinecone SDKs against the loopback fakes (moto for S3 and
DynamoDB), as in ``test_ingest_cloud.py``, whose ``cloud`` fixture is reused here.
"""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from longdoc import wiring
from longdoc.core.errors import VersionClaimed
from longdoc.ingest.pipeline import IngestDeps, ingest_document
from longdoc.ingest.result import IngestResult
from longdoc.ingest.source import IngestSource
from tests.fakes.loopback import slow
from tests.functional.test_ingest_cloud import GOOD_DOC_ID, GOOD_KEY, GOOD_PDF, NAMESPACE, Cloud, cloud, version_of

pytestmark = [pytest.mark.slow, pytest.mark.filterwarnings("ignore:No application metrics to publish")]
__all__ = ["cloud"]  # the fixture, imported for pytest


def deps() -> IngestDeps:
    return IngestDeps(blobs=wiring.blob_store(), state=wiring.state_store(), embedder=wiring.embedder(),
                      index=wiring.vector_index())


def test_two_workers_given_one_new_version_embed_it_once(cloud: Cloud, corpus_dir: Path) -> None:
    # Given a new 3-chunk contract handed to two workers at the same moment, Voyage slow to answer
    data = cloud.aws.upload(GOOD_KEY, corpus_dir / GOOD_PDF)
    cloud.voyage.inject(slow(2.0))
    barrier = threading.Barrier(2)
    results: list[IngestResult] = []
    stopped: list[VersionClaimed] = []

    def work() -> None:
        barrier.wait()
        try:
            results.append(ingest_document(IngestSource(key=GOOD_KEY, data=data), deps()))
        except VersionClaimed as exc:
            stopped.append(exc)

    # When both ingest it
    threads = [threading.Thread(target=work) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    # Then one embedded and upserted, the other stopped before embedding anything
    assert (len(results), len(stopped)) == (1, 1)
    calls = cloud.voyage.embedding_calls()
    assert [len(c["input"]) for c in calls] == [results[0].chunks] == [3]
    assert cloud.pinecone.count(NAMESPACE) == 3
    record = wiring.state_store().get_document(GOOD_DOC_ID, version_of(data))
    assert (record.status, record.attempts) == ("READY", 1)


def test_a_delivery_of_a_version_claimed_elsewhere_is_acknowledged_without_embedding(
        cloud: Cloud, corpus_dir: Path, ingest_handler, ingest_context, load_event) -> None:
    # Given another worker holding the claim of the new version
    data = cloud.aws.upload(GOOD_KEY, corpus_dir / GOOD_PDF)
    assert wiring.state_store().claim_version(GOOD_DOC_ID, version_of(data), "other-worker", 120)
    # When SQS delivers the object's event to this worker
    response = ingest_handler(load_event("sqs-s3-object-created.json"), ingest_context)
    # Then the message is acknowledged and Voyage and Pinecone are not called
    assert response == {"batchItemFailures": []}
    assert cloud.voyage.embedding_calls() == [] and cloud.pinecone.count(NAMESPACE) == 0
    # And once that claim is released (its holder failed), a redelivery ingests the version
    wiring.state_store().release_version(GOOD_DOC_ID, version_of(data), "other-worker")
    assert ingest_handler(load_event("sqs-s3-object-created.json"), ingest_context) == {"batchItemFailures": []}
    assert wiring.state_store().get_document(GOOD_DOC_ID).status == "READY"
    assert len(cloud.voyage.embedding_calls()) == 1
