"""The audit page shows the PDF page: PDFium renders it, the quote's character boxes are laid over it.

PDFs are built with PDFium itself (``tests/unit/pdf_builder.py``): lines of 11 pt Helvetica
from 72 pt below the top of a US-Letter page, 17.6 pt apart, so where a quote is is known.
"""

from __future__ import annotations

import pypdfium2 as pdfium

from longdoc.core.models import Chunk, PageSpan
from longdoc.eval.html import run_html
from longdoc.eval.pdfpage import locate, quote_on_page
from tests.unit.pdf_builder import PAGE_HEIGHT, PAGE_WIDTH, text_pdf

LINES = ["This Agreement is made between the parties named below.",
         "Each party shall keep the other's Confidential Information",
         "secret for five years. This Agreement shall be governed by",
         "the laws of the State of New York without regard to conflicts."]
QUOTE = "This Agreement shall be governed by the laws of the State of New York"


def test_locate_matches_across_line_breaks_hyphenation_ligatures_and_nbsp() -> None:
    page = "The ter-\r\nmination of the con\ufb01dential\xa0period\r\nends here."
    # When the cleaned-up quote (hyphen joined, ligature spelt out, ordinary space) is looked up
    first, last, kind = locate(page, "termination of the confidential period")
    # Then it spans the raw characters from its first to its last letter
    assert (page[first], page[last], kind) == ("t", "d", "full")
    assert page[first:last + 1].startswith("ter-\r\nmination")


def test_locate_falls_back_to_a_prefix_then_gives_up() -> None:
    page = "Heading\r\nThe Supplier shall indemnify the Customer against all losses"
    # Given a quote that goes on over the page break
    found = locate(page, "The Supplier shall indemnify the Customer against all losses arising from third-party claims")
    assert found is not None and found[2] == "partial" and page[found[0]] == "T"
    # And a quote that is not on the page at all
    assert locate(page, "governed by the laws of England and Wales") is None
    assert locate(page, "   ") is None


def test_quote_boxes_lie_on_the_quote_lines_of_the_rendered_page() -> None:
    # Given a one-page PDF whose quote starts mid-line 3 and ends on line 4
    pdf = pdfium.PdfDocument(text_pdf([LINES]))
    # When the page is rendered with the quote boxed
    view = quote_on_page(pdf, 1, QUOTE)
    # Then the image is inlined at 1.5 px per point
    assert view is not None and view.image.startswith("data:image/jpeg;base64,")
    assert (view.width, view.height) == (round(PAGE_WIDTH * 1.5), round(PAGE_HEIGHT * 1.5))
    # And there is one box per text line, on lines 3 and 4 (baselines 107.2 and 124.8 pt below the top)
    assert view.located == "full" and len(view.boxes) == 2
    for (left, top, width, height), baseline in zip(view.boxes, (72 + 2 * 17.6, 72 + 3 * 17.6), strict=True):
        assert top * PAGE_HEIGHT < baseline < (top + height) * PAGE_HEIGHT
        assert width > 0 and (left + width) * PAGE_WIDTH < PAGE_WIDTH - 72 + 40
    # And the first box starts after the line's opening words, the second at the left margin
    assert view.boxes[0][0] * PAGE_WIDTH > 72 + 100
    assert abs(view.boxes[1][0] * PAGE_WIDTH - 72) < 3
    # And a page out of range gives nothing; a quote not on the page gives the picture without boxes
    assert quote_on_page(pdf, 2, QUOTE) is None
    missing = quote_on_page(pdf, 1, "no such sentence anywhere on this page")
    assert missing is not None and missing.boxes == [] and missing.located is None


def _result(page: int | None, label: str | None, cost: str | None) -> dict:
    return {"run_id": "r1", "doc_id": "d", "doc_version": "v", "status": "SUCCEEDED",
            "model": "offline-extractive-baseline-v1", "sessions": 1, "checkpoints": 1, "cost_usd": cost,
            "usage": {"input_tokens": 5}, "calls": [],
            "extractions": [{"clause_type": "Governing Law", "status": "found", "citations": [
                {"chunk_id": "d:v:0000", "page": page, "section_id": "12", "page_label": label,
                 "heading_path": ["12. Miscellaneous"], "quote": QUOTE}]}]}


def _chunk(with_pages: bool) -> Chunk:
    text = " ".join(LINES)
    spans = [PageSpan(page=1, char_start=0, char_end=len(text), label="iv")] if with_pages else []
    return Chunk(chunk_id="d:v:0000", doc_id="d", doc_version="v", ordinal=0, source="d.pdf",
                 page_start=1 if with_pages else None, page_end=1 if with_pages else None, section_id="12",
                 text=text, char_start=0, char_end=len(text), token_count=10, content_hash="h", page_spans=spans)


def test_audit_page_puts_the_page_picture_beside_the_chunk_text() -> None:
    pdf = pdfium.PdfDocument(text_pdf([LINES]))
    # When the audit page is written with a page renderer
    html = run_html(_result(1, "iv", "0.000000"), {"d:v:0000": _chunk(True)},
                    lambda page, quote: quote_on_page(pdf, page, quote))
    # Then the cited page is inlined with the quote's boxes, beside section, heading path, label and chunk text
    assert html.count("data:image/jpeg;base64,") == 1 and html.count("data-quote-box") == 2
    assert "data-located='full'" in html
    assert "page 1 (printed p. iv), section 12" in html and "12. Miscellaneous" in html and "d:v:0000" in html
    assert "<mark>" in html
    # And the offline model's zero cost reads as such, never as 0.000000; nothing prints a literal None
    assert "no model cost" in html and "0.000000" not in html
    assert "None" not in html and "<script" not in html


def test_texts_without_pages_keep_the_text_view() -> None:
    # Given a citation of a document without pages (DOCX/HTML: page null), cost unknown
    html = run_html(_result(None, None, None), {"d:v:0000": _chunk(False)},
                    lambda page, quote: (_ for _ in ()).throw(AssertionError("no page to render")))
    # Then no picture, the text view with the quote marked, and the place without "None"
    assert "data:image" not in html and "<mark>" in html
    assert "no page (the document has no pages), section 12" in html
    assert "None" not in html and "not priced" in html


def test_label_equal_to_the_page_number_is_not_repeated() -> None:
    html = run_html(_result(3, "3", "0.012"), {}, None)
    assert "page 3, section 12" in html and "printed" not in html and "estimated cost USD 0.012" in html


def test_a_not_found_shows_the_queries_searched_and_the_chunks_examined() -> None:
    # Given a run with a not_found backed by a search, and one recorded without any evidence
    result = _result(1, "1", "0")
    result["extractions"] += [
        {"clause_type": "Rofr/Rofo/Rofn", "status": "not_found", "citations": [],
         "evidence": {"queries": ["right of first refusal"], "chunk_ids": ["d:v:0003", "d:v:0007"],
                      "reason": "no priority right in the searched chunks"}},
        {"clause_type": "Insurance", "status": "not_found", "citations": [], "evidence": None}]
    result["case_facts"] = {"searches": [{"session": 2, "query": "right of first refusal",
                                          "clause_type": "Rofr/Rofo/Rofn", "chunk_ids": ["d:v:0007"],
                                          "seen": ["d:v:0003"], "tokens": 900}]}
    # When the audit page is written
    html = run_html(result, {}, None)
    # Then the ROFR not_found shows its reason, the query, what that search returned and the chunks examined
    rofr = html[html.index("Rofr/Rofo/Rofn: not_found"):html.index("Insurance: not_found")]
    assert "no priority right in the searched chunks" in rofr
    assert "queries searched</th><td>right of first refusal<" in rofr
    assert "(session 2)</th><td>returned d:v:0007; already shown d:v:0003" in rofr
    assert "chunk ids examined</th><td>d:v:0003, d:v:0007<" in rofr and "data-no-evidence" not in rofr
    # And the not_found without any evidence says so, flagged
    insurance = html[html.index("Insurance: not_found"):html.index("Model calls")]
    assert "data-no-evidence" in insurance and "queries searched</th><td>none<" in insurance
    # And a found extraction carries no evidence table
    assert html[:html.index("Rofr/Rofo/Rofn: not_found")].count("data-evidence") == 0
