"""``--explain`` names the query that found each clause sent, and ``eval triage`` reports recall by claim
kind and wording beside the legacy ranking and the naive baseline (issue 31)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from longdoc.core.errors import TriageError
from longdoc.triage.render import UNNAMED
from longdoc.triage.evaluate import evaluate, render
from longdoc.triage.render import render as render_result
from longdoc.triage.service import TriageDeps, TriageRequest, run_triage
from tests.unit.triage_set import load_policy_set

SET = "dev-policy-set"
H24 = "homeowners-wording-2024"


@pytest.fixture(scope="module")
def deps(tmp_path_factory: pytest.TempPathFactory) -> TriageDeps:
    blobs, state = load_policy_set(tmp_path_factory.mktemp("set"))
    return TriageDeps(state, blobs)


CLAIM = {"claim_id": "x1", "loss_date": "2024-06-02", "line_of_business": "home", "policy_number": "HO-9",
         "claim_form": {"description": "Sewer backed up into the basement"},
         "adjuster_note": "Sewage came up through the basement floor drain during a storm. "
                          "The insured reported it to us three weeks later."}


def test_explain_names_the_queries_and_which_one_found_each_clause(deps: TriageDeps) -> None:
    # Given a claim with a loss sentence and a reporting sentence
    result = run_triage(TriageRequest(collection=SET, claim=CLAIM), deps)
    # When the result is rendered with --explain
    text = render_result(result, explain=True)
    # Then the queries are listed, loss first, the reporting sentence as its own condition query
    names = [q["name"] for q in result["queries"]]
    assert names[0] == "loss" and "condition" in names
    assert next(q["text"] for q in result["queries"] if q["name"] == "condition").startswith("reported it to us")
    assert "query loss (weight 1.0): Sewer backed up into the basement" in text
    # And every clause sent says which query found it, as name#rank, also in the JSON (or, ranked in
    # by the fusion of all queries, that none had it in its first five); the top clauses were found
    assert all(c["found_by"] for c in result["band"]["clauses"][:3])
    for clause in result["band"]["clauses"]:
        said = (f"found by {', '.join(clause['found_by'])}" if clause["found_by"] else UNNAMED)
        assert f"  {clause['clause_id']} {said}" in text
    assert any(r.startswith("loss#") for c in result["band"]["clauses"] for r in c["found_by"])


def test_eval_reports_recall_by_kind_and_wording_beside_both_baselines(deps: TriageDeps, tmp_path: Path) -> None:
    # Given gold claims of three kinds against the 2024 wording, one held out, one gold by verbatim quote
    gold = tmp_path / "gold.jsonl"
    sewer = {**CLAIM, "adjuster_note": "Sewage came up through the basement floor drain during a storm."}
    rows = [{"id": "k1", "kind": "covered", "claim": sewer, "gold_doc": H24,
             "gold": ["homeowners-sewer-backup-endorsement-2024:1"]},
            {"id": "k2", "kind": "condition", "split": "test", "claim": CLAIM, "gold_doc": H24, "gold": ["7.1"]},
            {"id": "k3", "kind": "trap", "claim": sewer, "gold_doc": H24,
             "gold_quotes": ["caused by the backing up or escape of water from a sewer"]}]
    gold.write_text("".join(json.dumps(r) + "\n" for r in rows))
    # When eval triage runs (BM25, no model)
    report = evaluate(gold, SET, deps)
    # Then there is a stratum per kind, per wording and per split, each with legacy and naive figures
    assert {"kind=covered", "kind=condition", "kind=trap", f"wording={H24}", "split=dev", "split=test"} <= set(
        report["strata"])
    for stratum in report["strata"].values():
        assert {"recall@1", "recall@3", "legacy_recall@3", "naive_recall@3"} <= set(stratum)
    assert report["strata"]["kind=covered"]["recall@3"] == 1.0
    assert report["strata"]["split=test"]["claims"] == 1
    # And the text table has a row per kind with the column heads of the three rankings
    table = render(report)
    assert "LEGACY R@3" in table and "NAIVE R@3" in table
    assert any(line.startswith("kind=trap ") for line in table.splitlines())
    # And an unknown kind is refused with the line named
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps({**rows[0], "kind": "weird"}) + "\n")
    with pytest.raises(TriageError, match=r"bad.jsonl:1: unknown kind 'weird'"):
        evaluate(bad, SET, deps)


def test_band_recall_counts_the_clauses_the_model_would_read_not_only_the_first_three(
        deps: TriageDeps, tmp_path: Path) -> None:
    # Given a claim whose gold clause the ranking puts 4th or later, but inside the 1,200-token band
    from longdoc.triage.clauses import fill_band
    from longdoc.triage.ranking import rank_claim
    from longdoc.triage.claim import claim_from_json
    from longdoc.triage.service import pool
    from longdoc.triage.collections import load_collection
    from longdoc.triage.terms import resolve

    claim = claim_from_json(CLAIM)
    ranked = rank_claim(pool(deps.blobs, resolve(SET, load_collection(deps.state, SET), "home", "2024-06-02")),
                        claim).clauses
    band = fill_band(ranked, 1200).clauses
    assert len(band) > 3
    fourth = band[3]
    gold = tmp_path / "gold.jsonl"
    gold.write_text(json.dumps({"id": "b1", "kind": "condition", "claim": CLAIM, "gold_doc": fourth.doc_id,
                                "gold": [fourth.clause_id]}) + "\n")
    # When eval triage runs
    report = evaluate(gold, SET, deps)
    # Then recall@3 misses it, the band finds it, and the band's size is reported
    overall = report["overall"]
    assert overall["recall@3"] == 0.0 and overall["band_recall"] == 1.0
    assert overall["band_clauses"] == len(band)
    assert "BAND R" in render(report)
    # And recall within the reranker's depth (60 units) counts it too: a reranker could bring it up
    assert overall["recall@60"] == 1.0 and "R@60" in render(report)



def test_a_failed_rerank_stops_eval_naming_the_claim_it_stopped_at(deps: TriageDeps, tmp_path: Path) -> None:
    # Given a reranker that is down, and two gold claims
    import dataclasses

    from longdoc.core.errors import RerankUnavailable

    class _Down:
        def rerank(self, query, chunks, top_k):  # type: ignore[no-untyped-def]
            raise RerankUnavailable("Voyage rerank failed after 3 attempts: HTTP 503")

    gold = tmp_path / "gold.jsonl"
    gold.write_text("".join(json.dumps({"id": f"r{n}", "kind": "covered", "claim": CLAIM, "gold_doc": H24,
                                        "gold": ["7.1"]}) + "\n" for n in (1, 2)))
    # When eval triage runs, Then it stops at the first claim, naming it and how far it got
    with pytest.raises(RerankUnavailable, match=r"^claim r1 \(0 of 2 ranked before it\): Voyage rerank failed"):
        evaluate(gold, SET, dataclasses.replace(deps, reranker=_Down()))
