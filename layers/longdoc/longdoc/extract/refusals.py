"""Refusals per clause type (issue 12, failure 7): record, defer, retry alone, then give up on that one only.

A response with ``stop_reason: "refusal"`` (https://platform.claude.com/docs/en/build-with-claude/handling-stop-reasons)
is recorded against the clause type being worked on: the one named by the response's
(possibly cut-off) last tool call, else the first clause type the session asked for that is
still pending (the task asks for them in order). That clause type is deferred: the next
sessions, fresh ones, ask for the others. Once only refused clause types remain, each is
asked alone, once; a refusal then is final (:attr:`Refusal.final`): that clause type cannot
be answered, and only it fails (:func:`unanswerable`).
"""

from __future__ import annotations

from longdoc.core.messages import ModelResponse, TextBlock, ToolUseBlock
from longdoc.core.records import CaseFacts, Refusal


def askable(facts: CaseFacts) -> list[str]:
    """The clause types a session asks for, in request order.

    Pending ones without a refusal; when only refused ones are pending, the first one not
    refused finally, alone; empty when every pending clause type was refused finally.
    """
    fresh = [c for c in facts.pending if c not in facts.refusals]
    if fresh:
        return fresh
    return [c for c in facts.pending if not facts.refusals[c].final][:1]


def unanswerable(facts: CaseFacts) -> list[str]:
    """Pending clause types refused finally, when nothing else is left to ask (else empty)."""
    if askable(facts):
        return []
    return [c for c in facts.pending if c in facts.refusals and facts.refusals[c].final]


def record_refusal(facts: CaseFacts, asked: list[str], response: ModelResponse, session: int) -> str | None:
    """Record a refusal against the clause type being worked on; returns it (None: nothing left pending).

    ``asked`` are the clause types the session asked for. The refusal is final when that
    clause type was asked alone. ``category``/``explanation`` come from ``stop_details``, else
    the explanation is the response's text (at most 500 characters).
    """
    named = [b.input.get("clause_type") for b in response.content if isinstance(b, ToolUseBlock)]
    pending = [c for c in asked if c in facts.pending]
    clause = next((c for c in reversed(named) if c in pending), pending[0] if pending else None)
    if clause is None:
        return None
    details = response.stop_details or {}
    text = " ".join(b.text for b in response.content if isinstance(b, TextBlock)).strip()
    explanation = str(details.get("explanation") or text)[:500] or None
    facts.refusals[clause] = Refusal(category=details.get("category"), session=session, final=len(asked) == 1,
                                     explanation=explanation)
    category = f" ({details['category']})" if details.get("category") else ""
    facts.decisions.append(f"{clause}: refused{category}" + (" when asked alone" if len(asked) == 1 else ""))
    return clause
