"""Bulk rounds read each document's context from the batch cache (issue 25, item 5; outside probe):
a document's round-N+1 request reads what its round-N request wrote: tools, system *and* its first
user block (the stable CASE_FACTS and the run's stable chunk set, 1-hour mark,
:func:`longdoc.bulk.requests.batch_params`), once round N's batch has ended.

The real ``anthropic`` SDK talks to :class:`tests.fakes.batches_server.StrictBatches`, whose batch
cache (:class:`tests.fakes.claude_cache.StrictCache`) reports a read only for a byte-identical prefix
written by a batch that has ended, over the row's minimum; the contract brain
(:class:`tests.contract.support.ExtractBrain`) searches, answers and ends its turn over three rounds.
The job is the probe's: three CUAD contracts, four clause types, Sonnet 5.5.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from longdoc import wiring
from longdoc.adapters.batches import AnthropicBatches
from longdoc.adapters.bulk_store import SqliteBulkStore
from longdoc.adapters.claude import ClaudeModel
from longdoc.bulk.driver import run_rounds
from longdoc.bulk.plan import BulkLimits, custom_id
from longdoc.bulk.runs import Stores, bulk_status
from longdoc.bulk.steps import BulkDeps, create_bulk
from longdoc.config import function_settings
from longdoc.core.documents import INCOMING_PREFIX
from longdoc.extract.catalogue import load_catalogue
from longdoc.extract.runs import start_run
from longdoc.extract.session import Deps
from longdoc.ingest.pipeline import IngestDeps, ingest_document
from longdoc.ingest.source import IngestSource
from tests.contract.support import ExtractBrain
from tests.fakes.batches_server import StrictBatches
from tests.fakes.claude_cache import StrictCache
from tests.fakes.claude_contract import model_key, row_for
from tests.fakes.strict_claude import StrictClaude

pytestmark = [pytest.mark.slow, pytest.mark.filterwarnings("ignore:No application metrics to publish")]

MODEL = "claude-sonnet-5-5"
TYPES = ["Governing Law", "Insurance", "Audit Rights", "Anti-Assignment"]
MORE = ["cuad/cardlyticsinc-maintenance-agreement1.pdf", "cuad/ehaveinc-reseller-agreement.pdf"]


def _ingest(aws_stack: Any, corpus_dir: Path, name: str) -> str:
    path = corpus_dir / name
    key = INCOMING_PREFIX + path.name
    result = ingest_document(IngestSource(key=key, data=aws_stack.upload(key, path)),
                             IngestDeps(blobs=wiring.blob_store(), state=wiring.state_store(),
                                        embedder=wiring.embedder(), index=wiring.vector_index()))
    return result.doc_id


def _item_share(usages: list[dict[str, Any]]) -> float:
    """Share of the items' input tokens (uncached + written + read) read from the cache."""
    read = sum(u["read"] for u in usages)
    return read / sum(u["input"] + u["read"] + u["write"] for u in usages)


def run_job(aws_stack: Any, ingested_contract: Any, corpus_dir: Path, tmp_path: Path,
            monkeypatch: pytest.MonkeyPatch) -> tuple[StrictBatches, BulkDeps, str, dict[str, Any]]:
    """The probe's job (3 contracts x 4 clause types) run to its end against the strict fakes."""
    doc_ids = [ingested_contract.doc_id, *(_ingest(aws_stack, corpus_dir, n) for n in MORE)]
    brain = ExtractBrain()
    with StrictBatches(brain.batch_answer, polls_to_end=1) as batches, StrictClaude(brain) as messages:
        model = ClaudeModel("test-key-not-real", MODEL, base_url=messages.base_url, max_retries=0)
        monkeypatch.setattr(wiring, "model", lambda: model)
        monkeypatch.setenv("LONGDOC_STRICT_TOOLS", "true")
        monkeypatch.setenv("LONGDOC_SEARCH_MIN_SCORE", "0")
        function_settings.cache_clear()
        base = wiring.deps()
        deps = BulkDeps(extract=Deps(state=base.state, blobs=base.blobs, embedder=base.embedder, index=base.index,
                                     model=model, catalogue=base.catalogue),
                        batches=AnthropicBatches("test-key-not-real", base_url=batches.url, max_retries=0),
                        store=SqliteBulkStore(tmp_path / "bulk.sqlite"), limits=BulkLimits(poll_first=0))
        runs = [start_run(base.state, load_catalogue(), doc_id=d, clause_types=TYPES, model_name=MODEL,
                          max_tokens=4096, top_k=4, run_id=f"run-cache-{i}") for i, d in enumerate(doc_ids)]
        create_bulk(deps, "cache", [(r.run_id, r.doc_id) for r in runs], TYPES)
        out = run_rounds(deps, "cache", sleep=lambda s: None)
    assert batches.rejected == [] and out["done"] == 3 and out["failed"] == 0
    return batches, deps, "cache", out


def test_a_documents_next_round_reads_its_context_written_by_the_round_before(
        aws_stack, ingested_contract, corpus_dir, tmp_path, monkeypatch) -> None:
    # Given the probe's job run to its end (three rounds: search, answers, end of turn)
    batches, deps, bulk_id, out = run_job(aws_stack, ingested_contract, corpus_dir, tmp_path, monkeypatch)
    assert out["rounds"] >= 3
    key = model_key(row_for(MODEL, "batch"))
    sent = {r["custom_id"]: r["params"] for b in batches.batches.values() for r in b["requests"]}
    usage = {sk.split("#")[2]: body for sk, body in deps.store.query(f"bulk#{bulk_id}", "usage#")}
    for run in range(3):
        first, second = custom_id(f"run-cache-{run}", 0), custom_id(f"run-cache-{run}", 1)
        marks, _ = StrictCache.breakpoints(key, sent[first])
        # Then each request has three breakpoints: tools, system, the stable context (CASE_FACTS + chunks)
        assert len(marks) == 3 and marks[2].tokens > marks[1].tokens + 1000
        # And round 0 read the primed tools + system and wrote its context (1 hour)
        assert usage[first]["read"] == marks[1].tokens
        assert usage[first]["write"] == usage[first]["write_1h"] == marks[2].tokens - marks[1].tokens
        # And round 1 (another batch, after round 0 ended) read all of it, chunk block included
        assert StrictCache.breakpoints(key, sent[second])[0][2].tokens == marks[2].tokens
        assert usage[second]["read"] == marks[2].tokens and usage[second]["write"] == 0
    # And over the job the items read most of their input from the cache (docs/benchmarks.md)
    share = _item_share(list(usage.values()))
    rounds = bulk_status(Stores.of(deps), bulk_id)["cache"]
    print(f"item read share {share:.4f}; per round {[r['read_share'] for r in rounds]}")
    assert share > 0.5
