"""Content words: how a text's words are compared with the text that supports it.

Extraction checks a clause's text against its quotes with these (:func:`longdoc.extract.citations.check_clause_support`);
a summary statement's supporting sentences are chosen with them (:mod:`longdoc.summarize.checks`).
"""

from __future__ import annotations

import re

TOKEN = re.compile(r"[^\W_]+(?:[.,/-][^\W_]+)*", re.UNICODE)
"""A word: letters and digits, with inner ``.,/-`` (``4.2``, ``and/or``, ``co-insured``)."""
STOPWORDS = frozenset({
    "a", "an", "and", "any", "are", "as", "at", "be", "by", "for", "from", "has", "have", "in", "is", "it", "its",
    "of", "on", "or", "such", "that", "the", "their", "then", "there", "these",
    "this", "to", "under", "upon", "was", "were", "which", "will", "with", "within"
})
"""Words that carry no content of their own (ours: the commonest English function words of clauses)."""

SUPPORT_STEM_CHARS = 6
"""Words are compared by their first 6 characters (``terminate`` ~ ``termination``), a crude stem."""
SUPPORT_MIN_SHARE = 0.6
"""At least 60% of clause_text's content words must occur in the quotes (by stem)."""


def content_stems(text: str) -> set[str]:
    """The content words of ``text`` as :func:`longdoc.extract.citations.check_clause_support` compares them: tokens without
    digits, stop words removed, lower-cased and cut to :data:`SUPPORT_STEM_CHARS` characters."""
    return {t.lower()[:SUPPORT_STEM_CHARS] for t in TOKEN.findall(text)
            if t.lower() not in STOPWORDS and not any(ch.isdigit() for ch in t)}
