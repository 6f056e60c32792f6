"""DOCX footnotes and endnotes (issue 27, finding 6): an inline marker instead of docx2python's
``----footnote1----`` placeholder, and the notes' text indexed after the body."""

from __future__ import annotations

import io
import zipfile

from longdoc.ingest.chunk import chunk_document
from longdoc.ingest.parse import parse_document
from tests.unit.docx_builder import R, W, build_docx, paragraph


def _referring(text: str, kind: str, note_id: int, tail: str) -> str:
    """A paragraph ``text`` + a reference to note ``note_id`` of ``kind`` + ``tail``."""
    return (f'<w:p><w:r><w:t xml:space="preserve">{text}</w:t></w:r><w:r><w:rPr><w:rStyle w:val="FootnoteReference"/>'
            f'</w:rPr><w:{kind}Reference w:id="{note_id}"/></w:r><w:r><w:t xml:space="preserve">{tail}</w:t></w:r></w:p>')


def _notes_part(kind: str, notes: dict[int, str]) -> str:
    """A ``word/{kind}s.xml`` part with Word's two separator notes and ``notes`` (id -> text)."""
    body = "".join(f'<w:{kind} w:id="{i}"><w:p><w:r><w:{kind}Ref/></w:r><w:r><w:t xml:space="preserve"> {t}'
                   f'</w:t></w:r></w:p></w:{kind}>' for i, t in notes.items())
    return (f'<?xml version="1.0" encoding="UTF-8" standalone="yes"?><w:{kind}s xmlns:w="{W}" xmlns:r="{R}">'
            f'<w:{kind} w:type="separator" w:id="-1"><w:p><w:r><w:separator/></w:r></w:p></w:{kind}>'
            f'<w:{kind} w:type="continuationSeparator" w:id="0"><w:p><w:r><w:continuationSeparator/></w:r></w:p>'
            f'</w:{kind}>{body}</w:{kind}s>')


def _with_notes(paragraphs: list[str], footnotes: dict[int, str], endnotes: dict[int, str]) -> bytes:
    """A DOCX of ``paragraphs`` with a footnotes and an endnotes part."""
    data = build_docx(paragraphs)
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(data)) as src, zipfile.ZipFile(out, "w") as dst:
        for info in src.infolist():
            body = src.read(info.filename)
            if info.filename == "word/_rels/document.xml.rels":
                body = body.replace(b"</Relationships>", (
                    f'<Relationship Id="rId7" Type="{R}/footnotes" Target="footnotes.xml"/>'
                    f'<Relationship Id="rId8" Type="{R}/endnotes" Target="endnotes.xml"/></Relationships>').encode())
            if info.filename == "[Content_Types].xml":
                ct = "application/vnd.openxmlformats-officedocument.wordprocessingml"
                body = body.replace(b"</Types>", (
                    f'<Override PartName="/word/footnotes.xml" ContentType="{ct}.footnotes+xml"/>'
                    f'<Override PartName="/word/endnotes.xml" ContentType="{ct}.endnotes+xml"/></Types>').encode())
            dst.writestr(info, body)
        dst.writestr("word/footnotes.xml", _notes_part("footnote", footnotes))
        dst.writestr("word/endnotes.xml", _notes_part("endnote", endnotes))
    return out.getvalue()


def test_footnote_references_read_as_markers_and_the_notes_are_indexed() -> None:
    # Given a DOCX whose clauses refer to footnotes 5 and 2 (Word's ids, in that order) and an endnote
    data = _with_notes([
        paragraph("Home policy"),
        _referring("1. Cover. The insurer pays for flood", "footnote", 5, " damage to the home."),
        _referring("2. Claims. Notice is given in writing", "footnote", 2, " within 30 days."),
        _referring("3. Law. Ontario law applies", "endnote", 1, "."),
    ], {2: "Writing includes e-mail.", 5: "Flood means water from a river or the sea.", 9: "Never referred to."},
        {1: "See the Insurance Act."})
    # When it is parsed and chunked
    doc = parse_document("home.docx", data)
    chunks = chunk_document(doc, "home", target_tokens=100, max_tokens=200)
    # Then no placeholder is left, each reference is a marker numbered in reading order
    assert "----" not in doc.text and not [c for c in chunks if "----footnote" in c.text]
    assert "1. Cover. The insurer pays for flood[1] damage to the home." in doc.text
    assert "2. Claims. Notice is given in writing[2] within 30 days." in doc.text
    assert "3. Law. Ontario law applies[3]." in doc.text
    # and the notes referred to follow the body under a Footnotes heading, searchable in the chunks
    assert doc.text.endswith("Footnotes\n\n[1] Flood means water from a river or the sea.\n\n"
                             "[2] Writing includes e-mail.\n\n[3] See the Insurance Act.")
    assert any("Flood means water from a river or the sea." in c.text for c in chunks)
    assert "Never referred to" not in doc.text


def test_a_docx_without_notes_is_unchanged() -> None:
    # Given a DOCX without any note
    data = build_docx([paragraph("1. Cover. The insurer pays for flood damage.")])
    # Then its text has no Footnotes block
    assert parse_document("plain.docx", data).text == "1. Cover. The insurer pays for flood damage."
