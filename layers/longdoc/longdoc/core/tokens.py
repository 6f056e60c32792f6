"""Token estimates without a tokenizer.

Anthropic's guidance is roughly 3.5-4 characters per token for English prose; we use
4 characters per token (rounded up) as a cheap, deterministic estimate for sizing chunks
and output budgets. Real usage comes back from the model API in ``usage``.

CJK text does not follow that rule: Han, Kana and Hangul characters are not grouped into
multi-character tokens the way Latin letters are. A byte-pair tokenizer whose vocabulary
lacks a character falls back to its UTF-8 bytes (3 for these characters), so one character
is one token at best and up to 3 at worst: Voyage's 2-series models use Llama 2's tokenizer
(https://docs.voyageai.com/docs/tokenization), which has this fallback, and tiktoken's
maintainers confirm a Chinese character may take two tokens
(https://github.com/openai/tiktoken/issues/294). Claude's tokenizer is not public, so the
estimate counts every CJK character as one token: a lower bound, 4 times the old estimate
for such text, and identical to it for text without CJK characters.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from decimal import ROUND_CEILING, Decimal
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover - typing only (core.ports is not needed at run time here)
    from longdoc.core.ports import TokenCounter

CHARS_PER_TOKEN = 4

CJK_RE = re.compile(
    "["
    "\u1100-\u11ff"  # Hangul Jamo
    "\u2e80-\u2fdf"  # CJK radicals supplement, Kangxi radicals
    "\u3000-\u303f"  # CJK symbols and punctuation (。、「」 and the ideographic space)
    "\u3040-\u30ff"  # Hiragana, Katakana
    "\u3100-\u31ff"  # Bopomofo, Hangul compatibility Jamo, Kanbun, CJK strokes, Katakana ext.
    "\u3400-\u4dbf"  # CJK unified ideographs extension A
    "\u4e00-\u9fff"  # CJK unified ideographs
    "\uac00-\ud7af"  # Hangul syllables
    "\uf900-\ufaff"  # CJK compatibility ideographs
    "\ufe30-\ufe4f"  # CJK compatibility forms
    "\uff00-\uffef"  # half-width and full-width forms (！？；： and half-width Katakana)
    "\U00020000-\U0003134f"  # CJK unified ideographs extensions B-G, compatibility supplement
    "]+"
)
"""A run of CJK characters: Han, Hiragana, Katakana, Hangul, Bopomofo, CJK punctuation and full-width
forms (runs, not single characters: ``findall`` on 8,000 Chinese characters takes ~20 us, not ~500)."""


def weighted_chars(text: str) -> int:
    """The length of ``text`` in ASCII-equivalent characters: ``len(text)`` plus 3 per CJK character.

    A CJK character (in a :data:`CJK_RE` run) weighs :data:`CHARS_PER_TOKEN` (one token), any other
    character 1, so ``weighted_chars(t) == len(t)`` for text without CJK, and character
    budgets sized as ``tokens x CHARS_PER_TOKEN`` hold the same number of tokens in any script.
    """
    if text.isascii():
        return len(text)
    return len(text) + (CHARS_PER_TOKEN - 1) * sum(map(len, CJK_RE.findall(text)))


def estimate_tokens(text: str, model: str | None = None) -> int:
    """Return the estimated token count of ``text`` (tokens, 0 for empty text).

    Without ``model`` (and for a model not in the capability table): every CJK character (in a
    :data:`CJK_RE` run) counts 1 and the other characters 1 per 4, rounded up:
    ``cjk + ceil(other / 4)`` == ``ceil(weighted_chars(text) / 4)``. Text without CJK
    characters keeps the plain ``ceil(len / 4)``. Source and rationale: the module docstring.
    Every offline path (ingest, the offline demo) uses this form, unchanged.

    With a ``model`` of the table: CJK characters still count 1 each, the other characters 1 per
    the row's ``chars_per_token`` (3.1 for the 5.x models, whose tokenizer gives about 30 % more
    tokens than Sonnet 4.6's for the same text, S5-MIG item 1; H55-OV), rounded up.
    """
    if model is not None:
        from longdoc.core.models_catalogue import spec_for

        spec = spec_for(model)
        if spec is not None:
            cjk = 0 if text.isascii() else sum(map(len, CJK_RE.findall(text)))
            other = Decimal(len(text) - cjk) / spec.spec.chars_per_token
            return cjk + int(other.to_integral_value(rounding=ROUND_CEILING))
    return -(-weighted_chars(text) // CHARS_PER_TOKEN)


class EstimatedTokens:
    """The offline :class:`longdoc.core.ports.TokenCounter`: :func:`estimate_tokens` for ``model``
    (``None``: today's 4-characters rule, which the offline demo uses)."""

    def __init__(self, model: str | None = None) -> None:
        self.model = model

    def count_text(self, text: str) -> int:
        """Estimated input tokens of ``text`` (never raises)."""
        return estimate_tokens(text, self.model)


def document_measure(counter: TokenCounter | None, texts: Sequence[str]) -> Callable[[str], int]:
    """A token measure for the texts of one document, sized with ``counter`` in ONE call.

    The whole document (``texts`` joined by blank lines) is counted once with ``counter`` (a
    :class:`~longdoc.core.ports.TokenCounter`: the token-counting endpoint with a key, cached by
    text hash), and each later text is measured as its :func:`estimate_tokens` scaled by
    ``counted / estimated`` of that document, rounded up: budgets are in the model's tokens
    while a document of N chunks costs one count request, not N. ``counter`` None (offline)
    returns :func:`estimate_tokens` itself, so offline sizes do not change. Never raises for a
    counter failure (a :class:`~longdoc.core.ports.TokenCounter` falls back to the estimate).
    """
    if counter is None:
        return estimate_tokens
    estimated = sum(estimate_tokens(t) for t in texts)
    if estimated == 0:
        return estimate_tokens
    ratio = Decimal(counter.count_text("\n\n".join(texts))) / Decimal(estimated)

    def measure(text: str) -> int:
        return int((Decimal(estimate_tokens(text)) * ratio).to_integral_value(rounding=ROUND_CEILING))

    return measure
