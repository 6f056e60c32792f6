"""The tool harness alone (:mod:`longdoc.extract.harness`, :mod:`longdoc.extract.citations`): issue 12's harness failures.

1. exact values pinned into CASE_FACTS keep their unit, or are not pinned;
3. one sentence cited through two overlapping chunks is one instance;
9. a clause_text that drops or adds a negation, exception or modal verb is not supported by its quote.
"""

from __future__ import annotations

import pytest

from longdoc.core.errors import CitationError
from longdoc.core.messages import ToolUseBlock
from longdoc.core.models import Chunk
from longdoc.core.records import CaseFacts
from longdoc.extract.citations import check_clause_support
from longdoc.extract.harness import apply_extraction, extract_outcome, instance_key
from longdoc.extract.prompt import EXTRACT_TOOL

MODEL = "test-model"


def _chunk(chunk_id: str, text: str, char_start: int = 0, ordinal: int = 0) -> Chunk:
    return Chunk(chunk_id=chunk_id, doc_id="doc", doc_version="v1", ordinal=ordinal, source="doc.txt",
                 page_start=3, page_end=3, section_id="9", heading_path=["Liability"], text=text,
                 char_start=char_start, char_end=char_start + len(text), token_count=len(text) // 4,
                 content_hash="0" * 64)


def _facts(*clause_types: str) -> CaseFacts:
    return CaseFacts(run_id="run-1", doc_id="doc", doc_version="v1", clause_types=list(clause_types))


def _call(clause: str, chunk_id: str, quote: str, clause_text: str | None = None, more: bool = False) -> ToolUseBlock:
    payload = {"clause_type": clause, "clause_text": clause_text or quote,
               "citations": [{"chunk_id": chunk_id, "page": 3, "quote": quote}]}
    if more:
        payload["more_instances"] = True
    return ToolUseBlock(id="toolu_1", name=EXTRACT_TOOL, input=payload)


def _pin(text: str, quote: str, clause: str = "Cap On Liability") -> dict[str, str]:
    """Run one extract_clause call for ``quote`` in a chunk holding ``text``; return CASE_FACTS' exact values."""
    chunks = {"c0": _chunk("c0", text)}
    facts = _facts(clause)
    outcome = extract_outcome(_call(clause, "c0", quote), facts, chunks, MODEL, 1)
    assert outcome.extraction is not None, outcome.text
    apply_extraction(facts, outcome.extraction, chunks)
    return facts.exact_values


# --- 1. exact values keep their unit ----------------------------------------------------------


def test_amounts_with_scale_words_are_pinned_whole() -> None:
    # Given the quote: "... up to $10 million ... and $30 million in the aggregate"
    text = ("9.1 The Supplier's total liability shall not exceed up to $10 million per claim "
            "and $30 million in the aggregate for all claims.")
    quote = "up to $10 million per claim and $30 million in the aggregate"
    # When it is extracted and applied, Then the pinned values carry their scale word
    assert _pin(text, quote) == {"Cap On Liability value 1": "$10 million", "Cap On Liability value 2": "$30 million"}


@pytest.mark.parametrize("text, value", [
    ("The fee is USD 2,450.00 per month, payable in advance.", "USD 2,450.00"),
    ("The deposit of 1.500,00 EUR is refundable on termination.", "1.500,00 EUR"),
    ("A discount of 10-15% applies to renewals of the licence.", "10-15%"),
    ("This Agreement takes effect on January 1, 2024 for all parties.", "January 1, 2024"),
    ("A late fee of 1.5 percent per month accrues on unpaid sums.", "1.5 percent"),
    ("Aggregate liability is capped at €2.5bn for every claim made.", "€2.5bn"),
])
def test_every_kind_of_exact_value_is_pinned_as_the_documents_whole_span(text: str, value: str) -> None:
    # Given a quote holding one currency code, percentage, range, date or scaled amount
    quote = text[text.index(" ") + 1: -1]
    # When it is extracted, Then the value pinned is exactly the document's whole span
    assert list(_pin(text, quote).values()) == [value]


def test_a_value_the_quote_cuts_is_not_pinned() -> None:
    # Given a quote that ends inside "$10 million" (the document goes on with the scale word)
    text = "Liability is capped at $10 million per claim."
    # When it is extracted, Then nothing partial ("$10") is pinned
    assert _pin(text, "Liability is capped at $10") == {}


# --- 3. no duplicates through overlapping chunks ---------------------------------------------

SHARED = "Either party may terminate this Agreement for convenience on ninety days' written notice."


def test_a_sentence_in_the_overlap_cited_through_both_chunks_is_stored_once() -> None:
    # Given two consecutive chunks whose overlap holds the same sentence
    first_text = "8.1 The term is five years. " + SHARED
    second_start = first_text.index(SHARED)
    second_text = SHARED + " 8.2 Termination for cause requires notice."
    chunks = {"c0": _chunk("c0", first_text), "c1": _chunk("c1", second_text, char_start=second_start, ordinal=1)}
    assert first_text[second_start:] == second_text[: len(SHARED)]
    facts = _facts("Termination For Convenience")
    clause = "Termination For Convenience"
    # When the model cites the sentence through the first chunk (asking for more), then through the second
    first = extract_outcome(_call(clause, "c0", SHARED, more=True), facts, chunks, MODEL, 1)
    assert first.extraction is not None
    apply_extraction(facts, first.extraction, chunks)
    second = extract_outcome(_call(clause, "c1", SHARED, more=True), facts, chunks, MODEL, 1)
    # Then the second is refused as the same occurrence: one found instance, keyed by document position
    assert second.extraction is None and second.is_error and "already recorded" in second.text
    assert len(facts.open[clause].instances) == 1
    assert instance_key(first.extraction.citations[0], chunks["c0"]) == first.extraction.instance


# --- 9. negations, exceptions and modal verbs are content ------------------------------------

LEASE = "the landlord is not permitted to terminate this lease during the fixed term"


def test_a_clause_text_that_drops_a_negation_is_rejected() -> None:
    # Given the quote and a clause_text that drops its "not"
    # Then the support check rejects it, naming the dropped word
    with pytest.raises(CitationError, match="drops 'not'"):
        check_clause_support("The landlord is permitted to terminate this lease during the fixed term.", [LEASE])


@pytest.mark.parametrize("clause_text, quote", [
    ("The tenant may assign the lease.", "the tenant shall not assign the lease"),
    ("The tenant must assign the lease.", "the tenant may assign the lease"),
    ("Either party may terminate without cause.", "either party may terminate for cause"),
    ("Fees are refundable.", "fees are not refundable except on termination for cause"),
    ("Neither party may assign this Agreement.", "each party may assign this Agreement"),
])
def test_an_added_or_dropped_negation_exception_or_modal_is_rejected(clause_text: str, quote: str) -> None:
    with pytest.raises(CitationError):
        check_clause_support(clause_text, [quote])


@pytest.mark.parametrize("clause_text", [
    "The landlord is not permitted to terminate this lease during the fixed term.",
    "landlord not permitted to terminate during the fixed term",
    "fixed term of the lease",
])
def test_a_clause_text_keeping_the_quotes_polarity_is_accepted(clause_text: str) -> None:
    check_clause_support(clause_text, [LEASE])


ASSIGNMENT = ("This Agreement shall be binding upon the parties hereto and their respective successors and assigns; "
              "provided that this Agreement may not be assigned without the prior written consent of the other "
              "party, and any purported assignment without such consent shall not be valid.")


def test_words_the_quote_itself_reads_side_by_side_are_not_a_dropped_negation() -> None:
    # Given a CUAD anti-assignment quote reading both "shall be binding" and "shall not be valid"
    # When clause_text keeps its first words only ("shall be binding ... may not be assigned")
    # Then it is supported: "shall be" is the quote's own wording, not "shall not be" with the "not" cut out
    check_clause_support("This Agreement shall be binding upon the parties hereto and their respective successors "
                         "and assigns; provided that this Agreement may not be assigned", [ASSIGNMENT])
    # And cutting the "not" out of "shall not be valid" is still rejected
    with pytest.raises(CitationError, match="drops 'not'"):
        check_clause_support("any purported assignment without such consent shall be valid", [ASSIGNMENT])


# --- issue 28: numbers checked with what they count (the summaries' rule) ---------------------

SUBCONTRACTING = "The Supplier uses three subcontractors, listed in Schedule 4, and pays EUR 12,480.00 a month."


def test_a_clause_text_count_must_come_with_its_noun() -> None:
    # Given a quote with "three subcontractors" and "Schedule 4", When clause_text says 4 subcontractors
    # Then it is rejected: the 4 of the quote names a schedule, it counts nothing
    with pytest.raises(CitationError, match="values not in any quote: 4 subcon"):
        check_clause_support("The Supplier uses 4 subcontractors listed in Schedule 4.", [SUBCONTRACTING])
    # And the count the quote gives, in digits or words, with separators normalised, is supported
    check_clause_support("The Supplier uses 3 subcontractors listed in Schedule 4 and pays EUR 12480.00 a month.",
                         [SUBCONTRACTING])


def test_a_rounded_amount_in_clause_text_is_rejected() -> None:
    with pytest.raises(CitationError, match="EUR 12,500"):
        check_clause_support("The Supplier pays EUR 12,500 a month to its subcontractors.", [SUBCONTRACTING])
