"""Tests for Word's automatic numbering rendered from numbering.xml and styles.xml."""

from __future__ import annotations

from xml.etree import ElementTree

import pytest

from longdoc.ingest.parse.formats import docx_to_text
from longdoc.ingest.parse import parse_document
from longdoc.ingest.parse.wordnum import W, WordNumbering, format_number
from longdoc.core.errors import DocumentError
from tests.unit.docx_builder import abstract_num, build_docx, level, num, paragraph, style


@pytest.mark.parametrize(
    ("value", "fmt", "shown"),
    [
        (4, "upperRoman", "IV"), (1999, "upperRoman", "MCMXCIX"), (9, "lowerRoman", "ix"),
        (2, "lowerLetter", "b"), (27, "upperLetter", "AA"), (53, "lowerLetter", "aaa"),
        (7, "decimalZero", "07"), (11, "ordinal", "11th"), (22, "ordinal", "22nd"),
        (3, "bullet", "•"), (3, "none", ""), (5, "chineseCounting", "5"),
    ],
)
def test_number_formats_render_as_word_shows_them(value: int, fmt: str, shown: str) -> None:
    # Given a level value and a Word number format, Then it renders as Word shows it
    assert format_number(value, fmt) == shown


def _lines(data: bytes) -> list[str]:
    text, _ = docx_to_text(data)
    return text.split("\n\n")


def test_deeper_levels_restart_unless_lvl_restart_says_never() -> None:
    # Given a list whose level 2 restarts under level 1, and whose level 3 never restarts
    lst = abstract_num(30, [
        level(0, "decimal", "%1."),
        level(1, "lowerLetter", "(%2)"),
        level(2, "decimal", "Note %3", restart=0),
    ])
    paras = [
        paragraph("First.", None, (40, 0)), paragraph("Item.", None, (40, 1)),
        paragraph("Aside.", None, (40, 2)), paragraph("Second.", None, (40, 0)),
        paragraph("Item.", None, (40, 1)), paragraph("Aside.", None, (40, 2)),
    ]
    # When it is rendered
    lines = _lines(build_docx(paras, lists=[lst, num(40, 30)]))
    # Then (a) starts again under 2., but "Note" counts on across it
    assert lines == ["1. First.", "(a) Item.", "Note 1 Aside.", "2. Second.", "(a) Item.", "Note 2 Aside."]


def test_two_instances_of_one_list_continue_and_a_start_override_restarts() -> None:
    # Given three instances of one list: two plain (Word continues them), one with a start
    # override at 5 (how Word restarts or re-bases a list)
    lst = abstract_num(31, [level(0, "upperLetter", "Schedule %1")])
    paras = [
        paragraph("Fees", None, (41, 0)), paragraph("Service Levels", None, (42, 0)),
        paragraph("Reserved", None, (43, 0)), paragraph("Contacts", None, (43, 0)),
    ]
    lines = _lines(build_docx(paras, lists=[lst, num(41, 31), num(42, 31), num(43, 31, {0: 5})]))
    # Then the plain instances share one count and the overridden one starts at E
    assert lines == ["Schedule A Fees", "Schedule B Service Levels", "Schedule E Reserved", "Schedule F Contacts"]


def test_start_values_and_bullets_and_a_missing_level_definition() -> None:
    # Given a list starting at 4 with a bullet level, and a paragraph naming a level the
    # list does not define
    lst = abstract_num(32, [level(0, "decimal", "%1", start=4), level(1, "bullet", "\uf0b7")])
    paras = [
        paragraph("Payment", None, (44, 0)), paragraph("monthly", None, (44, 1)),
        paragraph("Odd level", None, (44, 7)),
    ]
    lines = _lines(build_docx(paras, lists=[lst, num(44, 32)]))
    # Then the count starts at 4, the bullet is "•" whatever symbol the font draws, and an
    # undefined level shows no number, as in Word (never an invented count: issue 13, item 10)
    assert lines[:2] == ["4 Payment", "• monthly"]
    assert lines[2] == "Odd level"


def test_a_list_whose_definition_is_missing_gets_no_invented_numbers() -> None:
    # Given paragraphs numbered by a list instance that points at an abstract definition the
    # package does not hold
    lst = abstract_num(33, [level(0, "decimal", "%1.")])
    paras = [paragraph("Defined", None, (46, 0)), paragraph("Dangling", None, (45, 0)),
             paragraph("Dangling too", None, (45, 0))]
    lines = _lines(build_docx(paras, lists=[lst, num(46, 33), num(45, 99)]))
    # Then the defined list is numbered and the dangling one shows no numbers at all
    assert lines == ["1. Defined", "Dangling", "Dangling too"]


def test_numbering_reaches_a_paragraph_through_a_chain_of_based_on_styles() -> None:
    # Given Heading 1 carrying the list, "Annex Title" based on "Big" based on Heading 1
    lst = abstract_num(33, [level(0, "decimal", "%1.0", style="Heading1")])
    styles = [
        style("Heading1", "heading 1", num=(45, None)),
        style("Big", "Big", based_on="Heading1"),
        style("AnnexTitle", "Annex Title", based_on="Big"),
    ]
    paras = [paragraph("Scope", "Heading1"), paragraph("Annexes", "AnnexTitle")]
    lines = _lines(build_docx(paras, lists=[lst, num(45, 33)], styles=styles))
    # Then both are numbered by the one list
    assert lines == ["1.0 Scope", "2.0 Annexes"]


def _with_part(data: bytes, part: str, content: bytes) -> bytes:
    """``data`` (a DOCX) with the zip member ``part`` replaced by ``content``."""
    import io
    import zipfile

    src, dst = zipfile.ZipFile(io.BytesIO(data)), io.BytesIO()
    with zipfile.ZipFile(dst, "w") as z:
        for name in src.namelist():
            z.writestr(name, content if name == part else src.read(name))
    return dst.getvalue()


@pytest.mark.parametrize("part", ["word/numbering.xml", "word/styles.xml"])
def test_malformed_numbering_part_is_a_clear_document_error(part: str) -> None:
    # Given a DOCX whose numbering (or styles) part is cut off mid-tag
    good = build_docx([paragraph("Text", "Body", (1, 0))], styles=[style("Body", "Body Text")])
    bad = _with_part(good, part, b"<w:numbering")
    # When it is parsed
    with pytest.raises(DocumentError) as caught:
        parse_document("bad.docx", bad)
    # Then the error names the file, says it is unreadable, and names the broken part and where
    assert caught.value.source == "bad.docx"
    assert caught.value.reason == (
        f"corrupt or unreadable DOCX: {part}: unclosed token: line 1, column 0")


@pytest.mark.parametrize("content", [b"", b"  \n", b"\xef\xbb\xbf", b'<?xml version="1.0" encoding="UTF-8"?>\n'])
def test_an_empty_numbering_part_means_no_numbering(content: bytes) -> None:
    # Given a numbered DOCX whose numbering part is empty (white space, a byte-order mark
    # or an XML declaration alone)
    import io
    import zipfile

    data = _with_part(build_docx([paragraph("Scope", None, (1, 0))]), "word/numbering.xml", content)
    # When its numbering is read
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        numbering = WordNumbering.from_docx(archive)
    # Then there is none, as with no numbering part at all
    para = ElementTree.fromstring(
        f'<w:p xmlns:w="{W[1:-1]}"><w:pPr><w:numPr><w:ilvl w:val="0"/><w:numId w:val="1"/></w:numPr></w:pPr></w:p>')
    assert numbering.label(para) is None


def test_non_legal_number_under_a_roman_parent_is_a_section_people_can_cite() -> None:
    # Given "Section %1.%2" without legal numbering under an upper-roman ARTICLE level:
    # Word shows "Section I.1" and that is what a reader cites
    from longdoc.ingest.chunk import chunk_document

    lst = abstract_num(34, [level(0, "upperRoman", "ARTICLE %1"), level(1, "decimal", "Section %1.%2")])
    paras = [
        paragraph("Governing Law", None, (46, 0)),
        paragraph("This Agreement is governed by the laws of New York.", None, (46, 1)),
        paragraph("Assignment", None, (46, 0)),
        paragraph("Neither party may assign without consent.", None, (46, 1)),
    ]
    doc = parse_document("law.docx", build_docx(paras, lists=[lst, num(46, 34)]))
    # When it is chunked
    chunks = chunk_document(doc, "law", target_tokens=40, max_tokens=80)
    # Then the roman-dotted numbers are the section ids
    assert [s.section_id for c in chunks for s in c.section_spans] == [
        "Article I", "Section I.1", "Article II", "Section II.1"
    ]


@pytest.mark.parametrize("content", [b"", b"\xef\xbb\xbf", b'<?xml version="1.0"?>'])
def test_a_docx_with_an_empty_numbering_part_parses_without_numbers(content: bytes) -> None:
    # Given a DOCX whose numbering part is empty (Word reads it as no numbering)
    data = _with_part(build_docx([paragraph("Scope of the services.", None, (1, 0))]), "word/numbering.xml", content)
    # When it is parsed, Then its text is there, unnumbered
    doc = parse_document("empty-numbering.docx", data)
    assert doc.text == "Scope of the services."
