"""What every ``longdoc`` subcommand shares: the one-line error, option types, the results table."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parents[4]


class CliError(Exception):
    """A failure reported as one line on stderr with exit status 1."""


def one_line(text: str, limit: int = 400) -> str:
    """Collapse a message to one line of at most ``limit`` characters."""
    flat = " ".join(str(text).split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def statemachine_path() -> Path:
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
