"""What became of each PDF page, and the warnings a damaged or poorly read document gets (issue 27).

Every page gets one outcome (:data:`PageOutcome`):

* ``text``: its text layer was read;
* ``ocr``: OCR read it (mean word confidence at or over the threshold);
* ``ocr_low_confidence``: OCR read it under the threshold (indexed with ``ocr_low_confidence`` on
  its chunks, or left out with ``LONGDOC_OCR_LOW_CONFIDENCE=skip``);
* ``empty``: no text (a blank page, a scan left unread with OCR off, or a page whose content
  stream is damaged: PDFium draws nothing of it);
* ``unreadable``: PDFium could not load the page, OCR could not read its image, or its text is
  garbage (:func:`garbage_share` over :data:`GARBAGE_MAX_SHARE`: the characters a damaged content
  stream or a font without a Unicode map yields; the text is still indexed as it is).

Measured on an 18-page text PDF with 200 random bytes written over its middle (PDFium 5.x through
pypdfium2): with six seeds, five gave page 11 without text and one a page PDFium refuses to load
("Failed to load page"); on four corpus PDFs the same damage empties or truncates one page. Every
page that is not ``text`` or ``ocr`` is named in one warning line per outcome, so a damaged
document is never ingested silently.
"""

from __future__ import annotations

import re
import unicodedata
from typing import Literal

from longdoc.ingest.models import OcrFailure, OcrPageInfo

PageOutcome = Literal["text", "ocr", "ocr_low_confidence", "empty", "unreadable"]
"""What one page became (module docstring)."""
OUTCOMES: tuple[PageOutcome, ...] = ("text", "ocr", "ocr_low_confidence", "empty", "unreadable")
GARBAGE_MAX_SHARE = 0.10
"""Share (0-1) of a page's non-space characters that may be non-text before the page is garbage."""
_NON_TEXT_CATEGORIES = {"Cc", "Co", "Cn", "Cs"}
_KEEP = {"\n", "\t", "\ufffe"}  # line breaks and PDFium's line-end hyphen marker (resolved later)
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
    (random bytes decoded as WinAnsi). 0.0 for a text without non-space characters."""
    visible = sum(1 for ch in text if not ch.isspace())
    if not visible:
        return 0.0
    bad = sum(1 for ch in text if _is_non_text(ch))
    bad += sum(len(m.group()) for m in _SYMBOL_RUN.finditer(text)
               if len(set(m.group())) >= 4 and not any(_is_non_text(ch) for ch in m.group()))
    bad += sum(len(m.group()) for m in _LETTER_RUN.finditer(text))
    bad += sum(len(m.group()) for m in _LATIN1_RUN.finditer(text) if not _LETTER_RUN.fullmatch(m.group()))
    return min(1.0, bad / visible)


def _pages(numbers: list[int]) -> str:
    """``[3, 4, 5, 9]`` -> ``"3-5, 9"``."""
    runs: list[list[int]] = []
    for n in sorted(numbers):
        if runs and n == runs[-1][1] + 1:
            runs[-1][1] = n
        else:
            runs.append([n, n])
    return ", ".join(f"{a}-{b}" if b > a else str(a) for a, b in runs)


def page_outcomes(texts: list[str], ocr_pages: list[OcrPageInfo], ocr_failed: list[OcrFailure],
                  unreadable: dict[int, str], min_confidence: float) -> tuple[list[PageOutcome], list[str]]:
    """One outcome per page of a PDF (in page order) and the warning lines that name the pages.

    ``texts`` are the page texts after OCR (one per page); ``ocr_pages`` / ``ocr_failed`` what OCR
    read and could not read; ``unreadable`` the 1-based pages PDFium could not load, with its
    reason; ``min_confidence`` the OCR threshold (0-1), quoted in the warning. Warnings: one line
    per kind of trouble, pages named (``"pages 11, 14: ..."``); none for a clean document.
    """
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
        elif not text.strip():
            outcomes.append("empty")
        elif (share := garbage_share(text)) > GARBAGE_MAX_SHARE:
            garbage[number] = share
            outcomes.append("unreadable")
        else:
            outcomes.append("text")
    return outcomes, _warnings(outcomes, read, failed, unreadable, garbage, min_confidence)


def _warnings(outcomes: list[PageOutcome], read: dict[int, OcrPageInfo], failed: dict[int, str],
              unreadable: dict[int, str], garbage: dict[int, float], min_confidence: float) -> list[str]:
    """The warning lines of :func:`page_outcomes`."""
    lines: list[str] = []
    if unreadable:
        reasons = "; ".join(sorted(set(unreadable.values())))
        lines.append(f"pages {_pages(list(unreadable))}: PDFium could not load them ({reasons}); nothing indexed from them")
    if failed:
        lines.append(f"pages {_pages(list(failed))}: OCR could not read them ("
                     + "; ".join(f"page {p}: {r}" for p, r in sorted(failed.items())) + ")")
    if garbage:
        worst = max(garbage.values())
        lines.append(f"pages {_pages(list(garbage))}: text is garbage (up to {worst:.0%} non-text characters: a "
                     "damaged content stream, or a font without a Unicode map); indexed as it is")
    low = [p for p, info in read.items() if info.low_confidence]
    if low:
        skipped = [p for p in low if read[p].skipped]
        worst = min(read[p].mean_confidence for p in low)
        what = ("left out (LONGDOC_OCR_LOW_CONFIDENCE=skip)" if len(skipped) == len(low) else
                "indexed with ocr_low_confidence on their chunks" if not skipped else
                f"pages {_pages(skipped)} left out, the others indexed with ocr_low_confidence")
        lines.append(f"pages {_pages(low)}: OCR read them with low confidence (mean word confidence down to "
                     f"{worst:.2f}, under {min_confidence:.2f}); {what}")
    empty = [n for n, o in enumerate(outcomes, start=1) if o == "empty"]
    if empty and len(empty) < len(outcomes):
        lines.append(f"pages {_pages(empty)}: no text (blank, a scan left unread, or a damaged page)")
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
