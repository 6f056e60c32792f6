"""Cost estimates and prompt-cache checks from recorded ``usage``.

Prices live in a JSON table (``longdoc/data/prices.json``; override with
``LONGDOC_PRICE_TABLE``): USD per million tokens, as decimal strings, per model id (a dated id such as ``claude-sonnet-4-5-20250929`` uses its alias's row),
with separate cache-write and cache-read rates. Amounts are computed with
:class:`~decimal.Decimal` and reported as strings (never floats).

Minimum cacheable prompt lengths: below these, a ``cache_control`` breakpoint silently
caches nothing. Figures from Anthropic's prompt-caching documentation as quoted in
https://github.com/anthropics/anthropic-sdk-python/issues/1194 (read 2026-11-29):
4096 tokens for Claude Opus 4.6/4.5 and Haiku 4.5; 1024 for Sonnet 4.6/4.5/4 and
Opus 4.1/4 and Sonnet 3.7; 2048 for Haiku 3.5 and Haiku 3. Sonnet 5: 1024 and Opus 5: 512,
as quoted from the same documentation in "Claude's prompt cache fails silently below 1,024
tokens" (dev.to, 2026). Sonnet 5.5 has no published figure we could find; it is assumed to
match Sonnet 5 (1024) until documented.
"""

from __future__ import annotations

import json
import logging
from decimal import Decimal
from functools import lru_cache
from importlib import resources
from pathlib import Path

from pydantic import BaseModel

from longdoc.core.messages import Usage

log = logging.getLogger(__name__)

MIN_CACHEABLE_TOKENS: dict[str, int] = {
    "claude-sonnet-5-5": 1024,
    "claude-sonnet-5": 1024,
    "claude-opus-5": 512,
    "claude-opus-4-6": 4096,
    "claude-opus-4-5": 4096,
    "claude-haiku-4-5": 4096,
    "claude-sonnet-4-6": 1024,
    "claude-sonnet-4-5": 1024,
    "claude-sonnet-4": 1024,
    "claude-opus-4-1": 1024,
    "claude-opus-4": 1024,
    "claude-3-7-sonnet": 1024,
    "claude-3-5-haiku": 2048,
    "claude-3-haiku": 2048,
}
"""Minimum cacheable prefix in tokens, by model-id prefix (source in the module docstring)."""

_MILLION = Decimal(1_000_000)
_warned: set[tuple[str, int]] = set()


class Price(BaseModel):
    """USD per million tokens for one model (decimal strings)."""

    input: Decimal
    output: Decimal
    cache_write: Decimal
    cache_read: Decimal


def _longest_prefix(model: str, keys: list[str]) -> str | None:
    """The key equal to ``model`` or to its undated alias (``model`` = key + ``-20YYMMDD``)."""
    matches = [k for k in keys if model == k or model.startswith(k + "-20")]
    return max(matches, key=len) if matches else None


@lru_cache(maxsize=8)
def load_prices(path: str | None = None) -> dict[str, Price]:
    """Read a price table (default: the packaged ``prices.json``); keys are model ids (dated ids match their alias).

    Raises ValueError (via pydantic) for a malformed row; FileNotFoundError for a missing file.
    """
    text = Path(path).read_text(encoding="utf-8") if path else (
        resources.files("longdoc.data").joinpath("prices.json").read_text(encoding="utf-8"))
    rows = json.loads(text)["models"]
    return {name: Price.model_validate(row) for name, row in rows.items()}


def estimate_cost(usage: Usage, model: str, prices: dict[str, Price]) -> str | None:
    """USD cost of ``usage`` on ``model`` as a decimal string (6 places), or None if the model has no price.

    cost = (input x input + cache_creation x cache_write + cache_read x cache_read
    + output x output) / 1,000,000, all in Decimal.
    """
    key = _longest_prefix(model, list(prices))
    if key is None:
        return None
    p = prices[key]
    total = (Decimal(usage.input_tokens) * p.input + Decimal(usage.cache_creation_input_tokens) * p.cache_write
             + Decimal(usage.cache_read_input_tokens) * p.cache_read + Decimal(usage.output_tokens) * p.output)
    return str((total / _MILLION).quantize(Decimal("0.000001")))


def min_cacheable_tokens(model: str) -> int | None:
    """The model's minimum cacheable prompt length in tokens, or None if unknown."""
    key = _longest_prefix(model, list(MIN_CACHEABLE_TOKENS))
    return MIN_CACHEABLE_TOKENS[key] if key else None


def warn_if_prefix_uncacheable(model: str, prefix_tokens: int) -> bool:
    """Log one warning per (model, prefix size) when the cached prefix is below the model's minimum.

    Returns True when a warning was logged by this call. ``prefix_tokens`` is an estimate
    (4 characters per token), so the warning says so.
    """
    minimum = min_cacheable_tokens(model)
    if minimum is None or prefix_tokens >= minimum or (model, prefix_tokens) in _warned:
        return False
    _warned.add((model, prefix_tokens))
    log.warning("prompt cache prefix (tools + system) is about %d tokens, below %s's minimum cacheable "
                "length of %d tokens: cache_control will cache nothing", prefix_tokens, model, minimum)
    return True
