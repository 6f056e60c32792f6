"""Exact values in document text: amounts with their currency and scale, percentages, ranges, dates.

:func:`exact_values` returns each value as the exact span of the text, whole: the currency
symbol or code (before or after), the scale word (``million``, ``bn``), the percent sign and
both ends of a range belong to the value (``$10 million``, ``1.500,00 EUR``, ``10-15%``). A
bare number with no unit is not an exact value here (it could be a clause number or a count),
so nothing partial is ever pinned. Used to pin values into CASE_FACTS verbatim (the reference
architecture's rule: exact values such as ``$247.83`` are never paraphrased).
"""

from __future__ import annotations

import re

_CODES = r"(?:USD|EUR|GBP|CAD|AUD|NZD|CHF|JPY|CNY|INR|SEK|NOK|DKK|HKD|SGD|ZAR|MXN|BRL|RUB|KRW)"
_SYMBOL = r"(?:US\$|C\$|A\$|NZ\$|HK\$|S\$|R\$|[$€£¥₹])"
# 1,234,567.89 | 1.234.567,89 | 1 234 567 | 1'234'567 | 1234.5 ; the separators must group by three.
_NUMBER = r"(?:\d{1,3}(?:(?:,\d{3})+|(?:\.\d{3})+|(?:[\u00a0\u202f ]\d{3})+|(?:'\d{3})+)(?:[.,]\d{1,4})?|\d+(?:[.,]\d{1,4})?)"
_SCALE = r"(?:thousand|million|billion|trillion|mn|bn|m|k|MM)"
_DASH = r"\s?[-–—]\s?"
_AMOUNT = rf"{_NUMBER}(?:{_DASH}{_NUMBER})?(?:\s?{_SCALE}\b)?"
_PREFIX_MONEY = rf"{_SYMBOL}\s?{_NUMBER}(?:{_DASH}{_SYMBOL}?\s?{_NUMBER})?(?:\s?{_SCALE}\b)?"
_CODE_MONEY = rf"\b{_CODES}\s?{_AMOUNT}"
_SUFFIX_MONEY = rf"{_AMOUNT}\s?(?:{_CODES}\b|[€£¥₹]|(?:dollars|euros|pounds)\b)"
_PERCENT = rf"{_NUMBER}(?:\s?%)?(?:{_DASH}{_NUMBER})?\s?(?:%|percent\b|per\s?cent\b)"
_MONTHS = (r"(?:January|February|March|April|May|June|July|August|September|October|November|December|"
           r"Jan|Feb|Mar|Apr|Jun|Jul|Aug|Sep|Sept|Oct|Nov|Dec)\.?")
_DATE = (rf"(?:{_MONTHS}\s\d{{1,2}}(?:st|nd|rd|th)?,?\s\d{{4}}"
         rf"|\d{{1,2}}(?:st|nd|rd|th)?\s(?:day\sof\s)?{_MONTHS},?\s\d{{4}}"
         r"|\d{4}-\d{2}-\d{2}|\d{1,2}/\d{1,2}/\d{4}|\d{1,2}\.\d{1,2}\.\d{4})")

EXACT_VALUE = re.compile(
    rf"(?<![\w$€£¥₹.,])(?:{_DATE}|{_PREFIX_MONEY}|{_CODE_MONEY}|{_SUFFIX_MONEY}|{_PERCENT})(?![\w%]|[.,]\d)",
    re.IGNORECASE,
)
"""One exact value, whole; the lookarounds refuse a match that would cut a longer token."""


def exact_values(text: str) -> list[str]:
    """Return the exact values of ``text`` in order of appearance, each the verbatim span, duplicates kept once.

    ``"up to $10 million per claim and $30 million in the aggregate"`` ->
    ``["$10 million", "$30 million"]``; ``"USD 2,450.00"``, ``"1.500,00 EUR"``, ``"10-15%"``,
    ``"January 1, 2024"`` come back whole. Never raises.
    """
    out: list[str] = []
    for match in EXACT_VALUE.finditer(text):
        value = match.group(0).strip()
        if value not in out:
            out.append(value)
    return out


def without_values(text: str) -> str:
    """``text`` with each of its :func:`exact_values` replaced by one space (whitespace otherwise as it is):
    ``"paid $250 on 2 March 2024 for"`` -> ``"paid   on   for"``. Never raises."""
    for value in exact_values(text):
        text = text.replace(value, " ")
    return text
