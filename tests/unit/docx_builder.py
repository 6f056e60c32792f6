"""Build small DOCX files in tests (no binary fixtures checked in, nothing downloaded).

A DOCX is a ZIP of XML parts (ECMA-376 Part 1, WordprocessingML). :func:`build_docx`
writes the minimum Word and docx2python need: content types, the package relationship,
``word/document.xml`` and a ``word/numbering.xml`` with one multi-level decimal list
(``%1.``, ``%1.%2``, ``%1.%2.%3``) and one lower-letter list, so Word's *automatic*
numbering is exercised: the numbers appear in no paragraph's text. Further lists
(:func:`abstract_num`, :func:`num`) and a ``word/styles.xml`` (:func:`style`) can be
added, for headings numbered through their style as Word itself does it.
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


def level(ilvl: int, fmt: str, text: str, *, start: int = 1, style: str | None = None,
          legal: bool = False, restart: int | None = None) -> str:
    """One ``<w:lvl>``: number format ``fmt`` (``upperRoman``), number text ``text`` (``ARTICLE %1``)."""
    extra = f'<w:pStyle w:val="{style}"/>' if style else ""
    extra += "<w:isLgl/>" if legal else ""
    extra += f'<w:lvlRestart w:val="{restart}"/>' if restart is not None else ""
    return (f'<w:lvl w:ilvl="{ilvl}"><w:start w:val="{start}"/><w:numFmt w:val="{fmt}"/>{extra}'
            f'<w:lvlText w:val="{escape(text, {chr(34): "&quot;"})}"/></w:lvl>')


def abstract_num(abstract_id: int, levels: list[str]) -> str:
    """One ``<w:abstractNum>`` (a list definition) made of :func:`level` strings."""
    return f'<w:abstractNum w:abstractNumId="{abstract_id}">{"".join(levels)}</w:abstractNum>'


def num(num_id: int, abstract_id: int, start_overrides: dict[int, int] | None = None) -> str:
    """One ``<w:num>`` (a list instance) of ``abstract_id``; ``start_overrides`` restarts levels."""
    overrides = "".join(
        f'<w:lvlOverride w:ilvl="{i}"><w:startOverride w:val="{v}"/></w:lvlOverride>'
        for i, v in (start_overrides or {}).items()
    )
    return f'<w:num w:numId="{num_id}"><w:abstractNumId w:val="{abstract_id}"/>{overrides}</w:num>'


def style(style_id: str, name: str, *, num: tuple[int, int | None] | None = None,
          based_on: str | None = None) -> str:
    """One paragraph ``<w:style>``; ``num`` is ``(numId, ilvl or None)`` carried by the style."""
    props = ""
    if num:
        ilvl = f'<w:ilvl w:val="{num[1]}"/>' if num[1] is not None else ""
        props = f'<w:pPr><w:numPr>{ilvl}<w:numId w:val="{num[0]}"/></w:numPr></w:pPr>'
    base = f'<w:basedOn w:val="{based_on}"/>' if based_on else ""
    return (f'<w:style w:type="paragraph" w:styleId="{style_id}"><w:name w:val="{name}"/>'
            f"{base}{props}</w:style>")


def build_docx(paragraphs: list[str], *, lists: list[str] | None = None,
               styles: list[str] | None = None) -> bytes:
    """Return the bytes of a DOCX whose body is ``paragraphs`` (from :func:`paragraph`).

    ``lists`` adds :func:`abstract_num` and :func:`num` elements to ``numbering.xml``;
    ``styles`` (from :func:`style`) adds a ``word/styles.xml``.
    """
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
        f'<w:num w:numId="{LETTER_LIST}"><w:abstractNumId w:val="1"/></w:num>{"".join(lists or [])}</w:numbering>'
    )
    styles_xml = (
        f'<?xml version="1.0" encoding="UTF-8" standalone="yes"?><w:styles xmlns:w="{W}">'
        f"{''.join(styles or [])}</w:styles>"
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
        f'<Relationship Id="rId1" Type="{R}/numbering" Target="numbering.xml"/>'
        + (f'<Relationship Id="rId2" Type="{R}/styles" Target="styles.xml"/>' if styles else "")
        + "</Relationships>"
    )
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("[Content_Types].xml", types)
        z.writestr("_rels/.rels", rels)
        z.writestr("word/document.xml", document)
        z.writestr("word/numbering.xml", numbering)
        if styles:
            z.writestr("word/styles.xml", styles_xml)
        z.writestr("word/_rels/document.xml.rels", doc_rels)
    return buffer.getvalue()
