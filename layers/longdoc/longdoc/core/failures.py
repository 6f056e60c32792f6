"""A failure as a person reads it: the innermost error of a Step Functions error and cause, one line.

A failed execution's cause may nest Lambda error payloads (``{"errorType", "errorMessage",
"stackTrace"}``, https://docs.aws.amazon.com/lambda/latest/dg/python-exceptions.html) at any
depth, each behind ``"Name: "`` prefixes and possibly cut short (the failure state keeps 2,000
characters). :func:`innermost_error` peels every level and drops stack traces (frames name
absolute file paths, which say nothing to a user and leak the machine's layout);
:func:`with_next_step` joins that line to what to do next so that a cut never removes the
next step. The full cause stays where it was recorded (the execution history, the logs).
"""

from __future__ import annotations

import json
import re

from longdoc.core.text import one_line

_ERROR_FIELD = r'"{}"\s*:\s*"((?:[^"\\]|\\.)*)(?:"|\\?$)'
_KIND_PREFIX = re.compile(r"^([A-Z][A-Za-z0-9]*(?:\.[A-Z][A-Za-z0-9]*)?): ")
_WRAPPERS = frozenset({"ExtractionFailed", "States.TaskFailed"})
"""Error names that only wrap another (the failure-recording state re-raises the caught error inside one)."""
_TRACE = re.compile(r"(?:Traceback \(most recent call last\)|\bFile \"[^\"]*\", line \d+|\"?stackTrace\"?\s*:).*",
                    re.DOTALL)
"""Where a Python stack trace (or a payload's ``stackTrace`` field) starts: everything after it is cut."""

MESSAGE_CHARS = 400
"""Longest one-line failure shown to a CLI user (characters), next step included."""


def _json_string(text: str, field: str) -> str | None:
    """The first ``"field": "..."`` string of JSON ``text`` (cut-off text: up to its end), decoded; None if absent."""
    match = re.search(_ERROR_FIELD.format(field), text)
    if match is None:
        return None
    try:
        decoded: str = json.loads(f'"{match.group(1)}"')
    except ValueError:
        return match.group(1)
    return decoded


def innermost_error(error: str | None, cause: str | None) -> str:
    """``"ErrorType: message"`` of the innermost error in ``error`` and ``cause``, one line, no stack trace.

    Every nested payload and ``"Name: "`` prefix is peeled; wrapper names (:data:`_WRAPPERS`)
    give way to the error they carry; any stack trace left in plain text is cut. Never raises.
    """
    kind, text = error or "", cause or ""
    for _ in range(20):
        while (prefix := _KIND_PREFIX.match(text)) is not None:
            kind, text = prefix.group(1), text[prefix.end():]
        message = _json_string(text, "errorMessage")
        if message is None:
            break
        kind, text = _json_string(text, "errorType") or kind, message
    text = _TRACE.sub("", text).strip().rstrip(",{[").strip()
    if kind in _WRAPPERS and not text:
        return kind
    return one_line(f"{kind}: {text}" if kind and text else kind or text, 2000)


def with_next_step(message: str, next_step: str | None, limit: int = MESSAGE_CHARS) -> str:
    """``"<message>; next: <next_step>"`` in at most ``limit`` characters: the message is cut, never the step."""
    if not next_step:
        return one_line(message, limit)
    tail = f"; next: {next_step}"
    return one_line(message, max(40, limit - len(tail))) + tail
