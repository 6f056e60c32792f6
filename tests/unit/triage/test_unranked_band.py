"""A band clause no query found (BM25 only: the claim shares no word with it) is marked, warned about,
and not credited by ``eval triage``'s band recall (outside tester's finding)."""

from __future__ import annotations

from longdoc.triage.claim import claim_from_json
from longdoc.triage.clauses import Clause, fill_band
from longdoc.triage.ranking import rank_claim
from longdoc.triage.render import band_table, explain_table
from longdoc.triage.service import _band_json, unranked_warning


def _clause(n: int, text: str) -> Clause:
    return Clause(f"k{n}", str(n), "wording", "v1", f"c{n}", (f"{n}. Heading",), text, False, n, 40)


POOL = [_clause(1, "We pay for fire damage to the home."), _clause(2, "We pay for storm damage to the roof."),
        _clause(3, "We do not pay for wear and tear."), _clause(4, "You must tell us about a loss at once.")]


def _claim(description: str) -> object:
    return claim_from_json({"loss_date": "2024-05-01", "line_of_business": "home",
                            "claim_form": {"description": description}})


def _result(band_json: dict, warnings: list[str]) -> dict:
    return {"band": band_json, "warnings": warnings, "queries": [],
            "budget": {"input_budget": 0, "source": "-", "bands": {}}}


def test_a_claim_sharing_no_word_is_warned_and_its_band_marked_unranked() -> None:
    ranked = rank_claim(POOL, _claim("Xyzzy plugh frobnicate"))
    band = fill_band(ranked.clauses, 1200)
    # Then no clause was found, the band is in document order, and the warning says it is no ranking
    assert ranked.found == 0 and [c.clause_id for c in band.clauses] == ["1", "2", "3", "4"]
    warning = unranked_warning(band, ranked.ranked_count)
    assert warning is not None and warning.startswith("no query found any clause of the wording")
    shaped = _band_json(band, ranked.reasons, ranked.ranked_count)
    assert shaped["unranked"] == 4 and [c["ranked"] for c in shaped["clauses"]] == [False] * 4
    text = "\n".join(band_table(_result(shaped, [warning])) + explain_table(_result(shaped, [warning])))
    assert "warning: no query found any clause" in text
    assert "1 found by no query (fills the band in document order)" in text


def test_a_partly_matching_claim_counts_only_the_clauses_after_the_ranked_ones() -> None:
    ranked = rank_claim(POOL, _claim("Storm damage to the roof"))
    band = fill_band(ranked.clauses, 1200)
    # Then the clauses sharing a word rank first, and the others are counted as unranked
    assert ranked.clauses[0].clause_id == "2" and 0 < ranked.ranked_count < 4
    shaped = _band_json(band, ranked.reasons, ranked.ranked_count)
    assert shaped["unranked"] == 4 - ranked.ranked_count
    assert unranked_warning(band, ranked.ranked_count) == (
        f"{4 - ranked.ranked_count} of the band's 4 clauses were found by no query: they follow the ranked ones "
        "in document order")
    # And a band of ranked clauses only has no warning
    assert unranked_warning(fill_band(ranked.clauses[:ranked.ranked_count], 1200), ranked.ranked_count) is None
