"""A section, clause or schedule number is a reference label, never a count (issue 28 follow-up).

:func:`longdoc.core.quantities.find_quantity` reads ``4. Subcontracting`` and ``Schedule 4`` as
references: ``4 subcontractors`` is not supported by them.
"""

from __future__ import annotations

import pytest

from longdoc.core.errors import CitationError, StatementError
from longdoc.core.quantities import bare_quantities, find_quantity
from longdoc.extract.citations import check_clause_support
from longdoc.ingest.chunk import chunk_document
from longdoc.ingest.parse import parse_document
from longdoc.summarize.checks import check_statement
from longdoc.summarize.units import SectionIndex

SUBCONTRACTING = "4. Subcontracting\n\nThe Supplier uses three subcontractors, listed in Schedule 4."


def _one(text: str):
    (quantity,) = bare_quantities(text)
    return quantity


@pytest.mark.parametrize("statement, source", [
    ("The Supplier uses 4 subcontractors.", SUBCONTRACTING),                      # the heading's own number
    ("The Supplier uses 4 subcontractors.", "## 4 Subcontracting\n\nThree subcontractors are used."),
    ("The Supplier uses 4 subcontractors.", "4.2 Subcontractors\n\nThree are used."),
    ("The Supplier uses 4 subcontractors.", "(4) Subcontractors may be used as Schedule 4 subcontractors lists."),
    ("Either party has 9 termination rights.", "9. Termination\n\nEither party may terminate for breach."),
    ("The Supplier uses 4 subcontractors.", "Under clause 4 subcontractors need consent."),
    ("The Supplier uses 4 subcontractors.", "Article 4 subcontractors: none are approved."),
])
def test_a_section_number_never_counts_as_the_quantity(statement: str, source: str) -> None:
    # Given a source whose only 4 (or 9) is a section, clause, article or schedule number
    # When the statement's count is looked up in it
    # Then it is not found: a reference label is no count of the word after it
    assert find_quantity(_one(statement), source) is None


def test_a_count_next_to_a_heading_is_still_found_where_the_text_counts() -> None:
    # Given a heading "4. Subcontracting" and a body that says "three subcontractors"
    # When the statement says 3 (or three) subcontractors
    # Then it is found at the body's count, not at the heading
    at = find_quantity(_one("The Supplier uses 3 subcontractors."), SUBCONTRACTING)
    assert at == SUBCONTRACTING.index("three")
    # And a count that merely opens a line (no '.' or ')' after it, no heading mark) still counts
    assert find_quantity(_one("4 subcontractors"), "The Supplier uses\n4 subcontractors.") == 18


def test_a_reference_is_found_as_the_same_reference() -> None:
    # Given "Schedule 4" in the text and a heading "4. Subcontracting"
    # When a statement names "Schedule 4" or "Section 4"
    # Then "Schedule 4" is found at the schedule reference, "Section 4" at the heading's number
    assert find_quantity(_one("listed in Schedule 4"), SUBCONTRACTING) == SUBCONTRACTING.rindex("4")
    assert find_quantity(_one("see Section 4"), SUBCONTRACTING) == 0
    # And a text's "Section 4 Subcontracting" is read as a reference, not as a count of subcontracting
    assert (_one("Section 4 Subcontracting").before, _one("Section 4 Subcontracting").after) == ("section", None)
    # And "Schedule 3" is not "Schedule 4"
    assert find_quantity(_one("listed in Schedule 3"), SUBCONTRACTING) is None


def test_a_summary_statement_counting_with_the_heading_number_fails() -> None:
    # Given a document whose section "## 4. Subcontracting" says "three subcontractors ... Schedule 4"
    text = ("# Agreement\n\n## 4. Subcontracting\n\nThe Supplier uses three subcontractors, listed in Schedule 4.\n\n"
            "## 9. Termination\n\nEither party may terminate for material breach.\n")
    index = SectionIndex(chunk_document(parse_document("a.md", text.encode()), "a"))
    given = set(index.pieces)
    four, nine = "4", "9"
    # When a statement says "4 subcontractors" citing it, or "9 termination rights" citing section 9
    # Then both fail on the number
    with pytest.raises(StatementError, match="'4' does not appear verbatim with what it counts"):
        check_statement("The Supplier uses 4 subcontractors.", [four], given, index)
    with pytest.raises(StatementError, match="'9' does not appear verbatim with what it counts"):
        check_statement("Either party has 9 termination rights.", [nine], given, index)
    # And the section's own count passes
    assert check_statement("The Supplier uses 3 subcontractors.", [four], given, index)


def test_an_extracted_clause_counting_with_the_heading_number_is_rejected() -> None:
    # Given a quote opening with its heading "9. Termination"
    quote = "9. Termination\n\nEither party may terminate this Agreement for material breach."
    # When clause_text says "9 termination rights"
    # Then it is rejected on the number
    with pytest.raises(CitationError, match="values not in any quote: 9 termin"):
        check_clause_support("Either party may exercise 9 termination rights for material breach.", [quote])


def test_a_section_number_quoted_as_a_section_number_is_found() -> None:
    # Given clause text that quotes a contract's numbered heading and sub-clause (its lines joined)
    source = "35.0 GOVERNING LAW\n35.1 This Agreement shall be governed by the laws of North Carolina."
    statement = "35.0 GOVERNING LAW 35.1 This Agreement shall be governed by the laws of North Carolina."
    # When its numbers are looked for in the source
    found = [(q.raw, q.label, find_quantity(q, source)) for q in bare_quantities(statement)]
    # Then each section number is supported by the same section number, written the same way
    assert found == [("35.0", True, 0), ("35.1", True, 19)]
    # And a count still needs what it counts: "4 subcontractors" is not the label "4. Subcontracting"
    counted = bare_quantities("4. Subcontracting The Supplier uses 4 subcontractors.")
    source = "4. Subcontracting\nThe Supplier uses three subcontractors."
    assert [(q.raw, q.label, find_quantity(q, source)) for q in counted] == [("4", True, 0), ("4", False, None)]
