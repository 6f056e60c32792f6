"""The shared polarity rule read per aligned sentence, word order aside (issue 28 follow-up).

:func:`longdoc.core.polarity.polarity_problem` compares the negation cues attached to the words a
statement shares with the cited sentence it corresponds to, not a three-word window.
"""

from __future__ import annotations

import pytest

from longdoc.core.polarity import polarity_problem, read_sentence, word_key

BREACH = ("The Customer may terminate this Agreement at once by written notice if the Supplier commits a "
          "material breach that is not remedied within 30 days of notice.")
FEES = ("The fees are fixed for the Term. The fee is subject to annual indexation under clause 5.3 and shall "
        "not otherwise increase during the Term.")
SUBCONTRACTING = ("The Supplier uses three subcontractors, listed in Schedule 4. The Supplier shall not appoint any "
                  "further subcontractor without the Customer's prior written consent.")
FRAUD = "Neither party excludes or limits its liability for fraud or for death or personal injury caused by negligence."


@pytest.mark.parametrize("statement, source, cue", [
    ("The Customer may terminate at once for a material breach remedied within 30 days.", BREACH, "not"),
    ("The fee shall increase otherwise during the Term.", FEES, "not"),
    ("Save for indexation, the fee shall increase during the Term.", FEES, "not"),
    ("The Supplier shall appoint further subcontractors without the Customer's prior written consent.",
     SUBCONTRACTING, "not"),
    ("Each party excludes liability for fraud.", FRAUD, "neither"),
])
def test_a_statement_that_drops_the_cited_negation_is_refused(statement: str, source: str, cue: str) -> None:
    # Given a cited passage with a negation attached to a word the statement repeats
    # When the statement says it without the negation (words moved, other words around it)
    problem = polarity_problem(statement, [source], "the statement")
    # Then it is refused, naming the dropped cue; and a triage reason (dropped half only) too
    assert problem is not None and f"drops {cue!r}" in problem
    assert polarity_problem(statement, [source], "the reason", added=False) == problem.replace(
        "the statement", "the reason")


@pytest.mark.parametrize("statement, source", [
    ("The fee does not otherwise increase.", FEES),
    ("Apart from indexation the fee does not increase during the Term.", FEES),
    ("The Supplier may not appoint further subcontractors without consent.", SUBCONTRACTING),
    ("No further subcontractor may be appointed without the Customer's consent.", SUBCONTRACTING),
    ("The Customer may terminate at once for a material breach not remedied within 30 days.", BREACH),
    ("The Customer may terminate at once if a material breach isn't remedied within 30 days.", BREACH),
    ("Liability for fraud is not excluded by either party.", FRAUD),
    ("The Supplier uses three subcontractors listed in Schedule 4.", SUBCONTRACTING),
    ("The fees are fixed for the Term.", FEES),
])
def test_a_paraphrase_that_keeps_the_negation_is_accepted(statement: str, source: str) -> None:
    # Given the same passages, When a statement rewords them keeping each negation on its word
    # Then there is no polarity problem
    assert polarity_problem(statement, [source], "the statement") is None


def test_an_added_negation_or_exception_on_a_shared_word_is_refused() -> None:
    # Given "The fees are fixed for the Term" and an exception the passage does not make for them
    problem = polarity_problem("Save for the Term, the fees are fixed.", ["The fees are fixed for the Term. The "
                               "Customer shall not pay late."], "the statement")
    # Then it is refused as an added cue (the dropped-only half lets a reason say it)
    assert problem is not None and "says 'save'" in problem
    assert polarity_problem("Save for the Term, the fees are fixed.", ["The fees are fixed for the Term. The "
                            "Customer shall not pay late."], "r", added=False) is None


def test_cues_are_read_with_their_heads_and_the_words_they_cover() -> None:
    # Given the cited fee sentence, When it is read
    (not_,) = [c for c in read_sentence(FEES.split(". ")[1]).cues if c.word == "not"]
    # Then "not" heads "increase" (the adverb "otherwise" skipped) and covers "during the Term"
    sentence = read_sentence(FEES.split(". ")[1])
    assert [key for key, _ in not_.heads] == [word_key("increase"), word_key("Term")]
    assert {word_key("otherwise"), word_key("increase"), word_key("term")} <= {sentence.key_at[at] for at in not_.covers}
    # And the crude stem joins inflections only
    assert word_key("remedied") == word_key("remedy") and word_key("excludes") == word_key("exclude")
    assert word_key("term") != word_key("terminate")


def test_the_summary_and_extraction_checks_apply_the_same_rule() -> None:
    from longdoc.core.errors import CitationError, StatementError
    from longdoc.extract.citations import check_clause_support
    from longdoc.ingest.chunk import chunk_document
    from longdoc.ingest.parse import parse_document
    from longdoc.summarize.checks import check_statement
    from longdoc.summarize.units import SectionIndex

    # Given a section "5. Fees" and "7. Termination" holding the cited sentences
    text = f"# Agreement\n\n## 5. Fees\n\n{FEES}\n\n## 7. Termination\n\n{BREACH}\n"
    index = SectionIndex(chunk_document(parse_document("a.md", text.encode()), "a"))
    # When a summary statement or an extracted clause_text drops the negation with the words moved
    # Then both are refused on the dropped "not"
    with pytest.raises(StatementError, match="drops 'not'"):
        check_statement("Save for indexation, the fee shall increase during the Term.", ["5"], {"5", "7"}, index)
    with pytest.raises(CitationError, match="drops 'not'"):
        check_clause_support("The Customer may terminate at once for a material breach remedied within 30 days.",
                             [BREACH])
    # And the faithful paraphrases are accepted by both
    assert check_statement("The fee does not otherwise increase.", ["5"], {"5", "7"}, index)
    check_clause_support("The Customer may terminate at once for a material breach not remedied within 30 days.",
                         [BREACH])


def test_a_bound_negates_its_comparative_only() -> None:
    # Given "no later than 14 days after the leak is first discovered"
    notice = "The leak must be reported to us in writing no later than 14 days after it is first discovered."
    # When a text drops the "no" of the bound, Then it is refused
    problem = polarity_problem("The leak must be reported later than 14 days after it is discovered.", [notice], "r")
    assert problem is not None and "drops 'no'" in problem
    # And restating the bound, or a reason counting days, is no dropped negation
    assert polarity_problem("The leak must be reported within 14 days of its discovery.", [notice], "r") is None
    assert polarity_problem("reported 26 days after discovery", [notice], "r", added=False) is None
    assert polarity_problem("reported 26 days later", [notice], "r", added=False) is None


def test_text_that_copies_a_run_of_the_quote_keeps_its_meaning() -> None:
    # Given clause text that copies the start of a quote and stops mid-sentence, before a later "may"
    quote = ("34.1 Neither Party may assign this Agreement without the prior\nwritten consent of the other "
             "Party, except that any permitted assignee may assign any of its rights.")
    clause = "34.1 Neither Party may assign this Agreement without the prior written consent of the other Party"
    # Then nothing is dropped: it repeats every cue it covers
    assert polarity_problem(clause, [quote]) is None
    # And leaving out a "not" that the copied run contains is still refused
    assert polarity_problem("The Supplier shall appoint subcontractors",
                            ["The Supplier shall not appoint subcontractors"]) is not None
