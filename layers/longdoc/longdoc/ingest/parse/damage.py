"""What became of each PDF page, and the warnings a damaged or poorly read document gets (issue 27).

Every page gets one outcome (:data:`PageOutcome`):

* ``text``: its text layer was read;
* ``ocr``: OCR read it (mean word confidence at or over the threshold);
* ``ocr_low_confidence``: OCR read it under the threshold (indexed with ``ocr_low_confidence`` on
  its chunks, or left out with ``LONGDOC_OCR_LOW_CONFIDENCE=skip``);
* ``empty``: no text (a blank page, a scan left unread with OCR off);
* ``damaged``: its compressed content stream does not decompress (:mod:`.streams`: PDFium draws
  what it decoded before the damage, so the page is short or empty), or content-stream operators
  leaked into its text (:func:`strip_operator_garbage`, removed from the text); what is left is indexed;
* ``unreadable``: PDFium could not load the page, OCR could not read its image, or its text is
  garbage (:func:`garbage_share` over :data:`GARBAGE_MAX_SHARE`: the characters a damaged content
  stream or a font without a Unicode map yields; the text is still indexed as it is).

Measured on an 18-page text PDF with 200 random bytes written over its middle (PDFium 5.x through
pypdfium2): with six seeds, five gave page 11 without text and one a page PDFium refuses to load
("Failed to load page"). On the corpus's 18-page DMCA summary (RC4-encrypted, Flate content) with
200 random bytes at 36 seeded places, 36 pages lost 1% or more of their text; before the stream
check 7 of them were named, with it 36 (pages with operators in their text: 9, all stripped), and
no page of the undamaged corpus PDFs is named. Every page that is not ``text`` or ``ocr`` is named
in one warning line per outcome, so a damaged document is never ingested silently.
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from dataclasses import dataclass, field
from typing import Literal

from longdoc.ingest.models import Furniture, OcrFailure, OcrPageInfo
from longdoc.ingest.parse.cleanup import LIGATURES
from longdoc.ingest.parse.copies import copy_sets, identical
from longdoc.ingest.parse.skew import SKEW_FLAG_DEGREES

PageOutcome = Literal["text", "ocr", "ocr_low_confidence", "empty", "damaged", "unreadable"]
"""What one page became (module docstring)."""
OUTCOMES: tuple[PageOutcome, ...] = ("text", "ocr", "ocr_low_confidence", "empty", "damaged", "unreadable")
GARBAGE_MAX_SHARE = 0.10
"""Share (0-1) of a page's non-space characters that may be non-text before the page is garbage."""
_NON_TEXT_CATEGORIES = {"Cc", "Co", "Cn", "Cs"}
_KEEP = {"\n", "\t", "\ufffe"}  # line breaks and PDFium's line-end hyphen marker (resolved later)
SPACE_SEPARATORS = frozenset(
    "\u0020\u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a\u202f\u205f\u3000"
)
"""Every code point of Unicode general category Zs ("Separator, space", Unicode 15: space, no-break
space, ogham space mark, the en/em/thin/hair spaces U+2000-U+200A, narrow no-break, medium
mathematical and ideographic space): text, never damage."""
_INVISIBLE = frozenset("\u00ad\u200b\u200c\u200d\u2060\ufeff")
"""Soft hyphen, zero-width space, zero-width non-joiner and joiner, word joiner, zero-width no-break
space (BOM): format characters word processors put inside words; text, never damage."""
_NEUTRAL: dict[int, str | None] = {
    **{ord(ch): " " for ch in SPACE_SEPARATORS}, **{ord(ch): None for ch in _INVISIBLE},
    **dict(LIGATURES),
}
"""What :func:`garbage_share` reads before scoring: space separators as a plain space, invisible
format characters left out, the Latin ligatures ``ﬁ`` ``ﬂ`` ... (U+FB00-U+FB06) as letters."""
_SYMBOL_RUN = re.compile(r"[^\w\s]{8,}")
_LETTER_RUN = re.compile(r"([^\W\d_])\1{5,}")  # one letter six times or more: "ÿÿÿÿÿÿ"
_LATIN1_RUN = re.compile(r"[\u00a0-\u00ff]{4,}")  # bytes decoded as WinAnsi: "Ã¾Âð"


def _is_non_text(ch: str) -> bool:
    """Whether ``ch`` is a control, private-use, unassigned or surrogate code point, or U+FFFD."""
    return ch not in _KEEP and (ch == "\ufffd" or unicodedata.category(ch) in _NON_TEXT_CATEGORIES)


def garbage_share(text: str) -> float:
    """The share (0-1) of ``text``'s non-space characters that are not text: control, private-use,
    unassigned and surrogate code points, U+FFFD, runs of 8 or more symbols (no letter, digit or
    space) drawing on at least 4 different characters (dot leaders and rules are one character
    repeated, so they never count), one letter repeated six times or more (what PDFium gives for
    codes a simple font lacks: ``ÿÿÿÿ``), and runs of 4 or more Latin-1 supplement characters
    (random bytes decoded as WinAnsi). 0.0 for a text without non-space characters.

    Space separators (:data:`SPACE_SEPARATORS`: a no-break space, a thin space), soft hyphens and
    zero-width format characters (:data:`_INVISIBLE`) and ligatures are text: they are read as a
    space, nothing and letters before scoring, so a contract set with no-break spaces
    (``1.1\u00a0\u00a0\u00a0\u00a0Definitions``) scores as the same contract set with spaces."""
    text = text.translate(_NEUTRAL)
    counts = Counter(text)  # each distinct character classified once (a page holds a few dozen)
    visible = sum(n for ch, n in counts.items() if not ch.isspace())
    if not visible:
        return 0.0
    bad = sum(n for ch, n in counts.items() if _is_non_text(ch))
    bad += sum(len(m.group()) for m in _SYMBOL_RUN.finditer(text)
               if len(set(m.group())) >= 4 and not any(_is_non_text(ch) for ch in m.group()))
    bad += sum(len(m.group()) for m in _LETTER_RUN.finditer(text))
    bad += sum(len(m.group()) for m in _LATIN1_RUN.finditer(text) if not _LETTER_RUN.fullmatch(m.group()))
    return min(1.0, bad / visible)


_OPERATOR = r"(?:Tj|TJ|Tc|Td|TD|Tf|Tm|BT|ET|Tw|Tz|TL|Tr|Ts)"
"""Text operators (ISO 32000-1, 9.3-9.4: ``BT``/``ET``, ``Tc`` ``Tw`` ``Tz`` ``TL`` ``Tf`` ``Tr`` ``Ts``,
``Td`` ``TD`` ``Tm``, ``Tj`` ``TJ``): what a damaged content stream leaks into the text when PDFium
draws decoded garbage as a string. ``cm`` and ``re`` (8.4.4, 8.5.2) are left out: after a number they
are prose (``10 cm``, ``In re``) as often as operators."""
_OPERAND_BEFORE = re.compile(rf"(?:\d|\)){_OPERATOR}(?![A-Za-z])")
"""An operator glued after its operand or a string (``0.0224Tc``, ``(e)Tj``)."""
_OPERAND_AFTER = re.compile(rf"(?<![A-Za-z\[]){_OPERATOR}-?\d")
"""An operator glued to the next operand (``TD28``): alone, no evidence (``[TL05]`` cites a paper)."""
_BARE = re.compile(rf"^{_OPERATOR}$")
_OPERAND = re.compile(r"[\d)]$")
_STRONG = re.compile(rf"(?:\d|\)){_OPERATOR}|{_OPERATOR}-?\d|(?:^|\s){_OPERATOR}(?:\s|$)")
"""A quick test that a line may hold operators at all."""
_SUSPECT = re.compile(r"\d|[()\[\]<>]|[\x00-\x08\x0b-\x1f\x7f-\x9f]|^" + _OPERATOR + r"$")
_MAX_GAP = 2
"""Plain tokens a garbage run may span between two suspicious ones."""


def _garbage_span(tokens: list[str]) -> tuple[int, int] | None:
    """The token range ``[start, end)`` of the operator garbage in one line's tokens, or None.

    Operators where a content stream has them: a bare operator after a number or a string's ``)``
    (``0.0224 Tc``, ``(e) Tj``), or one glued to its operand; two are needed, one of them not merely
    glued to the number after it, or one and a control character. A lone ``BT`` or ``ET`` in prose
    (``AT&T, BT, C&W``; ``ET-302``) and a citation key (``[TL05]``) are not operators."""
    firm = [i for i, tok in enumerate(tokens) if _OPERAND_BEFORE.search(tok)
            or (i and _BARE.match(tok) and _OPERAND.search(tokens[i - 1]))]
    glued = [i for i, tok in enumerate(tokens) if i not in firm and _OPERAND_AFTER.search(tok)]
    controls = any(_is_non_text(ch) for tok in tokens for ch in tok)
    if not firm or (len(firm) + len(glued) < 2 and not controls):
        return None
    strong = sorted(firm + glued)
    start = strong[0]
    while start > 0 and _SUSPECT.search(tokens[start - 1]):
        start -= 1
    end, gap = strong[-1] + 1, 0
    for i in range(end, len(tokens)):
        if _SUSPECT.search(tokens[i]):
            end, gap = i + 1, 0
        else:
            gap += 1
            if gap > _MAX_GAP:
                break
    return start, end


def strip_operator_garbage(text: str) -> tuple[str, int]:
    """``text`` without the runs of content-stream operators a damaged stream leaks into it, and how
    many characters were removed.

    A run is found in a line holding two operators where a content stream has them (:data:`_STRONG`:
    ``0.0224 Tc``, ``(e) Tj``, ``TD28``), or one and a control character; it spreads from the first to
    the last of them, and outwards over the tokens that hold a digit, a bracket or a control character
    (``a8 -13.4102T8 01 Tc 9ir11i7a(e) Tj``), crossing at most :data:`_MAX_GAP` plain words. The words
    of the line outside the run stay; a line left empty goes.
    """
    removed = 0
    lines: list[str] = []
    for line in text.split("\n"):
        tokens = line.split(" ")
        span = _garbage_span(tokens) if _STRONG.search(line) else None
        if span is None:
            lines.append(line)
            continue
        kept = " ".join(tokens[:span[0]] + tokens[span[1]:]).strip()
        removed += len(line) - len(kept) + (not kept)  # a line dropped takes its line break along
        if kept:
            lines.append(kept)
    return "\n".join(lines), removed


def page_ranges(numbers: list[int]) -> str:
    """``[3, 4, 5, 9]`` -> ``"3-5, 9"``."""
    runs: list[list[int]] = []
    for n in sorted(numbers):
        if runs and n == runs[-1][1] + 1:
            runs[-1][1] = n
        else:
            runs.append([n, n])
    return ", ".join(f"{a}-{b}" if b > a else str(a) for a, b in runs)


@dataclass(frozen=True)
class Damage:
    """Damage found in a PDF apart from OCR: 1-based pages PDFium could not load (``unreadable``),
    pages whose content stream is damaged (``streams``), characters of operator garbage removed per
    page (``stripped``), and damaged streams that are no page's content, by object number (``other``);
    each with its reason."""

    unreadable: dict[int, str] = field(default_factory=dict)
    streams: dict[int, str] = field(default_factory=dict)
    stripped: dict[int, int] = field(default_factory=dict)
    other: dict[int, str] = field(default_factory=dict)


def page_outcomes(texts: list[str], ocr_pages: list[OcrPageInfo], ocr_failed: list[OcrFailure],
                  damage: Damage, min_confidence: float) -> tuple[list[PageOutcome], list[str]]:
    """One outcome per page of a PDF (in page order) and the warning lines that name the pages.

    ``texts`` are the page texts after OCR (one per page); ``ocr_pages`` / ``ocr_failed`` what OCR
    read and could not read; ``damage`` what else was found (:class:`Damage`); ``min_confidence`` the
    OCR threshold (0-1), quoted in the warning. Warnings: one line per kind of trouble, pages named
    (``"pages 11, 14: ..."``); none for a clean document.
    """
    unreadable = damage.unreadable
    damaged = damage.streams.keys() | damage.stripped.keys()
    read = {p.page: p for p in ocr_pages}
    failed = {f.page: f.reason for f in ocr_failed}
    outcomes: list[PageOutcome] = []
    garbage: dict[int, float] = {}
    for number, text in enumerate(texts, start=1):
        info = read.get(number)
        if number in unreadable or number in failed:
            outcomes.append("unreadable")
        elif info is not None:
            outcomes.append("ocr_low_confidence" if info.low_confidence else "ocr")
        elif number in damaged:
            outcomes.append("damaged")
        elif not text.strip():
            outcomes.append("empty")
        elif (share := garbage_share(text)) > GARBAGE_MAX_SHARE:
            garbage[number] = share
            outcomes.append("unreadable")
        else:
            outcomes.append("text")
    lines = _damage_warnings(outcomes, damage)
    return outcomes, lines + _warnings(outcomes, read, failed, unreadable, garbage, min_confidence)


def _damage_warnings(outcomes: list[PageOutcome], damage: Damage) -> list[str]:
    """The warning lines for damaged content streams and stripped operator garbage."""
    lines: list[str] = []
    pages = sorted(n for n in damage.streams.keys() | damage.stripped.keys() if outcomes[n - 1] == "damaged")
    if pages:
        why = []
        streams = [n for n in pages if n in damage.streams]
        if streams:
            why.append("; ".join(f"page {n}: {damage.streams[n]}" for n in streams))
        removed = sum(damage.stripped.get(n, 0) for n in pages)
        if removed:
            why.append(f"{removed} characters of content-stream operators removed from the text")
        lines.append(f"pages {page_ranges(pages)}: damaged ({'; '.join(why)}); only what PDFium could draw is indexed")
    if damage.other:
        objects = ", ".join(str(n) for n in sorted(damage.other))
        lines.append(f"objects {objects}: a compressed stream that is no page's content (a font, an image or a "
                     "form) is damaged; the pages using it may miss text or show it wrongly")
    return lines


def _warnings(outcomes: list[PageOutcome], read: dict[int, OcrPageInfo], failed: dict[int, str],
              unreadable: dict[int, str], garbage: dict[int, float], min_confidence: float) -> list[str]:
    """The warning lines of :func:`page_outcomes` for pages not loaded, OCR trouble, garbage and empty pages."""
    lines: list[str] = []
    if unreadable:
        reasons = "; ".join(sorted(set(unreadable.values())))
        lines.append(f"pages {page_ranges(list(unreadable))}: PDFium could not load them ({reasons}); nothing indexed from them")
    if failed:
        lines.append(f"pages {page_ranges(list(failed))}: OCR could not read them ("
                     + "; ".join(f"page {p}: {r}" for p, r in sorted(failed.items())) + ")")
    if garbage:
        worst = max(garbage.values())
        lines.append(f"pages {page_ranges(list(garbage))}: text is garbage (up to {worst:.0%} non-text characters: a "
                     "damaged content stream, or a font without a Unicode map); indexed as it is")
    low = [p for p, info in read.items() if info.low_confidence]
    if low:
        skipped = [p for p in low if read[p].skipped]
        worst = min(read[p].mean_confidence for p in low)
        what = ("left out (LONGDOC_OCR_LOW_CONFIDENCE=skip)" if len(skipped) == len(low) else
                "indexed with ocr_low_confidence on their chunks" if not skipped else
                f"pages {page_ranges(skipped)} left out, the others indexed with ocr_low_confidence")
        lines.append(f"pages {page_ranges(low)}: OCR read them with low confidence (mean word confidence down to "
                     f"{worst:.2f}, under {min_confidence:.2f}); {what}")
    skewed = {p: abs(info.skew_degrees) for p, info in read.items()
              if info.skew_degrees is not None and abs(info.skew_degrees) > SKEW_FLAG_DEGREES}
    if skewed:
        lines.append(f"pages {page_ranges(list(skewed))}: scanned at a slant (lines tilted up to "
                     f"{max(skewed.values()):.1f} degrees, over {SKEW_FLAG_DEGREES:.0f}): OCR may read parts of "
                     "lines out of order; straighten the scan and ingest it again")
    empty = [n for n, o in enumerate(outcomes, start=1) if o == "empty"]
    if empty and len(empty) < len(outcomes):
        lines.append(f"pages {page_ranges(empty)}: no text (blank, a scan left unread, or a damaged page)")
    return lines


def by_outcome(outcomes: list[PageOutcome]) -> dict[str, list[int]]:
    """``["text", "empty", "text"]`` -> ``{"text": [1, 3], "empty": [2]}`` (outcomes present only, in
    :data:`OUTCOMES` order)."""
    grouped: dict[str, list[int]] = {}
    for outcome in OUTCOMES:
        pages = [n for n, o in enumerate(outcomes, start=1) if o == outcome]
        if pages:
            grouped[outcome] = pages
    return grouped


LOST_SHARE = 0.5
"""A page whose running headers and footers took more than this share (0-1) of its non-blank lines and of
its non-space characters "lost most of its text" and is named in a warning: body text gone with the
furniture would otherwise be silent. A page of one line (a folio alone) is never named. On the 32 PDFs of
``../shared/corpus`` two pages are named: the Chubb wording's cover (its 4 lines are the running title and
copyright notice) and a Federal Register page holding a figure and 1 line of text."""


def furniture_warnings(raw_texts: list[str], furniture: list[Furniture], groups: list[int]) -> list[str]:
    """The warning lines about what running-furniture removal did to a PDF: pages that lost most of their
    text to it (:data:`LOST_SHARE`), and a document whose every page is a copy of another.

    ``raw_texts`` are the page texts as read (one per page, before removal), ``furniture`` the removed
    lines (:class:`~longdoc.ingest.models.Furniture`, 1-based pages), ``groups`` the copy groups of
    ``raw_texts`` (:func:`~longdoc.ingest.parse.copies.copy_groups`). Raises nothing.
    """
    removed = [0] * len(raw_texts)
    removed_lines = [0] * len(raw_texts)
    for item in furniture:
        removed[item.page - 1] += sum(1 for ch in item.text if not ch.isspace())
        removed_lines[item.page - 1] += 1
    lost: dict[int, float] = {}
    for number, text in enumerate(raw_texts, start=1):
        chars = sum(1 for ch in text if not ch.isspace())
        lines = sum(1 for line in text.split("\n") if line.strip())
        if (lines > 1 and removed_lines[number - 1] > LOST_SHARE * lines
                and removed[number - 1] > LOST_SHARE * chars):
            lost[number] = min(1.0, removed[number - 1] / chars)
    warnings = []
    if lost:
        warnings.append(f"pages {page_ranges(list(lost))}: most of their text was removed as running headers and "
                        f"footers (up to {max(lost.values()):.0%} of the characters; the lines are counted in "
                        "furniture_lines): check that no body text went with them")
    return warnings + _copies_warning(raw_texts, groups)


def _copies_warning(pages: list[str], groups: list[int]) -> list[str]:
    """One warning line when every page with text is a copy of another page, naming each group of copies."""
    sets = copy_sets(groups, pages)
    with_text = sum(1 for page in pages if page.strip())
    if not sets or sum(len(found) for found in sets) < with_text:
        return []
    named = [f"pages {page_ranges(found)} "
             f"{'are identical' if identical([pages[n - 1] for n in found]) else 'repeat one page, a few lines changed'}"
             for found in sets]
    return ["; ".join(named) + ": the document is copies of the same text; each copy is kept and indexed on its "
            "own page (nothing on them is removed as a running header or footer for repeating)"]
