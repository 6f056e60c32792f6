"""Numbers checked with what they count: a number in a text must appear in its source with its unit or noun.

Shared by the summary statement check (:mod:`longdoc.summarize.checks`) and extraction's
``clause_text`` check (:func:`longdoc.extract.citations.check_clause_support`). The rule (ours;
issue 28):

* an **exact value** (amount with its currency and scale, percentage, date, range:
  :func:`longdoc.core.values.exact_values`) must occur in the source as the same value:
  compared after normalising whitespace (NBSP, thin spaces) and thousands separators, so
  ``EUR 12480.00`` matches ``EUR 12,480.00``; its number must be equal (``Decimal``), so a
  rounding (``EUR 12,500`` for ``EUR 12,480.00``) is refused, and its currency must be the same;
* a **bare number** is read with the word it counts or measures: the next word when it is a
  noun-like word (``4 subcontractors``, ``30 days``; a parenthesised number word in between is
  skipped: ``30 (thirty) days``), else the word before it (``Schedule 4``, ``clause 7``). The
  source must hold the same number with that word: the noun within the next two words
  (``three approved subcontractors``) or the word just before. ``4 subcontractors`` is refused
  against a source that says ``three subcontractors`` and ``Schedule 4``;
* a **reference label** is never a count: a number right after a :data:`LABEL_WORDS` word
  (``Section 4``, ``Schedule 4``, ``clause 4.2``, ``Article 4``) or a section number opening a
  line (``4. Subcontracting``, ``## 4 Subcontracting``, ``4.2 Fees``, ``(4) Notices``). In the
  source it supports only the same reference (``Schedule 4``; a line-opening number also
  ``Section 4``), never ``4 subcontractors`` or ``9 termination rights`` (for ``9. Termination``);
  in a text it is read as a reference (its word before it), not as a count of the next word;
* **number words**: ``one`` to ``twenty`` equal their digits, both ways (``3 subcontractors`` is
  supported by ``three subcontractors``): restating a count in digits is not a change of value,
  and contracts often write counts in words. Larger number words are not read.

Words are compared by stem (their first :data:`STEM_CHARS` characters, ``subcontractor`` ~
``subcontractors``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation

from longdoc.core.values import exact_values

STEM_CHARS = 6
"""Nouns are compared by their first 6 characters (``subcontractor`` ~ ``subcontractors``)."""
NOUN_WINDOW = 2
"""The counted noun may follow the number in the source within this many words (``3 approved sub...``; not further: ``Schedule 4 lists the subcontractors`` is no count)."""
NUMBER_WORDS = {w: n for n, w in enumerate(
    ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven", "twelve", "thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen", "nineteen", "twenty"])}
"""Number words read as counts (``three`` = 3)."""
_SKIP = frozenset({"a", "an", "and", "any", "as", "at", "by", "for", "from", "in", "is", "of", "on", "or", "per",
                   "than", "that", "the", "to", "up", "with", "within", "are", "be", "was", "were", "will"})
LABEL_WORDS = frozenset({"section", "sections", "clause", "clauses", "article", "articles", "schedule", "schedules",
                         "part", "parts", "annex", "annexes", "exhibit", "exhibits", "appendix", "appendices",
                         "paragraph", "paragraphs", "chapter", "chapters", "item", "items", "rule", "rules",
                         "page", "pages", "§", "sec", "art", "para"})
"""Words a number after which is a reference label, not a count (``Section 4``, ``clause 4.2``)."""
_LINE_OPENING = re.compile(r"[ \t#>*(\[]*")
"""What may stand before a section number opening a line: spaces, Markdown heading/quote/list marks, ``(``."""
_WORD = re.compile(r"[^\W\d_][^\W_]*(?:[-'][^\W_]+)*|\d+(?:[.,]\d+)*", re.UNICODE)
_SPACES = re.compile(r"[\s\u00a0\u202f\u2009]+")
_NUM = re.compile(r"\d{1,3}(?:[,\u00a0\u202f' ]\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?")


@dataclass(frozen=True)
class Quantity:
    """A number of a text and the word it goes with: ``value`` (Decimal), ``after`` (the counted
    noun's stem) or ``before`` (the word before it, lower case), ``raw`` as written; ``label``: the
    number is itself a section number in the text (:func:`_states_label`), which a section number
    of the source written the same way supports (a reference quoted as a reference)."""

    value: Decimal
    raw: str
    after: str | None = None
    before: str | None = None
    label: bool = False


def _number(token: str) -> Decimal | None:
    """``"12,480.00"`` -> 12480.00, ``"three"`` -> 3; None for anything else."""
    word = NUMBER_WORDS.get(token.lower())
    if word is not None:
        return Decimal(word)
    digits = token.replace(",", "").replace("\u00a0", "").replace("\u202f", "").replace("'", "").replace(" ", "")
    try:
        return Decimal(digits) if re.fullmatch(r"\d+(?:\.\d+)?", digits) else None
    except InvalidOperation:  # pragma: no cover - the pattern admits only decimals
        return None


def value_key(value: str) -> tuple[str, tuple[Decimal, ...]]:
    """An exact value normalised for comparison: its non-number text (currency, ``%``, month; spaces
    and case folded) and its numbers (Decimals, thousands separators removed)."""
    text = _SPACES.sub(" ", value).strip()
    numbers = tuple(d for d in (_number(m.group(0)) for m in _NUM.finditer(text)) if d is not None)
    rest = _SPACES.sub("", _NUM.sub("#", text)).lower()
    return rest, numbers


def find_value(value: str, source: str) -> int | None:
    """Offset in ``source`` of an exact value equal to ``value`` (:func:`value_key`), or None."""
    wanted = value_key(value)
    for found in exact_values(source):
        if value_key(found) == wanted:
            return source.find(found)
    return None


def _words(text: str) -> list[tuple[str, int]]:
    return [(m.group(0), m.start()) for m in _WORD.finditer(text)]


def _opens_line(text: str, token: str, at: int) -> bool:
    """True when the number ``token`` at offset ``at`` is a section number opening a line (module docstring)."""
    line_start = text.rfind("\n", 0, at) + 1
    prefix = text[line_start:at]
    if _LINE_OPENING.fullmatch(prefix) is None:
        return False
    after = text[at + len(token):at + len(token) + 2]
    heading = "#" in prefix
    return (heading or after[:1] in (".", ")", "]") and (after[1:2].isspace() or after[1:2] == "")
            or "." in token and after[:1] == " ")


def is_label(text: str, words: list[tuple[str, int]], i: int) -> bool:
    """True when ``words[i]`` (a number of ``text``, :func:`_words`) is a reference label, not a count."""
    if i and words[i - 1][0].lower().rstrip(".") in LABEL_WORDS:
        return True
    return _opens_line(text, words[i][0], words[i][1])


def bare_quantities(text: str) -> list[Quantity]:
    """The bare numbers of ``text`` (outside its exact values) with the word each goes with (module docstring)."""
    rest = text
    for found in exact_values(text):
        rest = rest.replace(found, " ")
    words = _words(rest)
    out: list[Quantity] = []
    for i, (token, _) in enumerate(words):
        if not token[0].isdigit():
            continue
        value = _number(token)
        if value is None:
            continue
        if i and words[i - 1][0].lower().rstrip(".") in LABEL_WORDS:  # "Schedule 4": a reference
            out.append(Quantity(value, token, None, words[i - 1][0].lower()))
            continue
        after = None
        for nxt, _ in words[i + 1:i + 3]:
            if nxt.lower() in NUMBER_WORDS:  # "30 (thirty) days"
                continue
            if nxt[0].isalpha() and nxt.lower() not in _SKIP:
                after = nxt.lower()[:STEM_CHARS]
            break
        before = words[i - 1][0].lower() if after is None and i and words[i - 1][0][0].isalpha() else None
        out.append(Quantity(value, token, after, before, _states_label(rest, words, i)))
    return out


def _states_label(text: str, words: list[tuple[str, int]], i: int) -> bool:
    """True when ``words[i]`` of a statement is a section number: one opening a line (``4. Fees``),
    or a dotted number before a capitalised word (``35.1 This Agreement``: clause text whose
    lines were joined). ``uses 4 subcontractors`` is a count, never a label."""
    token, at = words[i]
    if _opens_line(text, token, at):
        return True
    return "." in token and i + 1 < len(words) and words[i + 1][0][:1].isupper()


def find_quantity(quantity: Quantity, source: str) -> int | None:
    """Offset in ``source`` where ``quantity``'s number stands with its word (module docstring), or None.

    A quantity with neither word (``... in 2024.``) is found as the same number anywhere but in a
    reference label; a label (:func:`is_label`) supports only a ``before`` quantity: the same
    word before it, or (a section number opening a line) any :data:`LABEL_WORDS` word.
    """
    words = _words(source)
    heading: int | None = None  # a line-opening section number: found only if no "Schedule 4" is
    for i, (token, at) in enumerate(words):
        if _number(token) != quantity.value:
            continue
        label = is_label(source, words, i)
        if label and quantity.label and token == quantity.raw:
            return at  # a section number quoted as one ("35.1 This Agreement ...")
        if label and quantity.before is None:
            continue  # "4. Subcontracting", "Schedule 4": a reference, never a count
        if _stands_with(quantity, words, i):
            return at
        if (label and heading is None and quantity.before is not None
                and quantity.before.rstrip(".") in LABEL_WORDS and _opens_line(source, token, at)):
            heading = at
    return heading


def _stands_with(quantity: Quantity, words: list[tuple[str, int]], i: int) -> bool:
    """True when ``words[i]`` (the same number) has ``quantity``'s word: its noun within
    :data:`NOUN_WINDOW` after it, or the same word just before it, or neither word wanted."""
    if quantity.after is not None:
        return any(w.lower()[:STEM_CHARS] == quantity.after for w, _ in words[i + 1:i + 1 + NOUN_WINDOW])
    if quantity.before is not None:
        return bool(i) and words[i - 1][0].lower() == quantity.before
    return True


def describe(quantity: Quantity) -> str:
    """How a quantity reads in a message: ``'4 subcontract…'``, ``'Schedule 4'``."""
    if quantity.after:
        return f"{quantity.raw} {quantity.after}…"
    return f"{quantity.before} {quantity.raw}" if quantity.before else quantity.raw
