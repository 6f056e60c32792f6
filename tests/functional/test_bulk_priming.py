"""Bulk caching that is read (issue 25, item 5): a one-request priming batch that has ended before the
round's batch goes out, per-item cache usage, the hit rate per round, a warning when a primed round
reads nothing, and no second priming batch on a retried or redriven step.

The real ``anthropic`` SDK talks to the loopback Batches fake (:mod:`tests.fakes.batches_server`). Its
answers come from the offline baseline; their ``usage`` comes from :class:`BatchCache` below, a cache
that holds only what a *priming* request wrote (batch items do not read each other's writes).
"""

from __future__ import annotations

import hashlib
import io
import itertools
import json
import logging
import math
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from longdoc import wiring
from longdoc.adapters.baseline import OfflineBaselineModel
from longdoc.adapters.batches import AnthropicBatches
from longdoc.adapters.bulk_store import SqliteBulkStore
from longdoc.bulk.driver import run_rounds
from longdoc.cli.bulk import print_status
from longdoc.bulk.plan import BulkLimits
from longdoc.bulk.requests import model_request
from longdoc.bulk.runs import Stores, bulk_status
from longdoc.bulk.steps import BulkDeps, create_bulk, poll_prime, prepare, prime
from longdoc.bulk.submit import PRIME_TEXT
from longdoc.extract.catalogue import load_catalogue
from longdoc.extract.runs import run_result, start_run
from longdoc.extract.session import Deps
from tests.fakes.batches_server import FakeBatches

pytestmark = pytest.mark.slow

TYPES = ["Governing Law", "Insurance", "Audit Rights"]
MODEL = "claude-sonnet-5-5"
_ids = itertools.count()


class Sonnet(OfflineBaselineModel):
    """The offline baseline under the Sonnet 5.5 id, so rounds are priced and primed like Claude's."""

    name = MODEL


def _prefix(params: dict[str, Any]) -> tuple[str, int]:
    """(hash, tokens) of tools + system, the prefix up to the last 1-hour breakpoint (4 chars/token)."""
    blocks = [*params.get("tools", []), *params.get("system", [])]
    text = json.dumps(blocks, sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(text.encode()).hexdigest(), math.ceil(len(text) / 4)


class BatchCache:
    """The Batches-side prompt cache of these tests: a priming request writes its prefix; other
    requests read it when it was written, else pay it as input (never written by an item)."""

    def __init__(self) -> None:
        self.written: set[str] = set()
        self.priming_requests: list[dict[str, Any]] = []
        self.priming_usage: dict[str, Any] | None = None  # the priming result's usage (default: from the prefix)

    def __call__(self, params: dict[str, Any]) -> dict[str, Any]:
        key, tokens = _prefix(params)
        priming = params["messages"][0]["content"][0].get("text") == PRIME_TEXT
        if priming:
            self.priming_requests.append(params)
            self.written.add(key)
            return {"id": "msg_prime", "type": "message", "role": "assistant", "model": params["model"],
                    "content": [{"type": "text", "text": "OK"}], "stop_reason": "end_turn", "stop_sequence": None,
                    "usage": self.priming_usage or {"input_tokens": 10, "output_tokens": 1,
                                                    "cache_creation_input_tokens": tokens, "cache_read_input_tokens": 0}}
        response = OfflineBaselineModel().create(model_request(params))
        body = {"type": "message", "role": "assistant", "stop_sequence": None,
                **response.model_dump(mode="json", exclude={"usage"})}
        read = tokens if key in self.written else 0
        usage = {"input_tokens": 2000 + tokens - read, "cache_creation_input_tokens": 0,
                 "cache_read_input_tokens": read}
        return {**body, "usage": {**usage, "output_tokens": response.usage.output_tokens}}


@pytest.fixture
def cache() -> BatchCache:
    return BatchCache()


@pytest.fixture
def fake(cache: BatchCache):
    with FakeBatches(cache, polls_to_end=2) as server:
        yield server


def _deps(fake: FakeBatches, tmp_path: Path) -> BulkDeps:
    base = wiring.deps()
    extract = Deps(state=base.state, blobs=base.blobs, embedder=base.embedder, index=base.index, model=Sonnet(),
                   catalogue=base.catalogue)
    return BulkDeps(extract=extract, batches=AnthropicBatches("test-key-not-real", base_url=fake.url, max_retries=0),
                    store=SqliteBulkStore(tmp_path / "bulk.sqlite"), limits=BulkLimits(poll_first=0))


def _bulk(deps: BulkDeps, doc, copies: int) -> str:
    bulk_id = f"prime{next(_ids)}"
    runs = [start_run(deps.extract.state, load_catalogue(), doc_id=doc.doc_id, clause_types=TYPES, model_name=MODEL,
                      max_tokens=4096, top_k=4, run_id=f"run-{bulk_id}-{i}") for i in range(copies)]
    create_bulk(deps, bulk_id, [(r.run_id, r.doc_id) for r in runs], TYPES)
    return bulk_id


class Recording:
    """The batch client, recording each create and, for a round's batch, whether the round's priming
    batch had ended at that moment."""

    def __init__(self, inner: AnthropicBatches) -> None:
        self.inner = inner
        self.created: list[tuple[str, int, bool | None]] = []
        self.priming: list[str] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def create(self, requests: list[dict[str, Any]]):
        priming = requests[0]["custom_id"].startswith("prime-")
        ended = None if priming or not self.priming else (
            self.inner.retrieve(self.priming[-1]).processing_status == "ended")
        info = self.inner.create(requests)
        if priming:
            self.priming.append(info.id)
        self.created.append((info.id, len(requests), ended))
        return info


def test_a_round_is_primed_by_a_one_request_batch_that_ends_first(aws_stack, ingested_contract, fake, cache,
                                                                  tmp_path) -> None:
    # Given a bulk job of three runs of the contract on a model with a prompt cache
    deps = _deps(fake, tmp_path)
    recording = Recording(deps.batches)  # type: ignore[arg-type]
    deps = BulkDeps(extract=deps.extract, batches=recording, store=deps.store, limits=deps.limits)
    bulk_id = _bulk(deps, ingested_contract, 3)
    # When its rounds run (Prime, wait for it, Submit, wait, Harvest, as the state machine does)
    out = run_rounds(deps, bulk_id, sleep=lambda _: None)
    assert out["pending"] == 0
    # Then each round created a one-request priming batch first, and its batch only once that had ended
    first_round = recording.created[:2]
    assert first_round[0][1] == 1 and first_round[0][0] == recording.priming[0]
    assert first_round[1][1] == 3 and first_round[1][2] is True
    assert all(ended is True for _, size, ended in recording.created if size > 1)
    # And the priming request's prefix (model, tools, system, their 1-hour marks, settings) is the items'
    round_items = fake.batches[first_round[1][0]]["requests"]
    primer = fake.batches[first_round[0][0]]["requests"][0]["params"]
    for item in round_items:
        params = item["params"]
        assert primer["tools"] == params["tools"] and primer["system"] == params["system"]
        assert {k: v for k, v in primer.items() if k not in ("messages", "max_tokens")} == {
            k: v for k, v in params.items() if k not in ("messages", "max_tokens")}
        assert params["system"][-1]["cache_control"] == {"type": "ephemeral", "ttl": "1h"}
    # And the hit rate is recorded per round: every item read the primed prefix
    rounds = bulk_status(Stores.of(deps), bulk_id)["cache"]
    assert rounds[0]["round"] == 0 and rounds[0]["primed"] is True
    assert rounds[0]["items"] == 3 and rounds[0]["reading"] == 3 and rounds[0]["hit_rate"] == 1.0
    assert rounds[0]["read_tokens"] == 3 * _prefix(round_items[0]["params"])[1] and not rounds[0]["primed_miss"]
    # And each item's billed usage is kept
    usage = deps.store.query(f"bulk#{bulk_id}", "usage#0000#")
    assert len(usage) == 3 and all(body["read"] > 0 and body["write"] == 0 for _, body in usage)


def test_the_priming_batches_usage_and_cost_count_in_the_jobs_cost(aws_stack, ingested_contract, fake, cache,
                                                                   tmp_path) -> None:
    # Given priming results billed as the API bills them: 10 input tokens, the shared prefix written
    # with the 1-hour TTL (3,000 tokens), 1 output token
    cache.priming_usage = {"input_tokens": 10, "output_tokens": 1, "cache_creation_input_tokens": 3000,
                           "cache_read_input_tokens": 0,
                           "cache_creation": {"ephemeral_5m_input_tokens": 0, "ephemeral_1h_input_tokens": 3000}}
    deps = _deps(fake, tmp_path)
    bulk_id = _bulk(deps, ingested_contract, 2)
    # When the job runs to its end
    run_rounds(deps, bulk_id, sleep=lambda _: None)
    status = bulk_status(Stores.of(deps), bulk_id)
    # Then each primed round's priming usage was kept once, with the model it ran on
    primed = len(deps.store.query(f"bulk#{bulk_id}", "prime#"))
    kept = deps.store.query(f"bulk#{bulk_id}", "primeusage#")
    assert primed >= 1 and len(kept) == primed == len(cache.priming_requests)
    assert kept[0][1]["model"] == MODEL and kept[0][1]["usage"]["cache_creation_1h_input_tokens"] == 3000
    # And it is shown apart: Sonnet 5.5 at 2 USD/MTok input, 4 USD/MTok 1-hour writes, 10 USD/MTok output:
    # (10 x 2 + 3000 x 4 + 1 x 10) / 1e6 = 0.012030 USD a request, half that at batch prices
    assert status["priming"] == {
        "batches": primed, "sync_cost_usd": str(Decimal("0.012030") * primed),
        "cost_usd": str(Decimal("0.006015") * primed),
        "usage": {"input_tokens": 10 * primed, "output_tokens": primed, "cache_creation_input_tokens": 3000 * primed,
                  "cache_read_input_tokens": 0, "cache_creation_1h_input_tokens": 3000 * primed}}
    # And the job's cost and usage include it, on top of the items' (the runs' usage at batch prices)
    runs = [run_result(deps.extract.state, item["run_id"]) for _, item in deps.store.query(f"bulk#{bulk_id}", "run#")]
    items = sum(Decimal(r["cost_usd"]) for r in runs)
    assert status["sync_cost_usd"] == str((items + Decimal("0.012030") * primed).quantize(Decimal("0.000001")))
    assert status["cost_usd"] == str((items / 2 + Decimal("0.006015") * primed).quantize(Decimal("0.000001")))
    assert status["usage"]["cache_creation_1h_input_tokens"] == 3000 * primed + sum(
        r["usage"]["cache_creation_1h_input_tokens"] for r in runs)
    assert status["usage"]["output_tokens"] == primed + sum(r["usage"]["output_tokens"] for r in runs)
    # And `longdoc bulk status` shows it on a line of its own
    table = io.StringIO()
    print_status(status, table)
    assert (f"  priming: {primed} one-request batches, {status['priming']['cost_usd']} USD at batch prices "
            f"(synchronous: {status['priming']['sync_cost_usd']} USD), included in the cost") in table.getvalue()
    # And a re-run PollPriming (a retry, a redrive) records it no second time
    assert poll_prime(deps, bulk_id, 0, 0)["ended"] is True
    assert bulk_status(Stores.of(deps), bulk_id)["priming"] == status["priming"]


def test_a_primed_round_that_reads_nothing_is_flagged(aws_stack, ingested_contract, fake, cache, tmp_path,
                                                      caplog) -> None:
    # Given a cache that forgets what the priming batch wrote (expired, or another prefix)
    deps = _deps(fake, tmp_path)
    bulk_id = _bulk(deps, ingested_contract, 2)
    cache.written = type("Forgetful", (set,), {"add": lambda self, key: None})()
    # When the job's first round runs
    with caplog.at_level(logging.WARNING, logger="longdoc.bulk.steps"):
        out = run_rounds(deps, bulk_id, sleep=lambda _: None)
    # Then the round is recorded as primed with nothing read, and a warning says so
    assert out["cache"]["round"] >= 0
    first = bulk_status(Stores.of(deps), bulk_id)["cache"][0]
    assert first["primed"] and first["items"] == 2 and first["reading"] == 0 and first["hit_rate"] == 0.0
    assert first["primed_miss"] is True
    assert any("primed but its 2 items read nothing" in r.getMessage() for r in caplog.records)


def test_a_retried_or_redriven_prime_creates_no_second_priming_batch(aws_stack, ingested_contract, fake, cache,
                                                                     tmp_path) -> None:
    # Given a prepared round of two runs
    deps = _deps(fake, tmp_path)
    bulk_id = _bulk(deps, ingested_contract, 2)
    prepare(deps, bulk_id, 0)
    # When Prime runs, then runs again (a retry, a redrive)
    first = prime(deps, bulk_id, 0)
    second = prime(deps, bulk_id, 0)
    # Then one priming batch exists, recorded in the bulk store, and both calls name it
    assert first == second == {"primed": True, "priming_batch": first["priming_batch"]}
    assert fake.created() == 1 and len(cache.priming_requests) == 1
    assert deps.store.get(f"bulk#{bulk_id}", "prime#0000") == {"batch_id": first["priming_batch"]}
    # And a Prime that died after the API's create, before recording the id (the store as it was
    # then: the write-ahead intent, no prime# item), adopts that batch from the batch list
    pk = f"bulk#{bulk_id}"
    lost = SqliteBulkStore(tmp_path / "lost.sqlite")
    for sk, body in deps.store.query(pk):
        if sk != "prime#0000":
            lost.put(pk, sk, body)
    crashed = BulkDeps(extract=deps.extract, batches=deps.batches, store=lost, limits=deps.limits)
    assert prime(crashed, bulk_id, 0) == first
    assert fake.created() == 1 and lost.get(pk, "prime#0000") == {"batch_id": first["priming_batch"], "adopted": True}


def test_a_round_of_one_request_or_an_uncached_model_is_not_primed(aws_stack, ingested_contract, fake, tmp_path) -> None:
    # Given a round of one request, and a round on the offline baseline (no prompt cache)
    deps = _deps(fake, tmp_path)
    lone = _bulk(deps, ingested_contract, 1)
    prepare(deps, lone, 0)
    offline = BulkDeps(extract=Deps(**{**deps.extract.__dict__, "model": OfflineBaselineModel()}),
                       batches=deps.batches, store=deps.store, limits=deps.limits)
    two = _bulk(offline, ingested_contract, 2)
    prepare(offline, two, 0)
    # Then neither is primed and no batch is created for it
    assert prime(deps, lone, 0) == {"primed": False, "priming_batch": None}
    assert prime(offline, two, 0) == {"primed": False, "priming_batch": None}
    assert fake.created() == 0


def test_the_harvest_step_emits_a_warning_metric_for_a_primed_round_that_read_nothing(
        aws_stack, emf_documents, capsys, monkeypatch) -> None:
    # Given metrics on, and a Harvest whose round was primed but read nothing from the cache
    from longdoc.bulk import steps
    from longdoc.local.engine import LocalContext
    from longdoc.local.lambda_runtime import load_handler
    from longdoc.observability import metrics

    monkeypatch.setenv("POWERTOOLS_METRICS_DISABLED", "false")
    monkeypatch.setenv("POWERTOOLS_METRICS_NAMESPACE", "longdoc")
    metrics.clear_metrics()
    miss = {"round": 0, "primed": True, "items": 2, "reading": 0, "hit_rate": 0.0, "read_share": 0.0,
            "input_tokens": 9000, "read_tokens": 0, "write_tokens": 0, "primed_miss": True}
    monkeypatch.setattr(steps, "harvest", lambda deps, bulk_id, round_number: {
        "bulk_id": bulk_id, "round": 1, "pending": 0, "done": 2, "failed": 0, "cache": miss})
    # When the bulk function runs the Harvest step
    out = load_handler("bulk").handler({"action": "harvest", "bulk_id": "b1", "round": 0},
                                       LocalContext(function_name="bulk", timeout_seconds=900))
    # Then its output carries the round's hit rate (the state machine's Harvest output shows it)
    assert out["cache_hit_rate"] == 0.0
    # And it emits the warning metric BulkPrimedRoundCacheMiss, with the tokens read (none)
    docs = emf_documents(capsys.readouterr().out)
    assert any(doc.get("BulkPrimedRoundCacheMiss") in (1, 1.0, [1.0]) for doc in docs), docs
    assert any("BulkCacheReadInputTokens" in doc for doc in docs)
