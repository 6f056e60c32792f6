"""What every ``longdoc`` subcommand shares: the one-line error, a failed run's innermost error, option types,
the results table."""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from pathlib import Path
from typing import Any

from longdoc.core.text import one_line

REPO_ROOT = Path(__file__).resolve().parents[4]




_ERROR_FIELD = r'"{}"\s*:\s*"((?:[^"\\]|\\.)*)(?:"|\\?$)'
_KIND_PREFIX = re.compile(r"^([A-Z][A-Za-z0-9]*(?:\.[A-Z][A-Za-z0-9]*)?): ")
_WRAPPERS = frozenset({"ExtractionFailed", "States.TaskFailed"})
"""Error names that only wrap another (the failure-recording state re-raises the caught error inside one)."""


def _json_string(text: str, field: str) -> str | None:
    """The first ``"field": "..."`` string of JSON ``text`` (cut-off text: up to its end), decoded; None if absent."""
    match = re.search(_ERROR_FIELD.format(field), text)
    if match is None:
        return None
    try:
        return json.loads(f'"{match.group(1)}"')
    except ValueError:
        return match.group(1)


def failure_line(error: str | None, cause: str | None) -> str:
    """``"ErrorType: message"`` of the innermost error in a Step Functions error and cause, one line.

    A cause may nest Lambda error payloads (``{"errorType", "errorMessage", "stackTrace"}``,
    https://docs.aws.amazon.com/lambda/latest/dg/python-exceptions.html) at any depth, each
    possibly behind ``"Name: "`` prefixes and cut short (the failure state keeps 2,000
    characters): every level is peeled, stack traces dropped, and wrapper names
    (:data:`_WRAPPERS`) give way to the error they carry. Never raises.
    """
    kind, text = error or "", cause or ""
    for _ in range(20):
        while (prefix := _KIND_PREFIX.match(text)) is not None:
            kind, text = prefix.group(1), text[prefix.end():]
        message = _json_string(text, "errorMessage")
        if message is None:
            break
        kind, text = _json_string(text, "errorType") or kind, message
    if kind in _WRAPPERS and not text:
        return kind
    return one_line(f"{kind}: {text}" if kind and text else kind or text)


def statemachine_path() -> Path:
    """The extraction ASL file the local engine runs: ``$LONGDOC_STATEMACHINE``, else the repository's own."""
    return Path(os.environ.get("LONGDOC_STATEMACHINE", REPO_ROOT / "statemachine" / "extract.asl.json"))


def int_at_least(low: int):
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
        if value < low:
            raise argparse.ArgumentTypeError(f"must be at least {low}, got {value}")
        return value

    return parse


def int_between(low: int, high: int):
    """An argparse type: a whole number from ``low`` to ``high``."""
    at_least = int_at_least(low)

    def parse(text: str) -> int:
        value = at_least(text)
        if value > high:
            raise argparse.ArgumentTypeError(f"must be at most {high}, got {value}")
        return value

    return parse


def max_tokens_bounds() -> tuple[int, int]:
    """``--max-tokens`` bounds: the settings' (:data:`longdoc.extract.runs.MAX_TOKENS_BOUNDS`)."""
    from longdoc.extract.runs import MAX_TOKENS_BOUNDS

    return MAX_TOKENS_BOUNDS


def page_cell(page: Any, label: Any) -> str:
    """``"12 (p. 10)"``: the physical page, then the printed label when it differs."""
    if page is None:
        return "-"
    return f"{page} (p. {label})" if label and str(label) != str(page) else str(page)


def print_table(result: dict[str, Any], out=sys.stdout) -> None:
    """Print extractions as a table: clause type, status, page (label), section, heading path, quote."""
    rows = [("CLAUSE TYPE", "STATUS", "PAGE", "SECTION", "HEADING PATH", "QUOTE")]
    for e in result["extractions"]:
        cite = e["citations"][0] if e["citations"] else {}
        quote = " ".join((cite.get("quote") or "").split())
        path = " > ".join(cite.get("heading_path") or []) or "-"
        rows.append((e["clause_type"], e["status"], page_cell(cite.get("page"), cite.get("page_label")),
                     cite.get("section_id") or "-", (path[:29] + "…") if len(path) > 30 else path,
                     (quote[:60] + "…") if len(quote) > 60 else quote))
    widths = [min(max(len(r[i]) for r in rows), 44 if i == 0 else 34) for i in range(5)]
    for r in rows:
        print("  ".join(r[i][: widths[i]].ljust(widths[i]) for i in range(5)) + "  " + r[5], file=out)
