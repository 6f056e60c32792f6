"""Does a claim look like English? Triage ranks with English tools (BM25's English stop words and
crude plural stemming, :mod:`longdoc.search.bm25`; the English MiniLM embedding model), so a claim in
another language still runs but its clauses may be missed: the CLI says so on stderr (issue 31).

A cheap test, ours, not a language detector: over the claim's own words (the form's values and the
adjuster's note, not the field names), the claim is "not English" when most of its letters are outside
ASCII (:data:`MAX_NON_ASCII`), or, with at least :data:`MIN_WORDS` words, when it has more common
French / Spanish / German / Italian / Portuguese / Dutch function words than English ones, or English
function words are under :data:`MIN_ENGLISH_SHARE` of its words (running English prose has far more).
"""

from __future__ import annotations

import re

from longdoc.search.bm25 import STOPWORDS
from longdoc.triage.claim import Claim

MAX_NON_ASCII = 0.3
"""Largest share of a claim's letters outside ASCII before it is called not English (names and a few
accented words stay far below it)."""
MIN_WORDS = 8
"""Fewer words than this and only the letters are judged (a short description has few function words)."""
MIN_ENGLISH_SHARE = 0.05
"""Smallest share of English function words in a claim of :data:`MIN_WORDS` words or more."""
ENGLISH = STOPWORDS | frozenset({
    "i", "we", "our", "us", "you", "your", "he", "she", "his", "her", "him", "them", "my", "me", "after",
    "before", "during", "while", "when", "up", "down", "over", "under", "out", "off", "through", "about", "had",
    "did", "does", "but", "so", "what", "where", "would", "could", "can", "because", "since", "until", "also",
    "some", "very", "just", "were", "been"})
"""English function words: BM25's stop words and common pronouns, prepositions and auxiliaries."""
FOREIGN = frozenset({
    # French
    "le", "la", "les", "des", "du", "et", "est", "une", "dans", "pour", "par", "sur", "au", "aux", "avec", "ce",
    "qui", "que", "pas", "nous", "vous", "il", "elle", "été", "sont", "leur", "mais", "ou",
    # Spanish / Portuguese / Italian
    "el", "los", "las", "y", "en", "por", "para", "con", "del", "se", "una", "es", "fue", "su", "al",
    "o", "uma", "não", "os", "da", "em", "di", "che", "e", "della", "sono",
    # German / Dutch
    "der", "die", "das", "und", "ist", "nicht", "ein", "eine", "im", "mit", "von", "zu", "den", "dem", "auf",
    "für", "bei", "nach", "wurde", "sich", "auch", "het", "een", "niet", "op", "voor", "werd"})
"""Common function words of other languages written in Latin letters, none of them an English word a claim
would use ("a", "die", "do", "per", "non", "van", "met" are left out for that reason)."""
_WORD = re.compile(r"[^\W\d_]+")


def claim_words_text(claim: Claim) -> str:
    """The claim's own words: its form values and the adjuster's note, not the (English) field names."""
    return "\n".join([*claim.fields.values(), claim.note])


def not_english(text: str) -> str | None:
    """Why ``text`` does not look like English (one short phrase), or None when it does or cannot be judged
    (no letters). The rule is in the module docstring."""
    letters = [c for c in text if c.isalpha()]
    if not letters:
        return None
    foreign = sum(1 for c in letters if not c.isascii()) / len(letters)
    if foreign > MAX_NON_ASCII:
        return f"{foreign:.0%} of its letters are not ASCII"
    words = [w.lower() for w in _WORD.findall(text)]
    if len(words) < MIN_WORDS:
        return None
    english = sum(1 for w in words if w in ENGLISH)
    other = sum(1 for w in words if w in FOREIGN)
    if other > english:
        return f"{other} function words of another language, {english} English ones"
    if english < MIN_ENGLISH_SHARE * len(words):
        return f"only {english} of its {len(words)} words are English function words"
    return None


def english_warning(claim: Claim, name: str) -> str | None:
    """One warning line for a claim that does not look English (:func:`not_english`), naming ``name``; None
    otherwise. Triage still runs."""
    why = not_english(claim_words_text(claim))
    if why is None:
        return None
    return (f"warning: claim {name} does not look like English ({why}); triage ranks with English BM25 and an "
            "English embedding model, so clauses may be missed")
