"""HTML and DOCX to one text plus the headings the format marks.

Both return ``(text, headings)`` where ``text`` is the document's own words laid out one
block per paragraph (blank line between paragraphs, one line per list item) and
``headings`` are :class:`~longdoc.models.HeadingMark` offsets into that text. Neither
format has pages, so the caller records a single ``PageSpan(page=None)``.

* HTML: parsed with Beautiful Soup (``html.parser`` from the standard library). ``<h1>``-
  ``<h6>`` become headings of that level; ``<li>`` of an ``<ol>`` is prefixed with its
  number (honouring ``start``), of a ``<ul>`` with ``•``; ``<script>``, ``<style>``,
  ``<head>``, ``<template>`` and ``<noscript>`` are dropped; runs of white space collapse
  to one space except inside ``<pre>``.
* DOCX: read with docx2python, which follows Word's automatic numbering (the numbers are
  in ``numbering.xml``, not in the paragraph text; python-docx alone does not render
  them). A decimal list paragraph at nesting ``[4, 2]`` is written ``4.2``; a letter or
  roman item ``(a)``/``(iv)``; a bullet ``•``. Paragraphs styled ``Heading N`` or
  ``Title`` become headings (level N, Title = 1).
"""

from __future__ import annotations

import io
import re

from longdoc.models import HeadingMark

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
        self.parts: list[str] = []
        self.length = 0
        self.headings: list[HeadingMark] = []

    def block(self, text: str, *, tight: bool = False, level: int | None = None) -> None:
        """Append a paragraph (``tight``: one newline before it, else a blank line); ``level``
        marks it as a heading of that level (1 = top) at its character offsets."""
        text = text.strip()
        if not text:
            return
        if self.parts:
            sep = "\n" if tight else "\n\n"
            self.parts.append(sep)
            self.length += len(sep)
        if level is not None:
            self.headings.append(HeadingMark(char_start=self.length, char_end=self.length + len(text), level=level))
        self.parts.append(text)
        self.length += len(text)

    def result(self) -> tuple[str, list[HeadingMark]]:
        """The accumulated text and its heading marks (offsets into that text)."""
        return "".join(self.parts), self.headings


def html_to_text(markup: str) -> tuple[str, list[HeadingMark]]:
    """Render HTML ``markup`` to text and heading marks (see the module docstring)."""
    from bs4 import BeautifulSoup, NavigableString, Tag  # lazy: only HTML input needs it

    soup = BeautifulSoup(markup, "html.parser")
    out = _Builder()
    inline: list[str] = []

    def flush(*, tight: bool = False, level: int | None = None) -> None:
        joined = _WS.sub(" ", "".join(inline)).strip()
        inline.clear()
        out.block(joined, tight=tight, level=level)

    def walk(node: Tag, list_prefix: str | None = None) -> None:
        for child in node.children:
            if isinstance(child, NavigableString):
                if type(child).__name__ in ("Comment", "Doctype", "Declaration", "ProcessingInstruction"):
                    continue
                inline.append(str(child))
                continue
            if not isinstance(child, Tag) or child.name in _DROP:
                continue
            name = child.name
            if name == "pre":
                flush()
                out.block(child.get_text())
            elif re.fullmatch(r"h[1-6]", name):
                flush()
                walk(child)
                flush(level=int(name[1]))
            elif name in ("ul", "ol"):
                flush()
                number = int(child.get("start", 1)) if str(child.get("start", "1")).lstrip("-").isdigit() else 1
                for item in child.find_all("li", recursive=False):
                    prefix = f"{number}." if name == "ol" else "•"
                    number += 1
                    inline.append(prefix + " ")
                    walk(item)
                    flush(tight=True)
            elif name in _BLOCKS:
                flush(tight=name in ("tr", "br", "dd", "dt"))
                walk(child)
                flush(tight=name in ("tr", "dd", "dt"))
            elif name in ("td", "th"):
                walk(child)
                inline.append(" ")
            else:
                walk(child)

    walk(soup)
    flush()
    return out.result()


_BULLET_RE = re.compile(r"^\t*(?:(?P<num>[0-9A-Za-z]+)\)|(?P<bullet>--|[•●▪◦·\-]))\t")


def docx_to_text(data: bytes) -> tuple[str, list[HeadingMark]]:
    """Render DOCX ``data`` to text and heading marks (see the module docstring).

    Raises ValueError (from docx2python/zipfile) when the bytes are not a readable DOCX.
    """
    from docx2python import docx2python  # lazy: only DOCX input needs it
    from docx2python.iterators import iter_paragraphs

    out = _Builder()
    with docx2python(io.BytesIO(data)) as doc:
        for par in iter_paragraphs(doc.body_pars):
            text = "".join(par.run_strings)
            number = ""
            m = _BULLET_RE.match(text)
            _, position = par.list_position
            if m and position:
                text = text[m.end():]
                token = m.group("num")
                if token is None:
                    number = "•"
                elif token.isdigit():
                    number = ".".join(str(n) for n in position)
                else:
                    number = f"({token})"
            line = f"{number} {text.strip()}".strip() if number else text.strip()
            style = (par.style or "").replace(" ", "").lower()
            level = None
            if style == "title":
                level = 1
            elif re.fullmatch(r"heading[1-9]", style):
                level = int(style[-1])
            out.block(line, level=level)
    return out.result()
