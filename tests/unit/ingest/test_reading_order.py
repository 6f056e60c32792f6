"""Reading order of multi-column PDF pages (issue 18): columns found from PDFium's boxes, text read
column by column; pages without columns keep PDFium's text exactly."""

from __future__ import annotations

import ctypes
import io
from collections.abc import Callable
from pathlib import Path

import pypdfium2 as pdfium
import pypdfium2.raw as pdfium_c
from longdoc.ingest.parse import parse_document
from longdoc.ingest.parse.columns import find_gutters, text_runs
from longdoc.ingest.parse.reading import reading_order

from longdoc.ingest.models import ParsedDocument


def _flat(text: str) -> str:
    return " ".join(text.split())


def _draw(pdf: pdfium.PdfDocument, page: pdfium.PdfPage, text: str, x: float, y: float, size: float = 9.0) -> None:
    obj = pdfium_c.FPDFPageObj_NewTextObj(pdf.raw, b"Helvetica", ctypes.c_float(size))
    encoded = (text + "\0").encode("utf-16-le")
    buffer = ctypes.create_string_buffer(encoded, len(encoded))
    pdfium_c.FPDFText_SetText(obj, ctypes.cast(buffer, pdfium_c.FPDF_WIDESTRING))
    pdfium_c.FPDFPageObj_Transform(obj, 1, 0, 0, 1, x, y)
    pdfium_c.FPDFPage_InsertObject(page.raw, obj)


def two_column_pdf(left: list[str], right: list[str], heading: str | None = None) -> bytes:
    """One US-Letter page: an optional full-width heading, then two columns drawn row by row
    (left line, then the right line beside it), the content order that welds columns in PDFium."""
    pdf = pdfium.PdfDocument.new()
    page = pdf.new_page(612.0, 792.0)
    top = 700.0
    if heading:
        _draw(pdf, page, heading, 72.0, 730.0, size=12.0)
    for n, (a, b) in enumerate(zip(left, right, strict=True)):
        _draw(pdf, page, a, 72.0, top - n * 12.0)
        _draw(pdf, page, b, 320.0, top - n * 12.0)
    page.gen_content()
    out = io.BytesIO()
    pdf.save(out)
    return out.getvalue()


LEFT = [f"left column line {n:02d} runs on to the right edge" for n in range(12)]
RIGHT = [f"right column line {n:02d} runs on to the right end" for n in range(12)]


def test_two_columns_drawn_row_by_row_are_read_column_by_column():
    # Given a two-column page whose content stream alternates left and right lines
    data = two_column_pdf(LEFT, RIGHT, heading="A heading across the whole page width, set in a larger type size")
    # When it is parsed
    text = parse_document("columns.pdf", data).text
    # Then the heading stays first, the left column is read whole, then the right one
    assert text.split("\n") == ["A heading across the whole page width, set in a larger type size", *LEFT, *RIGHT]


def test_the_same_page_without_reordering_welds_the_columns():
    # Given the two-column page, read by PDFium alone
    data = two_column_pdf(LEFT, RIGHT)
    pdf = pdfium.PdfDocument(data)
    raw = pdf[0].get_textpage().get_text_range()
    # Then PDFium's own text runs line 00 of both columns together, which reading_order undoes
    assert "left column line 00 runs on to the right edge right column line 00" in _flat(raw)
    assert _flat(reading_order(pdf[0].get_textpage())) == _flat(" ".join(LEFT + RIGHT))


def test_a_single_column_page_keeps_pdfiums_text_exactly():
    # Given a one-column page of the same lines
    pdf = pdfium.PdfDocument(two_column_pdf(LEFT, RIGHT))
    single = pdfium.PdfDocument.new()
    page = single.new_page(612.0, 792.0)
    for n, line in enumerate(LEFT + RIGHT):
        _draw(single, page, line + " and then some more words", 72.0, 700.0 - n * 12.0)
    page.gen_content()
    textpage = single[0].get_textpage()
    # When/Then: no gutter, the text is PDFium's, byte for byte
    assert find_gutters(text_runs(textpage)) == []
    assert reading_order(textpage) == textpage.get_text_range()
    assert find_gutters(text_runs(pdf[0].get_textpage()))  # while the two-column page has one


def test_federal_register_sentences_run_on_down_the_columns(parse_corpus: Callable[[str], ParsedDocument]):
    # Given the three-column Federal Register notice
    text = _flat(parse_corpus("federal-register-2020-17221.pdf").text)
    # Then a sentence running down column 1 of page 2 is contiguous
    assert ("Following the Lion Air Flight 610 accident on October 29, 2018, data from the flight data recorder, "
            "which is contained in the Indonesian accident report") in text
    # and one that runs from column 3 of page 1 into column 1 of page 2 is no longer cut by
    # page 2's footnotes (PDFium reads them first): they now follow the page's body
    assert ("after takeoff from Soekarno- Hatta International Airport in Jakarta, Indonesia, resulting in 189 "
            "fatalities.") in text
    at = text.index("1Preliminary KNKT.18.10.35.04")
    assert text.index("These effects include stall warning activation, airspeed disagree alert, and altitude "
                      "disagree alert,5 and may affect") < at


def test_columns_are_found_only_on_multi_column_corpus_pages(corpus_dir: Path):
    # Given corpus PDFs with and without columns
    found = {}
    for name in ("federal-register-2020-17221.pdf", "chubb-travellershield-plus-policy-wording.pdf",
                 "dmca-1998-copyright-office-summary.pdf"):
        pdf = pdfium.PdfDocument((corpus_dir / name).read_bytes())
        found[name] = sum(1 for i in range(len(pdf)) if find_gutters(text_runs(pdf[i].get_textpage())))
    # Then: the three-column pages of the Federal Register (the rest hold figures; page 7's one
    # column of text beside a figure counts since columns need 3 lines, issue 27), and no page of
    # the single-column wording with its benefit tables, nor of the DMCA summary
    assert found == {"federal-register-2020-17221.pdf": 9, "chubb-travellershield-plus-policy-wording.pdf": 0,
                     "dmca-1998-copyright-office-summary.pdf": 0}


def test_gutter_found_between_the_columns():
    pdf = pdfium.PdfDocument(two_column_pdf(LEFT, RIGHT))
    gutters = find_gutters(text_runs(pdf[0].get_textpage()))
    assert len(gutters) == 1
    a, b = gutters[0]
    assert 72.0 < a < b <= 320.0 + 1
