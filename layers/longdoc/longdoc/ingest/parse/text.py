"""Text decoding and the normalisation every format gets (meaning unchanged).

``\\r\\n`` and ``\\r`` become ``\\n``; C0 control characters other than ``\\n`` and ``\\t``
(NUL, form feed, ...) are removed; trailing whitespace is stripped from every line; U+00AD
is written as ``-`` (a visible hyphen, see :mod:`longdoc.ingest.parse`), except in Markdown,
where it is removed (:data:`MARKDOWN_TABLE`). Markdown is also read as it renders
(:func:`markdown_as_rendered`): backslash escapes and character references resolved.
"""

from __future__ import annotations

import html
import re
from collections.abc import Mapping

from longdoc.core.errors import DocumentError

# C0 controls except \t (0x09) and \n (0x0A); \r is turned into \n before this runs.
DROP_C0: dict[int, str | None] = {code: None for code in range(0x20) if code not in (0x09, 0x0A)}
"""A ``str.translate`` table that deletes the C0 controls other than tab and newline."""
TEXT_TABLE: dict[int, str | None] = {**DROP_C0, 0x00AD: "-"}
"""The translation table of every format but PDF and Markdown: controls dropped, soft hyphens visible."""
MARKDOWN_TABLE: dict[int, str | None] = {**DROP_C0, 0x00AD: None}
"""Markdown's: controls dropped, soft hyphens removed. Markdown is read as it renders: a browser
shows U+00AD only where it breaks a line (HTML Living Standard, "soft hyphen"; CommonMark passes the
character through), so ``obliga\u00adtions`` reads ``obligations``, never ``obliga-tions``."""
_TRAILING_SPACE = re.compile(r"[^\S\n]+$", re.MULTILINE)
_ATX = re.compile(r"^ {0,3}#{1,6}[ \t]+\S", re.MULTILINE)
_ESCAPED_ATX = re.compile(r"^( {0,3})\\(#{1,6}[ \t]+\S)", re.MULTILINE)
_ESCAPE = re.compile(r"\\([!-/:-@\[-`{-~])")
"""A CommonMark backslash escape: a backslash before an ASCII punctuation character."""
_REFERENCE = re.compile(r"&(?:#[0-9]{1,7}|#[xX][0-9a-fA-F]{1,6}|[A-Za-z][A-Za-z0-9]{1,31});")
_LEADING_ESCAPED_HASH = re.compile(r"^ {0,3}\\#")
_FENCE = re.compile(r"^ {0,3}(?:```|~~~)")
ESCAPED_HEADINGS_MIN = 3
"""Escaped heading lines (``\\# Title``) a Markdown file with no real heading needs before they are
read as its headings: the mark of a converter that escaped every ``#`` it wrote."""


def markdown_as_rendered(text: str) -> str:
    """Markdown text as a reader sees it rendered (CommonMark 0.31, "Backslash escapes" and "Entity and
    numeric character references"): ``\\-`` -> ``-``, ``2\\.`` -> ``2.``, ``&#x26;`` / ``&amp;`` ->
    ``&``, outside fenced code blocks. A file with no ``#`` heading but at least
    :data:`ESCAPED_HEADINGS_MIN` lines opening ``\\# `` (an HTML-to-Markdown converter that escaped the
    headings it wrote) gets them back as headings; elsewhere a line-opening ``\\#`` stays escaped, so
    it is not read as a heading (it renders as text). Returns the text; raises nothing."""
    if not _ATX.search(text) and len(_ESCAPED_ATX.findall(text)) >= ESCAPED_HEADINGS_MIN:
        text = _ESCAPED_ATX.sub(r"\1\2", text)
    out: list[str] = []
    fenced = False
    for line in text.split("\n"):
        if _FENCE.match(line):
            fenced = not fenced
        elif not fenced:
            kept = _LEADING_ESCAPED_HASH.match(line)  # "\\# x" renders as text "# x": no heading for the chunker
            head, rest = (line[:kept.end()], line[kept.end():]) if kept else ("", line)
            line = head + _REFERENCE.sub(lambda m: html.unescape(m.group()), _ESCAPE.sub(r"\1", rest))
        out.append(line)
    return "\n".join(out)


def decode_text(source: str, data: bytes) -> str:
    """Decode text bytes: UTF-8 (a leading BOM is dropped), else cp1252 if it round-trips.

    Raises :class:`DocumentError` naming ``source`` for bytes holding NUL (binary content,
    UTF-16 named as such) and for bytes that are neither UTF-8 nor cp1252.
    """
    if b"\x00" in data:
        utf16 = data.startswith((b"\xff\xfe", b"\xfe\xff"))
        hint = "; UTF-16 text is not supported, save it as UTF-8" if utf16 else ""
        raise DocumentError(source, f"binary content, not text (it contains NUL bytes{hint})")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as utf8_error:
        try:
            text = data.decode("cp1252")
        except UnicodeDecodeError:
            text = None
        if text is None or text.encode("cp1252") != data:
            raise DocumentError(
                source,
                f"not UTF-8 text (invalid byte at offset {utf8_error.start}) "
                "and not cp1252 either",
            ) from None
        return text


def normalise(text: str, table: Mapping[int, str | None]) -> str:
    """Unify line ends, apply ``table`` (a ``str.translate`` table: drop controls, map hyphens), strip line ends."""
    text = text.replace("\r\n", "\n").replace("\r", "\n").translate(table)
    return _TRAILING_SPACE.sub("", text)
