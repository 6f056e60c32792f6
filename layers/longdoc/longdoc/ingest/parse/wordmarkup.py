"""docx2python's own markup taken out of a paragraph's text: one strip for everything it generates.

docx2python 3.x (``docx_text.DepthCollector``) writes some elements of a paragraph as HTML-like
strings, each inserted as a run of its own (``insert_text_as_new_run``), with no option to
turn it off, and it leaves the document's own ``<`` and ``&`` unescaped:

* ``w:hyperlink`` -> ``<a href="TARGET">TEXT</a>`` (``TARGET`` the relationship's target, plus
  ``#anchor``); issue 27 found it in chunk text;
* ``m:oMath`` -> ``<latex>TEXT</latex>``;
* a picture (``w:drawing``, ``v:imagedata``) -> ``----media/image1.png----``, its alternative
  text -> ``----Image alt text---->TEXT<``;
* ``w:sym`` -> ``<span style=font-family:FONT>&#x0HHH;</span>`` (:mod:`.wordsym`);
* ``w:footnoteReference`` / ``w:endnoteReference`` -> ``----footnote1----`` / ``----endnote1----``:
  the note's inline marker ``[n]`` (:mod:`.wordnotes`, which also indexes the notes' text).

:func:`strip_markup` works on the paragraph's run strings: a run is replaced only when the
*whole run* has one of these shapes and the paragraph holds the element that makes it (a
hyperlink, an equation, a picture), so a document that spells ``<a href=...>`` in its own
words keeps them. A hyperlink and an equation become their text, a picture's placeholder and
its alternative text become nothing (a reader sees the picture, not its file name), and
symbols are rendered by :func:`~longdoc.ingest.parse.wordsym.replace_sym_markup`, a note
reference becomes its marker.
"""

from __future__ import annotations

import re
from typing import Any

from longdoc.ingest.parse.wordnotes import NOTE_PLACEHOLDER, WordNotes
from longdoc.ingest.parse.wordnum import W
from longdoc.ingest.parse.wordsym import replace_sym_markup

MATH = "{http://schemas.openxmlformats.org/officeDocument/2006/math}"
_PICTURE_TAGS = (W + "drawing", W + "pict", "{urn:schemas-microsoft-com:vml}imagedata")
_LINK = re.compile(r'<a href="[^"]*">(.*)</a>', re.DOTALL)
_LATEX = re.compile(r"<latex>(.*)</latex>", re.DOTALL)
_PICTURE = re.compile(r"----(?:[^\n]*?)----|----Image alt text---->.*<", re.DOTALL)
_NOTE_TAGS = (W + "footnoteReference", W + "endnoteReference")


def _holds(paragraph: Any, *tags: str) -> bool:
    """Whether the lxml element ``paragraph`` holds an element with one of ``tags``."""
    return any(next(paragraph.iter(tag), None) is not None for tag in tags)


def strip_markup(strings: list[str], paragraph: Any | None, notes: WordNotes | None = None) -> str:
    """The text of one paragraph from docx2python's run ``strings``, its generated markup made plain.

    ``paragraph`` is the lxml ``w:p`` element docx2python read (None: the strings are joined as
    they are); ``notes`` the package's footnotes and endnotes (None: a note reference becomes
    nothing). Returns the joined text; never raises.
    """
    if paragraph is None:
        return "".join(strings)
    link = _holds(paragraph, W + "hyperlink")
    math = _holds(paragraph, MATH + "oMath", MATH + "oMathPara")
    picture = _holds(paragraph, *_PICTURE_TAGS)
    note = _holds(paragraph, *_NOTE_TAGS)
    out: list[str] = []
    for run in strings:
        if link and (m := _LINK.fullmatch(run)) or math and (m := _LATEX.fullmatch(run)):
            run = m.group(1)
        elif note and NOTE_PLACEHOLDER.fullmatch(run):
            run = notes.replace(run) if notes is not None else ""
        elif picture and _PICTURE.fullmatch(run):
            run = ""
        out.append(run)
    return replace_sym_markup("".join(out), paragraph)
