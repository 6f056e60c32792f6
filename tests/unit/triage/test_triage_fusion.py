"""Triage's query fusion constant, and the eval's rule for a gold quote that a unit cut split (issue 31)."""

from __future__ import annotations

import pytest

import longdoc.triage.ranking as ranking
from longdoc.search.fusion import RRF_K, rrf
from longdoc.triage.claim import claim_from_json
from longdoc.triage.clauses import Clause
from longdoc.triage.evaluate import _hits
from longdoc.triage.queries import Query


def _clause(n: int, text: str = "", doc: str = "wording") -> Clause:
    return Clause(f"k{n}", str(n), doc, "v1", f"c{n}", ("Section",), text or f"clause {n} text", False, n, 50)


POOL = [_clause(n) for n in range(60)]
DECIDING, CROWD = "k0", "k59"


def _fill(first: int) -> list[str]:
    return [f"k{n}" for n in range(first, first + 14)]


QUERIES = [Query("loss", "loss", 1.0), Query("event", "event", 0.5), Query("condition", "condition", 1.0),
           Query("defined terms", "defined terms", 1.0), Query("wording terms", "wording terms", 1.0)]
LISTS = {
    # The loss query and its event both put the deciding clause first and another clause 16th ...
    "loss": [DECIDING, *_fill(1), "k58", CROWD], "event": [DECIDING, *_fill(1), "k58", CROWD],
    # ... which three secondary queries (a spurious defined term, a generic condition) each have
    # 15th, after clauses of their own, and none of them has the deciding clause.
    "condition": [*_fill(15), CROWD], "defined terms": [*_fill(29), CROWD], "wording terms": [*_fill(43), CROWD],
}


@pytest.fixture
def fixed_bm25(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ranking, "bm25_ranking", lambda clauses, text: list(LISTS[text]))


def test_the_loss_querys_first_hit_is_not_outvoted_by_low_ranks_of_secondary_queries(fixed_bm25: None) -> None:
    # Given the fixed per-query rankings above (BM25 only, no embedder)
    claim = claim_from_json({"description": "x", "loss_date": "2024-01-01"})
    # When triage fuses them
    ranked = ranking.rank_claim(POOL, claim, queries=QUERIES)
    # Then the deciding clause is first: with k = 5 its 1.5/(5+1) = 0.25 beats the other clause's
    # 1.5/(5+17) + 3 x 1/(5+15) = 0.218 (17th in loss and event, 15th in three secondary queries)
    crowd = 1.5 / (ranking.TRIAGE_RRF_K + 17) + 3 / (ranking.TRIAGE_RRF_K + 15)
    assert ranking.TRIAGE_RRF_K == 5
    assert crowd < 1.5 / (ranking.TRIAGE_RRF_K + 1)
    assert ranked.clauses[0].key == DECIDING
    # And with extraction's k = 60 the same lists would have put the low-ranked crowd clause first
    fused60 = rrf([LISTS[q.name] for q in QUERIES], k=RRF_K, weights=[q.weight for q in QUERIES])
    assert fused60[0][0] != DECIDING


def test_a_quote_split_by_a_unit_cut_counts_when_both_halves_are_in_the_first_k() -> None:
    # Given a gold sentence the unit cut split over units 4 and 5 of one wording
    first = _clause(4, "Claims conditions. If we ask you must send us written details of your claim within 31 days.")
    second = _clause(5, "Anyone making a claim under this policy must give us any information and help we need.")
    apart = _clause(9, "Anyone making a claim under this policy must give us any information and help we need.")
    other = _clause(7, "We will pay for accidental damage to your car.")
    case = {"gold_doc": "wording", "gold_quotes": [
        "If we ask you must send us written details of your claim within 31 days. Anyone making a claim under "
        "this policy must give us any information and help we need."]}
    # When both halves are in the first 3, Then the quote is found
    assert _hits([second, other, first], case, 3) == 1.0
    # And one half alone is not enough
    assert _hits([first, other, _clause(8)], case, 3) == 0.0
    # And two units that do not follow each other in the document are not joined
    assert _hits([first, other, apart], case, 3) == 0.0


def test_a_very_long_note_makes_bounded_queries() -> None:
    # Given a claim note of 400 sentences
    from longdoc.triage.claim import claim_from_json
    from longdoc.triage.queries import MAX_QUERY_WORDS, MAX_SENTENCE_QUERIES, claim_queries
    note = " ".join(f"The water reached room number {i} and soaked the carpet there." for i in range(400))
    queries = claim_queries(claim_from_json({"claim_id": "c", "adjuster_note": note}))
    # Then no query text passes the word cap and at most MAX_SENTENCE_QUERIES sentence queries are made
    assert max(len(q.text.split()) for q in queries) <= MAX_QUERY_WORDS
    assert len([q for q in queries if q.name.startswith("sentence ")]) == MAX_SENTENCE_QUERIES == 8
    loss = next(q for q in queries if q.name == "loss")
    assert loss.text.split()[:4] == ["The", "water", "reached", "room"]


def test_an_opening_reporting_verb_does_not_make_the_loss_a_condition() -> None:
    # Given a note that opens "Insured reports a break-in" (how adjusters tell a loss) and a real notice sentence
    from longdoc.triage.claim import claim_from_json
    from longdoc.triage.queries import claim_queries, condition_like
    note = ("Insured reports a break-in through the rear window; the television and a laptop were taken. "
            "The theft was reported to the police three weeks later.")
    queries = {q.name: q.text for q in claim_queries(claim_from_json({"claim_id": "c", "adjuster_note": note}))}
    # Then the break-in stays in the loss query and only the late police report is the condition
    assert "break-in" in queries["loss"] and "break-in" not in queries["condition"]
    assert "police" in queries["condition"]
    assert not condition_like("Insured reports a break-in through the rear window;")
    assert condition_like("She reported it to us two months later.")
    assert condition_like("Insured reported the loss to us 40 days after")
