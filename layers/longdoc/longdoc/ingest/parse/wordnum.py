"""Word's automatic numbering, rendered the way Word shows it.

In a DOCX the clause numbers people cite (``4.2``, ``ARTICLE IV``, ``Section 3.2``,
``(a)``) are usually not in the paragraph text: Word draws them from list definitions in
``word/numbering.xml``, reached either from the paragraph (``w:pPr/w:numPr``) or, the
usual way for numbered headings, from the paragraph's style in ``word/styles.xml``
(``Heading 1`` carries ``w:numPr``, inherited through ``w:basedOn``). docx2python, which
reads the text, follows only the first route and ignores each level's number text, so
this module renders the numbers itself.

Rules followed (ECMA-376 Part 1, 17.9 "Numbering"):

* A paragraph's ``numId``/``ilvl`` come from its own ``numPr``, else from its style chain;
  with no ``ilvl`` the level is the one whose ``w:pStyle`` names the paragraph's style,
  else 0. ``numId`` 0 removes numbering.
* Each level has a start value (``w:start``, default 0 per the standard; Word writes it),
  a format (``w:numFmt``), a number text (``w:lvlText``, where ``%1``..``%9`` stand for the
  current values of levels 1..9) and an optional ``w:isLgl`` (every placeholder decimal).
  A ``w:num`` may override a level's start (``w:lvlOverride/w:startOverride``) or the level.
* Using a level restarts the deeper levels unless their ``w:lvlRestart`` says otherwise
  (0: never; N: only when a level above N is used).
* Lists that are separate ``w:num`` instances of one abstract list continue one count, as
  Word shows them, unless the instance overrides a start (that is how Word restarts a list).

Formats rendered: decimal, decimalZero, upper/lower roman, upper/lower letter, ordinal,
bullet (as ``•``) and none; any other format falls back to decimal digits.
"""

from __future__ import annotations

import posixpath
import re
import zipfile
from dataclasses import dataclass, field
from xml.etree import ElementTree

from longdoc.core.text import int_to_roman

W = "{http://schemas.openxmlformats.org/wordprocessingml/2006/main}"
_REL = "{http://schemas.openxmlformats.org/package/2006/relationships}"
_PLACEHOLDER = re.compile(r"%([1-9])")
BULLET = "•"
"""What a bullet level renders as, whatever symbol the document draws."""


@dataclass
class _Level:
    """One level of a Word list (``w:lvl``): start value, number format, number text, legal style, restart, paragraph style."""

    start: int = 1
    fmt: str = "decimal"
    text: str | None = None
    legal: bool = False
    restart: int | None = None
    style: str | None = None


@dataclass
class _Num:
    """A Word list (``w:num``): its abstract list and its per-level overrides."""

    abstract: str
    starts: dict[int, int] = field(default_factory=dict)
    levels: dict[int, _Level] = field(default_factory=dict)


def _val(elem: ElementTree.Element | None, tag: str) -> str | None:
    """The ``w:val`` of child ``tag`` of ``elem`` (None when either is missing)."""
    if elem is None:
        return None
    child = elem.find(W + tag)
    return None if child is None else child.get(W + "val")


def _int(value: str | None, default: int | None) -> int | None:
    """``value`` as an int; ``default`` when it is None or not an integer."""
    try:
        return int(value) if value is not None else default
    except ValueError:
        return default


def _level(elem: ElementTree.Element) -> _Level:
    """Read a ``w:lvl`` element."""
    legal = elem.find(W + "isLgl")
    return _Level(
        start=_int(_val(elem, "start"), 0) or 0,
        fmt=_val(elem, "numFmt") or "decimal",
        text=_val(elem, "lvlText"),
        legal=legal is not None and legal.get(W + "val", "true") not in ("0", "false", "off"),
        restart=_int(_val(elem, "lvlRestart"), None),
        style=_val(elem, "pStyle"),
    )


def letters(n: int) -> str:
    """Word's letter numbering, upper case: 1 -> A, 26 -> Z, 27 -> AA, 53 -> AAA.

    Word repeats the letter rather than counting in base 26 (ECMA-376 17.18.59
    ``upperLetter``). Values below 1 render as an empty string.
    """
    if n < 1:
        return ""
    return chr(ord("A") + (n - 1) % 26) * ((n - 1) // 26 + 1)


def format_number(n: int, fmt: str) -> str:
    """Render the value ``n`` in Word number format ``fmt`` (``w:numFmt``, ECMA-376 17.18.59).

    ``upperRoman`` 4 -> ``IV``, ``lowerLetter`` 2 -> ``b``, ``decimalZero`` 7 -> ``07``,
    ``ordinal`` 3 -> ``3rd``, ``bullet`` -> ``•``, ``none`` -> ``""``; unknown formats
    (East Asian counting systems and the like) render as decimal digits.
    """
    if fmt == "bullet":
        return BULLET
    if fmt == "none":
        return ""
    if fmt in ("upperRoman", "lowerRoman"):
        text = int_to_roman(n) if n > 0 else str(n)
        return text if fmt == "upperRoman" else text.lower()
    if fmt in ("upperLetter", "lowerLetter"):
        text = letters(n)
        return text if fmt == "upperLetter" else text.lower()
    if fmt == "decimalZero":
        return f"{n:02d}"
    if fmt == "ordinal":
        suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
        return f"{n}{suffix}"
    return str(n)


def _xml(data: bytes, part: str) -> ElementTree.Element:
    """Parse one package part; raises ``ValueError("<part>: <XML error>")`` when it is not XML."""
    try:
        return ElementTree.fromstring(data)
    except ElementTree.ParseError as exc:
        raise ValueError(f"{part}: {exc}") from exc


_XML_DECL = re.compile(rb"^\s*(?:\xef\xbb\xbf)?\s*(?:<\?xml[^>]*\?>)?\s*$")


def blank_part(data: bytes | None) -> bool:
    """Whether a package part holds nothing: absent, empty, white space, a byte-order mark
    or an XML declaration alone. Word reads such a part as absent."""
    return data is None or bool(_XML_DECL.match(data))


def _num(num: ElementTree.Element) -> _Num:
    """A ``<w:num>``: its abstract list and its level overrides (start values, whole levels)."""
    entry = _Num(abstract=_val(num, "abstractNumId") or "")
    for override in num.findall(W + "lvlOverride"):
        ilvl = _int(override.get(W + "ilvl"), 0) or 0
        start = _int(_val(override, "startOverride"), None)
        if start is not None:
            entry.starts[ilvl] = start
        lvl = override.find(W + "lvl")
        if lvl is not None:
            entry.levels[ilvl] = _level(lvl)
    return entry


class WordNumbering:
    """Renders the automatic number of each paragraph of one DOCX, in document order.

    Build it from the package with :meth:`from_docx`, then call :meth:`label` once per
    body paragraph in reading order (it advances the list counters).
    """

    def __init__(self, numbering_xml: bytes | None, styles_xml: bytes | None, *,
                 numbering_part: str = "word/numbering.xml", styles_part: str = "word/styles.xml") -> None:
        """Parse ``word/numbering.xml`` and ``word/styles.xml`` (either may be absent, and an
        empty or white-space-only part counts as absent).

        Raises ``ValueError`` naming the part (``numbering_part`` / ``styles_part``) and the
        XML error when a part is not well-formed XML: ``word/numbering.xml: no element
        found: line 1, column 40``.
        """
        self._abstract: dict[str, dict[int, _Level]] = {}
        self._links: dict[str, str] = {}  # abstract id -> style it takes its levels from
        self._nums: dict[str, _Num] = {}
        self._styles: dict[str, tuple[str | None, str | None, int | None]] = {}
        self._counters: dict[str, dict[int, int]] = {}
        self.last_list: str | None = None
        """The list (counter key) of the paragraph :meth:`label` last numbered, else None."""
        if styles_xml is not None and not blank_part(styles_xml):
            self._read_styles(_xml(styles_xml, styles_part))
        if numbering_xml is not None and not blank_part(numbering_xml):
            self._read_numbering(_xml(numbering_xml, numbering_part))

    def _read_styles(self, root: ElementTree.Element) -> None:
        """Record each style's base style and the list (numId, ilvl) it numbers its paragraphs with."""
        for style in root.iter(W + "style"):
            sid = style.get(W + "styleId")
            if not sid:
                continue
            ppr = style.find(W + "pPr")
            numpr = ppr.find(W + "numPr") if ppr is not None else None
            self._styles[sid] = (
                _val(style, "basedOn"),
                _val(numpr, "numId"),
                _int(_val(numpr, "ilvl"), None),
            )

    def _read_numbering(self, root: ElementTree.Element) -> None:
        """Record the abstract lists (their levels and style links) and the lists that use them."""
        for absn in root.iter(W + "abstractNum"):
            aid = absn.get(W + "abstractNumId", "")
            self._abstract[aid] = {
                _int(lvl.get(W + "ilvl"), 0) or 0: _level(lvl) for lvl in absn.findall(W + "lvl")
            }
            link = _val(absn, "numStyleLink")
            if link:
                self._links[aid] = link
        for num in root.iter(W + "num"):
            self._nums[num.get(W + "numId", "")] = _num(num)

    @classmethod
    def from_docx(cls, archive: zipfile.ZipFile) -> WordNumbering:
        """Read the numbering and styles parts of an open DOCX package.

        The parts are found through ``word/_rels/document.xml.rels`` (falling back to the
        usual ``word/numbering.xml`` / ``word/styles.xml``); a relationship to a part that
        is not in the package counts as no part. Raises ``ValueError`` naming the part on
        malformed XML (see :meth:`__init__`).
        """
        targets = {"numbering": "word/numbering.xml", "styles": "word/styles.xml"}
        names = set(archive.namelist())
        if "word/_rels/document.xml.rels" in names:
            rels = _xml(archive.read("word/_rels/document.xml.rels"), "word/_rels/document.xml.rels")
            for rel in rels.iter(_REL + "Relationship"):
                kind = rel.get("Type", "").rsplit("/", 1)[-1]
                if kind in targets and rel.get("TargetMode") != "External":
                    target = rel.get("Target", "")
                    path = target.lstrip("/") if target.startswith("/") else posixpath.normpath(
                        posixpath.join("word", target))
                    targets[kind] = path
        parts = {k: archive.read(v) if v in names else None for k, v in targets.items()}
        return cls(parts["numbering"], parts["styles"], numbering_part=targets["numbering"],
                   styles_part=targets["styles"])

    def _levels(self, num: _Num) -> dict[int, _Level]:
        """The levels of list ``num``: its abstract list's (or its numbering style's), then its overrides."""
        levels = self._abstract.get(num.abstract, {})
        link = self._links.get(num.abstract)
        if not levels and link:  # a list defined by a numbering style: follow it once
            _, linked_num, _ = self._style_numpr(link)
            target = self._nums.get(linked_num or "")
            if target is not None:
                levels = self._abstract.get(target.abstract, {})
        return {**levels, **num.levels}

    def _style_numpr(self, style: str | None) -> tuple[str | None, str | None, int | None]:
        """``(style id that carries numPr, numId, ilvl)`` through the ``basedOn`` chain."""
        seen: set[str] = set()
        while style and style not in seen:
            seen.add(style)
            based_on, num_id, ilvl = self._styles.get(style, (None, None, None))
            if num_id is not None:
                return style, num_id, ilvl
            style = based_on
        return None, None, None

    def label(self, paragraph: ElementTree.Element, style: str | None = None) -> str | None:
        """The number Word shows before ``paragraph`` (a ``w:p`` element), or None.

        ``style`` is the paragraph's style id when the caller already has it (else it is
        read from ``w:pPr/w:pStyle``). Returns e.g. ``"4.2"``, ``"ARTICLE IV"``,
        ``"Section 3.2"``, ``"(a)"`` or ``"•"``; None for an unnumbered paragraph or a
        level whose number text is empty. Advances the list's counters.
        """
        ppr = paragraph.find(W + "pPr")
        style = style or _val(ppr, "pStyle")
        numpr = ppr.find(W + "numPr") if ppr is not None else None
        num_id, ilvl = _val(numpr, "numId"), _int(_val(numpr, "ilvl"), None)
        owner, style_num, style_ilvl = self._style_numpr(style)
        if num_id is None:
            num_id = style_num
            ilvl = style_ilvl if ilvl is None else ilvl
        self.last_list = None
        if num_id is None or num_id == "0" or num_id not in self._nums:
            return None
        num = self._nums[num_id]
        levels = self._levels(num)
        if ilvl is None:
            ilvl = next((i for i, lv in levels.items() if lv.style and lv.style in (style, owner)), 0)
        if ilvl not in levels:  # the list points at a missing definition or level: Word shows no number
            return None
        level = levels[ilvl]
        key = f"num:{num_id}" if num.starts else f"abstract:{num.abstract}"
        self.last_list = key
        counters = self._counters.setdefault(key, {})

        def start(i: int) -> int:
            """The start value of level ``i`` of this list."""
            return num.starts.get(i, levels.get(i, _Level()).start)

        counters[ilvl] = counters[ilvl] + 1 if ilvl in counters else start(ilvl)
        for deeper in [i for i in counters if i > ilvl]:
            restart = levels.get(deeper, _Level()).restart
            if restart is None or (restart != 0 and ilvl < restart):
                del counters[deeper]
        if level.fmt == "bullet":
            return BULLET
        template = level.text if level.text is not None else f"%{ilvl + 1}"

        def render(m: re.Match[str]) -> str:
            """The current number of the level a ``%N`` placeholder names, in its format."""
            i = int(m.group(1)) - 1
            value = counters.get(i, start(i))
            fmt = "decimal" if level.legal else levels.get(i, _Level()).fmt
            return format_number(value, fmt)

        text = _PLACEHOLDER.sub(render, template).strip()
        return text or None
