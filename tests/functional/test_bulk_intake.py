"""Issue 26: a bulk job's runs are created by the machine's first state (``CreateRuns``), in batches,
with the job item written last; ``GET`` pages documents from counters on the job item.

SQLite stores on ``tmp_path`` and the DynamoDB adapters on moto's table (no network).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest
from moto import mock_aws

from longdoc.adapters.blob import LocalBlobStore
from longdoc.adapters.bulk_store import SqliteBulkStore
from longdoc.adapters.bulk_store_dynamo import DynamoBulkStore
from longdoc.adapters.state import DynamoStateStore, SqliteStateStore
from longdoc.bulk.intake import StoredRequest, bulk_page, create_runs, record_counts, rejected_key, submit_request
from longdoc.bulk.runs import Stores
from longdoc.core.errors import IdempotencyConflict, NoDocumentAccepted, NotFound, TooManyRuns
from longdoc.core.admission import Admission
from longdoc.core.models import DocumentRecord
from tests.functional.test_store_contracts import TABLE, create_table


def _ready(doc_id: str) -> DocumentRecord:
    return DocumentRecord(doc_id=doc_id, doc_version="abcd1234abcd1234", source=f"{doc_id}.pdf", status="READY",
                          pages=1, chunks=1, content_sha256="ab" * 32, updated_at="2025-01-31T12:00:00+00:00")


def _request(bulk_id: str, doc_ids: list[str], owner: str | None = "arn:aws:iam::1:user/alice") -> StoredRequest:
    return StoredRequest(bulk_id=bulk_id, owner=owner, clause_types=["Governing Law"], doc_ids=doc_ids,
                         model="offline-extractive-baseline-v1", max_tokens=4096, top_k=4)


@pytest.fixture(params=["sqlite", "dynamodb"])
def stores(request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Stores]:
    if request.param == "sqlite":
        yield Stores(SqliteStateStore(tmp_path / "state.sqlite3"), SqliteBulkStore(tmp_path / "bulk.sqlite3"))
        return
    for name, value in {"AWS_DEFAULT_REGION": "us-east-1", "AWS_ACCESS_KEY_ID": "testing",
                        "AWS_SECRET_ACCESS_KEY": "testing"}.items():
        monkeypatch.setenv(name, value)
    with mock_aws():
        client = boto3.client("dynamodb")
        create_table(client)
        yield Stores(DynamoStateStore(TABLE, client), DynamoBulkStore(TABLE, client))


def test_create_runs_writes_every_run_then_the_job_and_pages_them(stores: Stores, tmp_path: Path) -> None:
    # Given 60 READY documents and a stored request for them plus two unknown ids
    blobs = LocalBlobStore(tmp_path / "blobs")
    for n in range(60):
        stores.state.put_document(_ready(f"doc-{n:03d}"))
    ids = [f"doc-{n:03d}" for n in range(60)] + ["ghost-1", "ghost-2"]
    submit_request(stores, blobs, _request("bulk-a", ids), "h" * 64)
    # When CreateRuns runs
    assert create_runs(stores, blobs, "bulk-a") == {"bulk_id": "bulk-a", "runs": 60, "rejected": 2}
    # Then the job item holds the counters, every run is PENDING, and GET pages 25 at a time
    seen, token, pages = [], None, 0
    while True:
        page = bulk_page(stores, blobs, "bulk-a", caller="arn:aws:iam::1:user/alice", limit=25, next_token=token)
        seen += [d["doc_id"] for d in page["documents"]]
        assert {d["status"] for d in page["documents"]} == {"PENDING"}
        pages, token = pages + 1, page["next_token"]
        if token is None:
            break
    assert seen == ids[:60] and pages in (3, 4)  # DynamoDB may say "more" on an exactly full last page
    first = bulk_page(stores, blobs, "bulk-a", limit=25)
    assert (first["pending"], first["done"], first["runs"], first["requested"], first["status"]) == (60, 0, 60, 62, "RUNNING")
    assert [r["where"] for r in first["rejected"]] == ["ghost-1", "ghost-2"]
    # And counters recorded after a round are what GET reads
    record_counts(stores, "bulk-a", {"pending": 10, "done": 45, "failed": 5}, 0)
    assert (bulk_page(stores, blobs, "bulk-a")["done"], bulk_page(stores, blobs, "bulk-a")["counted_round"]) == (45, 0)
    # And another caller reads nothing of it
    with pytest.raises(NotFound):
        bulk_page(stores, blobs, "bulk-a", caller="arn:aws:iam::1:user/bob")


def test_a_create_runs_killed_before_the_job_item_leaves_no_job_and_its_retry_completes_it(
        stores: Stores, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Given 30 READY documents and their stored request
    blobs = LocalBlobStore(tmp_path / "blobs")
    for n in range(30):
        stores.state.put_document(_ready(f"d{n}"))
    submit_request(stores, blobs, _request("bulk-k", [f"d{n}" for n in range(30)]), "k" * 64)
    # When the invocation dies after the runs were written but before the run# items and the job
    real = stores.store.put_many

    def killed(pk: str, items: list[tuple[str, dict[str, Any]]]) -> None:
        raise KeyboardInterrupt("Lambda timed out")

    monkeypatch.setattr(stores.store, "put_many", killed)
    with pytest.raises(KeyboardInterrupt):
        create_runs(stores, blobs, "bulk-k")
    # Then there is no job (GET says CREATING): never a job silently lacking documents
    assert stores.store.get("bulk#bulk-k", "job") is None
    assert bulk_page(stores, blobs, "bulk-k")["status"] == "CREATING"
    # When the state is retried
    monkeypatch.setattr(stores.store, "put_many", real)
    create_runs(stores, blobs, "bulk-k")
    # Then the job has all 30 runs, and a further retry changes nothing
    assert stores.store.get("bulk#bulk-k", "job")["runs"] == 30
    assert len(stores.store.query("bulk#bulk-k", "run#")) == 30
    assert create_runs(stores, blobs, "bulk-k")["runs"] == 30


@pytest.mark.slow  # thousands of rows through moto DynamoDB (about 8 CPU-s)
def test_thousands_of_rejections_go_to_the_blob_store_not_an_item(stores: Stores, tmp_path: Path) -> None:
    # Given a request of 1 READY document and 4,000 unknown ids of 100 characters (over 400 KB of reasons)
    blobs = LocalBlobStore(tmp_path / "blobs")
    stores.state.put_document(_ready("real"))
    ghosts = [f"ghost-{n:05d}-" + "x" * 88 for n in range(4000)]
    submit_request(stores, blobs, _request("bulk-r", ["real", *ghosts]), "r" * 64)
    # When CreateRuns runs
    create_runs(stores, blobs, "bulk-r")
    # Then the rejections are one blob and the job item stays small (a count)
    rejected = json.loads(blobs.get(rejected_key("bulk-r")))
    assert len(rejected) == 4000 and len(blobs.get(rejected_key("bulk-r"))) > 400_000
    job = stores.store.get("bulk#bulk-r", "job")
    assert job["rejected"] == 4000 and len(json.dumps(job)) < 1000
    # And GET shows the first 1,000 and the count
    page = bulk_page(stores, blobs, "bulk-r")
    assert len(page["rejected"]) == 1000 and page["rejected_count"] == 4000


def test_submit_is_idempotent_refuses_another_body_and_admits_at_the_cap(stores: Stores, tmp_path: Path) -> None:
    blobs = LocalBlobStore(tmp_path / "blobs")
    full = Admission(count_running=lambda cap: cap, cap=1, retry_after_seconds=30, what="bulk jobs")
    # Given the cap reached: a new job is refused and nothing is stored
    with pytest.raises(TooManyRuns, match="1 bulk jobs are running"):
        submit_request(stores, blobs, _request("bulk-i", ["a"]), "1" * 64, full)
    assert stores.store.get("bulk#bulk-i", "request") is None
    # When admitted, then retried at the cap: the retry is answered without counting
    first = submit_request(stores, blobs, _request("bulk-i", ["a"]), "1" * 64)
    assert submit_request(stores, blobs, _request("bulk-i", ["a"]), "1" * 64, full) == first
    # And the same id with another body is a conflict
    with pytest.raises(IdempotencyConflict):
        submit_request(stores, blobs, _request("bulk-i", ["b"]), "2" * 64)
    # And a job with nothing READY is committed with zero runs, then fails
    with pytest.raises(NoDocumentAccepted):
        create_runs(stores, blobs, "bulk-i")
    assert stores.store.get("bulk#bulk-i", "job")["runs"] == 0


def test_create_runs_on_dynamodb_writes_in_batches_of_25(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Given the DynamoDB adapters with every call counted, and 120 READY documents
    for name, value in {"AWS_DEFAULT_REGION": "us-east-1", "AWS_ACCESS_KEY_ID": "testing",
                        "AWS_SECRET_ACCESS_KEY": "testing"}.items():
        monkeypatch.setenv(name, value)
    with mock_aws():
        client = boto3.client("dynamodb")
        create_table(client)
        stores = Stores(DynamoStateStore(TABLE, client), DynamoBulkStore(TABLE, client))
        blobs = LocalBlobStore(tmp_path / "blobs")
        for n in range(120):
            stores.state.put_document(_ready(f"doc-{n}"))
        submit_request(stores, blobs, _request("bulk-d", [f"doc-{n}" for n in range(120)]), "d" * 64)
        calls: list[tuple[str, int]] = []

        def count(params: dict[str, Any], **_: Any) -> None:
            calls.append(("batch", sum(len(v) for v in params["RequestItems"].values())))

        client.meta.events.register("provide-client-params.dynamodb.BatchWriteItem", count)
        puts: list[str] = []
        client.meta.events.register("provide-client-params.dynamodb.PutItem",
                                    lambda params, **_: puts.append(params["Item"]["sk"]["S"]))
        # When CreateRuns runs
        create_runs(stores, blobs, "bulk-d")
        # Then runs and run# items went out in BatchWriteItem calls of at most 25 (2 x 120 / 25 -> 10
        # calls), and the one PutItem after them is the job item (the commit marker)
        assert len(calls) == 10 and max(n for _, n in calls) == 25 and sum(n for _, n in calls) == 240
        assert puts == ["job"]
        page = bulk_page(stores, blobs, "bulk-d", limit=100)
        assert len(page["documents"]) == 100 and page["next_token"]


def test_finish_keeps_the_jobs_cost_on_its_item_and_get_returns_it(stores: Stores, tmp_path: Path) -> None:
    # Given a created job of 3 documents (offline baseline model)
    from longdoc.bulk.runs import bulk_status, write_results
    blobs = LocalBlobStore(tmp_path / "blobs")
    for n in range(3):
        stores.state.put_document(_ready(f"doc-{n}"))
    submit_request(stores, blobs, _request("bulk-c", [f"doc-{n}" for n in range(3)]), "c" * 64)
    create_runs(stores, blobs, "bulk-c")
    assert bulk_page(stores, blobs, "bulk-c")["cost_usd"] is None  # nothing priced before Finish
    # When Finish writes the results and keeps the counters (as the bulk handler's Finish does)
    written = write_results(stores, blobs, "bulk-c")
    record_counts(stores, "bulk-c", written, 1, finished=True)
    # Then GET reports the same cost as the full status does, as decimal strings, from the job item alone
    page, status = bulk_page(stores, blobs, "bulk-c"), bulk_status(stores, "bulk-c")
    assert page["status"] == "SUCCEEDED"
    assert (page["cost_usd"], page["sync_cost_usd"], page["cost"]) == (
        status["cost_usd"], status["sync_cost_usd"], status["cost"])
    assert written["cost"] == status["cost"] and isinstance(status["cost"], str)


def test_get_after_the_rejections_expired_serves_the_status(stores: Stores, tmp_path: Path) -> None:
    # Given a created job with one rejection, whose bulk/<id>/rejected.json the lifecycle rule deleted
    blobs = LocalBlobStore(tmp_path / "blobs")
    stores.state.put_document(_ready("doc-1"))
    submit_request(stores, blobs, _request("bulk-x", ["doc-1", "ghost"]), "x" * 64)
    create_runs(stores, blobs, "bulk-x")
    blobs.delete(rejected_key("bulk-x"))
    # When GET reads it
    page = bulk_page(stores, blobs, "bulk-x", caller="arn:aws:iam::1:user/alice")
    # Then the status and counts are served, the list marked expired (its count kept)
    assert (page["status"], page["runs"], page["rejected_count"]) == ("RUNNING", 1, 1)
    assert page["rejected"] is None and page["rejected_expired"] is True
