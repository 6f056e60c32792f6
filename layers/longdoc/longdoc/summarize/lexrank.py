"""LexRank (Erkan and Radev, 2004), our own small implementation: which sentences are most central.

Each sentence is a bag of content words (lower case, stop words out, crudely stemmed to their
first 6 letters); two sentences are linked when the idf-modified cosine of their term
frequencies exceeds ``threshold`` (0.1, the paper's and sumy's default); a sentence's score is
its stationary probability in the degree-normalised link graph, computed by power iteration
with a 0.15 teleport. Unlike sumy we leave out self-links and spread the mass of a sentence
without links over all sentences (PageRank's dangling-node rule): with self-links, an
isolated sentence keeps as much mass as each member of a cluster of similar ones, so an
off-topic line can score like the document's main point.

Why our own rather than sumy's ``LexRankSummarizer``: sumy installs offline from PyPI and its
LexRank runs offline, but it imports the whole of NLTK for a stemmer (about 9 s of import on
this machine kind, paid by every CLI call and Lambda cold start) and its package pins
``setuptools<82`` and an HTML stack we do not use. The algorithm is 60 lines; the benchmark
(``benchmarks/summarize.py``) compares our picks with sumy's when sumy is installed.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence

_WORD = re.compile(r"[^\W_]+", re.UNICODE)
_STOP_TEXT = """a about above after again against all am an and any are as at be because been before being
below between both but by can could did do does doing down during each few for from further had has have having he
her here hers herself him himself his how i if in into is it its itself just me more most my myself no nor not now
of off on once only or other our ours ourselves out over own same she should so some such than that the their
theirs them themselves then there these they this those through to too under until up very was we were what when
where which while who whom why will with would you your yours yourself yourselves shall may must herein hereof
thereof therein hereunder"""
STOP_WORDS = frozenset(_STOP_TEXT.split())
"""English stop words (the usual short list plus a few legal ones)."""


def terms(sentence: str) -> list[str]:
    """Content-word stems of a sentence (lower case, stop words out, first 6 letters)."""
    return [w[:6] for w in (t.lower() for t in _WORD.findall(sentence)) if w not in STOP_WORDS and len(w) > 1]


def _cosine(a: Counter[str], b: Counter[str], idf: dict[str, float]) -> float:
    common = set(a) & set(b)
    numerator = sum(a[t] * b[t] * idf[t] ** 2 for t in common)
    if numerator == 0:
        return 0.0
    norm_a = math.sqrt(sum((a[t] * idf[t]) ** 2 for t in a))
    norm_b = math.sqrt(sum((b[t] * idf[t]) ** 2 for t in b))
    return numerator / (norm_a * norm_b) if norm_a and norm_b else 0.0


def lexrank(sentences: Sequence[str], threshold: float = 0.1, teleport: float = 0.15,
            epsilon: float = 1e-6, max_iterations: int = 200) -> list[float]:
    """Centrality scores of ``sentences`` (same order; they sum to 1; empty input gives ``[]``)."""
    n = len(sentences)
    if n == 0:
        return []
    bags = [Counter(terms(s)) for s in sentences]
    df = Counter(t for bag in bags for t in bag)
    idf = {t: math.log(n / (1 + d)) + 1.0 for t, d in df.items()}
    neighbours = [[j for j in range(n) if i != j and _cosine(bags[i], bags[j], idf) > threshold] for i in range(n)]
    scores = [1.0 / n] * n
    for _ in range(max_iterations):
        share = [scores[i] / len(neighbours[i]) if neighbours[i] else 0.0 for i in range(n)]
        dangling = sum(scores[i] for i in range(n) if not neighbours[i]) / n
        new = [teleport / n + (1 - teleport) * (sum(share[i] for i in neighbours[j]) + dangling) for j in range(n)]
        delta = sum(abs(x - y) for x, y in zip(new, scores, strict=True))
        scores = new
        if delta < epsilon:
            break
    return scores


def top_sentences(sentences: Sequence[str], k: int, boost: Sequence[float] | None = None) -> list[int]:
    """Indexes of the ``k`` best sentences, in their original order.

    Score = LexRank x (1 + boost) (``boost`` per sentence, e.g. focus-word overlap), ties to
    the earlier sentence; sentences with fewer than 4 content words are passed over (headings, captions).
    """
    scores = lexrank(sentences)
    weights = [s * (1 + (boost[i] if boost else 0.0)) if len(terms(sentences[i])) >= 4 else -1.0
               for i, s in enumerate(scores)]
    best = sorted(range(len(sentences)), key=lambda i: (-weights[i], i))[:k]
    return sorted(i for i in best if weights[i] >= 0)
