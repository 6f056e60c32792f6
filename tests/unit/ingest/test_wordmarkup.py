"""docx2python's generated markup stripped from DOCX text by one strip (issue 27): a hyperlink reads as
its text, a document's own words that look like markup stay."""

from __future__ import annotations

import io
import zipfile

from longdoc.ingest.chunk import chunk_document
from longdoc.ingest.parse import parse_document
from tests.unit.docx_builder import R, build_docx, paragraph

LINKED = ('<w:p><w:r><w:t xml:space="preserve">1. Notices. See the </w:t></w:r><w:hyperlink r:id="rId9">'
          '<w:r><w:t>terms page</w:t></w:r></w:hyperlink><w:r><w:t xml:space="preserve"> for details.</w:t></w:r></w:p>')


def _with_link(paragraphs: list[str]) -> bytes:
    """A DOCX of ``paragraphs`` whose relationship rId9 is an external hyperlink."""
    data = build_docx(paragraphs)
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(data)) as src, zipfile.ZipFile(out, "w") as dst:
        for info in src.infolist():
            body = src.read(info.filename)
            if info.filename == "word/_rels/document.xml.rels":
                body = body.replace(b"</Relationships>", (
                    f'<Relationship Id="rId9" Type="{R}/hyperlink" Target="https://example.com/terms" '
                    'TargetMode="External"/></Relationships>').encode())
            dst.writestr(info, body)
    return out.getvalue()


def test_a_hyperlink_reads_as_its_text_in_the_docx_text_and_chunks() -> None:
    # Given a DOCX whose clause holds a hyperlink (docx2python renders it <a href="...">terms page</a>)
    data = _with_link([paragraph("Terms of sale"), LINKED])
    # When it is parsed and chunked
    doc = parse_document("link.docx", data)
    chunks = chunk_document(doc, "d", target_tokens=100, max_tokens=200)
    # Then the link is its text, with no markup in the text or any chunk
    assert doc.text.split("\n\n")[-1] == "1. Notices. See the terms page for details."
    assert not [c.chunk_id for c in chunks if "<a " in c.text or "href" in c.text]


def test_words_that_look_like_markup_stay_when_no_hyperlink_made_them() -> None:
    # Given a DOCX whose own words spell a link tag (no w:hyperlink in the paragraph)
    data = _with_link([paragraph('Write <a href="x">here</a> in the form.')])
    # Then they are kept as written
    assert parse_document("words.docx", data).text == 'Write <a href="x">here</a> in the form.'
