"""A numbered line confirmed as a heading by its first child on the next line (held-out wording, set 9).

Wordings write their benefit sections in sentence case (``4. Personal accident benefit``) and put
the first sub-section right below (``4.1 Benefit``). The title test read such a line as a list
entry, so the sub-sections lost their parent and, when the line was long, the child itself was
taken for the rest of a paragraph and its text joined the section before."""

from __future__ import annotations

import pytest

from longdoc.core.models import Chunk
from longdoc.ingest.chunk import chunk_document
from longdoc.ingest.chunk.numbering import next_line_numbers, parent_of_next
from longdoc.ingest.parse import parse_document

_WORDING = (
    "Your Benefits\n"
    "1. Medical expenses benefit (Comprehensive StudyCare policy only)\n"
    "1.1 Benefit\n"
    "If the insured student suffers a bodily injury while on a journey, we will reimburse the medical expenses.\n"
    "We will reimburse you for those medical expenses that were incurred for the following:\n"
    "1. hospitalization;\n"
    "2. surgery.\n"
    "2. Top up inpatient medical expenses benefit (Comprehensive Overseas StudyCare policy only)\n"
    "2.1 Benefit\n"
    "We will pay the additional inpatient medical expenses once the other policy is exhausted.\n"
    "3. Personal accident benefit\n"
    "3.1 Benefit\n"
    "If the insured student has an accident while on a journey, we will pay the benefit in the table.\n"
)


def _section_of(chunks: list[Chunk], phrase: str) -> tuple[str | None, list[str]]:
    chunk = next(c for c in chunks if phrase in c.text)
    return chunk.section_id, chunk.heading_path


def test_sentence_case_sections_are_headings_when_their_first_child_follows() -> None:
    # Given a wording whose top-level titles are in sentence case, each followed by its "N.1 Benefit"
    chunks = chunk_document(parse_document("w.pdf.txt", _WORDING.encode()), "w", target_tokens=30, max_tokens=60)
    # Then each "N.1" is a section under its "N." parent, and the top-up cover is not text of 1.1
    # (before: no parent, and "2.1 Benefit" under the long "2." line was read as the rest of a paragraph)
    section, path = _section_of(chunks, "additional inpatient medical expenses")
    assert section == "2.1"
    assert path[0].startswith("2. Top up inpatient medical expenses")
    section, path = _section_of(chunks, "has an accident while on a journey")
    assert (section, path[0]) == ("3.1", "3. Personal accident benefit")
    # And the lower-case list "1. hospitalization;" stays text of 1.1
    assert str(_section_of(chunks, "hospitalization")[0]).split("#")[0] == "1.1"


def test_parent_of_next_wants_the_first_child_and_a_short_capitalised_title() -> None:
    assert parent_of_next((4,), "Personal accident benefit", (4, 1))
    assert not parent_of_next((4,), "Personal accident benefit", (4, 2))  # not its first child
    assert not parent_of_next((4,), "surgery;", (4, 1))  # a lower-case list entry
    assert not parent_of_next((4,), "We will pay the benefit stated in the table.", (4, 1))  # a sentence
    assert next_line_numbers(["4. Title", "", "4.1 Benefit", "text"]) == [(4, 1), (4, 1), None, None]


_BARE_SECTIONS = (
    "1 DEFINITIONS\n"
    "Accident - an unforeseen and unexpected event.\n"
    "2 BENEFITS PROVISIONS\n"
    "The Company will pay the Daily Hospital Cash Benefit for each day of Confinement.\n"
    "3 EXCLUSIONS\n"
    "No Daily Hospital Cash Benefit is payable when the Confinement is caused by:\n"
    "1. Congenital Conditions.\n"
    "2. Pre-existing Conditions.\n"
    "3. War or any act of war.\n"
    "4 CLAIM PROVISIONS\n"
    "4.1 Notice of Claim\n"
    "Written notice of claim must be given to the Company within thirty days.\n"
)


def test_a_dotted_list_under_bare_numbered_sections_does_not_restart_the_numbering() -> None:
    # Given sections numbered without a dot ("3 EXCLUSIONS") and a dotted list led in by a colon
    chunks = chunk_document(parse_document("e.pdf.txt", _BARE_SECTIONS.encode()), "e", target_tokens=30,
                            max_tokens=60)
    # Then the list stays text of 3 and the claims section after it keeps its numbers (before: the
    # list was read as a restart at 1, and "4 CLAIM PROVISIONS" became text of the list's "3.")
    assert str(_section_of(chunks, "Pre-existing Conditions")[0]).split("#")[0] == "3"
    section, path = _section_of(chunks, "within thirty days")
    assert str(section).startswith("4") and path[0] == "4 CLAIM PROVISIONS"


def test_an_exhibit_still_restarts_its_numbering_after_a_lead_in() -> None:
    from longdoc.ingest.chunk.numbering import restart_in_other_style
    tops = [("1 Definitions", 4), ("2 Term", 4), ("Exhibit F", 1)]
    assert not restart_in_other_style("1. Confidential Information.", (1,), (2,), tops, "the parties agree as follows:")
    assert restart_in_other_style("1. Congenital Conditions.", (1,), (3,), tops[:2], "is caused by:", (2,))
    assert not restart_in_other_style("1. Congenital Conditions.", (1,), (3,), tops[:2], "Exclusions", (2,))
    # a number with its own text under it (the next line is no "2.") is a schedule's restart
    assert not restart_in_other_style("1. Medical Expenses", (1,), (4,), tops[:2], "payable under this policy:", None)


def test_a_wrapped_reference_under_a_numbered_heading_is_no_heading() -> None:
    # Given (outside tester, from a CUAD contract) a heading line whose sentence wraps onto "Exhibit D."
    text = ("8.1 Termination\n"
            "8.1.9 Health Care Compliance. This Agreement may be terminated by Janssen in accordance with Section 2(d) of\n"
            "Exhibit D.\n"
            "8.1.10 Other Remedies. The remedies in this Section are not exclusive.\n")
    chunks = chunk_document(parse_document("c.pdf.txt", text.encode()), "c", target_tokens=30, max_tokens=60)
    # Then "Exhibit D." stays the end of 8.1.9's sentence and 8.1.10 keeps its own path
    assert all(c.section_id != "Exhibit D" and "Exhibit D." not in c.heading_path for c in chunks)
    assert _section_of(chunks, "not exclusive")[0] == "8.1.10"


def test_a_schedule_row_with_an_amount_is_not_confirmed_by_its_first_child() -> None:
    assert not parent_of_next((4,), "Baggage 2,000", (4, 1))


def test_a_schedule_that_restarts_with_text_under_each_number_still_restarts() -> None:
    # Given (second outside tester) bare-numbered sections, then a schedule led in by a colon whose
    # numbers each have their own text: a restart, not a list
    text = ("1 DEFINITIONS\nAccident means a sudden event.\n2 COVER\nWe cover the insured person.\n"
            "3 EXCLUSIONS\nWe do not cover war.\n4 GENERAL CONDITIONS\nYou must take care.\n"
            "SCHEDULE OF BENEFITS\nThe benefits below are payable under this policy:\n"
            "1. Medical Expenses\nWe pay medical expenses up to the limit.\n"
            "2. Baggage\nWe pay for lost baggage up to the limit.\n")
    chunks = chunk_document(parse_document("s.pdf.txt", text.encode()), "s", target_tokens=30, max_tokens=60)
    assert _section_of(chunks, "medical expenses up to") == ("1", ["1. Medical Expenses"])


@pytest.mark.parametrize("name", ["e.txt", "e.md"])
def test_the_dotted_list_rule_reads_the_lead_in_across_a_blank_line(name: str) -> None:
    # Given (second outside tester) the same wording in a blank-line format: the line before "1." is blank
    text = _BARE_SECTIONS.replace("\n", "\n\n")
    chunks = chunk_document(parse_document(name, text.encode()), "e", target_tokens=30, max_tokens=60)
    # Then the lead-in is still read and the list stays text of 3
    assert str(_section_of(chunks, "Pre-existing Conditions")[0]).split("#")[0] == "3"
    assert _section_of(chunks, "within thirty days")[1][0] == "4 CLAIM PROVISIONS"
