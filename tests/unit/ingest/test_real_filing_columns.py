"""Reading order on a real three-column filing (the IRS 2017 Form 1040 instructions, 11 pages, public
domain: tests/data/filings/README.md) and on pages made like it: a boxed aside's icon drawn after the
column text, and a running footer set at two tab stops under the columns (folio ``-n-`` and a line of
text), read on PDF text layers and on OCR words alike."""

from __future__ import annotations

import ctypes
import io
import re
from pathlib import Path

import pypdfium2 as pdfium
import pypdfium2.raw as pdfium_c
import pytest
from longdoc.core.ports import OcrWord
from longdoc.ingest.chunk import chunk_document
from longdoc.ingest.parse import parse_document
from longdoc.ingest.parse.layout import page_text_from_words
from longdoc.ingest.parse.reading import reading_order

from benchmarks.chunking import ends_mid_sentence, ground_truth, trim
from longdoc.ingest.models import ParsedDocument
from tests.unit.columns_builder import aside_page_pdf, clause, column_lines

FILING = Path(__file__).resolve().parents[2] / "data" / "filings" / "irs-i1040-2017-pages-9-16-21-23.pdf"
PRINTED = ["9", "10", "11", "12", "13", "14", "15", "16", "21", "22", "23"]
"""The page numbers printed on the filing's 11 pages (those of the whole booklet)."""
FOOTER = "Need more information or forms? Visit IRS.gov."
DASH_FOLIO = re.compile(r"(?<!\S)-\s?[1-9]\d{0,3}\s?-(?!\S)")
"""A folio ``-12-`` / ``- 12 -`` (``-0-`` is how the IRS writes zero in its text)."""


def _flat(text: str) -> str:
    return " ".join(text.split())


@pytest.fixture(scope="module")
def filing() -> ParsedDocument:
    return parse_document(FILING.name, FILING.read_bytes())


def test_an_asides_icon_does_not_cut_the_sentence_it_was_drawn_into(filing: ParsedDocument) -> None:
    # Given the real filing, whose TIP and CAUTION icons are drawn after their column's text
    text = _flat(filing.text)
    # Then a word hyphenated at a column's foot runs on at the next column's top, not into "CAUTION !"
    # (it read "are repor-CAUTION ! ted on lines 16a")
    assert "other payments shown on Form 1099-R (other than payments from an IRA*) are reported on lines 16a and 16b." in text
    assert "repor-CAUTION" not in text and "divi-TIP" not in text
    # and each icon's label stands right before the aside it sits beside, not at the column's foot
    assert "name. TIP If you filed a joint return for 2016 and you are filing a joint return for 2017 with the same" in text
    assert ("on line 7. CAUTION ! You may owe social security and Medicare or railroad retirement (RRTA) tax on "
            "unreported tips.") in text


def test_the_folio_and_footer_under_the_columns_are_furniture_on_every_page(filing: ParsedDocument) -> None:
    # Given the filing, whose folio and footer sit on one line at two tab stops, left or right by page parity
    removed = {(f.page, f.text) for f in filing.furniture}
    # Then every page's folio is furniture of that page, and so is the footer on the 8 pages that print it
    assert all((page, f"-{number}-") in removed for page, number in enumerate(PRINTED, start=1))
    assert [page for page in range(1, 12) if (page, FOOTER) in removed] == list(range(4, 12))
    # and the page labels are the printed numbers (read from the proof line "Page 9 of 107 ...")
    assert [span.label for span in filing.pages] == PRINTED
    assert not DASH_FOLIO.search(filing.text)


def test_no_chunk_of_the_filing_holds_a_folio_or_ends_mid_sentence(filing: ParsedDocument) -> None:
    # When the filing is chunked as the chunking benchmark does it
    chunks = chunk_document(filing, "d", target_tokens=1000, max_tokens=2000)
    starts = {s.start for s in ground_truth(filing)}
    ends = [trim(filing.text, (c.char_start, c.char_end))[1] for c in chunks]
    # Then no chunk holds a folio and at most 2 % of the chunk ends are mid-sentence (none here)
    assert len(chunks) >= 10
    assert [c.chunk_id for c in chunks if DASH_FOLIO.search(c.text) or FOOTER in c.text] == []
    assert sum(ends_mid_sentence(filing.text, end, starts) for end in ends) <= 0.02 * len(chunks)


def _three_columns(first: int = 1) -> tuple[list[list[str]], list[str]]:
    """Six clauses from number ``first``, wrapped to 34 characters and cut into three columns of 14, 14
    and the rest: each column ends inside a sentence that the next column goes on with."""
    lines = column_lines([clause(n) for n in range(first, first + 6)], 34)
    return [lines[:14], lines[14:28], lines[28:]], lines


def test_a_made_page_reads_the_aside_icon_before_its_aside_and_the_footer_last() -> None:
    # Given a three-column page drawn column by column whose column 1 holds an aside (lines 3-6,
    # indented) with a TIP label drawn after all the text, and a folio and a footer at two tab stops
    columns, lines = _three_columns()
    data = aside_page_pdf(columns, aside=(0, 3, 7), label="TIP", folio="-2-", footer="Need more information here.")
    pdf = pdfium.PdfDocument(data)
    # When the page is read
    text = reading_order(pdf[0].get_textpage()).split("\n")
    # Then the columns run on into each other, the label stands before the aside's first line, and the
    # folio and the footer are two lines at the page's foot
    assert text == [*lines[:3], "TIP", *lines[3:], "-2-", "Need more information here."]


def test_a_made_filing_loses_its_folio_and_footer_to_furniture() -> None:
    # Given four such pages of different clauses, folios -1- to -4- and the same footer
    pages = [aside_page_pdf(_three_columns(6 * n - 5)[0], aside=(0, 3, 7), label="TIP", folio=f"-{n}-",
                            footer="Need more information here.") for n in range(1, 5)]
    merged = pdfium.PdfDocument.new()
    for data in pages:
        merged.import_pages(pdfium.PdfDocument(data))
    out = io.BytesIO()
    merged.save(out)
    # When they are parsed
    doc = parse_document("made.pdf", out.getvalue())
    # Then the folio and the footer are furniture on every page, and the aside's label stays text
    assert sorted((f.page, f.text) for f in doc.furniture) == sorted(
        [(n, f"-{n}-") for n in range(1, 5)] + [(n, "Need more information here.") for n in range(1, 5)])
    assert not DASH_FOLIO.search(doc.text) and "TIP" in doc.text


def _ocr_word(text: str, x: float, y: float) -> OcrWord:
    return OcrWord(text, 0.95, int(y * 1000), x, y, 0.0085 * len(text), 0.012)


def test_ocr_words_of_a_footer_at_two_tab_stops_are_two_lines_at_the_foot() -> None:
    # Given an OCR page of two columns whose engine reads the footer's folio and text as one line
    columns = [[f"left column line {n:02d} runs on to the edge" for n in range(8)],
               [f"right column line {n:02d} runs on to the end" for n in range(8)]]
    words: list[OcrWord] = []
    for k, lines in enumerate(columns):
        for row, line in enumerate(lines):
            x = 0.08 + 0.46 * k
            for token in line.split():
                words.append(_ocr_word(token, x, 0.1 + 0.025 * row))
                x += 0.0085 * len(token) + 0.006
    foot = [("-7-", 0.48), ("Need", 0.60), ("more", 0.64), ("information.", 0.68)]
    words += [_ocr_word(token, x, 0.95) for token, x in foot]
    # When the page text is made from the words
    text = page_text_from_words(words).split("\n")
    # Then the columns come first and the folio and the footer text are separate lines at the foot
    assert text == [*columns[0], *columns[1], "-7-", "Need more information."]


def _one_column_pdf(lines: list[str], foot: list[tuple[str, float]]) -> bytes:
    """One page of single-column ``lines`` and, 40 points under them, the ``foot`` pieces at their x."""
    pdf = pdfium.PdfDocument.new()
    page = pdf.new_page(612.0, 792.0)

    def draw(text: str, x: float, y: float) -> None:
        obj = pdfium_c.FPDFPageObj_NewTextObj(pdf.raw, b"Helvetica", ctypes.c_float(9.0))
        encoded = (text + "\0").encode("utf-16-le")
        buffer = ctypes.create_string_buffer(encoded, len(encoded))
        pdfium_c.FPDFText_SetText(obj, ctypes.cast(buffer, pdfium_c.FPDF_WIDESTRING))
        pdfium_c.FPDFPageObj_Transform(obj, 1, 0, 0, 1, x, y)
        pdfium_c.FPDFPage_InsertObject(page.raw, obj)

    for row, line in enumerate(lines):
        draw(line, 72.0, 700.0 - 12.0 * row)
    for text, x in foot:
        draw(text, x, 700.0 - 12.0 * len(lines) - 40.0)
    page.gen_content()
    out = io.BytesIO()
    pdf.save(out)
    return out.getvalue()


BODY = [f"line {n:02d} of a page set in one column across the whole width" for n in range(20)]


def test_a_page_without_columns_has_its_folio_cut_off_its_footer_line() -> None:
    # Given a one-column page whose foot line holds a footer and a folio at two tab stops
    pdf = pdfium.PdfDocument(_one_column_pdf(BODY, [("Need more information here.", 72.0), ("-3-", 300.0)]))
    textpage = pdf[0].get_textpage()
    assert textpage.get_text_range().split("\r\n")[-1] == "Need more information here. -3-"  # PDFium's line
    # Then the foot line is two lines, the rest PDFium's text exactly
    assert reading_order(textpage).split("\r\n") == [*BODY, "Need more information here.", "-3-"]


def test_a_page_without_columns_keeps_a_foot_line_with_no_folio_as_pdfium_reads_it() -> None:
    # Given a one-column page whose last line is a table's total row at two tab stops (no page number)
    pdf = pdfium.PdfDocument(_one_column_pdf(BODY, [("Total premium", 72.0), ("1,240.00", 300.0)]))
    textpage = pdf[0].get_textpage()
    # Then its text is PDFium's, unchanged
    assert reading_order(textpage) == textpage.get_text_range()
