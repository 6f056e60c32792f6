"""What a model accepts in a request, from the capability table, checked before anything is sent.

Every Claude request the product builds (Messages :mod:`longdoc.adapters.claude`, Message
Batches :mod:`longdoc.bulk.requests`, token counting) takes its ``thinking`` and
``output_config`` from :func:`model_fields`, which also refuses, with
:class:`~longdoc.core.errors.ModelRejectsRequest`, a request the model's row says returns
HTTP 400:

* a forced ``tool_choice`` (``any`` or ``tool``) on a row with ``forced_tool_choice: false``
  (S55-NEW "Forced tool use is not supported"; O55-NEW; THINK: forced tool use is rejected
  while thinking is on);
* a conversation that ends on an assistant turn (a *prefill*) on a row with ``prefill: false``
  (S55-MIG, "five settings that return a 400"; H55-MIG step 6, "end messages with a user
  turn"). A final assistant turn that *starts with a thinking block* is not a prefill: it is
  the continuation of a turn the model paused (``pause_turn``), which the API accepts and
  which must start with the turn's thinking block when thinking is on (TTS).

Sampling parameters (``temperature``, ``top_p``, ``top_k``) are never sent: a
:class:`~longdoc.core.messages.ModelRequest` has no field for them (rejected on every model
under API version 2026-10-21, VERS / MIG1021). A model id missing from the table gets no
``thinking`` and no ``effort`` (the API's own defaults) and one warning per id.
Page keys are those of ``longdoc/data/models.json`` (``pages``).
"""

from __future__ import annotations

import logging
from typing import Any

from longdoc.core.errors import ModelRejectsRequest
from longdoc.core.messages import Message
from longdoc.core.models_catalogue import ModelSpec, call_settings, spec_for

log = logging.getLogger(__name__)

_warned_unknown: set[tuple[str, str | None]] = set()

FORCED_TOOL_CHOICES = frozenset({"any", "tool"})
"""``tool_choice`` types that force a tool call (``auto`` and ``none`` do not)."""

_THINKING_TYPES = frozenset({"thinking", "redacted_thinking"})


def _source(spec: ModelSpec, field: str) -> str:
    """The page a row's ``field`` comes from (the family's ``sources`` or ``assumed`` note)."""
    family = spec.spec
    return family.sources.get(field) or (f"assumed: {family.assumed[field]}" if field in family.assumed
                                         else "longdoc/data/models.json")


def is_prefill(messages: list[Message] | list[dict[str, Any]]) -> bool:
    """Whether the conversation ends on an assistant turn that is a prefill (see the module
    docstring): a final assistant turn that does not start with a thinking block."""
    if not messages:
        return False
    last = messages[-1]
    role, content = (last.role, last.content) if isinstance(last, Message) else (last.get("role"), last.get("content"))
    if role != "assistant":
        return False
    first = content[0] if isinstance(content, list) and content else None
    return not (isinstance(first, dict) and first.get("type") in _THINKING_TYPES)


def refuse_rejected(model: str, spec: ModelSpec | None, tool_choice: dict[str, Any] | None,
                    messages: list[Message] | list[dict[str, Any]]) -> None:
    """Raise :class:`ModelRejectsRequest` when ``spec``'s row says the model answers this
    request with a 400 (module docstring); ``tool_choice`` is ``None`` when no tools are sent.
    An unknown model (``spec`` ``None``) is never refused here: the API decides."""
    if spec is None:
        return
    family = spec.spec
    kind = (tool_choice or {}).get("type")
    if kind in FORCED_TOOL_CHOICES and not family.forced_tool_choice:
        raise ModelRejectsRequest(
            f"{model} rejects a forced tool_choice ({kind!r}): ask with tool_choice 'auto' and instructions "
            f"(rule forced_tool_choice=false; source: {_source(spec, 'forced_tool_choice')})")
    if not family.prefill and is_prefill(messages):
        raise ModelRejectsRequest(
            f"{model} rejects an assistant prefill (the conversation ends on an assistant turn): end the "
            f"messages with a user turn (rule prefill=false; source: {_source(spec, 'prefill')})")


def model_fields(model: str, provider: str | None, job: str, tool_choice: dict[str, Any] | None,
                 messages: list[Message] | list[dict[str, Any]]) -> dict[str, Any]:
    """The ``thinking`` / ``output_config`` fields of a request for ``job`` on ``model``
    (:func:`~longdoc.core.models_catalogue.call_settings` of its row), after
    :func:`refuse_rejected` has checked the request. ``{}`` for a model not in the table
    (warned once per model id and provider). Raises ``ModelRejectsRequest``, and ``KeyError``
    for an unknown job."""
    spec = spec_for(model, provider)
    if spec is None and "claude" in model and (model, provider) not in _warned_unknown:
        _warned_unknown.add((model, provider))
        log.warning("model %r (provider %s) is not in longdoc's capability table: its requests carry no "
                    "thinking or effort (the API's defaults) and no request rule is checked before sending",
                    model, provider or "any")
    refuse_rejected(model, spec, tool_choice, messages)
    return call_settings(spec, job)
