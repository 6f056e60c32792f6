"""What every ``longdoc`` subcommand shares: the one-line error, a failed run's innermost error, option types,
the results table."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

from longdoc.core.failures import innermost_error, with_next_step

REPO_ROOT = Path(__file__).resolve().parents[4]

# The one-line failure of a run or summary: :func:`longdoc.core.failures.innermost_error` (its old name here).
failure_line = innermost_error


def run_failure(result: dict[str, Any]) -> str:
    """A failed run's result (:meth:`longdoc.local.runner.LeasedEngine.finish`) as the one line a user reads:
    ``run <id> failed: <innermost error>; next: longdoc runs resume <id>`` (at most 400 characters,
    the next step never cut). The run record and ``history.json`` keep the full error."""
    execution = result.get("execution") or {}
    reason = innermost_error(execution.get("error") or result.get("error"), execution.get("cause") or result.get("cause"))
    return with_next_step(f"run {result['run_id']} failed: {reason or 'no error recorded'}",
                          execution.get("next") or f"longdoc runs resume {result['run_id']}")


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
