"""Submit's crash window: the process dies after the Batches API created the batch and before the
batch id is recorded; the retried Submit must not create a second batch. The real ``anthropic``
SDK against the loopback Message Batches fake (create, list, retrieve, results)."""

from __future__ import annotations

import itertools
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from longdoc import wiring
from longdoc.adapters.baseline import OfflineBaselineModel
from longdoc.adapters.batches import AnthropicBatches
from longdoc.adapters.bulk_store import SqliteBulkStore
from longdoc.bulk.driver import run_rounds
from longdoc.bulk.plan import BulkLimits
from longdoc.bulk.requests import model_request
from longdoc.bulk.steps import BulkDeps, create_bulk, prepare, submit
from longdoc.core.errors import BatchNotListedYet
from longdoc.extract.catalogue import load_catalogue
from longdoc.extract.runs import start_run
from longdoc.extract.session import Deps
from tests.fakes.batches_server import FakeBatches

pytestmark = [pytest.mark.slow, pytest.mark.filterwarnings("ignore:No application metrics to publish")]

TYPES = ["Governing Law", "Insurance"]
_ids = itertools.count()


def _answer(params: dict[str, Any]) -> dict[str, Any]:
    response = OfflineBaselineModel().create(model_request(params))
    return {"type": "message", "role": "assistant", "stop_sequence": None,
            **response.model_dump(exclude={"stop_details"})}


@pytest.fixture
def fake():
    with FakeBatches(_answer) as server:
        yield server


class DiesOnCreate:
    """The SDK client, except that its ``n``-th ``create`` kills the process once the API has
    answered (``before=True``: before the request is sent); earlier creates pass through."""

    def __init__(self, real: AnthropicBatches, n: int = 1, before: bool = False) -> None:
        self.real, self.n, self.before, self.calls = real, n, before, 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self.real, name)

    def create(self, requests: list[dict[str, Any]]) -> Any:
        self.calls += 1
        if self.calls < self.n:
            return self.real.create(requests)
        if not self.before:
            self.real.create(requests)
        raise KeyboardInterrupt("killed between create and the write of the batch id")


def _job(fake: FakeBatches, tmp_path: Path, **limits: int) -> tuple[BulkDeps, str]:
    extract = wiring.deps()
    extract = Deps(state=extract.state, blobs=extract.blobs, embedder=extract.embedder, index=extract.index,
                   model=OfflineBaselineModel(), catalogue=extract.catalogue)
    deps = BulkDeps(extract=extract, batches=AnthropicBatches("test-key-not-real", base_url=fake.url, max_retries=0),
                    store=SqliteBulkStore(tmp_path / "bulk.sqlite"), limits=BulkLimits(poll_first=0, **limits))
    return deps, f"bulk-submit{next(_ids)}"


def _start(deps: BulkDeps, bulk_id: str, doc_id: str, runs: int) -> list[str]:
    started = [start_run(deps.extract.state, load_catalogue(), doc_id=doc_id, clause_types=TYPES,
                         model_name="offline-extractive-baseline-v1", max_tokens=4096, top_k=4,
                         run_id=f"{bulk_id}-{i}") for i in range(runs)]
    create_bulk(deps, bulk_id, [(r.run_id, r.doc_id) for r in started], TYPES)
    return [r.run_id for r in started]


def test_submit_killed_between_create_and_record_adopts_its_batch_on_retry(aws_stack, ingested_contract, fake,
                                                                            tmp_path) -> None:
    # Given a round of two parts (one request each), and another job's batch of one request created
    # a minute before this Submit (within the clock-skew margin: it must not be mistaken for ours)
    deps, bulk_id = _job(fake, tmp_path, max_requests=1)
    runs = _start(deps, bulk_id, ingested_contract.doc_id, 2)
    assert prepare(deps, bulk_id, 0)["batches"] == 2
    fake.clock = lambda: time.time() - 60
    fake.outcomes["other-job-r0"] = {"type": "expired"}
    deps.batches.create([{"custom_id": "other-job-r0", "params": {"model": "m", "max_tokens": 8, "messages": [{"role": "user", "content": "x"}]}}])
    fake.clock = time.time
    # When Submit records part 0's batch, then dies after the API created part 1's
    with pytest.raises(KeyboardInterrupt):
        submit(replace(deps, batches=DiesOnCreate(deps.batches, n=2)), bulk_id, 0)
    assert fake.created() == 3  # the other job's, part 0's, part 1's
    assert deps.store.get(f"bulk#{bulk_id}", "batch#0000#0000-001") is None  # the id was never recorded
    # And the Submit is retried
    out = submit(deps, bulk_id, 0)
    # Then no batch was created: part 1 adopted the batch its interrupted create made
    assert out == {"submitted": 0} and fake.created() == 3
    ids = [deps.store.get(f"bulk#{bulk_id}", f"batch#0000#0000-{p:03d}")["batch_id"] for p in (0, 1)]
    assert ids == ["msgbatch_0001", "msgbatch_0002"]
    # And the job finishes with each run answered once per round: round 0 from the two adopted
    # batches, round 1 (the baseline's search answered, issue 20) from new ones
    out = run_rounds(deps, bulk_id, sleep=lambda s: None)
    assert (out["done"], out["failed"], out["rounds"]) == (2, 0, 2) and fake.created() == 3 + 2
    assert all(deps.extract.state.load_checkpoint(r).version == 2 for r in runs)


def test_submit_killed_before_create_creates_once_the_list_has_settled(aws_stack, ingested_contract, fake,
                                                                       tmp_path) -> None:
    # Given a Submit that died after writing its intent, before the API saw the create
    deps, bulk_id = _job(fake, tmp_path)
    _start(deps, bulk_id, ingested_contract.doc_id, 1)
    prepare(deps, bulk_id, 0)
    with pytest.raises(KeyboardInterrupt):
        submit(replace(deps, batches=DiesOnCreate(deps.batches, before=True)), bulk_id, 0)
    assert fake.created() == 0
    # When it is retried at once: the list shows no batch, which may be the list lagging behind
    with pytest.raises(BatchNotListedYet):
        submit(deps, bulk_id, 0)
    assert fake.created() == 0
    # Then, once the settle time has passed with nothing listed, the retry creates the batch, once
    settled = replace(deps, limits=replace(deps.limits, list_settle_seconds=0))
    assert submit(settled, bulk_id, 0) == {"submitted": 1} and fake.created() == 1
    assert submit(settled, bulk_id, 0) == {"submitted": 0} and fake.created() == 1


def test_the_batch_list_pages_back_to_the_intent(fake) -> None:
    # Given 25 batches created one second apart (the SDK pages the list, 100 a page by default)
    client = AnthropicBatches("test-key-not-real", base_url=fake.url, max_retries=0)
    for n in range(25):
        fake.clock = lambda n=n: 2_000.0 + n
        fake.outcomes[f"c{n}"] = {"type": "expired"}
        client.create([{"custom_id": f"c{n}", "params": {"model": "m", "max_tokens": 8, "messages": [{"role": "user", "content": "x"}]}}])
    # When the batches since second 2,010 are listed
    listed = list(client.list_recent(2_010.0))
    # Then they come newest first and the list stops at the first older batch
    assert [b.id for b in listed] == [f"msgbatch_{n:04d}" for n in range(24, 9, -1)]
    assert listed[0].created_at == 2_024.0 and sum(listed[0].counts.values()) == 1


def test_an_interrupted_submit_never_adopts_the_rounds_priming_batch(aws_stack, ingested_contract, fake,
                                                                     tmp_path) -> None:
    # Given a round of one-request parts whose priming batch (one request too) was just created and
    # recorded as prime#0000, and a Submit of part 0 killed before its create reached the API
    deps, bulk_id = _job(fake, tmp_path, max_requests=1)
    _start(deps, bulk_id, ingested_contract.doc_id, 2)
    assert prepare(deps, bulk_id, 0)["batches"] == 2
    fake.outcomes["prime-r0"] = {"type": "expired"}
    priming = deps.batches.create([{"custom_id": "prime-r0", "params": {
        "model": "m", "max_tokens": 8, "messages": [{"role": "user", "content": "x"}]}}])
    deps.store.put(f"bulk#{bulk_id}", "prime#0000", {"batch_id": priming.id})
    with pytest.raises(KeyboardInterrupt):
        submit(replace(deps, batches=DiesOnCreate(deps.batches, n=1, before=True)), bulk_id, 0)
    # When the Submit is retried while the batch list may still be settling
    # Then the priming batch, which fits the intent (one request, just created), is not adopted:
    # the retry waits for the list to settle instead of taking it as part 0's batch
    with pytest.raises(BatchNotListedYet):
        submit(deps, bulk_id, 0)
    assert deps.store.get(f"bulk#{bulk_id}", "batch#0000#0000-000") is None
