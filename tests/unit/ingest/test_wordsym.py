"""Tests for DOCX symbol characters (``w:sym``) and parts that leave out Word's namespace prefixes."""

from __future__ import annotations

import io
import zipfile

import pytest

from longdoc.ingest.chunk import chunk_document
from longdoc.ingest.parse import parse_document
from longdoc.ingest.parse.wordsym import SYMBOL_PLACEHOLDER, render_sym
from tests.unit.docx_builder import DECIMAL_LIST, R, build_docx, paragraph


def _sym(font: str | None, char: str) -> str:
    """A run holding one ``w:sym`` (``font`` None leaves out ``w:font``)."""
    font_attr = f' w:font="{font}"' if font is not None else ""
    return f'<w:r><w:sym{font_attr} w:char="{char}"/></w:r>'


def _fees_with_symbol(font: str | None, char: str) -> bytes:
    """The tester's lease clause: a symbol run between two text runs, the second with ``&`` and ``<here>``."""
    fees = ('<w:p><w:r><w:t xml:space="preserve">The fees are due monthly. </w:t></w:r>'
            + _sym(font, char)
            + '<w:r><w:t xml:space="preserve"> Tenant pays &amp; agrees &lt;here&gt;.</w:t></w:r></w:p>')
    return build_docx([paragraph("Fees", None, (DECIMAL_LIST, 0)), fees])


def test_a_wingdings_checked_box_is_plain_text_and_the_documents_own_brackets_stay() -> None:
    # Given a DOCX paragraph with a Wingdings F0FE symbol (a checked box) between two runs
    doc = parse_document("lease.docx", _fees_with_symbol("Wingdings", "F0FE"))
    # Then the text has the checked box, no markup, and the document's "&" and "<here>"
    assert doc.text == "1 Fees\n\nThe fees are due monthly. \u2611 Tenant pays & agrees <here>."
    assert "<span" not in doc.text and "&#x" not in doc.text
    # And the chunk a quote is verified against carries the same text
    chunks = chunk_document(doc, "lease", target_tokens=100, max_tokens=200)
    assert [c.text for c in chunks] == [doc.text]


def test_a_symbol_without_a_font_is_the_character_of_its_low_byte() -> None:
    # Given the same paragraph whose w:sym has no w:font (docx2python wrote font-family:None)
    doc = parse_document("lease.docx", _fees_with_symbol(None, "F0B7"))
    # Then the symbol is Windows-1252 byte 0xB7, a middle dot, and nothing else changed
    assert doc.text == "1 Fees\n\nThe fees are due monthly. \u00b7 Tenant pays & agrees <here>."


def test_text_that_looks_like_docx2pythons_markup_is_kept_when_no_symbol_made_it() -> None:
    # Given a paragraph whose own words are exactly the string docx2python writes for a symbol
    words = "Type <span style=font-family:Wingdings>&#x00FE;</span> to tick."
    doc = parse_document("manual.docx", build_docx([paragraph(words)]))
    # Then they are kept as written
    assert doc.text == words


@pytest.mark.parametrize(("font", "char", "text"), [
    ("Wingdings", "F0FE", "\u2611"),     # ballot box with check
    ("wingdings", "F0A8", "\u25fb"),     # empty box; font names are case-insensitive
    ("Symbol", "F0B7", "\u2022"),        # bullet
    ("Symbol", "F0B3", "\u2265"),        # greater-than or equal to
    ("Wingdings", "F021", SYMBOL_PLACEHOLDER),  # a pencil: no entry in the table
    ("Webdings", "F0FE", SYMBOL_PLACEHOLDER),   # a symbol font without a table
    ("Arial", "F0E9", "\u00e9"),         # a text font: Windows-1252 byte 0xE9
    ("Arial", "F096", "\u2013"),         # Windows-1252 0x96 is an en dash, not a C1 control
    ("Arial", "F081", SYMBOL_PLACEHOLDER),  # undefined in Windows-1252
    ("Arial", "F009", SYMBOL_PLACEHOLDER),  # a control character
    ("Segoe UI Symbol", "2713", "\u2713"),  # outside F000-F0FF: the Unicode character itself
    ("Wingdings", None, SYMBOL_PLACEHOLDER),
    ("Wingdings", "zz", SYMBOL_PLACEHOLDER),
])
def test_render_sym(font: str | None, char: str | None, text: str) -> None:
    # Given a w:sym's font and char / When it is rendered / Then it is one plain character
    assert render_sym(font, char) == text


def _without_relationship_prefix(data: bytes) -> bytes:
    """``data`` with ``xmlns:r`` removed from every part's root, as in the tester's ok.docx."""
    source = zipfile.ZipFile(io.BytesIO(data))
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as target:
        for name in source.namelist():
            target.writestr(name, source.read(name).replace(f' xmlns:r="{R}"'.encode(), b""))
    return out.getvalue()


def test_a_docx_whose_document_part_declares_only_w_is_read() -> None:
    # Given a DOCX whose document.xml (and numbering.xml) root declares xmlns:w but not xmlns:r
    data = _without_relationship_prefix(build_docx([
        paragraph("Term", None, (DECIMAL_LIST, 0)),
        paragraph("The term is one year & a day <from signing>."),
    ]))
    assert b"xmlns:r" not in zipfile.ZipFile(io.BytesIO(data)).read("word/document.xml")
    # When it is parsed / Then its text comes out, Word's number included
    doc = parse_document("ok.docx", data)
    assert doc.text == "1 Term\n\nThe term is one year & a day <from signing>."

