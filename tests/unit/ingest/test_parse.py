"""Tests for :func:`longdoc.ingest.parse.parse_document` on the shared real-document corpus."""

from __future__ import annotations

import hashlib
import io
import re
from itertools import pairwise
from pathlib import Path

import pypdfium2 as pdfium
import pytest

from longdoc.ingest.parse.cleanup import find_furniture
from longdoc.ingest.parse import parse_document
from longdoc.core.errors import DocumentError
from longdoc.ingest.models import ParsedDocument

from tests.unit.pdf_builder import text_pdf

GDPR_PDF = "gdpr-council-position-5419-16.pdf"
C0_EXCEPT_TAB_LF = re.compile(r"[\x00-\x08\x0b-\x1f]")


@pytest.fixture(scope="module")
def corpus_dir() -> Path:
    """The read-only shared corpus, ``../shared/corpus`` relative to the repository."""
    path = Path(__file__).resolve().parents[3] / ".." / "shared" / "corpus"
    assert path.is_dir(), f"shared corpus missing at {path}"
    return path


@pytest.fixture(scope="module")
def gdpr(corpus_dir: Path) -> ParsedDocument:
    """The 261-page GDPR Council position, parsed once for the module."""
    return parse_document(GDPR_PDF, (corpus_dir / GDPR_PDF).read_bytes())


def _reason(source: str, data: bytes, **limits: int) -> str:
    """Parse and return the DocumentError reason, failing if parsing succeeds."""
    with pytest.raises(DocumentError) as caught:
        parse_document(source, data, **limits)
    assert caught.value.source == source
    return caught.value.reason


# --- PDFs --------------------------------------------------------------------------


def test_gdpr_pdf_has_261_contiguous_pages_in_order(gdpr: ParsedDocument) -> None:
    # Given the GDPR Council position PDF (261 pages per the corpus manifest)
    # When it is parsed (fixture)
    # Then there is one span per physical page, numbered 1..261, in order
    assert gdpr.media_type == "application/pdf"
    assert gdpr.page_count == 261
    assert [span.page for span in gdpr.pages] == list(range(1, 262))
    # And the spans tile the text with exactly one "\n" between consecutive pages
    assert gdpr.pages[0].char_start == 0
    assert gdpr.pages[-1].char_end == len(gdpr.text)
    for previous, current in pairwise(gdpr.pages):
        assert current.char_start == previous.char_end + 1
        assert gdpr.text[previous.char_end] == "\n"
    # And every page has text, without a leading or trailing newline of its own
    page_texts = [gdpr.text[s.char_start : s.char_end] for s in gdpr.pages]
    assert all(t and t[0] != "\n" and t[-1] != "\n" for t in page_texts)
    assert "\n".join(page_texts) == gdpr.text


def test_gdpr_page_at_finds_the_physical_page_of_known_phrases(gdpr: ParsedDocument) -> None:
    # Given phrases whose pages were checked by hand (gold case hand-005, Articles 83 and 99)
    breach = "not later than 72 hours after having become aware of it"
    # When their offsets are looked up
    hits = [m.start() for m in re.finditer(re.escape(breach), gdpr.text)]
    # Then the breach deadline is on physical pages 54 (recital 85) and 163 (Article 33)
    assert [gdpr.page_at(offset) for offset in hits] == [54, 163]
    assert gdpr.page_at(gdpr.text.index("up to 20 000 000 EUR")) == 247
    article_99 = gdpr.text.index("Article 99\nEntry into force and application")
    assert gdpr.page_at(article_99) == 261
    # And pages are physical, not printed: the header "... sr 100" (now furniture, out of the
    # text) sits on physical page 101, whose printed label is "100"
    header = next(f for f in gdpr.furniture if f.text == "5419/16 AV/NT/sr 100")
    assert (header.page, header.position) == (101, "header")
    assert gdpr.pages[100].label == "100"
    assert gdpr.label_at(gdpr.text.index("up to 20 000 000 EUR")) == "246"


def test_page_at_at_page_edges_and_separators(gdpr: ParsedDocument) -> None:
    # Given page 54's span
    span = gdpr.pages[53]
    # When offsets on its first and last characters, its trailing separator and the
    # very end of the text are looked up
    # Then the edges belong to page 54, the separator to page 55, past-the-end to 261
    assert gdpr.page_at(span.char_start) == 54
    assert gdpr.page_at(span.char_end - 1) == 54
    assert gdpr.text[span.char_end] == "\n"
    assert gdpr.page_at(span.char_end) == 55
    assert gdpr.page_at(len(gdpr.text)) == 261


def test_pdfs_encrypted_with_an_empty_user_password_open(corpus_dir: Path) -> None:
    # Given owner-only encrypted PDFs with an empty user password (AES-128 and RC4-40)
    policy = (corpus_dir / "canadian-comprehensive-homeowners-policy.pdf").read_bytes()
    dmca = (corpus_dir / "dmca-1998-copyright-office-summary.pdf").read_bytes()
    # When they are parsed without a password
    policy_doc = parse_document("policy.pdf", policy)
    dmca_doc = parse_document("dmca.pdf", dmca)
    # Then every page is there and text comes out on the right pages
    assert (policy_doc.page_count, dmca_doc.page_count) == (13, 18)
    clause = policy_doc.text.index("required under sub-condition (1) of this condition")
    assert policy_doc.page_at(clause) == 12
    # And the DMCA running header "... Page N" is furniture of physical page N (it is out of
    # the document text), and N is the page's label, also on pages 4 and 8, where PDFium
    # reads a footnote before the header
    headers = [f for f in dmca_doc.furniture if "Summary December 1998 Page" in f.text]
    assert [(f.page, f.text.rsplit(" ", 1)[1]) for f in headers] == [(n, str(n)) for n in range(1, 19)]
    assert "Summary December 1998 Page" not in dmca_doc.text
    assert [s.label for s in dmca_doc.pages] == [str(n) for n in range(1, 19)]
    # And the homeowners policy's own PDF page labels are used as they are
    assert [s.label for s in policy_doc.pages] == [str(n) for n in range(1, 14)]


def test_a_blank_page_gets_an_empty_span(corpus_dir: Path) -> None:
    # Given the homeowners policy, whose 13th (last) page is blank
    name = "canadian-comprehensive-homeowners-policy.pdf"
    # When it is parsed
    doc = parse_document(name, (corpus_dir / name).read_bytes())
    # Then page 13 has an empty span just after page 12's separator
    last = doc.pages[-1]
    assert (last.page, last.char_end - last.char_start) == (13, 0)
    assert last.char_start == doc.pages[-2].char_end + 1 == len(doc.text)
    # And the other pages have text
    assert all(s.char_end > s.char_start for s in doc.pages[:-1])


BAD_OUTCOMES: dict[str, int | str] = {
    # name -> page count of the ParsedDocument, or key words of the DocumentError reason
    "empty-0-bytes.pdf": "empty file (0 bytes)",
    "password-example.pdf": "encrypted: a password is required",
    "unreadable-page-tree.pdf": "corrupt or unreadable PDF (PDFium: data format error)",
    "scanned-grumman-service-kit-no-text.pdf": "no text layer on any of the 2 pages",
    "malformed-from-issue-932.pdf": 1,
    "scanned-vicksburg-with-ocr-layer.pdf": 6,
    "nics-rotated-90.pdf": 1,
    "duplicate-chars-fake-bold.pdf": 20,
    "ligatures-latex-paper.pdf": 8,
}


def test_every_bad_file_has_an_expected_outcome(corpus_dir: Path) -> None:
    # Given the bad/ folder
    # When its files are listed
    names = {p.name for p in (corpus_dir / "bad").iterdir() if p.is_file()}
    # Then each one is covered by the parametrised outcome test below
    assert names == set(BAD_OUTCOMES)


@pytest.mark.parametrize(("name", "expected"), sorted(BAD_OUTCOMES.items()))
def test_bad_files_end_in_a_clear_outcome(
    corpus_dir: Path, name: str, expected: int | str
) -> None:
    # Given a malformed, encrypted, scanned or otherwise hard file
    data = (corpus_dir / "bad" / name).read_bytes()
    if isinstance(expected, int):
        # When it is parsed
        doc = parse_document(name, data)
        # Then it yields the expected pages, every one carrying clean text
        assert doc.page_count == expected
        assert doc.text.strip()
        assert not C0_EXCEPT_TAB_LF.search(doc.text)
        assert "\r" not in doc.text and "\ufffe" not in doc.text
    else:
        # When it is parsed, Then it fails with a reason naming the problem
        assert expected in _reason(name, data)


def test_pdfium_line_end_hyphens_are_joined_when_soft_and_kept_when_compound(corpus_dir: Path) -> None:
    # Given PDFs where pdfium replaces a line-end hyphen with U+FFFE and drops the break
    vicksburg = (corpus_dir / "bad" / "scanned-vicksburg-with-ocr-layer.pdf").read_bytes()
    register = (corpus_dir / "federal-register-2020-17221.pdf").read_bytes()
    # When they are parsed
    ocr = parse_document("vicksburg.pdf", vicksburg)
    rule = parse_document("register.pdf", register)
    # Then soft line-end hyphens are joined into the word (on one line, as PDFium returns it)
    assert "These shells are visitors we do not care to" in ocr.text
    assert "However, they" in ocr.text
    assert "vis-" not in ocr.text and "How-" not in ocr.text
    assert "expanding" in ocr.text and "ex-panding" not in ocr.text  # "ex" is a prefix, "panding" no word
    # And real compound hyphens survive: an acronym before it, or the hyphenated form used
    # elsewhere in the document ("FAA-approved", "non-normal", "nose-down")
    assert "FAA-approved" in rule.text and "FAAapproved" not in rule.text
    assert "nonnormal" not in rule.text and "nosedown" not in rule.text
    assert "\ufffe" not in ocr.text + rule.text and "\x02" not in ocr.text + rule.text


def test_pdf_text_lines_have_no_trailing_whitespace(gdpr: ParsedDocument) -> None:
    # Given the parsed GDPR PDF (pdfium emits "\r\n" and trailing spaces)
    # When its lines are inspected
    lines = gdpr.text.split("\n")
    # Then no line ends in whitespace and no carriage return is left
    assert all(line == line.rstrip() for line in lines)
    assert "\r" not in gdpr.text


def test_pdf_content_wins_over_a_text_extension(corpus_dir: Path) -> None:
    # Given a real one-page PDF stored under a .txt name
    data = (corpus_dir / "scotus-transcript-p1.pdf").read_bytes()
    # When it is parsed
    doc = parse_document("transcript.txt", data)
    # Then it is read as a PDF
    assert (doc.media_type, doc.page_count) == ("application/pdf", 1)


def test_pdf_header_after_leading_junk_is_found_within_1024_bytes(corpus_dir: Path) -> None:
    # Given a PDF preceded by junk: 1000 bytes (allowed) and 1100 bytes (too far)
    data = (corpus_dir / "scotus-transcript-p1.pdf").read_bytes()
    near, far = b"x" * 1000 + data, b"x" * 1100 + data
    # When both are parsed
    # Then the first opens and the second is refused as not a PDF
    assert parse_document("near.pdf", near).page_count == 1
    assert "content is not a PDF" in _reason("far.pdf", far)


def test_truncated_pdf_is_corrupt(corpus_dir: Path) -> None:
    # Given the first 3,000 bytes of a real PDF
    data = (corpus_dir / "scotus-transcript-p1.pdf").read_bytes()[:3000]
    # When it is parsed, Then PDFium's reason is given
    assert _reason("cut.pdf", data) == "corrupt or unreadable PDF (PDFium: data format error)"


def test_pdf_without_pages_is_refused_even_after_a_password_failure(corpus_dir: Path) -> None:
    # Given a well-formed PDF with an empty page tree, written by pdfium itself, parsed
    # right after a password-protected PDF (pdfium's last-error code is then stale)
    empty = pdfium.PdfDocument.new()
    buffer = io.BytesIO()
    empty.save(buffer)
    empty.close()
    locked = (corpus_dir / "bad" / "password-example.pdf").read_bytes()
    assert "password" in _reason("locked.pdf", locked)
    # When it is parsed, Then it is refused for having no pages, not for a password
    assert _reason("blank.pdf", buffer.getvalue()) == "PDF has no pages"


# --- text --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "chars"),
    [
        ("Apache-2.0.txt", 11358),
        ("GPL-3.0.txt", 35149),
        ("gdpr-regulation-2016-679-eurlex.txt", 353042),
    ],
)
def test_text_files_give_one_unpaged_span(corpus_dir: Path, name: str, chars: int) -> None:
    # Given a real UTF-8 text file (character counts from the corpus manifest)
    data = (corpus_dir / name).read_bytes()
    # When it is parsed
    doc = parse_document(name, data)
    # Then the whole text is one span without a page
    assert doc.media_type == "text/plain"
    assert len(doc.text) == chars
    assert [(s.page, s.char_start, s.char_end) for s in doc.pages] == [(None, 0, chars)]
    assert doc.page_count == 0
    assert doc.page_at(chars // 2) is None
    assert doc.text == data.decode("utf-8")


def test_markdown_extension_gives_markdown_media_type(corpus_dir: Path) -> None:
    # Given text bytes under .md and .MARKDOWN names
    data = (corpus_dir / "MPL-2.0.txt").read_bytes()
    # When they are parsed, Then the media type follows the extension, case-insensitively
    assert parse_document("notes/mpl.md", data).media_type == "text/markdown"
    assert parse_document("MPL.MARKDOWN", data).media_type == "text/markdown"
    assert parse_document("mpl.text", data).media_type == "text/plain"


def test_text_normalisation_keeps_meaning() -> None:
    # Given UTF-8 text with a BOM, CRLF and CR line ends, trailing spaces, a form feed,
    # a tab, a bell character and a soft hyphen used as a visible hyphen
    data = "\ufeffRule 13a\u00ad15(e)  \r\n\tIndented\r\rold Mac\x0c\x07end \n".encode()
    # When it is parsed
    doc = parse_document("sample.txt", data)
    # Then line ends are "\n", controls and trailing spaces are gone, the tab stays,
    # the soft hyphen reads as "-", and nothing else changes
    assert doc.text == "Rule 13a-15(e)\n\tIndented\n\nold Macend\n"


def test_text_that_is_not_utf8_falls_back_to_cp1252() -> None:
    # Given Windows-1252 bytes (é = 0xE9, curly quotes 0x93/0x94, euro 0x80)
    data = b"Caf\xe9 \x93quoted\x94 \x80100"
    # When they are parsed, Then they decode as cp1252
    assert parse_document("menu.txt", data).text == "Caf\u00e9 \u201cquoted\u201d \u20ac100"


def test_text_that_is_neither_utf8_nor_cp1252_is_refused() -> None:
    # Given bytes invalid in UTF-8 and undefined in cp1252 (0x81)
    # When they are parsed, Then the file is refused as not UTF-8
    assert "not UTF-8 text" in _reason("odd.txt", b"abc \x81 def")


def test_nul_bytes_mean_binary_content(corpus_dir: Path) -> None:
    # Given a real text file with a NUL byte inside, and UTF-16 text
    data = (corpus_dir / "Apache-2.0.txt").read_bytes()
    with_nul = data[:100] + b"\x00" + data[100:]
    utf16 = "Apache License".encode("utf-16")
    # When they are parsed, Then both are refused as binary
    assert _reason("x.txt", with_nul) == "binary content, not text (it contains NUL bytes)"
    assert "save it as UTF-8" in _reason("x.txt", utf16)


def test_whitespace_only_text_is_refused() -> None:
    # Given a text file holding only blank lines and spaces
    # When it is parsed, Then it is refused
    assert "only whitespace" in _reason("blank.md", b"  \r\n\t\n  ")


# --- format and limits -------------------------------------------------------------


def test_pdf_extension_on_text_bytes_is_refused(corpus_dir: Path) -> None:
    # Given the Apache licence text named x.pdf
    data = (corpus_dir / "Apache-2.0.txt").read_bytes()
    # When it is parsed, Then the lie is named
    assert _reason("x.pdf", data).startswith("extension says PDF but the content is not a PDF")


def test_unsupported_extensions_are_refused(corpus_dir: Path) -> None:
    # Given text bytes under a .rtf name and under a name without an extension
    data = (corpus_dir / "Apache-2.0.txt").read_bytes()
    # When they are parsed, Then the reason names the type and the supported ones
    assert _reason("contract.rtf", data) == (
        "unsupported file type '.rtf' (supported: .pdf, .txt, .text, .md, .markdown, .html, .htm, .docx)"
    )
    assert _reason("LICENSE", data).startswith("unsupported file type (no extension)")


def test_size_cap_gives_size_and_limit_in_bytes(corpus_dir: Path) -> None:
    # Given the 1,315,109-byte GDPR PDF and a 1,000,000-byte cap
    data = (corpus_dir / GDPR_PDF).read_bytes()
    # When it is parsed, Then it is refused with both numbers
    reason = _reason(GDPR_PDF, data, max_bytes=1_000_000)
    assert reason == "file too large: 1315109 bytes, over the limit of 1000000 bytes"
    # And a file exactly at the cap is accepted
    text = (corpus_dir / "Apache-2.0.txt").read_bytes()
    assert parse_document("a.txt", text, max_bytes=len(text)).text


def test_page_cap(corpus_dir: Path) -> None:
    # Given the 261-page GDPR PDF and a 100-page cap
    data = (corpus_dir / GDPR_PDF).read_bytes()
    # When it is parsed, Then it is refused with the page count and the cap
    assert _reason(GDPR_PDF, data, max_pages=100) == (
        "too many pages: 261, over the limit of 100 pages"
    )


def test_hash_and_doc_version_are_deterministic(corpus_dir: Path, gdpr: ParsedDocument) -> None:
    # Given the GDPR PDF's bytes and the corpus SHA256SUMS entry for it
    data = (corpus_dir / GDPR_PDF).read_bytes()
    lines = (corpus_dir / "SHA256SUMS").read_text().splitlines()
    sums = {name: digest for digest, name in (line.split(maxsplit=1) for line in lines)}
    # When it is parsed again under another name
    again = parse_document("uploads/renamed.pdf", data)
    # Then hash, version and text are the same and match the published checksum
    assert again.content_sha256 == gdpr.content_sha256 == hashlib.sha256(data).hexdigest()
    assert gdpr.content_sha256 == sums[f"./{GDPR_PDF}"]
    assert gdpr.doc_version == "c0ef013c239389bb"
    assert again.text == gdpr.text and again.pages == gdpr.pages
    assert again.source == "uploads/renamed.pdf"


def test_footer_stacked_above_other_footer_lines_is_removed(corpus_dir) -> None:
    # Given a contract whose title footer sits above the page-number footer on all 47 pages
    data = (corpus_dir / "cuad/glumobileinc-content-license-agreement1.pdf").read_bytes()
    # When it is parsed
    parsed = parse_document("glu.pdf", data)
    # Then the title footer is gone from the text and kept as furniture on every page
    assert "Wireless Content License Agreement Multiple" not in parsed.text
    pages = {f.page for f in parsed.furniture if "Wireless Content License Agreement" in " ".join(f.text.split())}
    assert len(pages) == 47


def test_one_footer_with_page_labels_of_other_shapes_is_one_family(corpus_dir) -> None:
    # Given a contract whose footer reads "Proprietary to Bank of America Page 4 vTIP2010"
    # on the body pages but "... ii ...", "... C-3 ..." or no label at all elsewhere
    data = (corpus_dir / "cuad/cardlyticsinc-maintenance-agreement1.pdf").read_bytes()
    # When it is parsed
    parsed = parse_document("cardlytics.pdf", data)
    # Then no line of that footer is left standing on its own in the text
    lines = [line for line in parsed.text.split("\n") if line.startswith("Proprietary to Bank of America")]
    assert lines == []
    # And the odd-label variants are kept as furniture of their pages
    kept = {f.text for f in parsed.furniture}
    assert {"Proprietary to Bank of America ii vTIP2010", "Proprietary to Bank of America C-3 vTIP2010",
            "Proprietary to Bank of America vTIP2010"} <= kept
    # And the schedule's text around the removed footer is still there
    assert "Files in Bank of America’s “CO Completed” file.\nSCHEDULE D" in parsed.text


def test_a_footer_pdfium_ran_into_the_last_body_line_is_cut_off_it(corpus_dir) -> None:
    # Given the Federal Register PDF, where PDFium reads page 1's last body line
    # "accident after takeoff from Soekarno-" and the GPO printer line as one line
    data = (corpus_dir / "federal-register-2020-17221.pdf").read_bytes()
    # When it is parsed
    parsed = parse_document("fr.pdf", data)
    # Then the printer line is gone from the text, the body words stay, and it is furniture
    assert "VerDate" not in parsed.text
    assert "accident after takeoff from Soekarno-" in parsed.text
    first = [f.text for f in parsed.furniture if f.page == 1]
    assert any(t.startswith("VerDate Sep<11>2014") and "Frm 00001" in t for t in first)


TITLES = ["DEFINITIONS", "TERM", "PAYMENT", "DELIVERY", "WARRANTY", "LIABILITY", "INSURANCE",
          "TERMINATION", "NOTICES", "GOVERNING LAW"]


def _heading_pages(first_line: str, *, footer: bool = True) -> list[list[str]]:
    """Ten pages, each opening with ``first_line`` (``{n}`` is the page's article number,
    ``{page}`` the physical page) and a title, two body lines and a ``Page N of 10`` footer."""
    pages = []
    for page, title in enumerate(TITLES, start=1):
        lines = [first_line.format(n=page, page=page, title=title.title()), title,
                 f"The parties agree to the {title.lower()} terms set out here.",
                 f"Each party shall act in good faith about {title.lower()}."]
        pages.append(lines + ([f"Page {page} of 10"] if footer else []))
    return pages


@pytest.mark.parametrize("first_line", ["ARTICLE {n}", "{n}. Condition number {n}", "Section {n}.1 General"])
def test_a_heading_whose_number_changes_on_every_page_is_not_a_running_header(first_line: str) -> None:
    # Given a 10-page PDF where every page opens with a numbered heading (ARTICLE 1 ..
    # ARTICLE 10, one per page) and ends with a "Page N of 10" footer
    data = text_pdf(_heading_pages(first_line))
    # When it is parsed
    parsed = parse_document("articles.pdf", data)
    # Then only the page footers are furniture, and every heading stays in the text
    assert [f.text for f in parsed.furniture] == [f"Page {n} of 10" for n in range(1, 11)]
    headings = [first_line.format(n=n, page=n, title=t.title()) for n, t in enumerate(TITLES, start=1)]
    assert [h for h in headings if f"{h}\n" in parsed.text] == headings
    # And the printed page labels come from the footer, not from the heading numbers
    assert [span.label for span in parsed.pages] == [str(n) for n in range(1, 11)]


def test_a_repeated_section_header_with_the_same_number_is_still_furniture() -> None:
    # Given ten pages that all open with the running header "Section 4 - Exclusions"
    data = text_pdf(_heading_pages("Section 4 - Exclusions", footer=False))
    # When it is parsed
    parsed = parse_document("policy.pdf", data)
    # Then that header is furniture on every page and gone from the text
    assert [(f.page, f.text) for f in parsed.furniture] == [(n, "Section 4 - Exclusions") for n in range(1, 11)]
    assert "Section 4" not in parsed.text


def test_keyword_and_numbered_heading_templates_follow_the_number_rule() -> None:
    # Given page texts whose first line is a heading-shaped template
    def tops(lines: list[str]) -> list[str]:
        return [f"{line}\nThe {word} terms apply.\nNo {word} claim is waived." for line, word in
                zip(lines, ["first", "second", "third", "fourth", "fifth", "sixth"], strict=True)]
    changing = tops([f"CHAPTER {n + 2}" for n in range(6)])
    same = tops(["Schedule 2 Pricing"] * 6)
    dotted = tops([f"{n}.2 Claims" for n in range(6)])
    # When furniture is found, Then a changing heading number is kept, a fixed one removed
    assert find_furniture(changing)[1] == []
    assert [f.text for f in find_furniture(same)[1]] == ["Schedule 2 Pricing"] * 6
    assert find_furniture(dotted)[1] == []


def test_a_prefix_that_begins_plain_words_keeps_its_hyphen_only_before_a_word() -> None:
    # Given line-end hyphens (PDFium's marker) after compound prefixes
    from longdoc.ingest.parse.hyphens import HYPHEN_MARKER, resolve_hyphens

    m = HYPHEN_MARKER
    pages = [
        f"The ex{m}panding market. An ex{m}officio member. Post{m}ing is monthly.",
        f"A non{m}refundable fee. Self{m}insure it. Sits ex officio. Twenty{m}four months.",
    ]
    # When the hyphens are resolved
    text = "\n".join(resolve_hyphens(pages))
    # Then after "ex"/"post" (which begin plain words) the hyphen stays only when the right
    # half is a word elsewhere in the document: "ex-officio" beside "officio", "expanding"
    assert "The expanding market." in text and "Posting is monthly." in text
    assert "An ex-officio member." in text
    # And the other prefixes keep theirs when the joined word occurs nowhere
    assert "A non-refundable fee." in text and "Self-insure it." in text
    assert "Twenty-four months." in text


def test_a_markdown_soft_hyphen_is_removed_not_made_visible() -> None:
    # Given a Markdown file whose words carry soft hyphens (U+00AD: invisible where the line does not break)
    data = "# Duties\n\nThe Supplier's obliga\u00adtions under this Agree\u00adment survive.\n".encode()
    # When it is parsed
    doc = parse_document("duties.md", data)
    # Then the words read as they render, with no visible hyphen and no U+00AD left
    assert "obligations under this Agreement survive." in doc.text
    assert "obliga-tions" not in doc.text and "\u00ad" not in doc.text
    # And a plain-text file keeps its soft hyphens visible as before (EDGAR files use them as hyphens)
    assert "obliga-tions" in parse_document("duties.txt", data).text
