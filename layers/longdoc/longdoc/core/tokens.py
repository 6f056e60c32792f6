"""Token estimates without a tokenizer.

Anthropic's guidance is roughly 3.5-4 characters per token for English prose; we use
4 characters per token (rounded up) as a cheap, deterministic estimate for sizing chunks
and output budgets. Real usage comes back from the model API in ``usage``.
"""

from __future__ import annotations

import math

CHARS_PER_TOKEN = 4


def estimate_tokens(text: str) -> int:
    """Return the estimated token count of ``text`` (``ceil(len / 4)``, 0 for empty text)."""
    return math.ceil(len(text) / CHARS_PER_TOKEN)
