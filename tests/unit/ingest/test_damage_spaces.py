"""Unicode spaces, soft hyphens and ligatures are text: the damage score never counts them.

A clean contract set with no-break spaces (``1.1\\u00a0\\u00a0\\u00a0\\u00a0Definitions``, as
word processors export indentation) was named "text is garbage" on most of its pages, because a run
of four no-break spaces read as four Latin-1 bytes decoded as WinAnsi.
"""

from __future__ import annotations

import io
import sys
import unicodedata
from pathlib import Path

import pikepdf
import pytest

from longdoc.ingest.parse import parse_document
from longdoc.ingest.parse.cleanup import LIGATURES
from longdoc.ingest.parse.damage import GARBAGE_MAX_SHARE, SPACE_SEPARATORS, garbage_share

CUAD = Path(__file__).resolve().parents[3].parent / "shared" / "corpus" / "cuad"

CONTRACT = (
    "MASTER\u00a0SERVICES\u00a0AGREEMENT\n"
    "ARTICLE\u00a0\u00a0\u00a0\u00a01\n"
    "1.1\u00a0\u00a0\u00a0\u00a0\u00a0\u00a0Definitions.\u00a0\u00a0The\u00a0following\u00a0terms\u00a0have\u00a0the\u00a0"
    "meanings\u00a0set\u00a0out\u00a0below:\n"
    "\u00a0\u00a0\u00a0\u00a0\u00a0\u00a0\u00a0\u00a0(a)\u00a0\u00a0\u00a0\u00a0\u201cServices\u201d\u00a0means\u00a0the\u00a0"
    "work\u00a0described\u00a0in\u00a0Schedule\u00a0A;\n"
    "\u2003\u2003(b)\u2002\u2002\u201cFee\u201d\u2009means\u2009EUR\u202f12\u202f400.00\u205fper\u3000year;\n"
    "1.2\u00a0\u00a0\u00a0\u00a0Con\u00adfi\u00addential\u00adity.\u00a0Each\u00a0party\u00a0shall\u00a0keep\u00a0the\u00a0other\u2019s\u00a0"
    "\ufb01les\u00a0con\ufb01dential\u00a0and\u00a0shall\u00a0not\u00a0\ufb02out\u00a0the\u00a0e\ufb00ects\u00a0of\u00a0this\u00a0clause.\n"
    "\u00a0\u00a0\u00a0\u00a0\u00a0\u00a0\u00a0\u00a0\u00a0\u00a0\u00a0\u00a0\u00a0\u00a0\u00a0\u00a0\u00a0\u00a0\u00a0\u00a0\n"
    "IN\u00a0WITNESS\u00a0WHEREOF\u200b the\u00a0parties\u00a0have\u00a0signed\u00a0this\u00a0Agreement.\n"
)
"""A made-up contract page set the way word processors export it: no-break spaces for every space and
for indentation, em/en/thin/narrow/medium/ideographic spaces, soft hyphens, a zero-width space and
ligatures."""

_TO_UNICODE = b"""/CIDInit /ProcSet findresource begin
12 dict begin
begincmap
/CIDSystemInfo << /Registry (Adobe) /Ordering (UCS) /Supplement 0 >> def
/CMapName /Adobe-Identity-UCS def
/CMapType 2 def
1 begincodespacerange
<00> <FF>
endcodespacerange
2 beginbfrange
<20> <7E> <0020>
<A0> <A0> <00A0>
endbfrange
endcmap
CMapName currentdict /CMap defineresource pop
end
end"""
"""A ToUnicode map (ISO 32000-1, 9.10.3) that reads byte 0xA0 as U+00A0, as the exports of Word do:
with it PDFium gives the page text real no-break spaces (without it, a plain space)."""


def nbsp_pdf(pages: list[list[str]]) -> bytes:
    """A PDF (built with pikepdf) with one page per entry of ``pages``, its lines drawn in Helvetica,
    whose text layer reads ``\\u00a0`` back as a no-break space. Lines must be cp1252."""
    pdf = pikepdf.new()
    font = pdf.make_indirect(pikepdf.Dictionary(
        Type=pikepdf.Name.Font, Subtype=pikepdf.Name.Type1, BaseFont=pikepdf.Name.Helvetica,
        Encoding=pikepdf.Name.WinAnsiEncoding, ToUnicode=pdf.make_stream(_TO_UNICODE)))
    for lines in pages:
        drawn = b" ".join(b"(" + line.encode("cp1252").replace(b"(", b"\\(").replace(b")", b"\\)") + b") '"
                          for line in lines)
        page = pdf.add_blank_page(page_size=(612, 792))
        page.obj.Resources = pikepdf.Dictionary(Font=pikepdf.Dictionary(F1=font))
        page.obj.Contents = pdf.make_stream(b"BT /F1 11 Tf 15 TL 72 740 Td " + drawn + b" ET")
    out = io.BytesIO()
    pdf.save(out)
    return out.getvalue()


def test_every_unicode_space_separator_is_listed() -> None:
    # Given every code point of category Zs in this Python's Unicode tables
    zs = {chr(c) for c in range(sys.maxunicode + 1) if unicodedata.category(chr(c)) == "Zs"}
    # Then the damage score reads each of them as a space
    assert zs == SPACE_SEPARATORS


def test_a_contract_set_with_no_break_spaces_scores_as_clean_text() -> None:
    # Given a made-up contract written with no-break and other Unicode spaces, soft hyphens and ligatures
    plain = _with_plain_spaces(CONTRACT)
    # When both are scored
    # Then neither has a single damaged character: the spaces are text
    assert garbage_share(CONTRACT) == 0.0
    assert garbage_share(plain) == 0.0


def _with_plain_spaces(text: str) -> str:
    """``text`` with every Unicode space as a plain space, soft hyphens and zero-width spaces left out and
    ligatures spelt out."""
    for ch in SPACE_SEPARATORS:
        text = text.replace(ch, " ")
    return text.replace("\u00ad", "").replace("\u200b", "").translate(LIGATURES)


def test_real_damage_is_still_scored_beside_no_break_spaces() -> None:
    # Given the contract with bytes of a damaged stream in it (six Latin-1 letters, four private-use codes)
    garbage = "\u00c3\u00be\u00c2\u00f0\u00e6\u00d8 \ue000\ue001\ue002\ue003"
    damaged = CONTRACT + garbage
    visible = sum(1 for ch in _with_plain_spaces(damaged) if not ch.isspace())
    # Then exactly those ten characters count, as they do in the same text set with plain spaces
    assert garbage_share(damaged) == pytest.approx(10 / visible)
    assert garbage_share(damaged) == garbage_share(_with_plain_spaces(damaged))


def test_a_pdf_contract_with_no_break_spaces_gets_no_damage_warning() -> None:
    # Given a 3-page contract PDF whose text layer holds no-break spaces (indentation and between words)
    lines = [line for line in CONTRACT.split("\n") if line]
    cp1252 = [line.replace("\u2003", "\u00a0").replace("\u2002", "\u00a0").replace("\u2009", "\u00a0")
              .replace("\u202f", "\u00a0").replace("\u205f", "\u00a0").replace("\u3000", "\u00a0")
              .replace("\u200b", "").replace("\u201c", '"').replace("\u201d", '"').replace("\u2019", "'")
              .replace("\ufb01", "fi").replace("\ufb02", "fl").replace("\ufb00", "ff").replace("\u00ad", "")
              for line in lines]
    data = nbsp_pdf([[f"Part {part} of the agreement", *(f"{line}\u00a0\u00a0[{part}]" for line in cp1252)]
                     for part in ("one", "two", "three")])
    # When it is parsed
    doc = parse_document("nbsp-contract.pdf", data)
    # Then PDFium did give no-break spaces, and no page is called garbage
    assert "\u00a0\u00a0\u00a0\u00a0" in doc.text
    assert doc.page_outcomes == ["text", "text", "text"]
    assert doc.warnings == []


@pytest.mark.skipif(not CUAD.is_dir(), reason="needs ../shared/corpus/cuad")
def test_no_clean_cuad_contract_is_called_damaged() -> None:
    # Given every contract of the corpus's CUAD sample (PDF and text; several set with no-break spaces)
    files = sorted(p for p in CUAD.iterdir() if p.suffix in (".pdf", ".txt"))
    assert len(files) >= 40
    worst = 0.0
    for path in files:
        # When each is parsed
        doc = parse_document(path.name, path.read_bytes())
        # Then no page is garbage, damaged or unreadable (a blank page is only named empty)
        assert [w for w in doc.warnings if "no text (blank" not in w] == [], path.name
        assert set(doc.page_outcomes) <= {"text", "empty"}, path.name
        spans = [doc.text[s.char_start:s.char_end] for s in doc.pages]
        worst = max(worst, *(garbage_share(t) for t in spans))
    assert worst < GARBAGE_MAX_SHARE / 4
