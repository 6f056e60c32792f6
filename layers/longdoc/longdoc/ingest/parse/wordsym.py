"""Word symbol characters (``w:sym``) as plain text, in place of docx2python's HTML.

A run may hold ``<w:sym w:font="Wingdings" w:char="F0FE"/>``: one character drawn from a
named font (ECMA-376 Part 1, §17.3.3.30 ``sym``). ``w:char`` is four hex digits; a value in
the private-use range F000-F0FF means "byte F0FE & 0xFF of a symbol font" (Word writes the
8-bit glyph code of a non-Unicode font that way), any other value is a Unicode code point.

docx2python 3.x renders every ``w:sym`` as ``<span style=font-family:FONT>&#x0HHH;</span>``
(``FONT`` is the attribute or ``None``, ``HHH`` is ``w:char`` minus its first digit) with no
option to turn it off, and it leaves the document's own ``<`` and ``&`` unescaped, so the
markup cannot be told from the text by looking at the text. :func:`replace_sym_markup`
therefore rebuilds the exact string docx2python wrote for each ``w:sym`` element of the
paragraph and replaces only that string.

Rendering (:func:`render_sym`), chosen so that a quote shows what the reader sees:

* a glyph of a symbol font in the small tables below becomes its Unicode equivalent
  (Wingdings 0xFE, a checked box, becomes ``☑``);
* any other glyph of a known symbol font (Symbol, Wingdings 1-3, Webdings) becomes
  :data:`SYMBOL_PLACEHOLDER` (U+FFFD, Unicode's "character that cannot be represented");
* F0xx in any other font, or with no font, is that font's 8-bit code: decoded as
  Windows-1252 (the code page of Word's text fonts), the placeholder if undefined or a
  control character;
* a value outside F000-F0FF is the Unicode character itself.

Sources of the tables: Wingdings, Alan Wood's Wingdings/Unicode chart
(https://www.alanwood.net/demos/wingdings.html); Symbol, the Adobe Symbol encoding
(ISO 32000-1 Annex D.5; Unicode's MAPPINGS/VENDORS/ADOBE/symbol.txt).
"""

from __future__ import annotations

from typing import Any

from longdoc.ingest.parse.wordnum import W
SYMBOL_PLACEHOLDER = "\ufffd"
"""Stands for a symbol-font glyph with no Unicode equivalent in the tables (U+FFFD)."""

_WINGDINGS = {
    0x6C: "\u25cf",  # black circle
    0x6E: "\u25a0",  # black square
    0x6F: "\u25a1",  # white square (an empty box)
    0x9F: "\u2022",  # bullet
    0xA7: "\u25aa",  # black small square
    0xA8: "\u25fb",  # white medium square (an empty box)
    0xD8: "\u27a2",  # three-D rightwards arrowhead (a list arrow)
    0xFB: "\u2717",  # ballot X
    0xFC: "\u2713",  # check mark
    0xFD: "\u2612",  # ballot box with X
    0xFE: "\u2611",  # ballot box with check
}
_SYMBOL = {
    0xA3: "\u2264",  # less-than or equal to
    0xAE: "\u2192",  # rightwards arrow
    0xB0: "\u00b0",  # degree sign
    0xB1: "\u00b1",  # plus-minus sign
    0xB3: "\u2265",  # greater-than or equal to
    0xB4: "\u00d7",  # multiplication sign
    0xB7: "\u2022",  # bullet
    0xB8: "\u00f7",  # division sign
    0xB9: "\u2260",  # not equal to
}
_SYMBOL_FONTS: dict[str, dict[int, str]] = {
    "wingdings": _WINGDINGS, "symbol": _SYMBOL, "wingdings 2": {}, "wingdings 3": {}, "webdings": {},
}


def render_sym(font: str | None, char: str | None) -> str:
    """The text for one ``w:sym``: ``font`` is ``w:font`` (None if absent), ``char`` is ``w:char``.

    Returns one character (see the module docstring for the rules); the placeholder when
    ``char`` is missing or not hexadecimal. Never raises.
    """
    try:
        code = int(char or "", 16)
    except ValueError:
        return SYMBOL_PLACEHOLDER
    if not 0xF000 <= code <= 0xF0FF:
        return chr(code) if 0x20 <= code < 0x110000 and not 0xD800 <= code <= 0xDFFF else SYMBOL_PLACEHOLDER
    glyph = code & 0xFF
    table = _SYMBOL_FONTS.get((font or "").strip().lower())
    if table is not None:
        return table.get(glyph, SYMBOL_PLACEHOLDER)
    text = bytes([glyph]).decode("cp1252", errors="replace")
    return text if text.isprintable() else SYMBOL_PLACEHOLDER


def docx2python_markup(font: str | None, char: str | None) -> str:
    """The exact string docx2python 3.x writes for a ``w:sym`` (``docx_text._open_sym``)."""
    return f"<span style=font-family:{font}>&#x0{str(char)[1:]};</span>"


def replace_sym_markup(text: str, paragraph: Any) -> str:
    """``text`` (docx2python's text of ``paragraph``) with its ``w:sym`` markup made plain.

    ``paragraph`` is the lxml ``w:p`` element docx2python read. Only the strings
    docx2python generated for that paragraph's own ``w:sym`` elements are replaced; the
    document's words, ``<`` and ``&`` included, are left as they are.
    """
    if "<span style=font-family:" not in text:
        return text
    for sym in paragraph.iter(W + "sym"):
        font, char = sym.get(W + "font"), sym.get(W + "char")
        if char == "":
            continue  # docx2python writes nothing for an empty w:char
        text = text.replace(docx2python_markup(font, char), render_sym(font, char))
    return text
