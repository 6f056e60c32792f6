"""Scoring conventions of the gold sets (``/work/shared/gold/README.md``, "Scoring conventions").

Text is compared after Unicode NFKC, lowercasing and collapsing whitespace. A snippet is
contained in a text when at least 80% of the snippet's word tokens occur in the text as
an in-order subsequence, i.e. when the longest common subsequence (LCS) of the two token
sequences covers 80% of the snippet's tokens. The LCS length is computed with the
bit-parallel algorithm of Allison & Dix (1986) / Hyyrö (2004), one big-integer step per
snippet token, so long texts cost little.
"""

from __future__ import annotations

import re
import unicodedata
from collections import defaultdict
from collections.abc import Iterable, Sequence
from typing import TypeVar

T = TypeVar("T")

THRESHOLD = 0.8
"""Share of the snippet's word tokens that must appear in order (gold README)."""

FLAG_BELOW = 0.90
"""A stratum scoring under this share (recall within budget, or accuracy) is flagged in the reports."""

_SPACE = re.compile(r"\s+")
_WORD = re.compile(r"\w+")


def normalise(text: str) -> str:
    """NFKC, lowercase, all whitespace runs collapsed to one space, stripped."""
    return _SPACE.sub(" ", unicodedata.normalize("NFKC", text).lower()).strip()


_PART = re.compile(r"#\d+$")
_ITEM = re.compile(r"\([^()]*\)$")


def enclosing_section_keys(section_id: str | None) -> set[str]:
    """The normalised id and every enclosing section it names: a citation of
    ``Article 33(3)(a)#2`` is in ``Article 33(3)(a)``, ``Article 33(3)`` and ``Article 33``,
    so it matches a gold section id given at any of those levels. Empty for None."""
    if not section_id:
        return set()
    key = normalise(section_id)
    keys = {key}
    key = _PART.sub("", key)
    while key:
        keys.add(key)
        shorter = _ITEM.sub("", key)
        if shorter == key:
            break
        key = shorter
    return keys


def strata_groups(rows: Iterable[tuple[dict, T]], keys: Sequence[str]) -> dict[tuple, list[T]]:
    """Group ``(meta, value)`` rows by the meta values of ``keys`` (a missing or empty value
    is ``"-"``), keeping row order inside each group: the strata of an eval report."""
    groups: dict[tuple, list[T]] = defaultdict(list)
    for meta, value in rows:
        groups[tuple(meta.get(k) or "-" for k in keys)].append(value)
    return groups


def words(text: str) -> list[str]:
    """Word tokens (``\\w+``) of the normalised text."""
    return _WORD.findall(normalise(text))


def masks(tokens: Sequence[str]) -> dict[str, int]:
    """Bit masks per token: bit ``i`` set where ``tokens[i]`` is that token."""
    out: dict[str, int] = {}
    for i, t in enumerate(tokens):
        out[t] = out.get(t, 0) | (1 << i)
    return out


def lcs_length(needle: Sequence[str], hay_masks: dict[str, int], hay_len: int) -> int:
    """Length of the longest common subsequence of ``needle`` and the text behind ``hay_masks``.

    ``hay_masks`` from :func:`masks` (or concatenated by :class:`Haystack`), ``hay_len``
    the text's token count. Bit-parallel: V starts all ones; for each needle token with
    match mask M, ``U = V & M; V = (V + U) | (V - U)``; the LCS is the number of zero bits
    of V within ``hay_len`` bits.
    """
    full = (1 << hay_len) - 1
    v = full
    for t in needle:
        m = hay_masks.get(t)
        if not m:
            continue
        u = v & m
        v = ((v + u) | (v - u)) & full
    return hay_len - bin(v).count("1")


def lcs_dp(a: Sequence[str], b: Sequence[str]) -> int:
    """Reference LCS by dynamic programming, O(len(a) x len(b)) (tests only)."""
    prev = [0] * (len(b) + 1)
    for x in a:
        cur = [0]
        for j, y in enumerate(b, 1):
            cur.append(prev[j - 1] + 1 if x == y else max(prev[j], cur[j - 1]))
        prev = cur
    return prev[-1]


def contains(text: str, snippet: str, threshold: float = THRESHOLD) -> bool:
    """True when ``text`` holds at least ``threshold`` of ``snippet``'s word tokens in order.

    An empty snippet is never contained (there is nothing to find).
    """
    needle = words(snippet)
    if not needle:
        return False
    hay = words(text)
    return lcs_length(needle, masks(hay), len(hay)) >= threshold * len(needle)


def overlaps(a: str, b: str, threshold: float = THRESHOLD) -> bool:
    """The 80% rule in either direction: ``a`` contains ``b`` or ``b`` contains ``a``."""
    return contains(a, b, threshold) or contains(b, a, threshold)


class Haystack:
    """Token masks of several texts (chunks), so that any subset can be tested quickly.

    ``add(key, text)`` once per chunk; ``contains(keys, needle)`` tests the concatenation
    of those chunks' tokens, in the order given, against the needle tokens.
    """

    def __init__(self) -> None:
        """Start empty."""
        self._masks: dict[str, dict[str, int]] = {}
        self._len: dict[str, int] = {}

    def add(self, key: str, text: str) -> None:
        """Index one text under ``key``."""
        toks = words(text)
        self._masks[key] = masks(toks)
        self._len[key] = len(toks)

    def lcs(self, keys: Sequence[str], needle: Sequence[str]) -> int:
        """LCS of ``needle`` with the concatenated tokens of ``keys`` (in that order)."""
        wanted = set(needle)
        joined: dict[str, int] = {}
        offset = 0
        for key in keys:
            for t, m in self._masks[key].items():
                if t in wanted:
                    joined[t] = joined.get(t, 0) | (m << offset)
            offset += self._len[key]
        return lcs_length(needle, joined, offset)

    def contains(self, keys: Sequence[str], needle: Sequence[str], threshold: float = THRESHOLD) -> bool:
        """True when the concatenation of ``keys`` holds ``threshold`` of ``needle`` in order."""
        if not needle or not keys:
            return False
        return self.lcs(keys, needle) >= threshold * len(needle)


def position(doc_text: str, snippet: str) -> str | None:
    """``front`` / ``middle`` / ``back`` third of ``doc_text`` where ``snippet`` starts, or None.

    Both are normalised; the snippet is located by its first 60 normalised characters,
    then by its first eight words joined by single spaces. None when neither is found.
    """
    doc = normalise(doc_text)
    snip = normalise(snippet)
    if not doc or not snip:
        return None
    at = doc.find(snip[:60])
    if at < 0:
        at = doc.find(" ".join(snip.split(" ")[:8]))
    if at < 0:
        return None
    third = at * 3 // max(len(doc), 1)
    return ("front", "middle", "back")[min(third, 2)]
