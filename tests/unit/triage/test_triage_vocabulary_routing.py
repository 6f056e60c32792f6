"""Issue 31, second pass: the loss vocabulary (lay words -> the wording's words) and the limit query
ranked among amount-bearing units only."""

from __future__ import annotations

import pytest

from longdoc.core.errors import TriageError
from longdoc.triage.claim import claim_from_json
from longdoc.triage.clauses import Clause
from longdoc.triage.queries import Query, claim_queries
from longdoc.triage.ranking import rank_claim
from longdoc.triage.routing import unit_roles
from longdoc.triage.vocabulary import default_vocabulary, lay_tokens, parse_vocabulary, wording_terms


def _clause(n: int, heading: str, text: str) -> Clause:
    return Clause(f"k{n}", str(n), "wording", "v1", f"c{n}", (heading,), text, False, n, 50)


POOL = [
    _clause(1, "Hotel Extension", "We will pay hotel costs when a trip is extended because the traveller is unfit to travel."),
    _clause(2, "Personal Property and Baggage",
            "We will pay for accidental loss of or damage to personal property and baggage during the journey."),
    _clause(3, "Travel Delay", "We will pay when the departure of the public conveyance is delayed by six hours."),
    _clause(4, "Money", "We will pay for loss of money due to robbery or theft during the journey."),
]


def _claim(description: str, note: str, amount: str | None = None) -> object:
    data = {"loss_date": "2024-05-01", "line_of_business": "travel",
            "claim_form": {"description": description}, "adjuster_note": note}
    if amount:
        data["claim_amount"] = amount
    return claim_from_json(data)


def test_packaged_vocabulary_loads_and_maps_lay_words_to_terms_the_wording_uses() -> None:
    # Given the packaged map and a wording that says "baggage" and "theft" but not "personal effects"
    wording = set(lay_tokens(" ".join(c.text for c in POOL)))
    # When a claim's plain words are mapped
    terms = wording_terms("My suitcases were pickpocketed on the metro", wording)
    # Then the wording's own words come back, and a mapped term the wording lacks does not
    assert len(default_vocabulary()) >= 40
    assert "baggage" in terms and "theft" in terms
    assert "personal effects" not in terms


def test_a_term_already_in_the_claim_is_not_added_again() -> None:
    # Given a claim that already says "theft"
    wording = set(lay_tokens("theft robbery burglary"))
    # When mapped, Then only the terms it does not hold yet are added
    assert wording_terms("theft of my stolen wallet", wording) == ["robbery", "burglary"]


def test_bumping_into_something_is_not_being_bumped_from_a_flight() -> None:
    # Given a wording that covers denied boarding and a claim for a shelf the insured bumped into
    wording = set(lay_tokens("denied boarding overbooking legal liability third party"))
    # When mapped, Then "bumped a display shelf" adds no overbooking term, while "bumped from the flight" does
    assert "denied boarding" not in wording_terms("Insured stepped back and bumped a display shelf", wording)
    assert "denied boarding" in wording_terms("We were bumped from the flight to Rome", wording)
    # And a car bumped from behind is not denied boarding, while an airline that bumped us off its plane is
    assert "denied boarding" not in wording_terms("My parked car was bumped from behind", wording)
    assert wording_terms("The airline bumped me off the overnight service", wording) == ["overbooking", "denied boarding"]


def test_an_intensive_care_unit_is_not_the_insureds_home() -> None:
    # Given a wording that uses home and dwelling, When a hospital stay in the intensive care unit is mapped
    wording = set(lay_tokens("home dwelling premises hospital intensive care"))
    # Then no dwelling term is added, while water through the ceiling of my unit adds them
    assert wording_terms("She was admitted to the intensive care unit for three days", wording) == []
    assert "dwelling" in wording_terms("Water came through the ceiling of my unit", wording)


def test_a_near_list_must_be_strings() -> None:
    # Given an entry whose context list is empty, When parsed, Then the error names the file, the entry and the field
    with pytest.raises(TriageError, match=r'vocab\.json: entry 1 has "near" \[\]'):
        parse_vocabulary('{"entries": [{"lay": ["bumped"], "terms": ["overbooking"], "near": []}]}', "vocab.json")


def test_bad_vocabulary_file_is_refused_with_its_name() -> None:
    # Given an entry with no terms, When parsed, Then the error names the file and the entry
    with pytest.raises(TriageError, match=r"vocab\.json: entry 1"):
        parse_vocabulary('{"entries": [{"lay": ["suitcase"], "terms": []}]}', "vocab.json")
    with pytest.raises(TriageError, match="vocab.json is not valid JSON"):
        parse_vocabulary("{", "vocab.json")


def test_claim_queries_add_the_wording_terms_query_and_extend_loss() -> None:
    # Given a claim told in plain words and the wording's words
    claim = _claim("Suitcase split open", "The suitcase fell off a trolley and split open.")
    words = set(lay_tokens(" ".join(c.text for c in POOL)))
    # When its queries are built
    queries = {q.name: q for q in claim_queries(claim, wording_words=words)}
    # Then a "wording terms" query carries the wording's word, which also joins the loss query
    assert "baggage" in queries["wording terms"].text
    assert "baggage" in queries["loss"].text


def test_plain_words_reach_the_clause_in_the_wordings_words() -> None:
    # Given a claim that never says "baggage" (BM25 only, no embedder)
    claim = _claim("Suitcase split open", "The suitcase fell off a hotel trolley and split open.")
    # When ranked
    ranked = rank_claim(POOL, claim)
    # Then the baggage clause is first (without the vocabulary the hotel clause shares more words)
    assert ranked.clauses[0].clause_id == "2"
    assert any(r.startswith("wording terms#") for r in ranked.reasons["k2"])


LIMIT_POOL = [
    _clause(1, "Coverage C - Personal Property",
            "We insure jewellery, watches and other personal property you own against theft of jewellery."),
    _clause(2, "Special Limits of Insurance", "Securities up to $5,000 in total. Furs and gems up to $6,000 in total."),
    _clause(3, "Conditions", "You must give notice of the theft to the police."),
]


def test_unit_roles_mark_units_that_state_an_amount_or_a_cap() -> None:
    # Given a special-limits unit, a schedule row and a cover clause
    # Then only those stating an amount or a cap have the limit role
    assert unit_roles(("Special Limits",), "Money up to $500 in total.") == {"limit"}
    assert unit_roles((), "the maximum sum insured specified in the Benefit Schedule") == {"limit"}
    assert unit_roles(("Cover",), "We insure your personal property against theft.") == frozenset()


def test_limit_query_is_ranked_among_amount_bearing_units_only() -> None:
    # Given a claim with an amount: its limit query is scoped to the limit role
    claim = _claim("Jewellery stolen", "A ring was stolen from the bedroom.", amount="$9,000.00")
    limit = next(q for q in claim_queries(claim) if q.name == "limit")
    assert limit.scope == "limit"
    # When the limit query alone ranks the pool
    ranked = rank_claim(LIMIT_POOL, claim, queries=[limit])
    # Then its first is the special-limits unit, and the cover clause (more shared words) is not in it
    assert "limit#1" in ranked.reasons["k2"]
    assert not any(r.startswith("limit#") for r in ranked.reasons.get("k1", []))


def test_a_query_scoped_to_a_role_no_unit_has_is_skipped() -> None:
    # Given a pool with no amount-bearing unit, When a limit-scoped query ranks it
    ranked = rank_claim(POOL[:1], _claim("x", "y"), queries=[Query("limit", "hotel", 1.0, "limit")])
    # Then no reason names it and every clause still has a rank
    assert ranked.reasons == {} and [c.key for c in ranked.clauses] == ["k1"]
