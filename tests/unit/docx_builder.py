"""Build small DOCX files in tests (no binary fixtures checked in, nothing downloaded).

A DOCX is a ZIP of XML parts (ECMA-376 Part 1, WordprocessingML). :func:`build_docx`
writes the minimum Word and docx2python need: content types, the package relationship,
``word/document.xml`` and a ``word/numbering.xml`` with one multi-level decimal list
(``%1.``, ``%1.%2``, ``%1.%2.%3``) and one lower-letter list, so Word's *automatic*
numbering is exercised: the numbers appear in no paragraph's text.
"""

from __future__ import annotations

import io
import zipfile
from xml.sax.saxutils import escape

W = "http://schemas.openxmlformats.org/wordprocessingml/2006/main"
R = "http://schemas.openxmlformats.org/officeDocument/2006/relationships"
DECIMAL_LIST = 1
"""numId of the multi-level decimal list (4, 4.2, 4.2.1)."""
LETTER_LIST = 2
"""numId of the lower-letter list ((a), (b))."""


def paragraph(text: str, style: str | None = None, num: tuple[int, int] | None = None) -> str:
    """One ``<w:p>``: ``style`` is a style id (``Heading1``), ``num`` is ``(numId, ilvl)``."""
    props = ""
    if style or num:
        props = "<w:pPr>"
        if style:
            props += f'<w:pStyle w:val="{style}"/>'
        if num:
            props += f'<w:numPr><w:ilvl w:val="{num[1]}"/><w:numId w:val="{num[0]}"/></w:numPr>'
        props += "</w:pPr>"
    return f'<w:p>{props}<w:r><w:t xml:space="preserve">{escape(text)}</w:t></w:r></w:p>'


def build_docx(paragraphs: list[str]) -> bytes:
    """Return the bytes of a DOCX whose body is ``paragraphs`` (from :func:`paragraph`)."""
    decimal = "".join(
        f'<w:lvl w:ilvl="{i}"><w:start w:val="1"/><w:numFmt w:val="decimal"/>'
        f'<w:lvlText w:val="{".".join("%" + str(j + 1) for j in range(i + 1))}"/></w:lvl>'
        for i in range(3)
    )
    letters = '<w:lvl w:ilvl="0"><w:start w:val="1"/><w:numFmt w:val="lowerLetter"/><w:lvlText w:val="(%1)"/></w:lvl>'
    numbering = (
        f'<?xml version="1.0" encoding="UTF-8" standalone="yes"?><w:numbering xmlns:w="{W}" xmlns:r="{R}">'
        f'<w:abstractNum w:abstractNumId="0">{decimal}</w:abstractNum>'
        f'<w:abstractNum w:abstractNumId="1">{letters}</w:abstractNum>'
        f'<w:num w:numId="{DECIMAL_LIST}"><w:abstractNumId w:val="0"/></w:num>'
        f'<w:num w:numId="{LETTER_LIST}"><w:abstractNumId w:val="1"/></w:num></w:numbering>'
    )
    document = (
        f'<?xml version="1.0" encoding="UTF-8" standalone="yes"?><w:document xmlns:w="{W}" xmlns:r="{R}">'
        f"<w:body>{''.join(paragraphs)}</w:body></w:document>"
    )
    types = (
        '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>'
        '<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">'
        '<Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/>'
        '<Default Extension="xml" ContentType="application/xml"/>'
        '<Override PartName="/word/document.xml" '
        'ContentType="application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"/>'
        '<Override PartName="/word/numbering.xml" '
        'ContentType="application/vnd.openxmlformats-officedocument.wordprocessingml.numbering+xml"/></Types>'
    )
    rels = (
        '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>'
        '<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">'
        f'<Relationship Id="rId1" Type="{R}/officeDocument" Target="word/document.xml"/></Relationships>'
    )
    doc_rels = (
        '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>'
        '<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">'
        f'<Relationship Id="rId1" Type="{R}/numbering" Target="numbering.xml"/></Relationships>'
    )
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("[Content_Types].xml", types)
        z.writestr("_rels/.rels", rels)
        z.writestr("word/document.xml", document)
        z.writestr("word/numbering.xml", numbering)
        z.writestr("word/_rels/document.xml.rels", doc_rels)
    return buffer.getvalue()
