"""Text with no sentence end: no chunk over ``max_tokens``, cut at clauses, then words, then hard, flagged."""

from __future__ import annotations

import random

import pytest

from longdoc.adapters.voyage import VoyageEmbedder
from longdoc.core.documents import embedding_text
from longdoc.core.tokens import estimate_tokens
from longdoc.ingest.chunk.oversize import Cut, cut_long_sentence
from longdoc.ingest.pipeline import chunk_bytes

WORDS = ("the", "tenant", "shall", "pay", "rent", "and", "landlord", "keep", "premises", "in", "good", "repair")


def two_megabytes(kind: str) -> str:
    """About 2 MB in one paragraph without a sentence end: clauses, bare words, or one unbroken run."""
    rng = random.Random(13)
    if kind == "clauses":
        return ", ".join(" ".join(rng.choice(WORDS) for _ in range(6)) for _ in range(52_000))
    if kind == "words":
        return " ".join(rng.choice(WORDS) for _ in range(360_000))
    return "QUJD" * 500_000


@pytest.mark.parametrize("kind", ["clauses", "words", "unbroken"])
def test_a_two_megabyte_paragraph_never_makes_a_chunk_over_max_tokens(kind: str) -> None:
    # Given about 2 MB of text with no sentence end
    text = two_megabytes(kind)
    # When chunked at the default sizes (target 1,000, max 2,000 tokens)
    chunks = chunk_bytes(f"{kind}.txt", text.encode())
    # Then no chunk is over 2,000 tokens (before: one chunk of ~500,000), each is flagged oversize,
    assert max(c.token_count for c in chunks) <= 2000 and len(chunks) >= 200
    assert all(c.oversize for c in chunks)
    # and together they hold every character of the text, in order
    covered = sorted((c.char_start, c.char_end) for c in chunks)
    assert covered[0][0] == 0 and covered[-1][1] == len(text)
    assert all(b[0] <= a[1] + 1 for a, b in zip(covered, covered[1:], strict=False))
    # And every chunk fits voyage-law-2's 16K-token context by the adapter's own count
    VoyageEmbedder("test-key", model="voyage-law-2").check_lengths([embedding_text(c) for c in chunks])


def test_cuts_fall_at_clause_punctuation_before_words_and_hard_sizes() -> None:
    # Given a 9,000-token sentence of clauses ending in ";" (max_tokens 100 -> cut above 200)
    clause = "the tenant shall keep the premises in good repair and condition at its own cost; "
    text = clause * 450
    # When it is cut for max_tokens = 100
    pieces = cut_long_sentence(text, 0, len(text) - 1, 100)
    # Then every piece is a Cut of at most 100 tokens that ends at a clause end
    assert all(isinstance(p, Cut) and estimate_tokens(text[p[0]:p[1]]) <= 100 for p in pieces)
    assert all(text[p[1] - 1] == ";" for p in pieces[:-1])
    # And a sentence up to twice max_tokens stays whole (a long legal sentence is not cut)
    assert cut_long_sentence(text, 0, 800, 100) == [(0, 800)]
