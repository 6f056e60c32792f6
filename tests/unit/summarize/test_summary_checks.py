"""The summary harness checks, map units and the parts the final synthesis is parsed with."""

from __future__ import annotations

import pytest

from longdoc.core.errors import StatementError
from longdoc.ingest.chunk import chunk_document
from longdoc.ingest.parse import parse_document
from longdoc.summarize.checks import check_statement, must_be_verbatim, resolve_cite
from longdoc.summarize.lexrank import lexrank, top_sentences
from longdoc.summarize.prompt import map_request, parse_lines
from longdoc.summarize.units import SectionIndex, group_chunks, header, make_groups, pieces_of
from tests.unit.pdf_builder import text_pdf

TEXT = """1. Cover

We will pay up to $5,000.00 per claim within 30 days of 1 March 2024. "Insured Person" means the person named.

2. Exclusions

We will not pay for losses over 140 days old or 10% of the excess.
"""


@pytest.fixture(scope="module")
def index() -> SectionIndex:
    return SectionIndex(chunk_document(parse_document("p.txt", TEXT.encode()), "p"))


def test_a_statement_with_its_values_in_the_cited_section_passes_with_its_section(index) -> None:
    cites = check_statement("Claims are paid up to $5,000.00 within 30 days.", ["1"], {"1", "2"}, index)
    assert [c.section_id for c in cites] == ["1"]


@pytest.mark.parametrize("text, sections, reason", [
    ("Claims are paid up to $5,500.00.", ["1"], "'$5,500.00' does not appear verbatim"),
    ("Claims are paid up to $5,000.00.", ["2"], "'$5,000.00' does not appear verbatim"),
    ("Losses over 14 days old are excluded.", ["2"], "'14' does not appear verbatim"),  # not inside "140"
    ("Claims are paid.", [], "cites no section"),
    ("Claims are paid.", ["7"], "which this call was not given"),
    ("The \"Policy Holder\" is covered.", ["1"], "'Policy Holder' does not appear verbatim"),
])
def test_a_statement_fails_with_the_reason(index, text, sections, reason) -> None:
    with pytest.raises(StatementError, match=reason.replace("$", r"\$").replace("(", r"\(")):
        check_statement(text, sections, {"1", "2"}, index)


def test_known_defined_terms_must_be_in_the_cited_section(index) -> None:
    with pytest.raises(StatementError, match="Insured Person"):
        check_statement("The insured person bears 10% of the excess.", ["2"], {"1", "2"}, index,
                        terms={"Insured Person"})


def test_values_and_citation_ids_are_read_as_written() -> None:
    assert must_be_verbatim("Up to $10 million from 1 March 2024, 10-15% and 3 days") == [
        "$10 million", "1 March 2024", "10-15%", "3"]
    assert resolve_cite("Section 4.2", {"4.2"}) == "4.2"
    assert resolve_cite("4.2#2", {"4.2"}) == "4.2"
    assert resolve_cite("4", {"Section 4"}) == "Section 4"
    assert resolve_cite("9", {"4.2"}) is None


def test_pieces_carry_the_header_and_groups_stay_within_bounds(index) -> None:
    chunk = next(iter(index.chunks.values()))
    pieces = pieces_of(chunk)
    assert header(pieces[0], "p.txt") == "[doc: p.txt | section: 1 | page: n/a]"
    topics = ["medical", "baggage", "delay", "cancellation", "liability", "evacuation"] * 2
    text = "\n\n".join(f"{k}. {topic.title()}\n\nThe {topic} cover pays claims. " + "Filler words here. " * 150
                         for k, topic in enumerate(topics, 1))
    chunks = chunk_document(parse_document("big.txt", text.encode()), "big")
    groups = make_groups(chunks, None, 1500, 3000)
    assert len(groups) == len(group_chunks(chunks, 1500, 3000)) > 2
    assert all(g.tokens <= 3000 for g in groups)
    assert [g.rank for g in groups] == list(range(len(groups)))
    assert all(set(g.section_ids) <= {str(k) for k in range(1, 13)} for g in groups)
    # With a focus, the groups that mention it come first
    focused = make_groups(chunks, "baggage claims", 1500, 3000)
    first = next(g for g in focused if g.rank == 0)
    assert first.focus_score == max(g.focus_score for g in focused) > 0
    assert any(s in first.section_ids for s in ("2", "8"))


def test_the_final_lines_parse_into_statements_and_citations() -> None:
    text = "- Claims within 30 days. [1; 2]\n\n- No citation here\n1. Numbered. [Section 4.2, 5]\n"
    assert parse_lines(text) == [("Claims within 30 days.", ["1", "2"]), ("No citation here", []),
                                 ("Numbered.", ["Section 4.2", "5"])]


def test_document_text_is_fenced_and_cannot_close_its_fence(index) -> None:
    pieces = [p for c in index.chunks.values() for p in pieces_of(c)]
    prompt = map_request(pieces, "p.txt", "short", "exclusions").messages[0].content
    assert isinstance(prompt, str)
    nonce = prompt.split("<unit-")[1][:12]
    assert prompt.count(f"</unit-{nonce}>") == len(pieces) and f"<focus-{nonce}>" in prompt


def test_lexrank_prefers_the_central_sentence() -> None:
    sentences = ["The insurer pays medical costs abroad for the insured.",
                 "Medical costs abroad are paid by the insurer for insured travellers.",
                 "The insurer pays medical costs for travellers abroad.",
                 "Bicycles painted green are rarely stolen at night in winter."]
    scores = lexrank(sentences)
    assert abs(sum(scores) - 1) < 1e-6 and scores.index(min(scores)) == 3
    assert 3 not in top_sentences(sentences, 2)


COUNTS = """1. Subcontracting

The Supplier uses three subcontractors, listed in Schedule 4. The Supplier shall pay EUR 12,480.00 per month
within 30 (thirty) days. The Buyer shall not otherwise increase the fees.
"""


@pytest.fixture(scope="module")
def counts() -> SectionIndex:
    return SectionIndex(chunk_document(parse_document("c.txt", COUNTS.encode()), "c"))


@pytest.mark.parametrize("text", [
    "The Supplier uses 3 subcontractors.",                      # digits for the section's number word
    "The Supplier uses three subcontractors.",
    "The Supplier pays EUR 12480.00 per month.",                # thousands separator
    "The Supplier pays EUR\u00a012,480.00 per month.",          # NBSP
    "Payment is due within 30 days.",                           # "30 (thirty) days"
    "The subcontractors are listed in Schedule 4.",             # the number with the word before it
])
def test_a_number_with_what_it_counts_passes(counts, text) -> None:
    # Given the section's counts and amounts, When a statement restates them, Then it is verified
    assert [c.section_id for c in check_statement(text, ["1"], {"1"}, counts)] == ["1"]


@pytest.mark.parametrize("text, reason", [
    ("The Supplier uses 4 subcontractors.", "'4' does not appear verbatim with what it counts"),  # only "Schedule 4"
    ("The Supplier pays EUR 12,500 per month.", "'EUR 12,500' does not appear verbatim"),          # a rounding
    ("The Supplier pays USD 12,480.00 per month.", "'USD 12,480.00' does not appear verbatim"),    # another currency
    ("Payment is due within 30 months.", "'30' does not appear verbatim with what it counts"),
    ("The subcontractors are listed in Schedule 3.", "'3' does not appear verbatim"),
])
def test_a_number_without_what_it_counts_fails(counts, text, reason) -> None:
    # Given a section that says "three subcontractors" and "Schedule 4", When a statement's number
    # counts something else, Then it fails with the reason
    with pytest.raises(StatementError, match=reason):
        check_statement(text, ["1"], {"1"}, counts)


def test_a_statement_that_drops_the_sections_negation_fails(counts) -> None:
    # Given "shall not otherwise increase" in the section, When a statement says "shall otherwise increase"
    with pytest.raises(StatementError, match="drops 'not'"):
        check_statement("The Buyer shall otherwise increase the fees.", ["1"], {"1"}, counts)
    # Then the statement that keeps it passes
    assert check_statement("The Buyer shall not otherwise increase the fees.", ["1"], {"1"}, counts)


@pytest.fixture(scope="module")
def two_pages() -> SectionIndex:
    """Section 1 over two PDF pages: EUR 500 on page 1 (keys) and again on page 2 (the excess); one
    sentence runs from the foot of page 1 onto page 2."""
    pdf = text_pdf([["1. Schedule", "Keys are covered up to EUR 500 in total.",
                     "Water damage to the building is covered by the insurer.",
                     "The insurer also pays the cost of drying out the walls"],
                    ["and of replacing the flooring.", "Claims must be notified within 30 days of the loss.",
                     "An excess of EUR 500 applies to each claim."]])
    chunks = chunk_document(parse_document("notice.pdf", pdf), "notice")
    assert [(c.page_start, c.page_end) for c in chunks] == [(1, 2)]
    return SectionIndex(chunks)


def test_a_statement_cites_the_page_of_its_supporting_text_not_of_its_first_number(two_pages) -> None:
    # EUR 500 first occurs on page 1 (keys); the statement is the page-2 excess sentence's.
    [cite] = check_statement("An excess of EUR 500 is deducted from each claim.", ["1"], {"1"}, two_pages)
    assert (cite.page, cite.pages) == (2, [2])
    [cite] = check_statement("Keys are covered up to EUR 500.", ["1"], {"1"}, two_pages)
    assert (cite.page, cite.pages) == (1, [1])


def test_a_statement_assembled_across_a_page_break_cites_both_pages(two_pages) -> None:
    [cite] = check_statement("Water damage to the building is covered, and claims must be notified within 30 days.",
                             ["1"], {"1"}, two_pages)
    assert (cite.page, cite.pages) == (1, [1, 2])
    # One sentence copied from the text, running from page 1 onto page 2
    [cite] = check_statement("The insurer also pays the cost of drying out the walls and of replacing the flooring.",
                             ["1"], {"1"}, two_pages)
    assert (cite.page, cite.pages) == (1, [1, 2])
    # A sentence wholly on page 2 stays on page 2
    [cite] = check_statement("Claims must be notified within 30 days of the loss.", ["1"], {"1"}, two_pages)
    assert cite.pages == [2]


def test_a_citation_across_pages_is_printed_with_both_pages() -> None:
    from io import StringIO

    from longdoc.cli.summarize import print_summary
    result = {"summary_id": "s", "doc_id": "d", "model": "m", "dropped": [], "exact_values": [], "mode": "single",
              "groups": 1, "map_calls": 0, "reduce_calls": 0, "reduce_depth": 0, "model_calls": 1, "cost_usd": None,
              "usage": {"input_tokens": 1, "output_tokens": 1},
              "statements": [{"text": "T.", "citations": [{"section_id": "1", "page": 1, "pages": [1, 2]}]}]}
    out = StringIO()
    print_summary(result, out)
    assert "  [§ 1 p. 1, 2]" in out.getvalue()
