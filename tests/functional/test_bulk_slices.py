"""Bulk Prepare in slices (issue 26): resumable slices, memoised query embeddings, the failure
step without model dependencies, the BulkDocumentsFailed metric. Local stores in a temporary
home, a small invented contract, in-process counting fakes for the embedder and the index."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

import pytest

from longdoc import wiring
from longdoc.observability import metrics
from longdoc.bulk import slices
from longdoc.bulk.parts import part_lines
from longdoc.bulk.steps import BulkDeps, create_bulk
from longdoc.core.documents import INCOMING_PREFIX
from longdoc.core.errors import BulkFailed, ConfigError
from longdoc.extract.catalogue import load_catalogue
from longdoc.extract.query_memo import MemoisedQueries
from longdoc.extract.runs import record_failure, start_run
from longdoc.ingest.pipeline import IngestDeps, ingest_document
from longdoc.ingest.source import IngestSource
from longdoc.local.engine import LocalContext
from longdoc.local.lambda_runtime import load_handler
from tests.fakes.retrieval_counters import CountingIndex, HashEmbedder

pytestmark = pytest.mark.filterwarnings("ignore:No application metrics to publish")
TYPES = ["Governing Law", "Insurance", "Audit Rights"]
TEXT = ("SERVICES AGREEMENT\n\nMade on 1 March 2024 between Alpha Ltd and Beta Inc.\n\n"
        "1. Governing Law. This Agreement is governed by the laws of New York.\n\n"
        "2. Insurance. The Supplier keeps liability insurance of USD 1,000,000.\n\n"
        "3. Audit. The Customer may audit the records once a year.\n")


class Killed(BaseException):
    """The Lambda runtime killing the invocation (not an Exception: nothing catches it)."""


@pytest.fixture
def local(tmp_path, monkeypatch) -> dict[str, Any]:
    """A local home with the contract ingested through the counting fakes, and bulk deps over it."""
    monkeypatch.setenv("LONGDOC_HOME", str(tmp_path))
    monkeypatch.setenv("LONGDOC_MODE", "local")
    monkeypatch.setenv("LONGDOC_MODEL", "baseline")
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    wiring.reset()
    embedder, index = HashEmbedder(), CountingIndex()
    key = INCOMING_PREFIX + "services.txt"
    wiring.blob_store().put(key, TEXT.encode())
    doc = ingest_document(IngestSource(key=key, data=TEXT.encode()),
                          IngestDeps(blobs=wiring.blob_store(), state=wiring.state_store(), embedder=embedder,
                                     index=index))
    base = wiring.bulk_deps()
    deps = replace(base, extract=replace(base.extract, embedder=MemoisedQueries(embedder), index=index),
                   limits=replace(base.limits, slice_docs=6, piece_docs=2, query_pool=3))
    yield {"deps": deps, "doc": doc.doc_id, "embedder": embedder, "index": index}
    wiring.reset()


def _job(deps: BulkDeps, doc_id: str, bulk_id: str, n: int) -> list[str]:
    runs = [start_run(deps.extract.state, load_catalogue(), doc_id=doc_id, clause_types=TYPES,
                      model_name="offline-extractive-baseline-v1", max_tokens=1024, top_k=4, run_id=f"{bulk_id}-{i}")
            for i in range(n)]
    create_bulk(deps, bulk_id, [(r.run_id, r.doc_id) for r in runs], TYPES)
    return [r.run_id for r in runs]


def _sent(deps: BulkDeps, bulk_id: str) -> list[str]:
    return [json.loads(line)["custom_id"] for _, part in deps.store.query(f"bulk#{bulk_id}", "part#0000#")
            for line in part_lines(deps.extract.blobs, part)]


def test_a_killed_slice_resumes_without_paying_again_for_its_committed_documents(local) -> None:
    # Given a job of 6 documents in one slice built 2 at a time
    deps, index = local["deps"], local["index"]
    _job(deps, local["doc"], "bk", 6)
    assert slices.plan_round(deps, "bk", 0)["slices"] == [0]
    # When the slice is killed while committing its second window (after the first was committed)
    commits = 0
    real_put = deps.store.put

    def dying_put(pk: str, sk: str, item: dict[str, Any]) -> None:
        nonlocal commits
        if sk.startswith("piece#"):
            commits += 1
            if commits == 2:
                raise Killed
        real_put(pk, sk, item)

    dying = replace(deps, store=_Wrapped(deps.store, dying_put))
    with pytest.raises(Killed):
        slices.prepare_slice(dying, "bk", 0, 0)
    queries_before = index.queries
    assert queries_before == 4 * len(TYPES)  # two windows of 2 documents had been retrieved
    # And the slice runs again (the state machine's retry)
    out = slices.prepare_slice(deps, "bk", 0, 0)
    # Then only the 4 documents outside the committed window were retrieved again
    assert index.queries - queries_before == 4 * len(TYPES)
    # And every document has exactly one request in the slice's parts
    sent = _sent(deps, "bk")
    assert out["requests"] == 6 and len(sent) == 6 == len(set(sent))
    assert slices.close_round(deps, "bk", 0) == {"bulk_id": "bk", "round": 0, "batches": 1, "requests": 6}
    # And a third run of the finished slice pays nothing
    slices.prepare_slice(deps, "bk", 0, 0)
    assert index.queries - queries_before == 4 * len(TYPES)


class _Wrapped:
    """A bulk store whose ``put`` is replaced (the rest delegated)."""

    def __init__(self, inner: Any, put: Any) -> None:
        self._inner, self.put = inner, put

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


def test_a_round_embeds_each_clause_type_query_once_not_once_per_document(local) -> None:
    # Given a job of 12 documents x 3 clause types in two slices
    deps, embedder = local["deps"], local["embedder"]
    _job(deps, local["doc"], "memo", 12)
    before = embedder.query_calls
    # When the round is prepared
    out = slices.prepare(deps, "memo", 0)
    # Then the queries were embedded once per clause type (3 calls, not 36), and indexed 36 times
    assert out["requests"] == 12 and embedder.query_calls - before == len(TYPES)
    assert len(_sent(deps, "memo")) == 12


def test_slice_parts_respect_the_batch_request_limit(local) -> None:
    # Given batches of at most 3 requests
    deps = replace(local["deps"], limits=replace(local["deps"].limits, max_requests=3))
    _job(deps, local["doc"], "lim", 6)
    # When the round is prepared (windows of 2), then its 6 requests are in parts of whole windows,
    # none over the limit (3 parts of 2: a window is never split across batches)
    assert slices.prepare(deps, "lim", 0)["batches"] == 3
    parts = [p for _, p in deps.store.query("bulk#lim", "part#0000#")]
    assert [p["requests"] for p in parts] == [2, 2, 2]


def test_the_failure_step_records_failed_when_the_model_cannot_be_built(local, monkeypatch) -> None:
    # Given a job, and bulk dependencies that cannot be built (ModelProvider=bedrock: no batches API)
    deps = local["deps"]
    _job(deps, local["doc"], "bf", 1)
    app = load_handler("bulk")

    def unbuildable() -> BulkDeps:
        raise ConfigError("bulk extraction uses the Anthropic Message Batches API; ModelProvider=bedrock has none")

    original = wiring.bulk_deps
    monkeypatch.setattr(wiring, "bulk_deps", unbuildable)
    event = {"action": "fail", "bulk_id": "bf", "round": 0, "entered": "2026-12-01T00:00:00Z",
             "error": {"Error": "ConfigError", "Cause": "ModelProvider=bedrock has none"}}
    # When RecordFailure runs, then it fails the execution with BulkFailed (not with ConfigError again)
    with pytest.raises(BulkFailed, match="ConfigError"):
        app.handler(event, LocalContext(function_name="bulk"))
    # And the failure is recorded on the job
    monkeypatch.setattr(wiring, "bulk_deps", original)  # the fixture's teardown resets the real one
    assert wiring.bulk_store().get("bulk#bf", "failure")["error"] == "ConfigError"


def test_the_recorded_failure_is_the_one_line_innermost_error_without_the_stack_trace(local) -> None:
    # Given a job and a Lambda error whose Cause carries a stack trace with server paths
    _job(local["deps"], local["doc"], "bt", 1)
    cause = json.dumps({"errorMessage": "index longdoc unreachable", "errorType": "IndexUnavailable",
                        "stackTrace": ['  File "/var/task/app.py", line 80, in handler\n',
                                       '  File "/opt/python/longdoc/bulk/slices.py", line 120\n']})
    event = {"action": "fail", "bulk_id": "bt", "round": 0, "entered": "2026-12-01T00:00:00Z",
             "error": {"Error": "IndexUnavailable", "Cause": cause}}
    # When RecordFailure runs
    with pytest.raises(BulkFailed) as caught:
        load_handler("bulk").handler(event, LocalContext(function_name="bulk"))
    # Then the stored cause (what GET returns) is one line naming the innermost error, no paths
    stored = wiring.bulk_store().get("bulk#bt", "failure")["cause"]
    assert stored == "IndexUnavailable: index longdoc unreachable"
    assert "/var/task" not in str(caught.value) and "stackTrace" not in str(caught.value)


def test_finish_emits_the_number_of_failed_documents(local, capsys, monkeypatch) -> None:
    # Given a job of 3 documents, 2 of which failed, with metrics on (an earlier test, e.g. a CLI
    # run, may have disabled them, and Powertools then keeps values buffered: clear them)
    monkeypatch.setenv("POWERTOOLS_METRICS_DISABLED", "false")
    monkeypatch.setenv("POWERTOOLS_METRICS_NAMESPACE", "longdoc")
    metrics.clear_metrics()
    deps = local["deps"]
    run_ids = _job(deps, local["doc"], "bm", 3)
    for run_id in run_ids[:2]:
        record_failure(deps.extract.state, run_id, "InvalidRequest", "bad request")
    app = load_handler("bulk")
    # When Finish runs
    out = app.handler({"action": "finish", "bulk_id": "bm"}, LocalContext(function_name="bulk"))
    # Then the EMF line carries BulkDocumentsFailed = 2 (the metric the alarm watches)
    statuses = [deps.extract.state.get_run(r).status for r in run_ids]
    assert out["failed"] == 2, statuses
    docs = [json.loads(line) for line in capsys.readouterr().out.splitlines() if line.startswith("{")]
    emitted = [d["BulkDocumentsFailed"] for d in docs if "BulkDocumentsFailed" in d]
    assert emitted and float(emitted[-1][0] if isinstance(emitted[-1], list) else emitted[-1]) == 2.0
