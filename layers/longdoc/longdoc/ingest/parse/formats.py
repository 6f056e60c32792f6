"""HTML and DOCX to one text plus the headings the format marks.

Both return ``(text, headings)`` where ``text`` is the document's own words laid out one
block per paragraph (blank line between paragraphs, one line per list item) and
``headings`` are :class:`~longdoc.ingest.models.HeadingMark` offsets into that text. Neither
format has pages, so the caller records a single ``PageSpan(page=None)``.

* HTML: parsed with Beautiful Soup (``html.parser`` from the standard library). ``<h1>``-
  ``<h6>`` become headings of that level; ``<li>`` of an ``<ol>`` is prefixed with the
  marker a browser draws (``type``, ``start``, ``reversed``, ``value`` and CSS
  ``list-style-type`` honoured: ``3.``, ``b.``, ``iv.``), of a ``<ul>`` with ``•``; list
  items are marked ``list_item`` (never section headings); ``<script>``, ``<style>``,
  ``<head>``, ``<template>`` and ``<noscript>`` are dropped; runs of white space collapse
  to one space except inside ``<pre>``.
* DOCX: text read with docx2python; Word's automatic numbers (in ``numbering.xml``, not in
  the paragraph text, reached from the paragraph or from its heading style) are rendered by
  :mod:`longdoc.ingest.parse.wordnum` as Word shows them (``4.2``, ``ARTICLE IV``,
  ``Section 3.2``, ``(a)``; a bullet is ``•``). Paragraphs styled ``Heading N`` or
  ``Title`` become headings (level N, Title = 1); other paragraphs Word numbers ``4.`` or
  ``4.2`` in the list that numbers the clauses (the first list to give a decimal number)
  are marked ``numbered`` (section candidates whatever their wording); a separate decimal
  list inside a clause is not. A symbol character (``w:sym``) becomes plain text
  (:mod:`longdoc.ingest.parse.wordsym`), never docx2python's HTML for it; so do its other
  generated strings, a hyperlink's ``<a href=...>`` included (one strip,
  :mod:`longdoc.ingest.parse.wordmarkup`).
"""

from __future__ import annotations

import io
import re
import zipfile
from typing import TYPE_CHECKING

from longdoc.ingest.models import HeadingMark

if TYPE_CHECKING:
    from bs4 import NavigableString, Tag

_BLOCKS = {
    "p", "div", "section", "article", "main", "header", "footer", "aside", "nav", "blockquote",
    "pre", "table", "tr", "dl", "dt", "dd", "figure", "figcaption", "address", "form", "fieldset",
    "ul", "ol", "li", "h1", "h2", "h3", "h4", "h5", "h6", "br", "hr", "body", "html",
}
_DROP = {"script", "style", "head", "template", "noscript", "title"}
_WS = re.compile(r"[ \t\r\n\f\v]+")


class _Builder:
    """Accumulates paragraphs and heading offsets."""

    def __init__(self) -> None:
        """An empty text."""
        self.parts: list[str] = []
        self.length = 0
        self.headings: list[HeadingMark] = []

    def block(self, text: str, *, tight: bool = False, level: int | None = None, kind: str | None = None) -> None:
        """Append a paragraph (``tight``: one newline before it, else a blank line); ``level``
        marks it as a heading of that level (1 = top) at its character offsets; ``kind``
        (``list_item``, ``numbered``) marks a line of that role instead (see
        :class:`~longdoc.ingest.models.HeadingMark`)."""
        text = text.strip()
        if not text:
            return
        if self.parts:
            sep = "\n" if tight else "\n\n"
            self.parts.append(sep)
            self.length += len(sep)
        if level is not None or kind is not None:
            self.headings.append(HeadingMark(char_start=self.length, char_end=self.length + len(text),
                                             level=level or 9, kind=kind or "heading"))
        self.parts.append(text)
        self.length += len(text)

    def result(self) -> tuple[str, list[HeadingMark]]:
        """The accumulated text and its heading marks (offsets into that text)."""
        return "".join(self.parts), self.headings


_CSS_LIST_TYPES = {
    "decimal": "1", "lower-alpha": "a", "lower-latin": "a", "upper-alpha": "A", "upper-latin": "A",
    "lower-roman": "i", "upper-roman": "I", "none": "", "disc": "•", "circle": "•", "square": "•",
}


def _int_attr(value: object) -> int | None:
    """An HTML integer attribute (``start``, ``value``) as an int; None when absent or not an integer."""
    text = str(value).strip() if value is not None else ""
    return int(text) if re.fullmatch(r"-?\d{1,9}", text) else None


def _list_markers(lst: Tag) -> list[tuple[Tag, str]]:
    """The ``<li>`` children of ``lst`` with the marker a browser draws before each.

    Follows the HTML Living Standard (4.4.5 ``ol``, 4.4.8 ``li``): ``type`` is ``1``, ``a``,
    ``A``, ``i`` or ``I`` (CSS ``list-style-type`` in a ``style`` attribute wins); ``start``
    sets the first ordinal (default 1, or the item count when ``reversed``); ``reversed``
    counts down; an item's ``value`` resets the count. Ordered markers end in ``.``
    (``a.``, ``iv.``, see :func:`_ordinal_marker` for values a style cannot show); unordered
    items get ``•``; ``list-style-type: none`` gives no marker.
    """

    items = lst.find_all("li", recursive=False)
    kind = "1" if lst.name == "ol" else "•"
    if lst.name == "ol" and str(lst.get("type", "")) in ("1", "a", "A", "i", "I"):
        kind = str(lst.get("type"))
    css = re.search(r"list-style(?:-type)?\s*:\s*([a-z-]+)", str(lst.get("style", "")))
    if css and css.group(1) in _CSS_LIST_TYPES:
        kind = _CSS_LIST_TYPES[css.group(1)]
    step = -1 if lst.name == "ol" and lst.has_attr("reversed") else 1
    number = _int_attr(lst.get("start"))
    if number is None:
        number = len(items) if step < 0 else 1
    out = []
    for item in items:
        value = _int_attr(item.get("value"))
        number = value if value is not None else number
        out.append((item, _ordinal_marker(number, kind) + "." if kind in ("1", "a", "A", "i", "I") else kind))
        number += step
    return out


def _alphabetic(n: int) -> str:
    """CSS ``lower-alpha`` of ``n`` >= 1: bijective base 26 (``1`` -> ``a``, ``27`` -> ``aa``, ``28`` -> ``ab``).

    CSS Counter Styles Level 3, 3.1.4 "alphabetic" (https://www.w3.org/TR/css-counter-styles-3/#alphabetic-system).
    """
    out = ""
    while n > 0:
        n, rest = divmod(n - 1, 26)
        out = chr(ord("a") + rest) + out
    return out


def _ordinal_marker(n: int, kind: str) -> str:
    """The ordinal ``n`` as an ``<ol type=kind>`` draws it, without the trailing ``.``.

    Letters (``a``/``A``) cover 1 and up, roman numerals (``i``/``I``) 1 to 3999; outside its
    range a style falls back to ``decimal`` (CSS Counter Styles Level 3, 6.1 and 6.2, the
    ``range`` of ``lower-alpha`` and ``lower-roman``, and 3.1.4 for the alphabetic system):
    ``type="a" start="0"`` draws ``0.``, ``type="i"`` at 4000 draws ``4000.``.
    """
    from longdoc.core.text import int_to_roman

    if kind in ("a", "A") and n >= 1:
        text = _alphabetic(n)
        return text.upper() if kind == "A" else text
    if kind in ("i", "I") and 1 <= n <= 3999:
        text = int_to_roman(n)
        return text if kind == "I" else text.lower()
    return str(n)


_SKIPPED_STRINGS = ("Comment", "Doctype", "Declaration", "ProcessingInstruction")


class _HtmlWalker:
    """Walks a parsed HTML tree into a :class:`_Builder`: blocks become paragraphs, inline text joins up."""

    def __init__(self, string_type: type[NavigableString], tag_type: type[Tag]) -> None:
        """A walker writing into a new builder; the bs4 classes come from the caller's lazy import."""
        self.out = _Builder()
        self.inline: list[str] = []
        self._string_type = string_type  # bs4's NavigableString and Tag, imported lazily by the caller
        self._tag_type = tag_type

    def flush(self, *, tight: bool = False, level: int | None = None, kind: str | None = None) -> None:
        """End the current paragraph: its inline text, white space collapsed, becomes a block."""
        joined = _WS.sub(" ", "".join(self.inline)).strip()
        self.inline.clear()
        self.out.block(joined, tight=tight, level=level, kind=kind)

    def walk(self, node: Tag) -> None:
        """Render the children of ``node`` in order."""
        for child in node.children:
            if isinstance(child, self._string_type):
                if type(child).__name__ not in _SKIPPED_STRINGS:
                    self.inline.append(str(child))
            elif isinstance(child, self._tag_type) and child.name not in _DROP:
                self._element(child)

    def _element(self, child: Tag) -> None:
        """Render one element by its kind: pre, heading, list, block, table cell or inline."""
        name = child.name
        if name == "pre":
            self.flush()
            self.out.block(child.get_text())
        elif re.fullmatch(r"h[1-6]", name):
            self.flush()
            self.walk(child)
            self.flush(level=int(name[1]))
        elif name in ("ul", "ol"):
            self._list(child)
        elif name in _BLOCKS:
            self.flush(tight=name in ("tr", "br", "dd", "dt"))
            self.walk(child)
            self.flush(tight=name in ("tr", "dd", "dt"))
        elif name in ("td", "th"):
            self.walk(child)
            self.inline.append(" ")
        else:
            self.walk(child)

    def _list(self, lst: Tag) -> None:
        """Render a list: its own block, one line per item, each with the marker a browser draws."""
        self.flush()
        for index, (item, prefix) in enumerate(_list_markers(lst)):
            self.inline.append(prefix + " " if prefix else "")
            self.walk(item)
            self.flush(tight=index > 0, kind="list_item")  # a list is its own block; items are lines


def html_to_text(markup: str) -> tuple[str, list[HeadingMark]]:
    """Render HTML ``markup`` to text and heading marks (see the module docstring)."""
    from bs4 import BeautifulSoup, NavigableString, Tag  # lazy: only HTML input needs it

    walker = _HtmlWalker(NavigableString, Tag)
    walker.walk(BeautifulSoup(markup, "html.parser"))
    walker.flush()
    return walker.out.result()


_DOCX2PYTHON_BULLET = re.compile(r"\t*[^\t\n]*\t")


_EMPTY_PART_ROOTS = {"word/numbering.xml": "numbering", "word/styles.xml": "styles"}
_W_NS = "http://schemas.openxmlformats.org/wordprocessingml/2006/main"
_R_NS = b"http://schemas.openxmlformats.org/officeDocument/2006/relationships"
_ROOT_TAG = re.compile(rb"<(?![?!/])([^\s/>]+)(?:\s+[^\s=/>]+\s*=\s*(?:\"[^\"]*\"|'[^']*'))*\s*/?>")


_ROOT_BYTES = 64 * 1024
"""How much of a part is read to find its root tag (Word's root carries ~40 namespace declarations,
a few KB); a root not found in it sends the whole part through :func:`_with_relationship_prefix`."""


def _declares_relationship_prefix(head: bytes) -> bool:
    """True when the root tag in ``head`` (the opening bytes of an XML part) declares ``xmlns:r``."""
    root = _ROOT_TAG.search(head)
    return root is not None and re.search(rb"\sxmlns:r\s*=", root.group()) is not None


def _with_relationship_prefix(body: bytes) -> bytes:
    """``body`` (an XML part) with ``xmlns:r`` added to its root element if undeclared.

    docx2python looks the ``r`` prefix up on every run it merges (``nsmap['r']``) and fails
    with ``KeyError: 'r'`` when the root does not declare it, as Word always does. A root
    that does not declare ``r`` has no ``r:`` name outside an element that declares it
    itself, so declaring it (bound to the relationships namespace Word binds it to)
    changes nothing the part means. Returns ``body`` unchanged when ``r`` is declared or
    no root tag is found (a part not in UTF-8 or not XML: docx2python then reports it).
    """
    root = _ROOT_TAG.search(body)
    if root is None or _declares_relationship_prefix(root.group()):
        return body
    return body[:root.end(1)] + b' xmlns:r="' + _R_NS + b'"' + body[root.end(1):]


def _repaired(archive: zipfile.ZipFile, data: bytes) -> bytes:
    """``data`` with the package faults Word tolerates and docx2python does not mended.

    * An empty numbering or styles part: Word treats it as absent; docx2python fails on it
      ("Document is empty"), so it gets the smallest well-formed part instead.
    * An XML part under ``word/`` whose root does not declare ``r``: see
      :func:`_with_relationship_prefix`.

    Returns ``data`` unchanged when nothing needs mending.
    """
    from longdoc.ingest.parse.wordnum import blank_part

    changed: dict[str, bytes] = {}
    for name in archive.namelist():
        if name in _EMPTY_PART_ROOTS and blank_part(archive.read(name)):
            changed[name] = f'<w:{_EMPTY_PART_ROOTS[name]} xmlns:w="{_W_NS}"/>'.encode()
        elif name.startswith("word/") and name.endswith(".xml") and "/_rels/" not in name:
            with archive.open(name) as part:  # the root tag opens the part: no need to inflate all of it
                if _declares_relationship_prefix(part.read(_ROOT_BYTES)):
                    continue
            body = archive.read(name)
            fixed = _with_relationship_prefix(body)
            if fixed != body:
                changed[name] = fixed
    if not changed:
        return data
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as copy:
        for info in archive.infolist():
            copy.writestr(info, changed.get(info.filename) or archive.read(info.filename))
    return out.getvalue()


def docx_to_text(data: bytes) -> tuple[str, list[HeadingMark]]:
    """Render DOCX ``data`` to text and heading marks (see the module docstring).

    Each numbered paragraph starts with the number Word shows for it (see
    :mod:`longdoc.ingest.parse.wordnum`), then a space. A footnote or endnote reference reads
    ``[n]`` and the notes referred to follow the body under a ``Footnotes`` heading
    (:mod:`longdoc.ingest.parse.wordnotes`). Raises ValueError (from
    docx2python/zipfile) or ``xml.etree.ElementTree.ParseError`` when the bytes are not a
    readable DOCX.
    """
    from docx2python import docx2python  # lazy: only DOCX input needs it
    from docx2python.iterators import iter_paragraphs

    from longdoc.ingest.parse.wordmarkup import strip_markup
    from longdoc.ingest.parse.wordnotes import FOOTNOTES_HEADING, WordNotes
    from longdoc.ingest.parse.wordnum import W, WordNumbering

    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        numbering = WordNumbering.from_docx(archive)
        notes = WordNotes.from_docx(archive)
        data = _repaired(archive, data)
    out = _Builder()
    clause_list: str | None = None
    with docx2python(io.BytesIO(data)) as doc:
        for par in iter_paragraphs(doc.body_pars):
            strings = list(par.run_strings)
            number = None
            if par.elem is not None and par.elem.tag == W + "p":
                ppr = par.elem.find(W + "pPr")
                numpr = ppr.find(W + "numPr") if ppr is not None else None
                direct = numpr is not None and all(numpr.find(W + t) is not None for t in ("numId", "ilvl"))
                if direct and strings and _DOCX2PYTHON_BULLET.fullmatch(strings[0]):
                    strings = strings[1:]  # docx2python's own rendering of the number: ours replaces it
                number = numbering.label(par.elem)
            text = strip_markup(strings, par.elem, notes).strip()
            line = f"{number} {text}".strip() if number else text
            style = (par.style or "").replace(" ", "").lower()
            level = None
            if style == "title":
                level = 1
            elif re.fullmatch(r"heading[1-9]", style):
                level = int(style[-1])
            # A clause Word numbers "4." or "4.2" is a section candidate, title or not, when its
            # list is the one that numbers the clauses: the first list to give a decimal number.
            decimal = bool(number and re.fullmatch(r"\d+(?:\.\d+)*\.?", number))
            if decimal and clause_list is None:
                clause_list = numbering.last_list
            kind = "numbered" if level is None and decimal and numbering.last_list == clause_list else None
            out.block(line, level=level, kind=kind)
    if notes.order:  # the notes the body refers to, after it (wordnotes)
        out.block(FOOTNOTES_HEADING, level=1)
        for note in notes.paragraphs():
            out.block(note)
    return out.result()
