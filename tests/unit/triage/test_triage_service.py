"""One triage on the dev policy set (Markdown wordings, BM25): the "Done when" points of issue 15."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from longdoc.core.documents import load_chunks
from longdoc.core.errors import AnswerRejected, TriageError, UnknownCollection
from longdoc.triage.answer import verify
from longdoc.triage.evaluate import evaluate
from longdoc.triage.service import TriageDeps, TriageRequest, pool, request_from_file, run_triage
from longdoc.triage.terms import resolve
from longdoc.triage.collections import load_collection
from tests.unit.triage_set import GOLD, POLICY_SET, load_file, load_policy_set

SET = "dev-policy-set"
H23, H24 = "homeowners-wording-2023", "homeowners-wording-2024"
ENDORSEMENT = "homeowners-sewer-backup-endorsement-2024"


@pytest.fixture(scope="module")
def deps(tmp_path_factory: pytest.TempPathFactory) -> TriageDeps:
    root = tmp_path_factory.mktemp("set")
    blobs, state = load_policy_set(root)
    travel = root / "travel-mini.md"  # a second line of business, so none is assumed
    travel.write_text("# Travel Wording\n\n## 1 Baggage\n\nWe pay for baggage lost by a carrier during the journey.\n")
    load_file(blobs, state, travel, {"collection": SET, "line_of_business": "travel", "effective_from": "2022-01-01"})
    return TriageDeps(state, blobs)


def gold(prefix: str = "h") -> list[dict]:
    return [c for c in map(json.loads, GOLD.read_text().splitlines()) if c["id"].startswith(prefix)]


def triage(deps: TriageDeps, claim: dict, **fields) -> dict:
    return run_triage(TriageRequest(collection=SET, claim=claim, **fields), deps)


def test_a_2023_loss_never_receives_a_clause_of_the_2024_wording(deps: TriageDeps) -> None:
    # Given every home gold claim with a 2023 loss date
    claims = [c["claim"] for c in gold() if c["claim"]["loss_date"].startswith("2023")]
    assert len(claims) == 15
    for claim in claims:
        # When it is triaged
        result = triage(deps, claim)
        # Then the wording is the 2023 term's and every clause sent comes from it
        assert result["wording"]["doc_id"] == H23 and result["endorsements"] == []
        assert {c["doc_id"] for c in result["band"]["clauses"]} == {H23}


def test_an_endorsement_in_force_is_ranked_together_with_its_wording(deps: TriageDeps) -> None:
    april = next(c["claim"] for c in gold() if c["id"] == "h19")
    result = triage(deps, april)
    docs = [c["doc_id"] for c in result["band"]["clauses"]]
    # Then the band mixes the endorsement's clauses and the wording's, in one ranking
    assert ENDORSEMENT in docs and H24 in docs
    assert f"{ENDORSEMENT}:1" in [c["clause_id"] for c in result["band"]["clauses"]]
    # And the same loss in February, before the endorsement starts, gets the wording alone
    february = {**april, "loss_date": "2024-02-20"}
    assert {c["doc_id"] for c in triage(deps, february)["band"]["clauses"]} == {H24}


def test_a_body_line_14_days_after_the_leak_is_never_section_14(deps: TriageDeps) -> None:
    # Given the 2024 wording, whose clause 7.2 wraps a line starting "14 days after the leak"
    members = load_collection(deps.state, SET)
    clauses = pool(deps.blobs, resolve(SET, members, "home", "2024-06-28"))
    notice = [c for c in clauses if "14 days after the leak" in c.text]
    # Then that text is clause 7.2 and no clause of the set is numbered 14
    assert [c.clause_id for c in notice] == ["7.2"]
    assert not [c for c in clauses if c.clause_id.split("#")[0] in ("14", "Section 14")]
    # And an answer citing "14" with that quote is rejected, while citing 7.2 is accepted
    with pytest.raises(AnswerRejected, match="clause_id '14' was not sent to you"):
        verify({"decision": "not_covered", "reasons": ["late"],
                "citations": [{"clause_id": "14", "quote": "14 days after the leak"}]}, notice)
    decision, _, cites = verify({"decision": "not_covered", "reasons": ["late notice"],
                                 "citations": [{"clause_id": "7.2", "quote": "no later than 14 days after the leak"}]},
                                notice)
    assert decision == "not_covered" and cites[0]["quote"] == "no later than\n14 days after the leak"


def test_a_reissue_leaves_the_old_terms_chunks_and_gold_labels_intact(tmp_path: Path) -> None:
    # Given a set holding only the 2023 term, evaluated on the 2023 gold claims
    from longdoc.adapters.blob import LocalBlobStore
    from longdoc.adapters.state import SqliteStateStore

    blobs, state = LocalBlobStore(tmp_path / "bucket"), SqliteStateStore(tmp_path / "state.sqlite3")
    old = load_file(blobs, state, POLICY_SET / f"{H23}.md")
    gold_2023 = tmp_path / "gold-2023.jsonl"
    gold_2023.write_text("".join(json.dumps(c) + "\n" for c in gold() if c["gold_doc"] == H23))
    before_chunks = blobs.get(f"chunks/{H23}/{old.doc_version}.jsonl")
    before = evaluate(gold_2023, SET, TriageDeps(state, blobs))
    # When the 2024 reissue and its endorsement are ingested into the same set
    load_file(blobs, state, POLICY_SET / f"{H24}.md")
    load_file(blobs, state, POLICY_SET / f"{ENDORSEMENT}.md")
    after = evaluate(gold_2023, SET, TriageDeps(state, blobs))
    # Then the 2023 chunks are byte for byte the same, and every 2023 claim ranks exactly as before
    assert blobs.get(f"chunks/{H23}/{old.doc_version}.jsonl") == before_chunks
    assert state.get_document(H23).doc_version == old.doc_version
    assert [c["top3"] for c in after["claims"]] == [c["top3"] for c in before["claims"]]
    assert after["overall"]["recall@3"] == before["overall"]["recall@3"]
    assert after["overall"]["wrong_term_top3"] == 0.0 and len(load_chunks(blobs, H23, old.doc_version)) == old.chunks


def test_offline_the_baseline_returns_ranked_clauses_and_refer_labelled(deps: TriageDeps) -> None:
    result = triage(deps, gold()[0]["claim"])
    assert (result["decision"], result["baseline"], result["citations"]) == ("refer", True, [])
    assert result["model"] == "triage-offline-baseline-v1" and result["band"]["clauses"]
    assert result["case_facts"] == {"policy_number": "HO-2023-10441", "claim_amount": "$6,200.00"}


def test_a_top_clause_over_the_band_is_still_sent_and_counted(deps: TriageDeps) -> None:
    # Given a budget leaving a band smaller than the top clause
    claim = gold()[0]["claim"]
    fixed = triage(deps, claim)["budget"]["bands"]
    tight = fixed["instructions"] + fixed["examples"] + fixed["claim"] + fixed["task"] + 10
    result = triage(deps, claim, budget_tokens=tight)
    band = result["band"]
    assert band["limit"] == 10 and band["top_over_band"] is True
    assert len(band["clauses"]) == 1 and band["tokens"] == band["clauses"][0]["tokens"] > 10
    assert result["budget"]["bands"]["clauses"] == band["tokens"]


@pytest.mark.parametrize(("data", "fields", "words"), [
    (b"", {}, "claim file c.json is empty"),
    (b"  \n", {}, "claim file c.json is empty"),
    (b"\x89PNG\r\n\x1a\n\x00\x00", {}, "claim file c.json is binary"),
    (b"\xff\xfe\xfa", {}, "claim file c.json is binary or not UTF-8"),
    (b"{not json", {}, "claim file c.json is not valid JSON"),
    (b'{"adjuster_note": "pipe burst"}', {"line_of_business": "home"}, "no loss date"),
    (b'{"adjuster_note": "pipe burst", "loss_date": "yesterday"}', {"line_of_business": "home"},
     "loss date 'yesterday' is not a date"),
    (b'{"adjuster_note": "pipe burst", "loss_date": "2019-03-01"}', {"line_of_business": "home"},
     "no home wording of collection 'dev-policy-set' is in force on 2019-03-01"),
    (b'{"adjuster_note": "pipe burst", "loss_date": "2023-03-01"}', {}, "no line of business: pass --line-of-business (collection has: home, travel)"),
    (b'{"adjuster_note": "pipe burst", "loss_date": "2023-03-01"}',
     {"line_of_business": "home", "budget_tokens": 300}, "budget of 300 input tokens is smaller than"),
])
def test_bad_input_gets_one_clear_line(deps: TriageDeps, data: bytes, fields: dict, words: str) -> None:
    with pytest.raises(TriageError) as caught:
        run_triage(request_from_file(data, "c.json", collection=SET, **fields), deps)
    assert words in str(caught.value) and "\n" not in str(caught.value)


def test_an_unknown_collection_names_the_known_ones(deps: TriageDeps) -> None:
    with pytest.raises(UnknownCollection, match=r"unknown collection 'motor-set' \(known: dev-policy-set\)"):
        triage_request = TriageRequest(collection="motor-set", claim="Loss date: 2024-01-01\nA claim.")
        run_triage(triage_request, deps)


def test_overlapping_terms_name_both_documents(tmp_path: Path) -> None:
    blobs, state = load_policy_set(tmp_path)
    load_file(blobs, state, POLICY_SET / f"{H24}.md", {"collection": "overlap", "line_of_business": "home",
                                                        "effective_from": "2024-01-01"})
    load_file(blobs, state, POLICY_SET / f"{H23}.md", {"collection": "overlap", "line_of_business": "home",
                                                        "effective_from": "2023-01-01"})
    with pytest.raises(TriageError, match="2 home wordings of collection 'overlap' are in force on 2024-05-01 "
                                          r"\(overlapping terms\): homeowners-wording-2023 \(2023-01-01..\), "
                                          r"homeowners-wording-2024 \(2024-01-01..\)"):
        run_triage(TriageRequest(collection="overlap", claim="Loss date: 2024-05-01\nLine of business: home\n"
                                                             "Pipe burst."), TriageDeps(state, blobs))


def test_a_claim_too_long_for_the_budget_is_refused_before_anything_is_ranked(
        deps: TriageDeps, monkeypatch: pytest.MonkeyPatch) -> None:
    # Given a claim whose adjuster note alone (about 30,000 words) passes the default input budget
    import longdoc.triage.service as service
    calls: list[str] = []
    monkeypatch.setattr(service, "ranked_clauses", lambda *a, **k: calls.append("ranked"))
    claim = {"claim_id": "long-1", "loss_date": "2024-04-11", "line_of_business": "home",
             "adjuster_note": "Water came through the ceiling after the pipe burst. " * 3000}
    # When it is triaged, Then the budget error comes first and nothing was ranked
    with pytest.raises(TriageError, match="smaller than the instructions plus the claim"):
        triage(deps, claim)
    assert calls == []
