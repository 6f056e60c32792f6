"""Fields of a run's report (:func:`longdoc.extract.runs.run_result`) computed from its checkpoint,
usage and model: cost, provider, session counters, prompt-cache figures."""

from __future__ import annotations

import logging
from typing import Any, Literal

from longdoc.core.errors import LongdocError
from longdoc.core.messages import Usage
from longdoc.core.records import Checkpoint
from longdoc.core.cost import estimate_cost, load_prices

log = logging.getLogger(__name__)


def cost_usd(usage: Usage, model: str, prices_path: str | None) -> str | None:
    """The estimated cost in USD as a decimal string, or None (unpriced model, unreadable price table)."""
    try:
        return estimate_cost(usage, model, load_prices(prices_path))
    except (OSError, ValueError, LongdocError) as exc:
        log.warning("no cost estimate: price table unreadable (%s)", exc)
        return None


def model_provider(model: str) -> Literal["anthropic", "bedrock", "offline"]:
    """Who served ``model``: ``"bedrock"`` for an Amazon Bedrock model, inference profile or ARN
    (``anthropic.claude-...``, ``us.anthropic.claude-...``, ``arn:aws:bedrock:...``), ``"offline"`` for
    the offline baseline (``offline-...``), else ``"anthropic"`` (the Anthropic API's ``claude-...`` ids)."""
    if model.startswith("offline-"):
        return "offline"
    if model.startswith("arn:") or model.startswith("anthropic.") or ".anthropic." in model:
        return "bedrock"
    return "anthropic"


def checkpoint_fields(checkpoint: Checkpoint | None) -> dict[str, Any]:
    """The report fields that come from the checkpoint (zeros and empties without one)."""
    if checkpoint is None:
        return {"sessions": 0, "checkpoints": 0, "case_facts": None}
    return {"sessions": checkpoint.sessions, "checkpoints": checkpoint.version,
            "case_facts": checkpoint.case_facts.model_dump(mode="json")}


def cache_figures(checkpoint: Checkpoint | None) -> dict[str, int]:
    """Prompt-cache figures of a run: tokens read and written, and calls that read the cache."""
    if checkpoint is None:
        return {"read_input_tokens": 0, "creation_input_tokens": 0, "calls_reading": 0, "calls": 0}
    return {"read_input_tokens": checkpoint.usage.cache_read_input_tokens,
            "creation_input_tokens": checkpoint.usage.cache_creation_input_tokens,
            "calls_reading": sum(1 for c in checkpoint.calls if c.usage.cache_read_input_tokens > 0),
            "calls": len(checkpoint.calls)}
