"""Overlapping wordings (issue 31, outside tester's finding): two wordings of one line in force on one date are
found, with the dates they share; endorsements, adjacent terms, other lines and undated wordings are not."""

from __future__ import annotations

from longdoc.triage.overlaps import find_overlaps
from tests.unit.triage_set import TERMS as SET, member


def test_a_set_of_consecutive_terms_and_an_endorsement_has_no_overlap() -> None:
    # Given terms that meet end to end (2023-12-31, 2024-01-01) and an endorsement in force beside its wording
    # When overlaps are looked for / Then there are none
    assert find_overlaps("dev", SET) == []


def test_a_second_wording_of_the_same_line_names_both_and_the_shared_dates() -> None:
    # Given a second home wording whose period runs into the 2024 wording's, its line written in another case
    found = find_overlaps("dev", [*SET, member("home-2024b", "2024-06-01", "2025-05-31", lob=" Home ")])
    # Then one overlap names both wordings and the dates both are in force
    assert [o.as_json() for o in found] == [
        {"line_of_business": "home", "doc_ids": ["home-2024", "home-2024b"], "from": "2024-06-01", "to": "2024-12-31"}]
    assert found[0].message().startswith(
        "home wordings home-2024 (2024-01-01..2024-12-31) and home-2024b (2024-06-01..2025-05-31) of collection "
        "'dev' are both in force 2024-06-01..2024-12-31: triage of a home claim")


def test_open_ends_iso_interval_terms_and_undated_wordings() -> None:
    # Given an open-ended travel wording and a later one; a term-only wording; an undated one
    found = find_overlaps("dev", [*SET, member("travel-2024", "2024-01-01", "2024-12-31", lob="travel"),
                                  member("home-t", None, None, term="2023-12-01/2024-01-31"),
                                  member("home-undated", None, None)])
    # Then the open end overlaps from the later start; the term interval overlaps both home terms;
    # the undated wording (never in force) overlaps nothing
    assert [(o.doc_ids, o.dates()) for o in found] == [
        (("home-2023", "home-t"), "2023-12-01..2023-12-31"), (("home-2024", "home-t"), "2024-01-01..2024-01-31"),
        (("travel-2022", "travel-2024"), "2024-01-01..2024-12-31")]
