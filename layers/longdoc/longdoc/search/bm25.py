"""Okapi BM25 over a small in-memory corpus, with word pairs as extra terms.

Okapi BM25 (``k1 = 1.2``, ``b = 0.75``, Robertson & Zaragoza 2009). Its terms are words
(:func:`bm25_tokens`) and the pairs of adjacent words within a phrase (:func:`bm25_terms`),
so a text that has a query's words in the query's order ("minimum purchase") outranks one
that has them scattered (the ordered-pair feature of Metzler & Croft's sequential
dependence model, SIGIR 2005). Shared by extraction retrieval, triage and the retrieval
evaluation; each caller decides what it indexes and how it weighs the ranking.
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections import Counter
from collections.abc import Sequence

_WORD = re.compile(r"\w+")
STOPWORDS = frozenset({
    "a", "an", "and", "are", "as", "at", "be", "been", "being", "by", "for", "from", "has", "have", "if", "in",
    "into", "is", "it", "its", "of", "on", "or", "such", "that", "the", "their", "then", "there", "these", "they",
    "this", "to", "was", "were", "will", "with", "which", "who", "whom", "shall", "any", "all", "may", "not", "no",
    "other", "than"
})
"""Words ignored by BM25 (function words carry no ranking signal; legal modals such as 'shall' neither)."""


def bm25_tokens(text: str) -> list[str]:
    """Lowercased NFKC word tokens of ``text`` without :data:`STOPWORDS`, crudely stemmed (plural ``s``)."""
    words = _WORD.findall(unicodedata.normalize("NFKC", text).lower())
    out = []
    for w in words:
        if w in STOPWORDS:
            continue
        if len(w) > 4 and w.endswith("s") and not w.endswith("ss"):
            w = w[:-1]
        out.append(w)
    return out


_PHRASE_BREAK = re.compile(r"[;.,:!?()\[\]{}\"“”]+")
"""Punctuation that ends a phrase for :func:`bm25_terms` (line breaks do not: PDF text wraps mid-sentence)."""


def bm25_terms(text: str) -> list[str]:
    """BM25 index terms of ``text``: its :func:`bm25_tokens`, then each pair of adjacent tokens of a phrase.

    A phrase is the text between two marks of :data:`_PHRASE_BREAK`; a pair is the two
    tokens joined by one space (``"minimum purchase"``), so it can never equal a word.
    Stopwords are dropped before pairing (``"title and interest"`` pairs as ``"title
    interest"``). Pairs are rarer than words, so BM25 gives an in-order match a high IDF:
    on cuad-dev.jsonl this lifted recall within the 5,000-token budget from 0.916 to 0.933
    (docs/benchmarks.md, "Retrieval"). Used for chunks, passages and queries alike.
    """
    phrases = [bm25_tokens(p) for p in _PHRASE_BREAK.split(unicodedata.normalize("NFKC", text))]
    terms = [w for words in phrases for w in words]  # the text's tokens: phrase breaks are not word characters
    terms.extend(f"{a} {b}" for words in phrases for a, b in zip(words, words[1:], strict=False))
    return terms




class BM25:
    """Okapi BM25 over a small in-memory corpus (one document version's chunks).

    ``docs`` are term lists (:func:`bm25_terms`, or :func:`bm25_tokens` for words only).
    IDF is the non-negative variant
    ``ln(1 + (N - n + 0.5) / (n + 0.5))`` (as in Lucene). Building is O(total tokens);
    scoring one query is O(query terms x postings).
    """

    def __init__(self, docs: Sequence[Sequence[str]], k1: float = 1.2, b: float = 0.75):
        """Index ``docs``; raises nothing (an empty corpus scores nothing)."""
        self.k1, self.b = k1, b
        self.n = len(docs)
        self.lengths = [len(d) for d in docs]
        self.avg = (sum(self.lengths) / self.n) if self.n else 0.0
        self.postings: dict[str, list[tuple[int, int]]] = {}
        for i, doc in enumerate(docs):
            for term, tf in Counter(doc).items():
                self.postings.setdefault(term, []).append((i, tf))

    def idf(self, term: str) -> float:
        """Inverse document frequency of ``term`` (0 when absent)."""
        n = len(self.postings.get(term, ()))
        return math.log(1 + (self.n - n + 0.5) / (n + 0.5)) if n else 0.0

    def scores(self, query: Sequence[str]) -> list[float]:
        """One BM25 score per document for the query tokens (repeated query terms count once)."""
        out = [0.0] * self.n
        for term in set(query):
            idf = self.idf(term)
            for i, tf in self.postings.get(term, ()):
                norm = self.k1 * (1 - self.b + self.b * self.lengths[i] / (self.avg or 1.0))
                out[i] += idf * tf * (self.k1 + 1) / (tf + norm)
        return out

    def rank(self, query: Sequence[str]) -> list[tuple[int, float]]:
        """``(doc index, score)`` for every document with a positive score, best first (ties: index order)."""
        scored = [(i, s) for i, s in enumerate(self.scores(query)) if s > 0]
        return sorted(scored, key=lambda p: (-p[1], p[0]))
