"""Tests for citation checks (:mod:`longdoc.extract.citations`) on real GDPR chunks."""

from __future__ import annotations

import re

import pytest

from longdoc.core.errors import CitationError
from longdoc.ingest.chunk import chunk_document
from longdoc.extract.citations import verify_citation
from longdoc.search.quotes import find_quote
from longdoc.core.models import Chunk
from longdoc.core.records import Citation

GDPR = "gdpr-council-position-5419-16.pdf"


@pytest.fixture(scope="module")
def gdpr_chunks(parse_corpus) -> dict[str, Chunk]:
    """GDPR Council PDF chunks at default sizes, keyed by chunk_id."""
    chunks = chunk_document(parse_corpus(GDPR), "gdpr")
    return {c.chunk_id: c for c in chunks}


def _holding(chunks: dict[str, Chunk], phrase: str, occurrence: int = 0) -> Chunk:
    """The ``occurrence``-th chunk (in document order) whose text contains ``phrase``."""
    found = [c for c in chunks.values() if phrase in c.text]
    return found[occurrence]


# --- find_quote --------------------------------------------------------------------------


def test_find_quote_ignores_whitespace_differences_and_returns_source_offsets() -> None:
    # Given text with line breaks, double spaces and a tab, as PDFs produce
    text = "1. In the case of a personal data breach, the controller shall\nwithout undue  delay\tand, where\nfeasible, notify."
    # When quotes differing only in whitespace are looked up
    for quote in [
        "the controller shall without undue delay and, where feasible,",
        "the controller shall\nwithout undue  delay\tand, where\nfeasible,",
        "  the   controller shall without\n\nundue delay and, where feasible,  ",
    ]:
        span = find_quote(text, quote)
        # Then each maps to the same source span, which reads the quote modulo whitespace
        assert span == (text.index("the controller"), text.index("feasible,") + len("feasible,"))
        start, end = span
        assert " ".join(text[start:end].split()) == " ".join(quote.split())


def test_find_quote_returns_first_occurrence_and_none_when_absent() -> None:
    # Given text where a phrase occurs twice
    text = "shall notify. The processor shall notify the controller."
    # Then the first occurrence is returned
    assert find_quote(text, "shall notify") == (0, 12)
    # And a changed word, changed punctuation or changed case is not found; nor is blank input
    assert find_quote(text, "shall inform") is None
    assert find_quote(text, "shall notify the controller!") is None
    assert find_quote(text, "Shall notify") is None
    assert find_quote(text, " \n\t ") is None
    assert find_quote("", "shall") is None


def test_find_quote_is_exact_about_everything_but_whitespace() -> None:
    # Given a money amount and an id written exactly
    text = "a refund of $247.83 to customer cust_4711"
    # Then the exact value is found, and a reformatted one is not
    assert find_quote(text, "$247.83 to customer\ncust_4711") == (12, len(text))
    assert find_quote(text, "$247.8") == (12, 18)  # a prefix is still verbatim text
    assert find_quote(text, "$ 247.83") is None
    assert find_quote(text, "cust-4711") is None


# --- verify_citation on real chunks -------------------------------------------------------


def test_verify_citation_resolves_the_page_from_the_quote_position(gdpr_chunks) -> None:
    # Given the GDPR chunk holding Article 83(5), which spans several pages (fine on page 247)
    chunk = _holding(gdpr_chunks, "administrative fines up to 20 000 000 EUR")
    assert chunk.page_start < 247 < chunk.page_end
    # When the model cites it with the chunk's first page and reflowed whitespace
    cited = Citation(
        chunk_id=chunk.chunk_id,
        page=chunk.page_start,
        quote="administrative fines up to 20 000 000 EUR, or in the case of an undertaking, up to 4 % of the total worldwide annual turnover",
    )
    verified = verify_citation(cited, gdpr_chunks)
    # Then the page and section come from the quote (page 247, Article 83(5)), not from the model
    assert verified.page == 247
    assert verified.section_id == "Article 83(5)"
    assert verified.chunk_id == chunk.chunk_id
    # And the quote is replaced by the chunk's own text, line breaks included
    assert verified.quote == (
        "administrative fines up to 20 000 000 EUR, or in the case of an undertaking, up to 4 %\n"
        "of the total worldwide annual turnover"
    )
    assert verified.quote in chunk.text


def test_verify_citation_resolves_section_within_a_chunk_of_several_articles(gdpr_chunks) -> None:
    # Given the chunk that opens with the SECTION 2 heading and holds Articles 32 and 33 whole,
    # with their paragraphs and points (pages 161-164)
    chunk = _holding(gdpr_chunks, "not later than 72 hours after having become aware of it", occurrence=1)
    assert chunk.section_id == "Section 2"
    assert {"Article 32(1)(a)", "Article 33(1)", "Article 33(3)(d)"} <= set(chunk.section_ids)
    # When Article 33's breach deadline is cited
    verified = verify_citation(
        Citation(chunk_id=chunk.chunk_id, page=None, quote="not later than 72 hours after having become aware of it"),
        gdpr_chunks,
    )
    # Then it is page 163 (gold hand-005) and paragraph 1 of Article 33, not the chunk's
    # first section
    assert (verified.page, verified.section_id) == (163, "Article 33(1)")


def test_quote_straddling_a_page_break_is_cited_on_the_page_where_it_starts(gdpr_chunks) -> None:
    # Given a quote that runs from the foot of page 164 onto page 165 (Article 34(3)(a) into
    # (b)); the running header between them ("5419/16 AV/NT/sr 164 DGD 2 EN") is furniture
    quote = "such as encryption; (b) the controller has taken subsequent measures"
    chunk = next(c for c in gdpr_chunks.values() if find_quote(c.text, quote))
    # When it is verified
    verified = verify_citation(Citation(chunk_id=chunk.chunk_id, page=165, quote=quote), gdpr_chunks)
    # Then its page is where it starts, with the page's printed label (163: the unnumbered
    # cover is physical page 1), its section the item it starts in, and the stored quote
    # keeps the page's line breaks
    assert (verified.page, verified.page_label) == (164, "163")
    assert verified.section_id == "Article 34(3)(a)"
    assert verified.quote == "such as encryption;\n(b) the controller has taken subsequent measures"
    # And a quote that includes the header text is not verbatim in the chunk any more
    with pytest.raises(CitationError):
        verify_citation(Citation(chunk_id=chunk.chunk_id, quote="such as encryption; 5419/16 AV/NT/sr 164"), gdpr_chunks)


def test_unknown_chunk_id_is_rejected_with_the_id_named(gdpr_chunks) -> None:
    # Given a citation to a chunk id that is not in this document version
    real = next(iter(gdpr_chunks))
    bogus = re.sub(r":\d{4}$", ":9999", real)
    # When it is verified, Then CitationError names the unknown id
    with pytest.raises(CitationError, match=re.escape(repr(bogus)) + ".*not a chunk of this document"):
        verify_citation(Citation(chunk_id=bogus, page=1, quote="Article 1"), gdpr_chunks)
    # And an id of another document version is unknown too
    other_version = real.replace(real.split(":")[1], "00000000")
    with pytest.raises(CitationError, match="not a chunk"):
        verify_citation(Citation(chunk_id=other_version, page=1, quote="Article 1"), gdpr_chunks)


def test_non_verbatim_quote_is_rejected_with_the_reason(gdpr_chunks) -> None:
    # Given the chunk holding Article 83(5)
    chunk = _holding(gdpr_chunks, "administrative fines up to 20 000 000 EUR")
    for paraphrase in [
        "administrative fines up to 20,000,000 EUR",  # reformatted number
        "administrative fines of up to 20 000 000 EUR",  # added word
        "ADMINISTRATIVE FINES UP TO 20 000 000 EUR",  # changed case
    ]:
        # When a paraphrase is cited, Then CitationError says it is not verbatim, naming the chunk
        with pytest.raises(CitationError, match="quote not found verbatim in chunk " + re.escape(chunk.chunk_id)):
            verify_citation(Citation(chunk_id=chunk.chunk_id, page=247, quote=paraphrase), gdpr_chunks)
    # And CitationError is a ValueError, so callers that catch bad input catch it too
    assert issubclass(CitationError, ValueError)


def test_quote_from_another_chunk_of_the_same_document_is_rejected(gdpr_chunks) -> None:
    # Given a real quote (Article 33's deadline) and a chunk that does not contain it
    quote = "not later than 72 hours after having become aware of it"
    elsewhere = next(c for c in gdpr_chunks.values() if "administrative fines up to 20 000 000 EUR" in c.text)
    assert quote not in elsewhere.text
    # When the citation points at the wrong chunk, Then it is rejected
    with pytest.raises(CitationError, match="not found verbatim"):
        verify_citation(Citation(chunk_id=elsewhere.chunk_id, page=163, quote=quote), gdpr_chunks)


def test_a_quote_repeated_in_a_chunk_is_placed_on_the_page_the_model_cited() -> None:
    # Given a chunk spanning pages 3-4 whose sentence appears once on each page
    from longdoc.core.models import Chunk, PageSpan

    text = "Article 13 (a) the identity of the controller;\nArticle 14 (a) the identity of the controller;"
    second = text.index("Article 14")
    chunk = Chunk(chunk_id="d:00000000:0000", doc_id="d", doc_version="0" * 16, ordinal=0, source="d.pdf",
                  page_start=3, page_end=4, section_id="Article 13", heading_path=[], text=text, char_start=0,
                  char_end=len(text), token_count=20, content_hash="x",
                  page_spans=[PageSpan(page=3, char_start=0, char_end=second), PageSpan(page=4, char_start=second,
                                                                                   char_end=len(text))])
    quote = "the identity of the controller;"
    # When the model cites it on page 4, Then the page-4 occurrence is the one resolved
    assert verify_citation(Citation(chunk_id=chunk.chunk_id, page=4, quote=quote), {chunk.chunk_id: chunk}).page == 4
    # And without a page, or with a page it is not on, the first occurrence stands
    assert verify_citation(Citation(chunk_id=chunk.chunk_id, quote=quote), {chunk.chunk_id: chunk}).page == 3
    assert verify_citation(Citation(chunk_id=chunk.chunk_id, page=9, quote=quote), {chunk.chunk_id: chunk}).page == 3
