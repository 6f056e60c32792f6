"""Definitions units are weighted down in triage ranking, whether they say ``means`` or sit under a
definitions heading (wordings that set a term beside its meaning: ``Accident An unexpected event``)."""

from __future__ import annotations

import pytest

from longdoc.triage.queries import is_definitions

TERM_MEANING = "Accident An unexpected and unintended event.\nPet Your dog or cat named in the schedule."


@pytest.mark.parametrize("heading", ["Definitions", "7. Definitions", "DEFINITIONS", "Section 2 Glossary",
                                     "Meaning of words", "Words with special meanings",
                                     "Definitions and interpretation", "General Definitions", "A. Defined Terms",
                                     "SECTION B) DEFINITIONS - STANDARD DEFINITIONS",
                                     "Section B) Definitions - Specific Definitions", "Standard Definitions",
                                     "SECTION B – DEFINITIONS", "SECTION B: DEFINITIONS", "Section B Definitions",
                                     "Part C. Glossary"])
def test_a_unit_under_a_definitions_heading_is_definitions_without_means(heading: str) -> None:
    assert is_definitions(TERM_MEANING, ("Pet Insurance Policy", heading))


@pytest.mark.parametrize("heading", ["Definition of Advanced Stage Critical Illness", "Vet fees",
                                     "What is not covered", "Definitions of the benefits we pay for",
                                     "Definitions - standard benefits", "a definitions"])
def test_a_heading_that_only_mentions_definitions_is_not_a_definitions_section(heading: str) -> None:
    assert not is_definitions(TERM_MEANING, ("Pet Insurance Policy", heading))


def test_three_means_lines_are_definitions_under_any_heading() -> None:
    text = ('"Home" means the private dwelling.\n"Flood" means water escaping.\n'
            '"Storm" means violent weather.')
    assert is_definitions(text, ("Section 1 Buildings",)) and not is_definitions(TERM_MEANING)
