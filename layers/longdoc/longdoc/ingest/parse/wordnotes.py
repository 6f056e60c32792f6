"""Footnotes and endnotes of a DOCX: an inline marker where they are referenced, their text indexed.

docx2python 3.x writes a ``w:footnoteReference`` / ``w:endnoteReference`` as a run of its own,
``----footnote1----`` / ``----endnote1----`` (the note's ``w:id``), and keeps the notes' text apart
from the body. Issue 27 found the placeholder in chunk text and the footnote text nowhere.

Here the notes are read from the package's ``word/footnotes.xml`` and ``word/endnotes.xml``
(ECMA-376 Part 1, 17.11: ``w:footnote``/``w:endnote`` elements with a ``w:id``; those with a
``w:type`` of ``separator``, ``continuationSeparator`` or ``continuationNotice`` are the rule lines
Word draws, not notes). The placeholder becomes ``[n]``, ``n`` counting the notes in the order the
body first refers to them (as Word numbers footnotes by default, 17.11.17 ``numFmt`` decimal from 1),
and the text of every note referred to is appended after the body under a ``Footnotes`` heading, one
``[n] text`` paragraph each (endnotes are numbered on, in the same list). A reference to a note the
package does not hold becomes nothing.
"""

from __future__ import annotations

import re
import zipfile
from xml.etree import ElementTree

from longdoc.ingest.parse.wordnum import W

NOTE_PLACEHOLDER = re.compile(r"----(footnote|endnote)(-?\d+)----")
"""docx2python's run for a note reference: the kind and the note's ``w:id``."""
_PARTS = {"footnote": "word/footnotes.xml", "endnote": "word/endnotes.xml"}
_NOT_NOTES = {"separator", "continuationSeparator", "continuationNotice"}
FOOTNOTES_HEADING = "Footnotes"
"""The heading of the block of note texts appended after the body."""


class WordNotes:
    """The notes of one DOCX package and the markers handed out for them (module docstring)."""

    def __init__(self, texts: dict[tuple[str, str], str]):
        """``texts``: ``(kind, w:id) -> text`` for every note of the package."""
        self.texts = texts
        self.order: list[tuple[str, str]] = []

    @classmethod
    def from_docx(cls, archive: zipfile.ZipFile) -> WordNotes:
        """Read the notes parts of ``archive`` (none when absent). Raises ``ElementTree.ParseError``
        for a notes part that is not well-formed XML."""
        texts: dict[tuple[str, str], str] = {}
        names = set(archive.namelist())
        for kind, part in _PARTS.items():
            if part not in names:
                continue
            root = ElementTree.fromstring(archive.read(part))
            for note in root.iter(W + kind):
                if note.get(W + "type") in _NOT_NOTES:
                    continue
                paragraphs = [" ".join("".join(t.text or "" for t in p.iter(W + "t")).split())
                              for p in note.iter(W + "p")]
                text = " ".join(p for p in paragraphs if p)
                if text:
                    texts[(kind, note.get(W + "id", ""))] = text
        return cls(texts)

    def marker(self, kind: str, note_id: str) -> str:
        """``[n]`` for the note ``(kind, note_id)`` (numbered on first reference), ``""`` for a note the
        package does not hold."""
        key = (kind, note_id)
        if key not in self.texts:
            return ""
        if key not in self.order:
            self.order.append(key)
        return f"[{self.order.index(key) + 1}]"

    def replace(self, run: str) -> str:
        """A run with docx2python's note placeholders replaced by markers."""
        return NOTE_PLACEHOLDER.sub(lambda m: self.marker(m.group(1), m.group(2)), run)

    def paragraphs(self) -> list[str]:
        """``[n] text`` for every note referred to, in marker order."""
        return [f"[{n}] {self.texts[key]}" for n, key in enumerate(self.order, start=1)]
