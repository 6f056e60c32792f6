"""Bulk resolves what extract resolves: the 39 CUAD categories over several contracts give the same
status per clause type through the Message Batches rounds (the real ``statemachine/bulk.asl.json``
and bulk handler in the local engine, :class:`~longdoc.adapters.batches.LocalBatches` answering
from the offline baseline) as through the synchronous session loop.

Before the search budget was the conversation's, each bulk round was a fresh budget: a
``record_not_found`` the synchronous loop accepted (its session's budget spent on searches) was
refused in the next round ("call search_chunks ..."), the reply repeated it, and every contract
failed with ``NoProgress`` while extract resolved every category."""

from __future__ import annotations

from pathlib import Path

import pytest

from longdoc import wiring
from longdoc.bulk.runs import Selection, Stores, bulk_status, execution_input, start_bulk
from longdoc.extract.catalogue import load_catalogue
from longdoc.extract.runs import start_run
from longdoc.extract.session import run_session
from longdoc.local.engine import LocalStepFunctions

pytestmark = [pytest.mark.slow, pytest.mark.filterwarnings("ignore:No application metrics to publish")]

REPO = Path(__file__).resolve().parents[2]
CASES = REPO / "tests" / "data" / "cases"
CUAD_39 = [c.strip() for c in (CASES / "cuad-39-clause-types.txt").read_text(encoding="utf-8").split(",") if c.strip()]
BASELINE = "offline-extractive-baseline-v1"




def _ingest(aws_stack, path: Path) -> str:
    from longdoc.core.documents import INCOMING_PREFIX
    from longdoc.ingest.pipeline import IngestDeps, ingest_document
    from longdoc.ingest.source import IngestSource

    key = INCOMING_PREFIX + path.name
    result = ingest_document(IngestSource(key=key, data=aws_stack.upload(key, path)),
                             IngestDeps(blobs=wiring.blob_store(), state=wiring.state_store(),
                                        embedder=wiring.embedder(), index=wiring.vector_index()))
    return result.doc_id


def _statuses(state, run_id: str) -> dict[str, str]:
    """Clause type -> status of its final extraction."""
    out: dict[str, str] = {}
    for e in state.list_extractions(run_id):
        out[e.clause_type] = "found" if e.status == "found" or out.get(e.clause_type) == "found" else e.status
    return out


def test_the_39_cuad_categories_get_the_same_statuses_in_bulk_and_extract(aws_stack, corpus_dir, bulk_app) -> None:
    # Given the one-chunk services agreement and two small CUAD contracts, ingested
    paths = [CASES / "small-services-agreement.txt",
             corpus_dir / "cuad" / "herimports-maintenance-agreement.txt",
             corpus_dir / "cuad" / "chipmostechnologiesbermudaltd-strategic-alliance-agreement.txt"]
    doc_ids = [_ingest(aws_stack, p) for p in paths]
    deps = wiring.bulk_deps()
    accepted = start_bulk(Stores.of(deps), load_catalogue(), "bulk-39", Selection(doc_ids=doc_ids),
                          clause_types=CUAD_39, model_name=BASELINE, max_tokens=4096, top_k=8)
    assert accepted.doc_ids == doc_ids
    # When the bulk job runs through the real state machine and handler
    with LocalStepFunctions(REPO / "statemachine" / "bulk.asl.json", {"BulkFunctionArn": bulk_app.handler}) as sfn:
        execution = sfn.wait(sfn.start_execution("bulk-39", execution_input("bulk-39")), timeout_seconds=600)
    assert execution.status == "SUCCEEDED", (execution.error, execution.cause)
    status = bulk_status(Stores.of(deps), "bulk-39")
    # Then every document is done and the job says SUCCEEDED
    assert [d["status"] for d in status["documents"]] == ["SUCCEEDED"] * 3, [d["error"] for d in status["documents"]]
    assert (status["status"], status["done"], status["failed"]) == ("SUCCEEDED", 3, 0)
    # And each document's statuses equal the synchronous loop's, clause type by clause type
    state = deps.extract.state
    for n, (doc_id, document) in enumerate(zip(doc_ids, status["documents"], strict=True)):
        sync = start_run(state, load_catalogue(), doc_id=doc_id, clause_types=CUAD_39, model_name=BASELINE,
                         max_tokens=4096, top_k=8, run_id=f"run-sync-{n}")
        while run_session(deps.extract, sync.run_id, deps.options).status != "DONE":
            pass
        bulk, extract = _statuses(state, document["run_id"]), _statuses(state, sync.run_id)
        assert sorted(extract) == sorted(CUAD_39)
        assert bulk == extract, {c: (bulk.get(c), extract[c]) for c in CUAD_39 if bulk.get(c) != extract[c]}
