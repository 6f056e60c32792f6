"""Lay words of a loss mapped to the words insurance wordings use (``longdoc/data/loss_vocabulary.json``).

A claim tells its loss in everyday words ("suitcase", "pickpocketed", "mice"); wordings use their
own ("baggage", "theft", "vermin"). The wording's definitions section bridges only the terms it
defines with the claim's words (:func:`longdoc.triage.queries.defined_terms`); this map is the
rest: domain knowledge of the kind of document (property, travel, liability and motor wordings),
not of any one wording, with each entry's rationale in the data file. :func:`wording_terms`
returns the mapped terms **that the wording in force itself uses**, so an entry never adds a word
the wording lacks; triage ranks them as the ``wording terms`` query and adds them to ``loss``.
An entry marked ``"query": "condition"`` is a claimant's conduct after the loss told in everyday
words ("told him it was my fault", "threw the carpet out", "weeks later") mapped to the words of the
conditions that decide it ("admission", "inspection", "notice"); its terms join the ``condition``
query instead (:func:`condition_entries`).

Matching (:func:`lay_tokens`): lower case, whole words, a plural ``s`` folded (``bags`` = ``bag``),
a multi-word entry matched as a word sequence. An entry with a ``near`` list matches only when the
claim also says one of those words: a lay word with an everyday sense besides the insured one
(``bumped`` a shelf, a car bumped from behind) stands for the wording's term only beside its
context (``bumped`` next to ``flight``, ``airline`` or ``boarding``: denied boarding).
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Iterable
from dataclasses import dataclass
from importlib import resources

from longdoc.core.errors import TriageError

RESOURCE = "loss_vocabulary.json"
"""The map's file in the ``longdoc.data`` package."""
MAX_WORDING_TERMS = 8
"""Most mapped terms added per claim (first matched entries first)."""
_QUERIES = ("loss", "condition")
_WORD = re.compile(r"[a-z0-9]+(?:[-'][a-z0-9]+)*")


@dataclass(frozen=True)
class Entry:
    """One map entry: the lay phrases (as token tuples) and the wording terms they stand for."""

    lay: tuple[tuple[str, ...], ...]
    terms: tuple[str, ...]
    query: str = "loss"
    """The query the terms join: ``loss`` (the peril, the property) or ``condition`` (a claimant's duty)."""
    near: tuple[tuple[str, ...], ...] = ()
    """Context phrases (token tuples), one of which the text must also hold; empty: no condition."""


def lay_tokens(text: str) -> list[str]:
    """Lower-case word tokens of ``text`` with a plural ``s`` folded (``suitcases`` -> ``suitcase``)."""
    out = []
    for w in _WORD.findall(text.lower().replace("’", "'")):
        out.append(w[:-1] if len(w) > 3 and w.endswith("s") and not w.endswith("ss") else w)
    return out


def parse_vocabulary(text: str, name: str = RESOURCE) -> list[Entry]:
    """The entries of a vocabulary file's JSON text (``{"entries": [{"lay": [...], "terms": [...],
    "query": "loss" | "condition", "near": [...]}]}``; ``query`` absent: ``loss``; ``near`` absent:
    no context needed).

    Raises :class:`~longdoc.core.errors.TriageError` naming ``name`` when the JSON is invalid, an
    entry lacks a non-empty ``lay`` or ``terms`` list of strings, its ``query`` is another value, or
    its ``near`` is not a non-empty list of strings.
    """
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise TriageError(f"vocabulary {name} is not valid JSON ({exc})") from None
    entries = data.get("entries") if isinstance(data, dict) else None
    if not isinstance(entries, list):
        raise TriageError(f"vocabulary {name} needs an \"entries\" list")
    out = []
    for n, e in enumerate(entries, start=1):
        lay, terms = (e.get("lay"), e.get("terms")) if isinstance(e, dict) else (None, None)
        if not (isinstance(lay, list) and lay and isinstance(terms, list) and terms
                and all(isinstance(x, str) and x.strip() for x in [*lay, *terms])):
            raise TriageError(f"vocabulary {name}: entry {n} needs non-empty \"lay\" and \"terms\" lists of strings")
        query = e.get("query", "loss")
        if query not in _QUERIES:
            raise TriageError(f"vocabulary {name}: entry {n} has \"query\" {query!r}: one of {', '.join(_QUERIES)}")
        near = e.get("near", [])
        if "near" in e and not (isinstance(near, list) and near and all(isinstance(x, str) and x.strip() for x in near)):
            raise TriageError(f"vocabulary {name}: entry {n} has \"near\" {near!r}: a non-empty list of strings")
        out.append(Entry(tuple(tuple(lay_tokens(x)) for x in lay), tuple(terms), query,
                         tuple(tuple(lay_tokens(x)) for x in near)))
    return out


@functools.lru_cache(maxsize=1)
def _packaged() -> tuple[Entry, ...]:
    text = resources.files("longdoc.data").joinpath(RESOURCE).read_text(encoding="utf-8")
    return tuple(parse_vocabulary(text))


@functools.lru_cache(maxsize=1)
def default_vocabulary() -> tuple[Entry, ...]:
    """The packaged map's ``loss`` entries (read and split once): lay words of the peril and the property."""
    return tuple(e for e in _packaged() if e.query == "loss")


@functools.lru_cache(maxsize=1)
def condition_entries() -> tuple[Entry, ...]:
    """The packaged map's ``condition`` entries: a claimant's conduct after the loss in everyday words
    mapped to the words of the conditions that decide it (notice, admission, inspection, cooperation)."""
    return tuple(e for e in _packaged() if e.query == "condition")


def _has(tokens: list[str], phrase: tuple[str, ...]) -> bool:
    n = len(phrase)
    return n > 0 and any(tuple(tokens[i:i + n]) == phrase for i in range(len(tokens) - n + 1))


def wording_terms(text: str, wording_tokens: set[str], entries: Iterable[Entry] | None = None,
                  limit: int = MAX_WORDING_TERMS) -> list[str]:
    """The wording terms for ``text``'s lay words that the wording uses (every word of the term in
    ``wording_tokens``, the :func:`lay_tokens` of the wording's clauses), not already in ``text``,
    each once, at most ``limit``; an entry with ``near`` phrases only when ``text`` holds one."""
    tokens = lay_tokens(text)
    have = set(tokens)
    out: list[str] = []
    for entry in entries if entries is not None else default_vocabulary():
        if not any(_has(tokens, p) for p in entry.lay) or (entry.near and not any(_has(tokens, p) for p in entry.near)):
            continue
        for term in entry.terms:
            words = lay_tokens(term)
            if words and all(w in wording_tokens for w in words) and not set(words) <= have and term not in out:
                out.append(term)
    return out[:limit]
