"""Cost estimates and prompt-cache checks from recorded ``usage``, priced from the capability table.

Prices come from the model capability table (``longdoc/data/models.json``, loaded by
:mod:`longdoc.core.models_catalogue`): USD per million tokens per model family, every id and alias
of a row (a dated id such as ``claude-haiku-4-5-20251001`` uses its alias's row), with separate
rates for uncached input, output, 5-minute and 1-hour cache writes and cache reads, the Message
Batches discount, and Haiku 5.5's long-prompt band. ``LONGDOC_PRICE_TABLE`` (setting
``price_table``) replaces the whole table with a JSON file ``{"models": {"<id>": {"input",
"output", "cache_write_5m", "cache_write_1h", "cache_read", "batch_discount"?, "long_prompt"?}}}``
(a row of the old format, with one ``cache_write``, is read as the 5-minute rate, and its 1-hour
rate as 2 x input, the CACHE page's rule). The offline extraction baseline (:data:`ZERO_PRICED`)
costs nothing. A model in neither gets no estimate (``None``): Claude 4.x ids such as
``claude-sonnet-4-5`` are no longer rows of the table (the product supports the current and
previous generations only), so they are not priced. Amounts are :class:`~decimal.Decimal`,
reported as strings (never floats).

What is billed (PRICING, CACHE, THINK, BATCH pages; keys in ``models.json`` ``pages``):

* ``input_tokens`` (uncached input) at ``input``; ``output_tokens`` at ``output``. Thinking tokens
  are billed as output and are already inside ``output_tokens`` (the API reports no separate
  count; with the default ``display: "omitted"`` the thinking text is not returned but still
  billed), so nothing is added for them.
* cache writes: the 1-hour part (``cache_creation_1h_input_tokens``) at ``cache_write_1h``
  (2 x input), the rest of ``cache_creation_input_tokens`` at ``cache_write_5m`` (1.25 x input).
* cache reads at ``cache_read``.
* a Message Batches request: every figure above times ``1 - batch_discount`` (50 % off).
* Haiku 5.5: a request whose prompt (input + cache writes + cache reads) is over 100,000 tokens
  is billed at the long-prompt band for every token, output included (H55-OV). The band is
  chosen per request: :func:`estimate_cost` with ``single_request=True``; usage summed over many
  requests (a run's total) is priced at the base band, a lower bound when some of its requests
  were over the threshold (longdoc's requests are far below it: a few thousand tokens).

Minimum cacheable prompt lengths (below them a ``cache_control`` breakpoint silently caches
nothing) are the table's ``min_cacheable_tokens`` (CACHE page and model pages; the values and
which of them are assumed are in ``models.json``).
"""

from __future__ import annotations

import json
import logging
from decimal import Decimal
from functools import lru_cache
from pathlib import Path
from typing import Any

from longdoc.core.messages import Usage
from longdoc.core.models_catalogue import LongPrompt, Prices, load_table, spec_for

log = logging.getLogger(__name__)

ZERO_PRICED: tuple[str, ...] = ("offline-extractive-baseline-v1",)
"""The offline extraction baseline's model name: no paid API is called, so its usage costs 0 (as in
the retired ``prices.json``; the offline summary baseline stays unpriced, as it was)."""

_MILLION = Decimal(1_000_000)
_warned: set[tuple[str, int]] = set()


class Price(Prices):
    """One model's prices (USD per million tokens, decimal strings in JSON), with its optional
    long-prompt band. Raises ``pydantic.ValidationError`` for a malformed row."""

    long_prompt: LongPrompt | None = None

    def band(self, prompt_tokens: int) -> Prices:
        """The prices of one request with ``prompt_tokens`` prompt tokens (long band above its threshold)."""
        lp = self.long_prompt
        return lp.prices if lp is not None and prompt_tokens > lp.above_tokens else self


def _read_override(text: str) -> dict[str, Price]:
    """The rows of an override file (module docstring)."""
    rows: dict[str, Any] = json.loads(text)["models"]
    out: dict[str, Price] = {}
    for name, row in rows.items():
        row = dict(row)
        if "cache_write" in row:
            row.setdefault("cache_write_5m", row["cache_write"])
            row.setdefault("cache_write_1h", str(Decimal(str(row["input"])) * 2))
            del row["cache_write"]
        out[name] = Price.model_validate(row)
    return out


@lru_cache(maxsize=8)
def load_prices(path: str | None = None) -> dict[str, Price]:
    """The price table: model id -> :class:`Price`. Default: every id and alias of every row of
    the capability table, plus :data:`ZERO_PRICED`; ``path``: an override file that replaces it
    (module docstring). Raises ValueError (via pydantic or JSON) for a malformed table and
    FileNotFoundError for a missing file."""
    if path:
        return _read_override(Path(path).read_text(encoding="utf-8"))
    table: dict[str, Price] = {}
    for row in load_table():
        price = Price.model_validate({**row.spec.prices.model_dump(), "long_prompt": row.spec.long_prompt})
        for model_id in row.ids():
            table.setdefault(model_id, price)
    zero = Price(input=Decimal(0), output=Decimal(0), cache_write_5m=Decimal(0), cache_write_1h=Decimal(0),
                 cache_read=Decimal(0))
    for name in ZERO_PRICED:
        table.setdefault(name, zero)
    return table


def _row(model: str, prices: dict[str, Price]) -> Price | None:
    """The row of ``model``: its own id, or its undated alias (``model`` = id + ``-20YYMMDD``)."""
    matches = [k for k in prices if model == k or model.startswith(k + "-20")]
    return prices[max(matches, key=len)] if matches else None


def estimate_cost(usage: Usage, model: str, prices: dict[str, Price] | None = None, *, batch: bool = False,
                  single_request: bool = False) -> str | None:
    """USD cost of ``usage`` on ``model`` as a decimal string (6 places), or None if the model has no price.

    cost = (input x input + (cache_creation - cache_creation_1h) x cache_write_5m
    + cache_creation_1h x cache_write_1h + cache_read x cache_read + output x output)
    / 1,000,000, times ``1 - batch_discount`` when ``batch`` (Message Batches usage); thinking
    tokens are inside ``output_tokens``. ``single_request``: ``usage`` is one request's, so the
    long-prompt band applies when its prompt is over the threshold (else the base band: see the
    module docstring). ``prices`` defaults to :func:`load_prices` ``()``.
    """
    row = _row(model, prices if prices is not None else load_prices())
    if row is None:
        return None
    p = row.band(usage.prompt_tokens()) if single_request else row
    one_hour = min(usage.cache_creation_1h_input_tokens, usage.cache_creation_input_tokens)
    total = (Decimal(usage.input_tokens) * p.input
             + Decimal(usage.cache_creation_input_tokens - one_hour) * p.cache_write_5m
             + Decimal(one_hour) * p.cache_write_1h
             + Decimal(usage.cache_read_input_tokens) * p.cache_read + Decimal(usage.output_tokens) * p.output)
    if batch:
        total *= 1 - p.batch_discount
    return str((total / _MILLION).quantize(Decimal("0.000001")))


def batch_discount(model: str, prices: dict[str, Price] | None = None) -> Decimal | None:
    """The share taken off ``model``'s Message Batches usage (0.5 = half price, BATCH page), or None if unpriced."""
    row = _row(model, prices if prices is not None else load_prices())
    return row.batch_discount if row is not None else None


def min_cacheable_tokens(model: str) -> int | None:
    """The model's minimum cacheable prompt length in tokens (the table's row), or None if unknown."""
    spec = spec_for(model)
    return spec.spec.min_cacheable_tokens if spec is not None else None


def warn_if_prefix_uncacheable(model: str, prefix_tokens: int) -> bool:
    """Log one warning per (model, prefix size) when the cached prefix is below the model's minimum.

    Returns True when a warning was logged by this call. ``prefix_tokens`` is an estimate
    (:func:`longdoc.core.tokens.estimate_tokens`, 4 characters per token), so the warning says so.
    """
    minimum = min_cacheable_tokens(model)
    if minimum is None or prefix_tokens >= minimum or (model, prefix_tokens) in _warned:
        return False
    _warned.add((model, prefix_tokens))
    log.warning("prompt cache prefix (tools + system) is about %d tokens (estimated), below %s's minimum "
                "cacheable length of %d tokens: cache_control will cache nothing", prefix_tokens, model, minimum)
    return True
