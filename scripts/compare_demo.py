"""Compare two `make demo` runs field by field: a restructure must leave every output the same.

Usage::

    LONGDOC_HOME=/tmp/a/home python scripts/demo.py --corpus ../shared/corpus --out /tmp/a/out > /tmp/a/demo.log
    LONGDOC_HOME=/tmp/b/home python scripts/demo.py --corpus ../shared/corpus --out /tmp/b/out > /tmp/b/demo.log
    python scripts/compare_demo.py /tmp/a /tmp/b

Each run folder holds ``out/`` (the demo's JSON results and HTML pages), ``home/results/`` (bulk result files) and
``demo.log`` (everything the demo printed). JSON files are compared value by value, with the
values that differ between two runs of the same code set aside: run, summary and bulk ids (random
or time-derived), execution ARNs and history paths, timestamps and wall-clock seconds. The log is
compared line by line, and each HTML page as a whole, after the same values are masked (and the free port of ``longdoc serve``,
the age column of ``longdoc runs``). Exit status 0 when everything else is identical, 1 otherwise,
with the first differences printed.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path
from typing import Any

VOLATILE_KEYS = frozenset({"run_id", "bulk_id", "summary_id", "arn", "execution_arn", "history", "executions",
                           "wall_seconds", "created_at", "updated_at", "started_at", "finished_at", "entered",
                           "results", "age", "at", "seconds"})
"""Keys whose values differ between two runs of the same code (ids, ARNs, paths, clocks)."""

_MASKS = (
    (re.compile(r"\b(run|bulk|sum)-[0-9a-f]{8,}(-\d+)?\b"), r"\1-ID\2"),
    (re.compile(r"arn:aws:states:[^\s\"']+"), "ARN"),
    (re.compile(r"127\.0\.0\.1:\d+"), "127.0.0.1:PORT"),
    (re.compile(r"/tmp/[^\s\"'<>]+|/work/[^\s\"'<>]+"), "PATH"),
    (re.compile(r"\b\d+(\.\d+)?\s?(s|ms|seconds)\b"), "T"),
    (re.compile(r"\b\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d[0-9.:+Z-]*"), "TS"),
)


def mask(text: str) -> str:
    """``text`` with ids, ARNs, paths, ports, durations and timestamps replaced by fixed tokens."""
    for pattern, replacement in _MASKS:
        text = pattern.sub(replacement, text)
    return text


def diff_json(a: Any, b: Any, where: str = "") -> list[str]:
    """The paths at which ``a`` and ``b`` differ (volatile keys skipped, strings masked)."""
    if isinstance(a, dict) and isinstance(b, dict):
        out = [f"{where}: key {k!r} only in {'first' if k in a else 'second'}" for k in sorted(set(a) ^ set(b))]
        for key in sorted(set(a) & set(b)):
            if key not in VOLATILE_KEYS:
                out += diff_json(a[key], b[key], f"{where}.{key}")
        return out
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            return [f"{where}: {len(a)} items against {len(b)}"]
        return [line for i, (x, y) in enumerate(zip(a, b, strict=True)) for line in diff_json(x, y, f"{where}[{i}]")]
    if isinstance(a, str) and isinstance(b, str):
        return [] if mask(a) == mask(b) else [f"{where}: {a[:80]!r} != {b[:80]!r}"]
    return [] if a == b else [f"{where}: {a!r} != {b!r}"]


def _load(path: Path) -> list[Any]:
    text = path.read_text(encoding="utf-8")
    if path.suffix == ".jsonl":
        return [json.loads(line) for line in text.splitlines() if line.strip()]
    return [json.loads(text)]


def _json_files(run: Path) -> dict[str, Path]:
    """JSON outputs of a run folder by a name that does not carry a run id."""
    files = {f"out/{p.name}": p for p in sorted((run / "out").glob("*.json*"))}
    for p in sorted((run / "home" / "results").glob("*/*.json*")):
        files[mask(f"results/{p.name}")] = p
    return files


def compare(first: Path, second: Path) -> list[str]:
    """Every difference between two demo run folders, as one line each."""
    problems: list[str] = []
    a_files, b_files = _json_files(first), _json_files(second)
    problems += [f"{name}: only in {'first' if name in a_files else 'second'}" for name in sorted(set(a_files) ^ set(b_files))]
    for name in sorted(set(a_files) & set(b_files)):
        problems += [f"{name}{line}" for line in diff_json(_load(a_files[name]), _load(b_files[name]))]
    for page in sorted(p.name for p in (first / "out").glob("*.html")):
        other = second / "out" / page
        if not other.exists():
            problems.append(f"out/{page}: only in first")
        elif mask(other.read_text(encoding="utf-8")) != mask((first / "out" / page).read_text(encoding="utf-8")):
            problems.append(f"out/{page}: the pages differ")
    a_log = [mask(line) for line in (first / "demo.log").read_text(encoding="utf-8").splitlines()]
    b_log = [mask(line) for line in (second / "demo.log").read_text(encoding="utf-8").splitlines()]
    if len(a_log) != len(b_log):
        problems.append(f"demo.log: {len(a_log)} lines against {len(b_log)}")
    problems += [f"demo.log line {n}: {x!r} != {y!r}" for n, (x, y) in enumerate(zip(a_log, b_log, strict=False), 1)
                 if x != y and not _is_runs_row(x, y)]
    return problems


def _is_runs_row(x: str, y: str) -> bool:
    """Rows of `longdoc runs` (and its header) differ in the age column's width and values, and may list runs of
    equal age in another order."""
    row = re.compile(r"^((run|bulk)-ID|RUN\s+STATE\s)")
    return bool(row.match(x) and row.match(y))


def main(argv: list[str] | None = None) -> int:
    """Compare the two run folders named in ``argv``; print at most 60 differences; 1 if any, else 0."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("first", type=Path)
    parser.add_argument("second", type=Path)
    args = parser.parse_args(argv)
    problems = compare(args.first, args.second)
    for line in problems[:60]:
        print(line)
    print(f"{len(problems)} difference(s) between {args.first} and {args.second}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
