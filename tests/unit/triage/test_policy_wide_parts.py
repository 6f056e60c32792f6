"""Issue 31, twelfth pass (blind set 14, a Singapore travel wording): the policy's GENERAL CONDITIONS,
GENERAL EXCLUSIONS and what follows them, printed after the last numbered cover, are not parts of that
cover. The chunker keeps them in the last ``Section N`` (a keyword section keeps its capitals parts,
such as a cover's ``ADDITIONAL EXCLUSIONS``), so they were cited as ``Section 35#13`` under
``Section 35: Automatic Extension ... > GENERAL EXCLUSIONS``."""

from __future__ import annotations

import pytest

from longdoc.ingest.pipeline import chunk_bytes
from longdoc.triage.units import clause_units, is_policy_wide


def _body(topic: str, n: int) -> str:
    return " ".join(f"We pay {topic} costs of kind {k} up to the amount in the table of benefits." for k in range(n))


def _units() -> dict[str, tuple[str, ...]]:
    text = "\n".join([
        "TRAVEL POLICY", "Section 1: Baggage", _body("baggage", 18),
        "ADDITIONAL EXCLUSIONS", "We do not pay for " + _body("excluded bag", 16),
        "Section 2: Travel Delay", _body("delay", 18),
        "GENERAL CONDITIONS", "You must tell us " + _body("notice", 18),
        "GENERAL EXCLUSIONS", "We do not cover " + _body("war", 18),
        "DEFINITIONS", "Baggage means " + _body("definition", 18)])
    chunks = chunk_bytes("wording.txt", text.encode(), target_tokens=300, max_tokens=400)
    assert {c.section_id.split("#")[0] for c in chunks} == {"Section 1", "Section 2"}  # the chunker's sections
    return {u.unit_id: u.heading_path for u in clause_units(chunks)}


def test_general_conditions_and_what_follows_are_cited_by_their_own_headings() -> None:
    units = _units()
    # Then the policy-wide parts after the last cover have ids and paths of their own
    assert units["GENERAL CONDITIONS"] == ("GENERAL CONDITIONS",)
    assert units["GENERAL EXCLUSIONS"] == ("GENERAL EXCLUSIONS",)
    assert units["DEFINITIONS"] == ("DEFINITIONS",)
    assert units["Section 2"] == ("Section 2: Travel Delay",)
    # And a cover's own capitals part stays the cover's
    assert units["Section 1#2"] == ("Section 1: Baggage", "ADDITIONAL EXCLUSIONS")


@pytest.mark.parametrize(("heading", "wide"), [
    ("GENERAL EXCLUSIONS", True), ("General Conditions", True), ("COMMON PROVISIONS", True),
    ("GENERAL DEFINITIONS", True), ("ADDITIONAL EXCLUSIONS", False), ("DEFINITIONS", False),
    ("WHAT IS NOT COVERED", False), ("GENERAL", False), ("GENERALLY EXCLUDED ITEMS", False),
])
def test_which_headings_name_a_part_of_the_whole_policy(heading: str, wide: bool) -> None:
    assert is_policy_wide(heading) is wide
