"""Contract test: the SQLite and DynamoDB adapters of :class:`longdoc.core.ports.DecisionStore` behave the same,
and the :class:`longdoc.review.ReviewService` rules (queue, each decision kind, concurrency, corrections
verified verbatim, the reviewed result) hold over both.

SQLite on ``tmp_path``; DynamoDB on moto's in-process table with the stack's key schema (string
``pk``/``sk``, as in ``template.yaml``), no network.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import boto3
import pytest
from moto import mock_aws

from longdoc.adapters.review_store import SqliteDecisionStore
from longdoc.adapters.review_store_dynamo import DynamoDecisionStore
from longdoc.core.errors import CorrectionNotVerbatim, DecisionConflict, InvalidDecision
from longdoc.core.ports import DecisionStore
from longdoc.core.reviews import Decision, ReviewItem
from longdoc.review import DecisionRequest, ReviewService, item_id_for
from tests.functional.review_support import C0, C1, RUN, service

TABLE = "longdoc-test-table"


@pytest.fixture(params=["sqlite", "dynamodb"])
def store(request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[DecisionStore]:
    if request.param == "sqlite":
        yield SqliteDecisionStore(tmp_path / "review.sqlite3")
        return
    for name, value in {"AWS_DEFAULT_REGION": "us-east-1", "AWS_ACCESS_KEY_ID": "testing",
                        "AWS_SECRET_ACCESS_KEY": "testing"}.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("AWS_PROFILE", raising=False)
    with mock_aws():
        client = boto3.client("dynamodb", region_name="us-east-1")
        client.create_table(TableName=TABLE, BillingMode="PAY_PER_REQUEST",
                            AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"},
                                                  {"AttributeName": "sk", "AttributeType": "S"}],
                            KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"},
                                       {"AttributeName": "sk", "KeyType": "RANGE"}])
        yield DynamoDecisionStore(TABLE, client)


def _item(run: str, clause: str, index: int, quote: str = "q") -> ReviewItem:
    return ReviewItem(item_id=item_id_for(run, clause, index), run_id=run, doc_id="d", doc_version="v",
                      clause_type=clause, index=index, kind="extraction", quote=quote, confidence=0.5)


def _decision(item_id: str, version: int, reviewer: str = "ann") -> Decision:
    return Decision(item_id=item_id, run_id="r1", version=version, action="accept", reviewer=reviewer,
                    at="2026-12-01T10:00:00Z")


# --- the port ----------------------------------------------------------------------------------------


def test_items_are_written_once_and_listed_in_order(store: DecisionStore) -> None:
    # Given items of two runs, one written twice with another quote
    a, b, c = _item("r1", "Term", 1), _item("r1", "Term", 0), _item("r2", "Audit", 0)
    # When they are put (the first one again, changed)
    assert store.put_items([a, b, c]) == 3
    assert store.put_items([a.model_copy(update={"quote": "changed"})]) == 0
    # Then the snapshot is kept as first written, and listings are in (run, clause, index) order
    assert store.get_item(a.item_id) == a
    assert store.get_item("ri-missing") is None
    assert [i.item_id for i in store.list_items("r1")] == [b.item_id, a.item_id]
    assert [i.item_id for i in store.list_items(None)] == [b.item_id, a.item_id, c.item_id]


def test_decisions_append_and_refuse_a_taken_version(store: DecisionStore) -> None:
    # Given an item with one decision
    item = _item("r1", "Term", 0)
    store.put_items([item])
    store.append_decision(_decision(item.item_id, 1))
    # When a second writer claims version 1 again, and then version 2 is written
    with pytest.raises(DecisionConflict, match="version 1"):
        store.append_decision(_decision(item.item_id, 1, reviewer="bob"))
    store.append_decision(_decision(item.item_id, 2, reviewer="bob"))
    # Then both stored decisions are there, oldest first, the refused one nowhere
    assert [(d.version, d.reviewer) for d in store.decisions(item.item_id)] == [(1, "ann"), (2, "bob")]
    assert store.decisions("ri-other") == []


def test_one_winner_among_threads_claiming_one_version(store: DecisionStore) -> None:
    item = _item("r1", "Term", 0)
    store.put_items([item])
    outcomes: list[str] = []

    def claim(who: str) -> None:
        try:
            store.append_decision(_decision(item.item_id, 1, reviewer=who))
            outcomes.append("won")
        except DecisionConflict:
            outcomes.append("refused")

    threads = [threading.Thread(target=claim, args=(f"r{n}",)) for n in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(outcomes) == ["refused"] * 5 + ["won"]
    assert len(store.decisions(item.item_id)) == 1


# --- the service over either store -------------------------------------------------------------------


def _by_clause(svc: ReviewService) -> dict[str, str]:
    return {i.clause_type: i.item_id for i in svc.items(RUN)}


def test_queue_holds_low_confidence_and_every_possible_omission(store: DecisionStore) -> None:
    # Given the run (Governing Law 0.95, Cap 0.3, Termination a possible omission at 0.4, Audit not_found 0.9)
    svc = service(store, threshold=0.8)
    # When the queue is read with the accept threshold, and with a threshold under every score
    queue = svc.queue(RUN)
    low = svc.queue(RUN, threshold=0.1)
    # Then it holds the items under 0.8, lowest first, and the possible omission even at threshold 0.1
    assert [(i.clause_type, i.kind, i.confidence) for i in queue] == [
        ("Cap On Liability", "extraction", 0.3), ("Termination For Convenience", "possible_omission", 0.4)]
    assert [i.kind for i in low] == ["possible_omission"]
    assert low[0].chunk_id == C1 and low[0].page == 2
    assert queue[0].item_id == item_id_for(RUN, "Cap On Liability", 0)


def test_a_run_still_running_is_not_queued(store: DecisionStore) -> None:
    assert service(store, run_status="RUNNING").queue(RUN) == []


def test_each_decision_kind_and_the_reviewed_result(store: DecisionStore) -> None:
    # Given the run's four items
    svc = service(store)
    ids = _by_clause(svc)
    # When each is decided: accept, correct (a span on page 2), mark_present with a span, mark_absent
    accepted = svc.decide(ids["Governing Law"], DecisionRequest(action="accept", reviewer="ann"))
    corrected = svc.decide(ids["Cap On Liability"], DecisionRequest(
        action="correct", reviewer="bob", quote="The landlord's   liability is capped at $5,000.", page=2))
    present = svc.decide(ids["Termination For Convenience"], DecisionRequest(
        action="mark_present", reviewer="ann", quote="Either party may terminate on 30 days notice.", chunk_id=C1))
    absent = svc.decide(ids["Audit Rights"], DecisionRequest(action="mark_absent", reviewer="ann"))
    # Then each is stored with who, when, the value it replaces and the located span
    assert (accepted.version, accepted.reviewer, accepted.at, accepted.replaces) == (
        1, "ann", "2026-12-01T10:00:00Z", "This lease is governed by the laws of Ohio.")
    assert corrected.replaces == "Rent is due monthly on the first day."
    assert corrected.citation is not None
    assert (corrected.citation.chunk_id, corrected.citation.page, corrected.citation.quote) == (
        C1, 2, "The landlord's liability is capped at $5,000.")
    assert present.citation is not None and present.citation.page == 2 and present.replaces is None
    assert absent.citation is None
    assert {i.clause_type: i.status for i in svc.items(RUN)} == {
        "Governing Law": "accepted", "Cap On Liability": "corrected", "Termination For Convenience": "present",
        "Audit Rights": "absent"}
    assert svc.queue(RUN) == []
    # And the reviewed result applies them on a copy, the model output unchanged beside it
    reviewed = svc.reviewed_result(RUN)
    assert reviewed["extractions"][1]["citations"][0]["quote"] == "Rent is due monthly on the first day."
    answers = {a["clause_type"]: a for a in reviewed["reviewed_extractions"]}
    assert answers["Cap On Liability"]["citations"][0]["quote"] == "The landlord's liability is capped at $5,000."
    assert answers["Cap On Liability"]["model"]["citations"][0]["chunk_id"] == C0
    assert answers["Termination For Convenience"]["status"] == "found"
    assert answers["Audit Rights"]["status"] == "not_found"
    assert sorted(reviewed["review"]["reviewed"]) == sorted(ids.values())
    assert reviewed["review"]["pending"] == 0


def test_reject_withdraws_the_answer_and_history_keeps_every_decision(store: DecisionStore) -> None:
    svc = service(store)
    cap = _by_clause(svc)["Cap On Liability"]
    # When the item is accepted, then rejected on the version it was at
    svc.decide(cap, DecisionRequest(action="accept", reviewer="ann"))
    svc.decide(cap, DecisionRequest(action="reject", reviewer="bob", note="not a cap"), expected_version=1)
    # Then both stay in history; the latest is in force
    assert [(d.version, d.action, d.reviewer) for d in svc.history(cap)] == [(1, "accept", "ann"), (2, "reject", "bob")]
    assert svc.item(cap).status == "rejected" and svc.item(cap).version == 2
    answer = next(a for a in svc.reviewed_result(RUN)["reviewed_extractions"] if a["item_id"] == cap)
    assert (answer["status"], answer["citations"], answer["decision"]["note"]) == ("rejected", [], "not a cap")


def test_concurrent_decisions_on_one_item_the_stale_one_is_refused(store: DecisionStore) -> None:
    # Given two reviewers who both loaded the item at version 0
    svc = service(store)
    cap = _by_clause(svc)["Cap On Liability"]
    seen = svc.item(cap).version
    # When both decide against that version
    svc.decide(cap, DecisionRequest(action="accept", reviewer="ann"), expected_version=seen)
    with pytest.raises(DecisionConflict, match="version 1, not 0"):
        svc.decide(cap, DecisionRequest(action="reject", reviewer="bob"), expected_version=seen)
    # Then only the first is stored
    assert [d.reviewer for d in svc.history(cap)] == ["ann"]


def test_concurrent_threads_on_one_version_store_exactly_one(store: DecisionStore) -> None:
    svc = service(store)
    cap = _by_clause(svc)["Cap On Liability"]
    outcomes: list[str] = []

    def decide(who: str) -> None:
        try:
            svc.decide(cap, DecisionRequest(action="accept", reviewer=who), expected_version=0)
            outcomes.append("stored")
        except DecisionConflict:
            outcomes.append("refused")

    threads = [threading.Thread(target=decide, args=(f"r{n}",)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(outcomes) == ["refused"] * 3 + ["stored"]
    assert len(svc.history(cap)) == 1


def test_a_correction_not_verbatim_is_refused_and_nothing_is_stored(store: DecisionStore) -> None:
    svc = service(store)
    cap = _by_clause(svc)["Cap On Liability"]
    # When the correction's quote is reworded (not in the document)
    with pytest.raises(CorrectionNotVerbatim, match=r"lease@0123456789abcdef on page 2.*not verbatim"):
        svc.decide(cap, DecisionRequest(action="correct", reviewer="bob", quote="liability is limited to $5,000", page=2))
    with pytest.raises(CorrectionNotVerbatim, match="not found verbatim in chunk"):
        svc.decide(cap, DecisionRequest(action="correct", reviewer="bob", quote="capped at $6,000.", chunk_id=C1))
    with pytest.raises(InvalidDecision, match="needs the quote"):
        svc.decide(cap, DecisionRequest(action="correct", reviewer="bob"))
    # Then nothing was stored and the item is still pending
    assert svc.history(cap) == [] and svc.item(cap).status == "pending"


def test_mark_present_is_refused_on_a_found_clause(store: DecisionStore) -> None:
    svc = service(store)
    with pytest.raises(InvalidDecision, match="accept or correct"):
        svc.decide(_by_clause(svc)["Governing Law"], DecisionRequest(action="mark_present", reviewer="ann"))
