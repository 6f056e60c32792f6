"""Issue 31, seventh pass: a claim that asks how much is payable, and the loss vocabulary's new entries."""

from __future__ import annotations

import pytest

from longdoc.triage.claim import claim_from_json
from longdoc.triage.clauses import Clause
from longdoc.triage.queries import ASKED_LIMIT_WEIGHT, asks_quantum, Query, EXCESS_WORDS, LIMIT_WEIGHT, claim_queries
from longdoc.triage.ranking import rank_claim
from longdoc.triage.vocabulary import lay_tokens, wording_terms


def _clause(n: int, heading: str, text: str) -> Clause:
    return Clause(f"k{n}", str(n), "wording", "v1", f"c{n}", (heading,), text, False, n, 50)


def _claim(description: str, note: str) -> object:
    return claim_from_json({"loss_date": "2025-05-01", "line_of_business": "travel", "policy_number": "TC-1",
                            "claim_form": {"description": description}, "adjuster_note": note})


POOL = [
    _clause(1, "Baggage Benefit", "The Company will pay for loss of baggage and personal effects stolen on a train "
                                  "or bus during the journey, after a police report."),
    _clause(2, "Claims Documents", "For baggage claims on a train or bus: the police report, receipts for the "
                                   "baggage stolen and proof of the journey."),
    _clause(3, "Baggage Conditions", "The Insured Person shall take care of baggage on a train or bus."),
    _clause(4, "Baggage Exclusions", "Loss of baggage left unattended on a train or bus is not covered."),
    _clause(6, "Baggage Delay", "If baggage on a train or bus is delayed, the Company will pay for essentials bought."),
    _clause(7, "Travel Documents", "Loss of travel documents stolen on a train or bus during the journey is covered."),
    _clause(5, "Limit", "The limit for each item, pair or set is HK$3,000; a camera body and its lens are one set."),
]


def test_a_claim_asking_how_much_is_payable_ranks_the_limit_as_the_loss_and_pinned() -> None:
    # Given two claims for the same stolen camera, one asking for the maximum payable
    asked = _claim("Camera bag stolen on a train, body HK$14,500 and lens HK$11,800.",
                   "Police report in order. Quantum is the issue: camera body plus lens. Calculate maximum payable.")
    plain = _claim("Camera bag stolen on a train, body HK$14,500 and lens HK$11,800.", "Police report in order.")
    limit = {q.name: q for q in claim_queries(asked)}["limit"]
    # Then its limit query weighs as the loss query, is pinned, and carries the question and the excess words
    assert (limit.weight, limit.pin, limit.scope) == (ASKED_LIMIT_WEIGHT, True, "limit")
    assert "camera body plus lens" in limit.text and EXCESS_WORDS in limit.text
    assert {q.name: q for q in claim_queries(plain)}["limit"].weight == LIMIT_WEIGHT
    # And ranked (BM25 only), the per-set limit ranks higher for the claim that asks, within the first three
    def rank_of_limit(claim: object) -> int:
        return [c.clause_id for c in rank_claim(POOL, claim).clauses].index("5") + 1
    assert rank_of_limit(asked) <= 3 and rank_of_limit(asked) < rank_of_limit(plain)


def test_an_agreed_quantum_subject_to_deductions_asks_for_the_excess() -> None:
    # Given a note that agrees the amount "subject to policy deductions" (the excess decides what is paid)
    claim = _claim("Hose split and flooded the utility room.", "Quantum agreed at HK$6,800 subject to policy deductions.")
    limit = {q.name: q for q in claim_queries(claim)}["limit"]
    # Then the limit query is the asked one, with the excess words
    assert limit.pin and "excess deductible" in limit.text


def test_new_vocabulary_entries_map_everyday_words_to_the_wordings_terms() -> None:
    wording = set(lay_tokens("psychiatric mental nervous disorder mechanically propelled motor vehicle locks keys "
                             "jewellery watches valuables camera photographic equipment set burglary home"))
    assert {"psychiatric", "mental"} <= set(wording_terms("doctor said it was a panic attack", wording))
    assert "mechanically propelled" in wording_terms("my son was riding his electric scooter", wording)
    assert "locks" in wording_terms("the deadbolt is wrecked, a locksmith fitted a new one", wording)
    assert "watches" in wording_terms("they took my Rolex", wording)
    assert "camera" in wording_terms("my DSLR and a lens", wording)
    assert "burglary" in wording_terms("the flat had been done over", wording)


@pytest.mark.parametrize("text", [
    "Quantum is the issue: single claim for a camera body plus lens.", "Calculate maximum payable.",
    "Apply the per-visit and total caps.", "Assess maximum payable for the watch.",
    "Quantum agreed at HK$6,800 subject to policy deductions.", "Determine amount payable.",
    "Confirm applicable maximum.",
    # third outside tester: asked in other words, and a contrast that negates the other question
    "How much will we pay?", "What is the limit for the bag?", "Please advise the amount payable.",
    "Quantum is the issue, not liability.",
    # fourth outside tester: other askings, and a negation further on that is about something else
    "How much do we owe the insured?", "What amount is payable?", "Please let us know the amount payable.",
    "Liability accepted; quantum to be assessed.", "What is the maximum benefit for lost baggage?",
    "Need to know how much the insurer would pay.", "Quantum is in dispute, liability is not.",
    "Please confirm the payable benefit for this bag.", "How much will be reimbursed?",
    "Is the claimed amount within the sub-limit?", "What will the settlement amount be?",
    "Quantum, not liability, is the issue.", "Quantum is the main issue, not liability.",
    "How much will we pay if the bag is not found?", "Please advise the amount payable, if not excluded.",
])
def test_the_quantum_question_is_read_in_an_adjusters_words(text: str) -> None:
    assert asks_quantum(text)
    assert {q.name: q for q in claim_queries(_claim("Bag taken on a train.", text))}["limit"].pin


@pytest.mark.parametrize("text", [
    # outside tester: negations and the other senses of cap, limit and how much
    "There is no quantum issue; the question is cover only.", "Quantum not in dispute.",
    "The insured was wearing a cap at the time.", "swim cap", "Tooth cap", "bottle caps", "caps lock",
    "CAP 200 ordinance", "How much damage was done is unclear", "asked how much of the ceiling fell",
    "speed limits apply", "Apply the local speed limit", "limits of the property",
    # second outside tester: the quantum named but not asked, and other maxima, limits and deductions
    "Amount payable is not in dispute; liability only.", "No need to calculate the amount payable yet.",
    "Do not assess the quantum yet; the question is cover.", "The maximum payable is not in question here.",
    "Determine the maximum time the bag was left unattended.", "Confirm the maximum speed of the vehicle.",
    "Check the total load limits of the crane.", "My salary is subject to deductions for tax and pension.",
    # third outside tester: neither/nor
    "Neither liability nor quantum is in dispute.", "What is the speed limit on that road?",
    # fourth outside tester: other limits, and the quantum named but agreed or not disputed
    "What is the time limit for notifying the claim?", "What is the limit for filing a police report?",
    "What is the limit on speed there?", "What's the cap for hand luggage weight?", "We do not dispute the quantum.",
    "Quantum is agreed.", "What is the age limit for cover under this policy?",
    "Neither party disputes how much will be paid.", "The amount payable is not the issue, coverage is.",
    "How much luggage did she check in?",
])
def test_other_senses_of_quantum_words_ask_nothing(text: str) -> None:
    claim = _claim("Bag taken on a train.", text)
    assert not {q.name: q for q in claim_queries(claim)}.get("limit", Query("limit", "", 0.3)).pin
