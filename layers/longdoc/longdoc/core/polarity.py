"""The polarity rule: a text that cites a passage must keep its negations, exceptions and modal verbs.

Shared by extraction's ``clause_text`` check (:func:`longdoc.extract.citations.check_clause_support`),
the summary statement check (:mod:`longdoc.summarize.checks`) and the triage reasons
(:mod:`longdoc.triage.answer`), so there is one rule (ours) and one wording of its failures:

* **added**: a :data:`POLARITY_WORDS` word of the text that no cited passage has;
* **dropped**: the text reads a passage's words around one of its polarity words with that
  word cut out (passage "shall not otherwise increase", text "shall otherwise increase", or
  ending "shall otherwise"; compared by stem, the first :data:`STEM_CHARS` characters), unless
  the passages read those words that way themselves (passage "shall be binding ... shall not
  be valid", text "shall be binding").
"""

from __future__ import annotations

import re
from collections.abc import Sequence

POLARITY_WORDS = frozenset({"not", "no", "never", "without", "except", "unless", "neither", "nor", "cannot",
                            "may", "shall", "must"})
"""Negations, exceptions and modal verbs: content words whose loss or addition flips what a clause says."""
STEM_CHARS = 6
"""Words are compared by their first 6 characters (``terminate`` ~ ``termination``), a crude stem."""
TOKEN = re.compile(r"[^\W_]+(?:[.,/-][^\W_]+)*", re.UNICODE)
"""A word or number token (``4.2``, ``$247.83`` without its symbol, ``non-refundable``)."""


def tokens(text: str) -> list[str]:
    """The lower-cased :data:`TOKEN` tokens of ``text``."""
    return [t.lower() for t in TOKEN.findall(text)]


def _triples(words: list[str]) -> set[tuple[str, str, str]]:
    """Runs of three tokens by stem, ``""`` before the first and after the last."""
    stems = ["", *(t[:STEM_CHARS] for t in words), ""]
    return set(zip(stems[:-2], stems[1:-1], stems[2:], strict=True))


def polarity_problem(text_tokens: list[str], passage_tokens: Sequence[list[str]], what: str = "clause_text",
                     added: bool = True) -> str | None:
    """Why ``text_tokens`` changes the polarity of the cited passages (module docstring), or None.

    ``text_tokens``/``passage_tokens``: lower-cased tokens (:func:`tokens`) of the text and of
    each cited passage; ``what`` names the text in the message (``"the statement"``);
    ``added=False`` checks only dropped words (a triage reason may say "not" in its own words).
    """
    in_passages = {t for p in passage_tokens for t in p}
    extra = sorted({t for t in text_tokens if t in POLARITY_WORDS and t not in in_passages}) if added else []
    if extra:
        return f"{what} says {', '.join(extra)} but no cited text does; keep the document's meaning"
    text_runs = _triples(text_tokens) - {run for words in passage_tokens for run in _triples(words)}
    for words in passage_tokens:
        stems = [t[:STEM_CHARS] for t in words] + [""]
        for at, token in enumerate(words[:-1]):
            before = stems[at - 1] if at else ""
            cut = {(before, stems[at + 1], stems[at + 2]), (before, stems[at + 1], "")}
            if token in POLARITY_WORDS and cut & text_runs:
                phrase = " ".join(words[max(at - 1, 0):at + 2])
                return (f"{what} drops {token!r} from the cited text's {phrase!r}; a dropped negation, exception or "
                        "modal verb changes the meaning")
    return None
