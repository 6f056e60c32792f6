"""One column step for PDF text layers and OCR words (issue 27): a small row-drawn two-column page,
a two-column scan read by real Tesseract, and a three-column filing with folios between the columns."""

from __future__ import annotations

import re

from longdoc.adapters.ocr_tesseract import TesseractOcr
from longdoc.core.ports import OcrPage, OcrWord
from longdoc.ingest.chunk import chunk_document
from longdoc.ingest.parse import OcrOptions, parse_document
from longdoc.ingest.parse.layout import page_text_from_words
from tests.unit.columns_builder import clause, column_lines, columns_pdf, scan_pdf

LEFT = ["1. Scope. This agreement covers the sale", "of goods between the parties named in the",
        "schedule and their lawful successors here.", "2. Term. The agreement runs for two years",
        "from the date on which it is signed by all."]
RIGHT = ["3. Fees. The buyer pays all of the fees in", "the price list within thirty days of each",
         "invoice sent to the address of the buyer.", "4. Notices. Every notice is made in writing",
         "and sent to the address named in the deed."]
FOLIO = re.compile(r"-\d+-")


def _sections(doc) -> list[str]:
    return [sid for c in chunk_document(doc, "d", target_tokens=40, max_tokens=80) for sid in c.section_ids]


def test_a_small_row_drawn_two_column_page_is_read_column_by_column() -> None:
    # Given one page of two columns of five lines each, drawn row by row (10 text runs: under the old 16)
    data = columns_pdf([[LEFT, RIGHT]], size=9.0)
    # When it is parsed and chunked
    doc = parse_document("small.pdf", data)
    # Then each column is contiguous, the left one first, and the clauses of both columns are sections
    assert doc.text.split("\n") == LEFT + RIGHT
    assert _sections(doc) == ["1", "2", "3", "4"]


def _words(columns: list[list[str]], *, line_per_row: bool) -> tuple[OcrWord, ...]:
    """Words of a two-column page as an engine returns them, boxes as fractions of the image.
    With ``line_per_row`` one engine line holds both columns' words of a row (a welded reading)."""
    words: list[OcrWord] = []
    for row in range(max(len(c) for c in columns)):
        for k, lines in enumerate(columns):
            x = 0.08 + 0.44 * k
            for token in lines[row].split():
                width = 0.0085 * len(token)
                line = row if line_per_row else k * 100 + row
                words.append(OcrWord(token, 0.95, line, x, 0.1 + 0.03 * row, width, 0.02))
                x += width + 0.006
    return tuple(words)


def test_ocr_words_read_row_by_row_come_out_column_by_column() -> None:
    # Given the words of a two-column scan whose engine lines run across the gutter
    words = _words([LEFT, RIGHT], line_per_row=True)
    assert OcrPage(words, "e").text.split("\n")[0] == f"{LEFT[0]} {RIGHT[0]}"  # the welded reading
    # When the page text is made from the words
    text = page_text_from_words(words)
    # Then the columns are read one after the other
    assert text.split("\n") == LEFT + RIGHT


def test_an_ocr_page_without_columns_keeps_the_engines_line_order() -> None:
    # Given the words of a one-column page (the engine's own lines)
    words = _words([LEFT], line_per_row=True)
    # Then the page text is exactly the engine's text
    assert page_text_from_words(words) == OcrPage(words, "e").text
    assert page_text_from_words(()) == ""


def test_a_two_column_scan_read_by_tesseract_is_read_column_by_column() -> None:
    # Given a small scan of two columns set close (0.6 em of white), which Tesseract reads row-welded
    pdf, png = scan_pdf(LEFT, RIGHT, size_px=30, gap_em=0.6)
    engine = TesseractOcr()
    assert engine.read_page(png).text.split("\n")[0].startswith(f"{LEFT[0]} 3. Fees")
    # When the scan is parsed with OCR
    # (read at the image's own 200 dpi: this test is about column order, not resampling; the
    # 300-dpi default upscales this synthetic bitmap and Tesseract then misreads two words)
    doc = parse_document("scan.pdf", pdf, ocr=OcrOptions(engine=engine, dpi=200))
    # Then the text is the two columns in order, word for word, and both columns' clauses are sections
    assert doc.text.split("\n") == LEFT + RIGHT
    assert _sections(doc) == ["1", "2", "3", "4"]


def _filing(pages: int) -> tuple[bytes, list[str]]:
    """A three-column filing of ``pages`` pages, two clauses a column, folios between the columns."""
    layout, texts, number = [], [], 1
    for _ in range(pages):
        columns = []
        for _ in range(3):
            columns.append(column_lines([clause(number), clause(number + 1)], 34))
            texts += [clause(number), clause(number + 1)]
            number += 2
        layout.append(columns)
    return columns_pdf(layout, folios=True), texts


def test_folios_between_the_columns_of_a_filing_are_furniture() -> None:
    # Given a twelve-page three-column filing whose folio -n- stands in a gutter, mid-page, in the gutter
    # between columns 1 and 2 on odd pages and between 2 and 3 on even ones (some lines reach into it)
    data, clauses = _filing(12)
    # When it is parsed and chunked
    doc = parse_document("filing.pdf", data)
    chunks = chunk_document(doc, "d", target_tokens=60, max_tokens=120)
    # Then every folio is furniture of its page, no chunk carries one, and no chunk ends mid-sentence
    assert [(f.page, f.text) for f in doc.furniture] == [(n, f"-{n}-") for n in range(1, 13)]
    assert not [c.chunk_id for c in chunks if FOLIO.search(c.text)]
    assert [c.text[-30:] for c in chunks if not c.text.rstrip().endswith(".")] == []
    # and every clause reads whole, with its number as a section
    flat = " ".join(doc.text.split())
    assert all(text in flat for text in clauses)
    assert sorted({sid for c in chunks for sid in c.section_ids}, key=int) == [str(n) for n in range(1, 73)]


def test_a_short_line_in_a_gutter_that_does_not_repeat_stays_in_the_text() -> None:
    # Given a two-page filing (too few pages for running furniture) with a folio in a gutter
    data, _ = _filing(2)
    # When it is parsed
    doc = parse_document("filing.pdf", data)
    # Then nothing is removed: the folio is kept, at the foot of its page, after the columns' text
    assert doc.furniture == []
    page_one = doc.text[doc.pages[0].char_start:doc.pages[0].char_end]
    assert page_one.split("\n")[-1] == "-1-"
