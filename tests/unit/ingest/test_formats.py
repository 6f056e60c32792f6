"""Tests for HTML and DOCX input: headings, lists and Word's automatic numbering survive."""

from __future__ import annotations

from longdoc.ingest.chunk import chunk_document
from longdoc.ingest.parse.formats import html_to_text
from longdoc.ingest.parse import parse_document
from tests.unit.docx_builder import (
    DECIMAL_LIST,
    LETTER_LIST,
    abstract_num,
    build_docx,
    level,
    num,
    paragraph,
    style,
)


def _docx() -> bytes:
    """An agency agreement whose clause numbers exist only in Word's numbering definitions."""
    return build_docx([
        paragraph("Agency Agreement", "Title"),
        paragraph("Definitions", "Heading1", (DECIMAL_LIST, 0)),
        paragraph("Agency Fees means the fees set out in Schedule 1.", None, (DECIMAL_LIST, 1)),
        paragraph("the term “Renewal Period” means a further period of twelve months.", None, (DECIMAL_LIST, 2)),
        paragraph("Term and Termination", "Heading1", (DECIMAL_LIST, 0)),
        paragraph("This Agreement starts on the Effective Date.", None, (DECIMAL_LIST, 1)),
        paragraph("14 days after the leak the Agent shall notify the Principal in writing.", None, None),
        paragraph("Either party may terminate this Agreement:", None, (DECIMAL_LIST, 1)),
        paragraph("on 30 days' written notice; or", None, (LETTER_LIST, 0)),
        paragraph("at once for a material breach.", None, (LETTER_LIST, 0)),
    ])


def test_docx_automatic_numbers_come_out_and_become_sections() -> None:
    # Given a DOCX whose clause numbers (2, 2.1, 2.2, 1.1.1) come from numbering.xml only
    doc = parse_document("agency.docx", _docx())
    # Then the text carries the rendered numbers, letter items as (a)/(b), no pages
    assert doc.media_type.endswith("wordprocessingml.document")
    assert "1.1 Agency Fees means the fees set out in Schedule 1." in doc.text
    assert "1.1.1 the term “Renewal Period” means" in doc.text
    assert "2.2 Either party may terminate this Agreement:" in doc.text
    assert "(a) on 30 days' written notice; or" in doc.text and "(b) at once" in doc.text
    assert [(p.page, p.label) for p in doc.pages] == [(None, None)]
    # And heading styles are marked: Title level 1, Heading1 level 1
    marked = [doc.text[h.char_start : h.char_end] for h in doc.headings if h.kind == "heading"]
    assert marked == ["Agency Agreement", "1 Definitions", "2 Term and Termination"]
    # And the other clauses Word numbers are marked as numbered paragraphs
    numbered = [doc.text[h.char_start : h.char_end].split()[0] for h in doc.headings if h.kind == "numbered"]
    assert numbered == ["1.1", "1.1.1", "2.1", "2.2"]
    # When it is chunked small enough to see each section
    chunks = chunk_document(doc, "agency", target_tokens=100, max_tokens=200)
    ids = [sid for c in chunks for sid in c.section_ids]
    # Then Word's numbers are the section ids, a lowercase exact-successor 1.1.1 and the
    # (a)/(b) items of 2.2 included, and "14 days after the leak" is body text of 2.1, not
    # section 14
    assert ids == ["1", "1.1", "1.1.1", "2", "2.1", "2.2", "2.2(a)", "2.2(b)"]
    leak = doc.text.index("14 days after the leak")
    holder = next(c for c in chunks if c.char_start <= leak < c.char_end)
    assert holder.section_of(leak - holder.char_start) == "2.1"
    # And DOCX chunks say they have no page
    assert {(c.page_start, c.page_end, tuple(c.page_labels)) for c in chunks} == {(None, None, ())}
    # And the heading path nests under the numbered heading
    span = next(s for c in chunks for s in c.section_spans if s.section_id == "2.2")
    assert span.heading_path[0] == "2 Term and Termination"


def test_docx_name_on_other_bytes_and_corrupt_docx_are_refused() -> None:
    # Given text bytes named .docx, and a DOCX cut short
    import pytest

    from longdoc.core.errors import DocumentError

    with pytest.raises(DocumentError, match="extension says DOCX"):
        parse_document("x.docx", b"plain text, not a zip")
    with pytest.raises(DocumentError, match="corrupt or unreadable DOCX"):
        parse_document("x.docx", _docx()[:-100])


def test_a_docx_with_a_broken_relationship_gets_a_readers_reason() -> None:
    # Given a DOCX whose relationship entry lacks its Target (docx2python raises a bare KeyError)
    import io
    import zipfile

    import pytest

    from longdoc.core.errors import DocumentError

    source = zipfile.ZipFile(io.BytesIO(_docx()))
    parts = {name: source.read(name) for name in source.namelist()}
    rels = "word/_rels/document.xml.rels"
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as target:
        for name, body in parts.items():
            target.writestr(name, body.replace(b'Target="', b'X="') if name == rels else body)
    # When it is parsed
    with pytest.raises(DocumentError) as caught:
        parse_document("lease.docx", out.getvalue())
    # Then the reason says what is wrong in words, with no exception name or raw key
    assert caught.value.reason == ("corrupt or unreadable DOCX: a part or relationship the document "
                                   "refers to is missing from the package")


HTML = """<!doctype html><html><head><title>ignored</title><style>p{color:red}</style></head>
<body><h1>Home Policy</h1><p>This   policy covers
your home.</p>
<h2>4 Exclusions</h2><p>We do not cover the following.</p>
<h3>4.2 Escape of water</h3><p>Damage caused by water escaping from a fixed system, unless:</p>
<ol><li>the leak is sudden; or</li><li>you report it within 14 days.</li></ol>
<ul><li>Wear and tear</li></ul><script>var x = "not text";</script>
<h2>5 Claims</h2><p>Tell us at once.</p></body></html>"""


def test_html_headings_lists_and_sections() -> None:
    # Given an HTML policy with h1-h3 headings, an ordered and an unordered list
    doc = parse_document("policy.html", HTML.encode())
    # Then the visible text is kept, whitespace collapsed; script, style and title dropped
    assert doc.media_type == "text/html"
    assert "This policy covers your home." in doc.text
    assert "ignored" not in doc.text and "not text" not in doc.text and "color" not in doc.text
    # And list items are lines with their numbers or bullets
    assert "1. the leak is sudden; or\n2. you report it within 14 days." in doc.text
    assert "• Wear and tear" in doc.text
    # And the headings are marked with their levels
    assert [(doc.text[h.char_start : h.char_end], h.level) for h in doc.headings if h.kind == "heading"] == [
        ("Home Policy", 1), ("4 Exclusions", 2), ("4.2 Escape of water", 3), ("5 Claims", 2)
    ]
    # When it is chunked small
    chunks = chunk_document(doc, "policy", target_tokens=100, max_tokens=200)
    spans = [s for c in chunks for s in c.section_spans]
    # Then headings are section boundaries with numbers and paths
    assert [s.section_id for s in spans] == [None, "4", "4.2", "5"]
    esc = next(s for s in spans if s.section_id == "4.2")
    assert esc.heading_path == ["Home Policy", "4 Exclusions", "4.2 Escape of water"]
    # And the list items stay inside 4.2, never split off
    item = doc.text.index("2. you report it within 14 days.")
    assert esc.char_start < item < esc.char_end


def _contract_numbered_by_styles() -> bytes:
    """A contract laid out as Word does it: the heading styles carry the numbering.

    ``Heading 1`` is ``ARTICLE %1`` in upper roman, ``Heading 2`` is ``Section %1.%2`` as a
    legal number (decimal even under a roman parent); ``Clause`` is based on ``Heading 2``;
    body items use a separate ``(%1)`` list that one instance restarts.
    """
    headings = abstract_num(10, [
        level(0, "upperRoman", "ARTICLE %1", style="Heading1"),
        level(1, "decimal", "Section %1.%2", style="Heading2", legal=True),
    ])
    items = abstract_num(11, [level(0, "lowerLetter", "(%1)")])
    return build_docx(
        [
            paragraph("Supply Agreement", "Title"),
            paragraph("Definitions", "Heading1"),
            paragraph("Defined Terms", "Heading2"),
            paragraph("Products means the goods listed in Schedule 1.", None, (21, 0)),
            paragraph("Price means the price in Schedule 2.", None, (21, 0)),
            paragraph("Interpretation", "Clause"),
            paragraph("Headings do not affect interpretation.", None),
            paragraph("Term", "Heading1"),
            paragraph("Renewal", "Heading2"),
            paragraph("This Agreement renews for one year unless:", None),
            paragraph("either party gives notice; or", None, (22, 0)),
            paragraph("it is terminated earlier.", None, (22, 0)),
            paragraph("Unnumbered heading", "Heading2", (0, 0)),
            paragraph("Nothing here is numbered.", None),
        ],
        lists=[headings, items, num(20, 10), num(21, 11), num(22, 11, {0: 1})],
        styles=[
            style("Heading1", "heading 1", num=(20, None)),
            style("Heading2", "heading 2", num=(20, 1)),
            style("Clause", "Clause", based_on="Heading2"),
        ],
    )


def test_docx_headings_numbered_through_their_style_keep_word_numbers() -> None:
    # Given a DOCX whose heading numbers come from the heading styles' list, in Word's
    # own number texts ("ARTICLE %1" upper roman, "Section %1.%2" legal numbering)
    doc = parse_document("supply.docx", _contract_numbered_by_styles())
    lines = doc.text.split("\n\n")
    # Then every heading carries the number Word shows, inherited styles included
    assert "ARTICLE I Definitions" in lines and "ARTICLE II Term" in lines
    assert "Section 1.1 Defined Terms" in lines and "Section 2.1 Renewal" in lines
    assert "Section 1.2 Interpretation" in lines  # "Clause" is based on Heading 2
    # And a list instance that overrides its start restarts; the same list continues
    assert "(a) Products means the goods listed in Schedule 1." in lines
    assert "(b) Price means the price in Schedule 2." in lines
    assert "(a) either party gives notice; or" in lines and "(b) it is terminated earlier." in lines
    # And numId 0 on a paragraph switches its style's numbering off
    assert "Unnumbered heading" in lines
    # When it is chunked small
    chunks = chunk_document(doc, "supply", target_tokens=60, max_tokens=120)
    spans = [s for c in chunks for s in c.section_spans]
    # Then the section ids are the numbers people cite, in order, with nested paths
    assert [s.section_id for s in spans] == [
        None, "Article I", "Section 1.1", "Section 1.1(a)", "Section 1.1(b)", "Section 1.2",
        "Article II", "Section 2.1", "Section 2.1(a)", "Section 2.1(b)", "Article II",
    ]  # (the unnumbered heading after (b) belongs to Article II)
    renewal = next(s for s in spans if s.section_id == "Section 2.1")
    assert renewal.heading_path == ["ARTICLE II Term", "Section 2.1 Renewal"]


def test_html_letter_and_roman_markers_outside_their_range_fall_back_to_decimal() -> None:
    # Given ordered lists whose letter or roman counters reach 0, negatives or 4000
    markup = """<ol type="a" start="0"><li>zero</li><li>one</li></ol>
    <ol type="I" start="-1"><li>minus</li><li>nought</li><li>one</li></ol>
    <ol type="i" start="3999"><li>last</li><li>over</li></ol>"""
    # When it is rendered
    text, _ = html_to_text(markup)
    # Then values a letter or roman style cannot show are drawn in decimal, as browsers do
    assert text.split("\n") == [
        "0. zero", "a. one", "", "-1. minus", "0. nought", "I. one", "", "mmmcmxcix. last", "4000. over",
    ]


def test_html_letter_markers_past_z_count_like_a_browser() -> None:
    # Given a lower-alpha list starting at 26 and an upper-alpha one at 702
    text, _ = html_to_text('<ol type="a" start="26"><li>z</li><li>aa</li><li>ab</li></ol>'
                           '<ol type="A" start="702"><li>zz</li><li>aaa</li></ol>')
    # Then the letters count on as a browser's alphabetic style does (z, aa, ab ... zz, aaa)
    assert text.split("\n") == ["z. z", "aa. aa", "ab. ab", "", "ZZ. zz", "AAA. aaa"]


def test_html_ordered_list_markers_follow_type_start_reversed_value_and_css() -> None:
    # Given ordered lists in each numbering style a browser knows
    markup = """<ol type="a"><li>notice</li><li>cure</li></ol>
    <ol type="I" start="4"><li>Fees</li><li>Term</li></ol>
    <ol reversed><li>three</li><li>two</li><li>one</li></ol>
    <ol><li>first</li><li value="7">seventh</li><li>eighth</li></ol>
    <ol style="list-style-type: lower-roman"><li>alpha</li><li>beta</li></ol>
    <ul style="list-style: none"><li>plain</li></ul>"""
    # When it is rendered
    text, _ = html_to_text(markup)
    # Then each item starts with the marker the browser draws
    assert text.split("\n") == [
        "a. notice", "b. cure", "", "IV. Fees", "V. Term", "", "3. three", "2. two", "1. one", "",
        "1. first", "7. seventh", "8. eighth", "", "i. alpha", "ii. beta", "", "plain",
    ]


def test_html_list_items_are_never_section_headings() -> None:
    # Given an HTML policy whose numbered section holds an ordered list
    markup = ("<h2>1 Scope</h2><p>We provide:</p><ol><li>Hardware</li><li>Software</li><li>Support</li></ol>"
              "<p>Delivery is due within 30 days.</p><h2>2 Fees</h2><p>Fees are due monthly.</p>")
    doc = parse_document("policy.html", markup.encode())
    # When it is chunked small
    chunks = chunk_document(doc, "policy", target_tokens=40, max_tokens=100)
    spans = [(s.section_id, doc.text[s.char_start : s.char_end]) for c in chunks for s in c.section_spans]
    # Then the list items stay in section 1 and the delivery sentence is section 1's, not "3"
    assert [sid for sid, _ in spans] == ["1", "2"]
    assert "3. Support\n\nDelivery is due within 30 days." in spans[0][1]


def test_docx_clauses_word_numbers_are_sections_whatever_their_wording() -> None:
    # Given a consulting agreement written as Word-numbered body paragraphs (no heading styles):
    # "1." / "1.1" / "(a)" come only from the list definition
    lst = abstract_num(50, [level(0, "decimal", "%1."), level(1, "decimal", "%1.%2"), level(2, "lowerLetter", "(%3)")])
    paras = [
        paragraph("The Consultant shall provide the services described in the schedule.", None, (60, 0)),
        paragraph("The Company shall pay the fees within thirty days of an invoice.", None, (60, 0)),
        paragraph("the fees are fixed for the first year;", None, (60, 1)),
        paragraph("late payments bear interest at two per cent a month:", None, (60, 1)),
        paragraph("from the due date; and", None, (60, 2)),
        paragraph("until paid in full.", None, (60, 2)),
        paragraph("either party may end this agreement on notice.", None, (60, 0)),
    ]
    doc = parse_document("consulting.docx", build_docx(paras, lists=[lst, num(60, 50)]))
    # When it is chunked (one chunk holds it all: a section's items never cut a chunk, so its
    # section spans are every section and item once)
    chunks = chunk_document(doc, "consulting")
    assert len(chunks) == 1
    # Then each numbered clause is a section, lowercase wording or not, with its items
    assert [s.section_id for c in chunks for s in c.section_spans] == [
        "1", "2", "2.1", "2.2", "2.2(a)", "2.2(b)", "3"
    ]


def test_a_separate_word_list_inside_a_clause_is_not_read_as_clauses() -> None:
    # Given Word-numbered clauses (list 70) where clause 2 holds its own numbered list
    # (list 71, restarted at 1): Word shows "1. Installation" ... inside clause 2
    clauses = abstract_num(70, [level(0, "decimal", "%1."), level(1, "decimal", "%1.%2")])
    inner = abstract_num(71, [level(0, "decimal", "%1.")])
    paras = [
        paragraph("The Supplier shall deliver the goods described in the order.", None, (80, 0)),
        paragraph("The Supplier shall also provide these services:", None, (80, 0)),
        paragraph("Installation of the equipment at the premises.", None, (81, 0)),
        paragraph("Maintenance of the equipment for one year.", None, (81, 0)),
        paragraph("Training of the Customer's staff.", None, (81, 0)),
        paragraph("The Customer shall pay the fees within thirty days.", None, (80, 0)),
        paragraph("Either party may terminate this agreement on notice.", None, (80, 0)),
    ]
    doc = parse_document("supply.docx", build_docx(paras, lists=[clauses, inner, num(80, 70), num(81, 71, {0: 1})]))
    # When it is chunked small
    chunks = chunk_document(doc, "supply", target_tokens=80, max_tokens=200)
    spans = [(s.section_id, doc.text[s.char_start : s.char_end]) for c in chunks for s in c.section_spans]
    # Then the clauses are 1-4 and the inner list stays in clause 2
    assert [sid for sid, _ in spans] == ["1", "2", "3", "4"]
    assert "3. Training of the Customer's staff." in spans[1][1]
    assert spans[2][1].startswith("3. The Customer shall pay")
