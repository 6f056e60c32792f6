"""Issue 31: a claimant's conduct after the loss told in everyday words ("told him it was my fault",
"threw the carpet out") joins the ``condition`` query with the words of the condition that decides it."""

from __future__ import annotations

import pytest

from longdoc.core.errors import TriageError
from longdoc.triage.claim import claim_from_json
from longdoc.triage.clauses import Clause
from longdoc.triage.queries import claim_queries
from longdoc.triage.ranking import rank_claim
from longdoc.triage.vocabulary import condition_entries, default_vocabulary, lay_tokens, parse_vocabulary


def _clause(n: int, heading: str, text: str) -> Clause:
    return Clause(f"k{n}", str(n), "wording", "v1", f"c{n}", (heading,), text, False, n, 60)


POOL = [
    _clause(1, "Loss or Damage", "We will indemnify you against loss of or damage to the insured vehicle caused by "
            "accidental collision with another vehicle while it is being driven on a public road."),
    _clause(2, "Liability to Third Parties", "We will indemnify the authorised driver against legal liability for "
            "damage to the property of another driver caused by the use of the insured vehicle."),
    _clause(3, "Claims Procedure", "No admission, offer, promise or payment shall be made by you or on your behalf "
            "without our written consent."),
    _clause(4, "Care of the Vehicle", "You must keep the vehicle in an efficient and roadworthy condition."),
    _clause(5, "Windscreen", "We will pay for the replacement of a broken windscreen of the insured vehicle."),
]
WORDS = set(lay_tokens(" ".join(c.text for c in POOL)))


def _claim(description: str, note: str) -> object:
    return claim_from_json({"loss_date": "2024-05-01", "line_of_business": "motor",
                            "claim_form": {"description": description}, "adjuster_note": note})


CLAIM = _claim("Rear-ended another car at the lights",
               "Our driver ran into the back of another car at a red light. He told the other driver it was all "
               "his fault and said he would pay for the damage to her car.")


def test_conduct_in_plain_words_makes_a_condition_query_with_the_conditions_words() -> None:
    # When the queries of a claim whose note tells an admission in plain words are built
    queries = {q.name: q for q in claim_queries(CLAIM, wording_words=WORDS)}
    # Then a condition query holds that sentence and the condition's own words the wording uses
    condition = queries["condition"].text
    assert "his fault" in condition
    assert {"admission", "offer", "promise"} <= set(condition.split())
    assert "negotiate" not in condition  # a mapped word the wording lacks is not added
    # And the loss query is not given those words
    assert "admission" not in queries["loss"].text


def test_the_deciding_condition_enters_the_first_three() -> None:
    # When the claim is ranked (BM25 only)
    ranked = rank_claim(POOL, CLAIM)
    # Then the claims-procedure condition is among the first three
    assert "3" in [c.clause_id for c in ranked.clauses[:3]]


def test_condition_entries_are_apart_from_the_loss_entries() -> None:
    # The packaged map holds both kinds; the loss map (wording terms) does not carry condition words
    assert len(condition_entries()) >= 10
    assert all(e.query == "loss" for e in default_vocabulary())
    assert not any("admission" in e.terms for e in default_vocabulary())


def test_an_entry_with_an_unknown_query_is_refused_with_the_file_and_entry() -> None:
    with pytest.raises(TriageError, match=r"vocab\.json: entry 1 has \"query\" 'peril'"):
        parse_vocabulary('{"entries": [{"lay": ["x"], "terms": ["y"], "query": "peril"}]}', "vocab.json")
