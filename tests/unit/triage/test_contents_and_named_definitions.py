"""Issue 31, eighth pass: a table of contents decides no claim, and a definition the claim names is
not held down as a run of definitions is (it decides what the claim's term covers)."""

from __future__ import annotations

from longdoc.triage.claim import claim_from_json
from longdoc.triage.clauses import Clause
from longdoc.triage.ranking import _factor, _words, is_contents, rank_claim, CONTENTS_WEIGHT, DEFINITION_WEIGHT, \
    NAMED_DEFINITION_WEIGHT


def _clause(n: int, heading: str, text: str) -> Clause:
    return Clause(f"k{n}", str(n), "wording", "v1", f"c{n}", (heading,), text, False, n, 50)


CONTENTS = ("14\n4.3.2 Intensive Care Benefit ........................................ 11\n"
            "4.3.3 Infectious Disease Benefit……………………………………………..11\n"
            "6.4 Abandoned Claims ............................................ 14\nANNEXES")
DEFINITIONS = ("Hospital - an establishment duly constituted and registered as a hospital.\n"
               "Intensive Care Unit - a section within a Hospital which is designated as an intensive care unit "
               "by the Hospital with one-to-one nursing care.\n"
               "Medically Necessary - medical services consistent with the diagnosis.")


def _claim(description: str, note: str) -> object:
    return claim_from_json({"loss_date": "2025-08-21", "line_of_business": "health", "policy_number": "EH-1",
                            "claim_form": {"description": description}, "adjuster_note": note})


def test_a_contents_page_is_told_from_a_list_of_clauses() -> None:
    # Given a contents page (dot leaders, an ellipsis run, a bare page number) and clause text
    assert is_contents(CONTENTS)
    assert is_contents("Some text", ("TABLE OF CONTENTS",))
    # Then clauses, amounts tables and definitions are not contents
    assert not is_contents("4.3.2 Intensive Care Benefit\nThe Company will pay HK$1,000 a day.\nSubject to 4.3.")
    assert not is_contents("Item Limit\nWatches 3,000\nCameras 2,000\nLaptops 1,500")
    assert not is_contents(DEFINITIONS)


def test_the_contents_page_ranks_after_every_clause_and_a_named_definition_keeps_more_weight() -> None:
    # Given a pool with a contents page naming the ICU benefit, the benefit, and the definitions
    pool = [_clause(1, "EasyHealth", CONTENTS),
            _clause(2, "4.3.2 Intensive Care Benefit", "The Company will pay the daily intensive care benefit for "
                                                        "each day of Confinement in an Intensive Care Unit."),
            _clause(3, "1 DEFINITIONS", DEFINITIONS),
            _clause(4, "4.3.1 Daily Hospital Cash", "The Company will pay the daily hospital cash for each day.")]
    claim = _claim("mum was in the intensive care unit for 3 days after surgery, pay the ICU benefit",
                   "Hospital confirms the unit is high dependency, not its designated intensive care unit.")
    ranked = [c.clause_id for c in rank_claim(pool, claim).clauses]
    # Then the contents page is last, and the definitions (they define the term the claim names) are in the top 3
    assert ranked[-1] == "1" and "3" in ranked[:3]
    said = _words(claim.text)
    assert _factor(pool[0], said) == CONTENTS_WEIGHT == 0.0
    assert _factor(pool[2], said) == NAMED_DEFINITION_WEIGHT > DEFINITION_WEIGHT
    # And plurals and hyphens name the term too; a term's words must be capitalised or joining words
    assert _factor(pool[2], _words("two intensive-care units")) == NAMED_DEFINITION_WEIGHT
    junk = _clause(9, "1 DEFINITIONS", "Accidental Injury was sustained, and - the rest of a sentence.\n"
                                       "Hospital - an establishment.\nPolicy - this contract.")
    assert _factor(junk, _words("an accidental injury was sustained, and")) == DEFINITION_WEIGHT
    # And a claim that names only a one-word term (Hospital) leaves the definitions held down
    assert _factor(pool[2], "i was in hospital for a week") == DEFINITION_WEIGHT
    assert _factor(pool[1], said) == 1.0


def test_a_pinned_query_never_pins_the_contents_page() -> None:
    # Given a claim that asks the amount payable (its limit query is pinned) and a pool whose contents
    # page names the benefit and its limit words first
    pool = [_clause(1, "EasyHealth", "Maximum payable for intensive care days ........ 11\n"
                                     "Maximum benefit payable, limits and excess ........ 12\n"
                                     "Intensive care days: maximum payable ........ 13"),
            _clause(2, "4.3.2 Intensive Care Benefit", "The Company will pay HK$2,000 a day, up to 30 days, for "
                                                        "each day of Confinement in an Intensive Care Unit."),
            _clause(3, "4.3.1 Daily Hospital Cash", "The Company will pay the daily hospital cash for each day."),
            _clause(4, "6.1 Notice", "Written notice of claim must be given within 30 days."),
            _clause(5, "6.2 Proof", "Proof of loss must be given within 90 days.")]
    claim = _claim("three days in intensive care", "Calculate maximum payable for the intensive care days.")
    ranked = [c.clause_id for c in rank_claim(pool, claim).clauses]
    # Then the contents page stays out of the top 3, after every clause a query scored (before: the
    # limit query's first hit, pinned into the top 3)
    assert ranked[0] == "2" and "1" not in ranked[:3] and ranked.index("1") >= 3
