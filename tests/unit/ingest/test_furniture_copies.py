"""Furniture by position, never by repetition alone: copies of a page are kept, every removal is counted.

A notice issued as three copies (insured, insurer, broker) repeats every body line on every page, so
repetition alone read its body as running headers and footers: the renewal date and the amounts were
gone, and a PDF of four identical pages had no text to chunk.
"""

from __future__ import annotations

import sys
from pathlib import Path

from longdoc.core.models import page_at
from longdoc.ingest.chunk import chunk_document
from longdoc.ingest.parse import parse_document
from longdoc.ingest.parse.cleanup import find_furniture
from longdoc.ingest.parse.copies import COPY_SHARE, copy_groups
from longdoc.ingest.parse.damage import furniture_warnings
from longdoc.ingest.parse.running import running_headers

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from pdf_builder import text_pdf  # noqa: E402

CASE = Path(__file__).resolve().parents[2] / "data" / "cases" / "renewal-notice-three-copies.pdf"
VALUES = ("1 July 2025", "EUR 1,240.00", "EUR 500.00")

NOTICE = ["The policy renews on 1 July 2025 unless you tell us otherwise.",
          "The premium for the renewal term is EUR 1,240.00.",
          "Water damage excess: EUR 500.00 per claim."]
SCHEDULE = ["SCHEDULE OF COVER", "Policy number HX-20931-B", "Sum insured: EUR 250,000.00",
            "Excess: EUR 500.00 each and every claim", "Renewal date: 1 July 2025"]
_WORDS = ["harbour", "meadow", "lantern", "orchard", "granite", "willow", "saffron", "cobalt", "thistle",
          "juniper", "marble", "quarry", "falcon", "ember", "glacier", "pepper", "beacon", "cinder"]


def _body(n: int, lines: int = 6) -> list[str]:
    """``lines`` body lines of page ``n``, none of them on another page."""
    return [f"Clause {_WORDS[n % len(_WORDS)]} {_WORDS[(n + k) % len(_WORDS)]} line {k} of page {n} covers "
            f"{_WORDS[(n * 3 + k) % len(_WORDS)]} damage." for k in range(lines)]


def test_the_three_copies_of_the_notice_are_one_group_of_copies() -> None:
    # Given the notice's three pages, a title line each ("... INSURED COPY") over the same three lines
    pages = ["\n".join([f"NOTICE OF RENEWAL - {who} COPY", *NOTICE]) for who in ("INSURED", "INSURER", "BROKER")]
    # Then they are copies of one another, and pages of a document with a shared footer are not
    assert copy_groups(pages) == [0, 0, 0]
    distinct = ["\n".join([*_body(n), "Example Insurance plc  Household Policy Wording", f"Page {n}"])
                for n in range(1, 6)]
    assert copy_groups(distinct) == [0, 1, 2, 3, 4]
    assert 0.5 < COPY_SHARE < 0.82  # over the corpus's distinct pages (0.66), under the notice (0.82)


def test_copies_keep_every_line_and_no_line_is_furniture() -> None:
    # Given the three copies, and four identical pages of a schedule
    copies = ["\n".join([f"NOTICE OF RENEWAL - {who} COPY", *NOTICE]) for who in ("INSURED", "INSURER", "BROKER")]
    four = ["\n".join(SCHEDULE)] * 4
    for pages in (copies, four):
        # When furniture is found (and a section's running header)
        cleaned, furniture = find_furniture(pages)
        cleaned, running = running_headers(cleaned)
        # Then nothing is removed: every page keeps its whole text
        assert (cleaned, furniture, running) == (pages, [], [])


def test_copies_inside_a_document_lose_only_the_real_running_header() -> None:
    # Given 8 pages with a running header and a page-numbered footer, pages 6-8 three copies of a schedule
    header = "Example Insurance plc  Household Policy Wording"
    pages = ["\n".join([header, *_body(n), f"Page {n} of 8"]) for n in range(1, 6)]
    pages += ["\n".join([header, *SCHEDULE, f"Page {n} of 8"]) for n in range(6, 9)]
    # When furniture is found
    cleaned, furniture = find_furniture(pages)
    # Then the header and the footer go from every page, copies included, and each copy keeps its schedule
    assert [p.split("\n") for p in cleaned] == [_body(n) for n in range(1, 6)] + [SCHEDULE] * 3
    assert sorted((f.page, f.position) for f in furniture) == [(n, pos) for n in range(1, 9) for pos in ("footer", "header")]


def test_a_repeated_body_line_reached_only_by_peeling_stays() -> None:
    # Given 6 pages of 3 running header lines, a line of their own, a sentence every page repeats
    # (the 5th line of 9: outside the 3-line head band), 3 more body lines and a folio
    head = ["Example Insurance plc", "Household Policy Wording", "Edition 2024"]
    repeated = "The insurer pays within 30 days of agreeing the claim."
    pages = ["\n".join([*head, _body(n, 1)[0], repeated, *_body(n + 20, 3), f"Page {n}"]) for n in range(1, 7)]
    # When furniture is found (a later round sees the sentence in the edge window once the header is gone)
    cleaned, furniture = find_furniture(pages)
    # Then the header and the folio go, and the sentence stays on every page
    assert [p.split("\n") for p in cleaned] == [[_body(n, 1)[0], repeated, *_body(n + 20, 3)] for n in range(1, 7)]
    assert len(furniture) == 6 * 4


def test_the_three_copy_notice_is_indexed_on_every_page() -> None:
    # Given the notice issued as three copies, one per page (../shared/cases, copied to tests/data/cases)
    parsed = parse_document(CASE.name, CASE.read_bytes())
    # Then every page keeps the renewal date, the premium and the excess, and nothing is furniture
    pages = [parsed.text[s.char_start:s.char_end] for s in parsed.pages]
    assert len(pages) == 3 and all(v in page for page in pages for v in VALUES)
    assert parsed.furniture == [] and parsed.furniture_lines == {}
    assert parsed.page_outcomes == ["text", "text", "text"]
    # And the document is named as copies, page by page
    assert parsed.warnings == [
        "pages 1-3 repeat one page, a few lines changed: the document is copies of the same text; each copy is kept "
        "and indexed on its own page (nothing on them is removed as a running header or footer for repeating)"]
    # And the chunks hold every value once per page, each on the page it is printed on
    chunks = chunk_document(parsed, "notice")
    for value in VALUES:
        found = sorted(page_at(c, i) for c in chunks for i in _all(c.text, value))
        assert found == [1, 2, 3], value


def _all(text: str, value: str) -> list[int]:
    """Every offset of ``value`` in ``text``."""
    out, start = [], text.find(value)
    while start >= 0:
        out.append(start)
        start = text.find(value, start + 1)
    return out


def test_four_identical_pages_ingest_with_a_warning_naming_them() -> None:
    # Given a PDF of four identical pages (before: "no text to chunk")
    parsed = parse_document("four.pdf", text_pdf([SCHEDULE] * 4))
    # Then every page keeps its text, and the warning names the four pages
    assert [parsed.text[s.char_start:s.char_end] for s in parsed.pages] == ["\n".join(SCHEDULE)] * 4
    assert parsed.warnings == [
        "pages 1-4 are identical: the document is copies of the same text; each copy is kept and indexed on its "
        "own page (nothing on them is removed as a running header or footer for repeating)"]
    chunks = chunk_document(parsed, "four")
    assert sum(c.text.count("EUR 250,000.00") for c in chunks) == 4


def test_real_running_headers_and_footers_are_removed_and_counted_per_page() -> None:
    # Given a 6-page PDF with a running header and a page-numbered footer, two lines of page 4 in a header block
    header, footer = "Example Insurance plc  Household Policy Wording", "Page {} of 6"
    pages = [[header, *_body(n), footer.format(n)] for n in range(1, 7)]
    pages[3] = [header, "Policy HX-20931-B", *_body(4), footer.format(4)]
    parsed = parse_document("policy.pdf", text_pdf(pages))
    # Then both are gone from the text, the body stays, and each page counts 2 lines (header and footer)
    assert header not in parsed.text and "Page 3 of 6" not in parsed.text
    assert all(line in parsed.text for n in range(1, 7) for line in _body(n))
    assert parsed.furniture_lines == {n: 2 for n in range(1, 7)}
    assert {f.position for f in parsed.furniture} == {"header", "footer"}
    # And the printed page numbers are read from the footer; no page lost most of its text
    assert [s.label for s in parsed.pages] == ["1", "2", "3", "4", "5", "6"]
    assert parsed.warnings == []


def test_a_page_that_lost_most_of_its_text_is_named() -> None:
    # Given pages as read and furniture that took 3 of page 2's 4 lines, and 1 of page 1's 4
    from longdoc.ingest.models import Furniture

    raw = ["\n".join(["Example Insurance plc", *_body(1, 2), "Page 1"]),
           "\n".join(["Example Insurance plc", "Household Policy Wording", "A line.", "Page 2"]), "Page 3"]
    furniture = [Furniture(page=1, position="footer", text="Page 1"),
                 Furniture(page=2, position="header", text="Example Insurance plc"),
                 Furniture(page=2, position="header", text="Household Policy Wording"),
                 Furniture(page=2, position="footer", text="Page 2"),
                 Furniture(page=3, position="footer", text="Page 3")]
    # When the warnings are made
    warnings = furniture_warnings(raw, furniture, [0, 1, 2])
    # Then page 2 is named (page 1 lost a line, page 3 is a folio alone)
    assert warnings == ["pages 2: most of their text was removed as running headers and footers (up to 88% of the "
                        "characters; the lines are counted in furniture_lines): check that no body text went with them"]


def test_a_scan_of_four_copies_keeps_every_page_read_by_ocr() -> None:
    # Given a 4-page scan of the same two-line notice (image only: OCR reads each page)
    from longdoc.adapters.ocr_tesseract import TesseractOcr
    from longdoc.ingest.parse import OcrOptions
    from tests.unit.ingest.test_ocr_orientation import scan_pdf, sentence_page

    lines = ("The premium for the renewal term is EUR 1,240.00.", "Water damage excess: EUR 500.00 per claim.")
    data = scan_pdf([(sentence_page(lines), 300)] * 4)
    # When it is parsed with OCR
    parsed = parse_document("scan.pdf", data, ocr=OcrOptions(TesseractOcr(), orient=False))
    # Then all four pages keep both amounts (before: the lines repeated on every page were removed)
    pages = [parsed.text[s.char_start:s.char_end] for s in parsed.pages]
    assert all("EUR 1,240.00" in page and "EUR 500.00" in page for page in pages), pages
    assert parsed.furniture == [] and parsed.page_outcomes == ["ocr"] * 4
