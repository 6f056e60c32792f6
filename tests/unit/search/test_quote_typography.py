"""Quote matching treats ligatures, soft hyphens and line-wrap hyphens like whitespace; long quotes are refused."""

from __future__ import annotations

import pytest

from longdoc.core.errors import CitationError
from longdoc.core.models import Chunk, PageSpan
from longdoc.core.records import Citation
from longdoc.extract.citations import verify_citation
from longdoc.search.quotes import MAX_QUOTE_CHARS, find_quote, find_quotes, quote_problem

TEXT = ("The Insurer shall ﬁle the claim within thirty days and shall ﬂag any ofﬁce loss.\n"
        "Each party's obliga\u00adtions survive. The pre-\ncondition to payment is notice.")


def _chunk(text: str) -> Chunk:
    return Chunk(chunk_id="d:00000000:0000", doc_id="d", doc_version="0" * 16, ordinal=0, source="d.pdf",
                 page_start=1, page_end=1, section_id="4", heading_path=[], text=text, char_start=0,
                 char_end=len(text), token_count=40, content_hash="x",
                 page_spans=[PageSpan(page=1, char_start=0, char_end=len(text))])


@pytest.mark.parametrize("quote, own", [
    ("shall file the claim", "shall ﬁle the claim"),
    ("shall flag any office loss", "shall ﬂag any ofﬁce loss"),
    ("Each party's obligations survive.", "Each party's obliga\u00adtions survive."),
    ("The precondition to payment", "The pre-\ncondition to payment"),
    ("The pre-condition to payment", "The pre-\ncondition to payment"),
    ("The pre- condition to payment", "The pre-\ncondition to payment"),
], ids=["fi", "fl-ffi", "soft-hyphen", "wrap-joined", "wrap-hyphenated", "wrap-flattened"])
def test_typographic_variants_match_and_the_texts_own_characters_are_located(quote: str, own: str) -> None:
    # Given a chunk with ligatures, a soft hyphen and a line-wrap hyphen
    # When the model quotes it in plain letters / Then the quote is found at the chunk's own characters
    span = find_quote(TEXT, quote)
    assert span is not None and TEXT[span[0]:span[1]] == own


def test_a_verified_citation_stores_the_chunks_own_characters() -> None:
    # Given the chunk / When a plain-letter quote of a ligature is verified
    chunk = _chunk(TEXT)
    cited = verify_citation(Citation(chunk_id=chunk.chunk_id, quote="shall file the claim"), {chunk.chunk_id: chunk})
    # Then the citation keeps the chunk's text, ligature included
    assert cited.quote == "shall ﬁle the claim"


def test_other_differences_still_do_not_match() -> None:
    # Given quotes differing in a letter, a hyphen that is not a line wrap, or case
    # Then none matches
    assert find_quote(TEXT, "shall fill the claim") is None
    assert find_quote("a wellknown rule", "a well-known rule") is None  # the quote's hyphen is not optional
    assert find_quote("a well - known rule", "a wellknown rule") is None  # nor a dash between spaces
    assert find_quote(TEXT, "the insurer shall") is None
    # And occurrences stay distinct and in order
    assert len(find_quotes("ﬁle one; file two; ﬁle", "file")) == 3


def test_a_quote_longer_than_a_few_sentences_is_refused_with_a_short_message() -> None:
    # Given a chunk of eight sentences, and a quote of all of it
    text = " ".join(f"Sentence number {n} says the Insurer pays claim {n} within thirty days." for n in range(8))
    chunk = _chunk(text)
    # When it is cited whole / Then it is refused, telling the model to quote the deciding sentence
    with pytest.raises(CitationError, match="quote too long .*quote the sentence that decides it") as refused:
        verify_citation(Citation(chunk_id=chunk.chunk_id, quote=text), {chunk.chunk_id: chunk})
    assert len(str(refused.value)) < 160
    # And a quote over the character bound is refused, one of a sentence or four is not
    assert quote_problem("x" * (MAX_QUOTE_CHARS + 1)) is not None
    four = " ".join(text.split(". ")[:4])
    assert quote_problem(four) is None
    assert verify_citation(Citation(chunk_id=chunk.chunk_id, quote="Sentence number 3 says"), {chunk.chunk_id: chunk})


# --- an intra-word hyphen of the chunk is optional (a .txt U+00AD ingested as a visible "-") ---------

TXT_CHUNK = "The Supplier's obli-gations under the book-running agreement survive termi-\nnation."


@pytest.mark.parametrize("quote, own", [
    ("The Supplier's obligations under", "The Supplier's obli-gations under"),        # quote unhyphenated
    ("The Supplier's obli-gations under", "The Supplier's obli-gations under"),       # quote as the chunk
    ("the bookrunning agreement", "the book-running agreement"),
    ("the book-running agreement", "the book-running agreement"),
    ("agreement survive termination.", "agreement survive termi-\nnation."),          # with a line wrap too
])
def test_an_intra_word_hyphen_of_the_chunk_is_optional_and_offsets_stay_on_the_chunk(quote: str, own: str) -> None:
    # Given a chunk from a .txt document whose U+00AD became a visible "-" (obli-gations)
    # When the model quotes the word with or without the hyphen
    span = find_quote(TXT_CHUNK, quote)
    # Then it is found, and the span covers the chunk's own characters, hyphen included
    assert span is not None and TXT_CHUNK[span[0]:span[1]] == own


def test_a_verified_citation_of_an_unhyphenated_quote_keeps_the_chunks_hyphen() -> None:
    # Given the chunk / When "obligations" is cited against "obli-gations"
    chunk = _chunk(TXT_CHUNK)
    cited = verify_citation(Citation(chunk_id=chunk.chunk_id, quote="Supplier's obligations"), {chunk.chunk_id: chunk})
    # Then it is verified and stores the chunk's text
    assert cited.quote == "Supplier's obli-gations"
    # And the other direction: a hyphen in the quote the chunk does not have is still a mismatch
    assert find_quote("The Supplier's obligations under", "The Supplier's obli-gations under") is None
    assert find_quote(TXT_CHUNK, "obli-gat-ions") is None
