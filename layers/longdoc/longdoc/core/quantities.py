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
_WORD = re.compile(r"[^\W\d_][^\W_]*(?:[-'][^\W_]+)*|\d+(?:[.,]\d+)*", re.UNICODE)
_SPACES = re.compile(r"[\s\u00a0\u202f\u2009]+")
_NUM = re.compile(r"\d{1,3}(?:[,\u00a0\u202f' ]\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?")


@dataclass(frozen=True)
class Quantity:
    """A number of a text and the word it goes with: ``value`` (Decimal), ``after`` (the counted
    noun's stem) or ``before`` (the word before it, lower case), ``raw`` as written."""

    value: Decimal
    raw: str
    after: str | None = None
    before: str | None = None


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
        after = None
        for nxt, _ in words[i + 1:i + 3]:
            if nxt.lower() in NUMBER_WORDS:  # "30 (thirty) days"
                continue
            if nxt[0].isalpha() and nxt.lower() not in _SKIP:
                after = nxt.lower()[:STEM_CHARS]
            break
        before = words[i - 1][0].lower() if after is None and i and words[i - 1][0][0].isalpha() else None
        out.append(Quantity(value, token, after, before))
    return out


def find_quantity(quantity: Quantity, source: str) -> int | None:
    """Offset in ``source`` where ``quantity``'s number stands with its word (module docstring), or None.

    A quantity with neither word (``... in 2024.``) is found as the same number anywhere.
    """
    words = _words(source)
    for i, (token, at) in enumerate(words):
        if _number(token) != quantity.value:
            continue
        if quantity.after is not None:
            if any(w.lower()[:STEM_CHARS] == quantity.after for w, _ in words[i + 1:i + 1 + NOUN_WINDOW]):
                return at
        elif quantity.before is not None:
            if i and words[i - 1][0].lower() == quantity.before:
                return at
        else:
            return at
    return None


def describe(quantity: Quantity) -> str:
    """How a quantity reads in a message: ``'4 subcontract…'``, ``'Schedule 4'``."""
    if quantity.after:
        return f"{quantity.raw} {quantity.after}…"
    return f"{quantity.before} {quantity.raw}" if quantity.before else quantity.raw
