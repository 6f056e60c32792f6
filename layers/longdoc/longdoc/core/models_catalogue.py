"""The model capability table: what each supported Claude model accepts, costs and allows.

One row per model the product supports on each provider (``longdoc/data/models.json``): the
current Sonnet, Opus and Haiku on the Anthropic API and on Amazon Bedrock (with its
inference-profile ids), and the previous generation. A row is a :class:`ModelSpec`: whether
forced ``tool_choice`` is accepted, the ``thinking`` types it accepts and its default, effort
levels and default, the minimum cacheable prompt, context window and output limit, prices
(input, output, 5-minute and 1-hour cache writes, cache read, batch discount), a calibrated
characters-per-token figure for offline estimates, and the page each value comes from
(``sources``; values not found on an official page are listed under ``assumed`` with the
rule used instead). The JSON file is the one place those facts live: the Claude adapter
builds requests from it, :mod:`longdoc.core.cost` prices usage with it, and the loopback
fakes under ``tests/`` enforce the same rows.

:data:`JOB_SETTINGS` says how much thinking each job asks for; :func:`call_settings` turns a
job and a row into the request's ``thinking`` and ``output_config`` (the reasons for each
choice are in ``docs/decisions.md``).
"""

from __future__ import annotations

import json
import re
from decimal import Decimal
from functools import lru_cache
from importlib import resources
from typing import Any, Literal

from pydantic import BaseModel, Field

from longdoc.core.model_defaults import DEFAULT_MODELS as DEFAULT_MODELS  # re-exported: the defaults per provider

Provider = Literal["anthropic", "bedrock"]
Job = Literal["extract", "summarize_map", "summarize_reduce", "summarize_final", "triage"]
"""What a model call is for; each job has its own thinking and effort (:data:`JOB_SETTINGS`)."""
ThinkingChoice = Literal["default", "lowest"]
"""``default``: the model's own thinking default (adaptive where it has one), sent explicitly;
``lowest``: the least thinking the row accepts (``between_tools``, ``disabled`` or, where
thinking cannot be turned down, ``adaptive`` at the job's effort)."""


class Prices(BaseModel):
    """USD per million tokens (decimal strings in the table); ``batch_discount`` is the share
    taken off every token of a Message Batches request (0.5 = half price, BATCH page)."""

    input: Decimal
    output: Decimal
    cache_write_5m: Decimal
    cache_write_1h: Decimal
    cache_read: Decimal
    batch_discount: Decimal = Decimal("0.5")


class LongPrompt(BaseModel):
    """A price band for prompts over ``above_tokens`` input tokens (input + cache reads + cache
    writes of one request); the band applies to every token of that request (Haiku 5.5, H55-OV)."""

    above_tokens: int
    prices: Prices


class Family(BaseModel):
    """What one model family accepts and costs, with each value's source (see the module docstring)."""

    display_name: str
    generation: Literal["current", "previous"]
    forced_tool_choice: bool
    thinking_types: list[str]
    thinking_default: Literal["adaptive", "off"]
    lowest_thinking: str
    effort_levels: list[str]
    effort_default: str | None
    between_tools_efforts: list[str] = Field(default_factory=list)
    prefill: bool
    min_cacheable_tokens: int
    context_window: int
    max_output_tokens: int
    prices: Prices
    long_prompt: LongPrompt | None = None
    chars_per_token: Decimal
    sources: dict[str, str] = Field(default_factory=dict)
    assumed: dict[str, str] = Field(default_factory=dict)


class ModelSpec(BaseModel):
    """One row of the table: a model id on one provider, its aliases and its family's facts.

    ``endpoint`` (Bedrock only): ``"messages"`` for models served by the Messages-API Bedrock
    endpoint (``/anthropic/v1/messages``, BEDROCK page), ``"invoke"`` for the legacy
    ARN-versioned ``InvokeModel`` ids (BEDROCK-LEGACY page). ``strict_tools``: whether the endpoint
    accepts ``"strict": true`` on a tool (strict tool use); false on Bedrock, whose feature list
    gives structured outputs as not supported (BEDROCK page), so the flag is never sent there.
    """

    id: str
    provider: Provider
    family: str
    aliases: list[str] = Field(default_factory=list)
    endpoint: Literal["messages", "invoke"] | None = None
    strict_tools: bool = True
    spec: Family
    sources: dict[str, str] = Field(default_factory=dict)
    assumed: dict[str, str] = Field(default_factory=dict)

    def ids(self) -> list[str]:
        """Every id this row answers to: its own and its aliases."""
        return [self.id, *self.aliases]


class JobSetting(BaseModel):
    """How much a job thinks: ``thinking`` (:data:`ThinkingChoice`) and ``effort`` (a level
    of ``output_config.effort``; lowered to the nearest the row accepts)."""

    thinking: ThinkingChoice
    effort: Literal["low", "medium", "high", "xhigh", "max"]


JOB_SETTINGS: dict[str, JobSetting] = {
    "extract": JobSetting(thinking="default", effort="medium"),
    "summarize_map": JobSetting(thinking="lowest", effort="low"),
    "summarize_reduce": JobSetting(thinking="default", effort="medium"),
    "summarize_final": JobSetting(thinking="default", effort="medium"),
    "triage": JobSetting(thinking="lowest", effort="low"),
}
"""Thinking and effort per job (reasons in ``docs/decisions.md``, "Thinking and effort per job")."""


_DATED = re.compile(r"-20\d{6}$")


@lru_cache(maxsize=4)
def load_table(path: str | None = None) -> tuple[ModelSpec, ...]:
    """Read the capability table (default: the packaged ``longdoc/data/models.json``).

    Returns the rows in file order, each with its family's facts. Raises
    ``pydantic.ValidationError`` for a malformed row, ``KeyError`` for a row naming an
    unknown family, and ``FileNotFoundError`` for a missing file.
    """
    from pathlib import Path

    text = Path(path).read_text(encoding="utf-8") if path else (
        resources.files("longdoc.data").joinpath("models.json").read_text(encoding="utf-8"))
    data = json.loads(text)
    families = {name: Family.model_validate(body) for name, body in data["families"].items()}
    rows: list[ModelSpec] = []
    for row in data["rows"]:
        rows.append(ModelSpec.model_validate({**row, "spec": families[row["family"]]}))
    return tuple(rows)


def spec_for(model: str, provider: str | None = None) -> ModelSpec | None:
    """The row for a model id (its own id, an alias, or a dated id of either), or ``None``.

    ``provider`` narrows the search to one provider's rows. Never raises for an unknown id.
    """
    for row in load_table():
        if provider is not None and row.provider != provider:
            continue
        ids = row.ids()
        if model in ids or _DATED.sub("", model) in ids:
            return row
    return None


def rows(provider: str | None = None) -> list[ModelSpec]:
    """Every row of the table (one provider's with ``provider``), in file order."""
    return [r for r in load_table() if provider is None or r.provider == provider]


def _effort(spec: Family, wanted: str, thinking: str | None) -> str | None:
    """``wanted`` if the family accepts it with ``thinking``, else the highest accepted level below it."""
    levels = spec.between_tools_efforts if thinking == "between_tools" else spec.effort_levels
    if not levels:
        return None
    order = ["low", "medium", "high", "xhigh", "max"]
    allowed = [lvl for lvl in order[: order.index(wanted) + 1] if lvl in levels]
    return allowed[-1] if allowed else levels[0]


def call_settings(spec: ModelSpec | None, job: str) -> dict[str, Any]:
    """The ``thinking`` and ``output_config`` request fields for ``job`` on ``spec``'s model.

    Returns ``{"thinking": {...}, "output_config": {"effort": ...}}`` with only the fields the
    row accepts: a family without effort levels gets no ``output_config``; a family whose
    thinking is off by default and job ``default`` gets no ``thinking``. An unknown model
    (``spec`` ``None``) gets ``{}``: the API's own defaults. Raises ``KeyError`` for an
    unknown job.
    """
    setting = JOB_SETTINGS[job]
    if spec is None:
        return {}
    family = spec.spec
    kind = family.lowest_thinking if setting.thinking == "lowest" else family.thinking_default
    out: dict[str, Any] = {}
    if kind != "off":
        out["thinking"] = {"type": kind}
    effort = _effort(family, setting.effort, kind)
    if effort is not None:
        out["output_config"] = {"effort": effort}
    return out


def thinking_on(spec: ModelSpec | None, settings: dict[str, Any]) -> bool:
    """Whether a request with these ``settings`` runs with thinking (so its replies carry
    thinking blocks and a final assistant turn must start with one, TTS page)."""
    kind = (settings.get("thinking") or {}).get("type")
    if kind is None:
        return spec is not None and spec.spec.thinking_default != "off"
    return kind in ("adaptive", "enabled", "between_tools")


def strict_tools_allowed(model: str, provider: str) -> bool:
    """Whether ``"strict": true`` may be sent on a tool to ``model`` on ``provider``: the row's
    ``strict_tools``; a model not in the table only on the Anthropic API (Bedrock lists structured
    outputs as not supported, https://platform.claude.com/docs/en/build-with-claude/claude-in-amazon-bedrock)."""
    row = spec_for(model, provider)
    return row.strict_tools if row is not None else provider == "anthropic"
