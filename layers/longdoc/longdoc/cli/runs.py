"""``longdoc runs [--status S] [--json]``, ``runs show RUN_ID``, ``runs resume RUN_ID``: the runs console.

The reading and resuming is :mod:`longdoc.local.console`; this module parses arguments and prints.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from datetime import UTC, datetime
from typing import Any

from longdoc.cli.common import print_table, run_failure, statemachine_path
from longdoc.core.failures import innermost_error
from longdoc.core.text import one_line
from longdoc.local.console import STATES

_SHOWN_VALUE_CHARS = 600


def cmd_runs(args: argparse.Namespace) -> int:
    """List runs (newest first) with document, clause types, state, sessions, checkpoints and age."""
    from longdoc import wiring
    from longdoc.local.console import list_runs

    rows = list_runs(wiring.state_store(), args.status)
    if args.json:
        print(json.dumps(rows, indent=1, ensure_ascii=False))
        return 0
    table = [("RUN", "STATE", "DOCUMENT", "SESSIONS", "CHECKPOINTS", "AGE", "CLAUSE TYPES")]
    for r in rows:
        types = ", ".join(r["clause_types"])
        table.append((r["run_id"], r["state"], r["doc_id"], str(r["sessions"]), str(r["checkpoints"]), r["age"],
                      types if len(types) <= 60 else types[:59] + "…"))
    widths = [max(len(row[i]) for row in table) for i in range(6)]
    for row in table:
        print("  ".join(row[i].ljust(widths[i]) for i in range(6)) + "  " + row[6])
    if not rows:
        print("(no runs" + (f" in state {args.status})" if args.status else ")"))
    return 0


def _short(value: Any) -> str:
    """A state input/output on one line, cut at :data:`_SHOWN_VALUE_CHARS` characters."""
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return one_line(text, _SHOWN_VALUE_CHARS)


def _error_line(error: dict) -> str:
    """``"<error>: <cause>"`` on one line (at most 300 characters), the error name once even when the cause
    already opens with it (causes are recorded as ``"RerankUnavailable: ..."``), nested payloads and stack
    traces dropped (:func:`~longdoc.core.failures.innermost_error`)."""
    return one_line(innermost_error(error.get("error"), error.get("cause")), 300)


def _print_show(view: dict[str, Any]) -> None:
    """The human view of :func:`longdoc.local.console.show_run`."""
    print(f"run {view['run_id']}  {view['state']}  doc {view['doc_id']}@{view['doc_version']}  model {view['model']}  "
          f"age {view['age']}")
    print(f"clause types: {', '.join(view['clause_types'])}")
    print(f"pending:      {', '.join(view['pending']) or '(none)'}")
    lease = view["lease"]
    if lease and lease["expires_at"] <= 0:
        print(f"lease:        released by {lease['owner']} (generation {lease.get('generation', 0)})")
    elif lease:
        until = datetime.fromtimestamp(lease["expires_at"], UTC).isoformat(timespec="seconds")
        live = "live" if view["state"] != "STALE" and lease["expires_at"] > time.time() else "EXPIRED"
        if live == "EXPIRED" and lease["expires_at"] > time.time():
            live = "HOLDER GONE"  # its process died (kill -9) before the lease ran out
        print(f"lease:        {live}, {lease['owner']} until {until} (renewed {lease['renewed_at']}, "
              f"generation {lease.get('generation', 0)})")
    else:
        print("lease:        (none)")
    cp = view["checkpoint"]
    print("checkpoint:   " + (f"version {cp['version']}, {cp['sessions']} session(s), last stop {cp['last_stop_reason']}, "
                              f"stalled {cp['stalled_sessions']}, cut blocks {cp.get('cut_blocks', 0)}, saved {cp['updated_at']}"
                              if cp else "(none yet)"))
    error = view["last_error"]
    print("last error:   " + (_error_line(error) if error else "(none)"))
    print(f"executions:   {', '.join(view['executions']) or '(none)'}")
    print(f"history:      {view['history'] or '(not written yet)'}")
    if view.get("next"):
        print(f"next:         {view['next']}  (continues from checkpoint "
              f"{cp['version'] if cp else 0}; nothing extracted is repeated)")
    print("\nSTATES (oldest first)")
    for n, step in enumerate(view["steps"], 1):
        print(f"{n:>3}. {step['state']}  entered {step['entered']}")
        if step["input"] is not None:
            print(f"     input:  {_short(step['input'])}")
        print(f"     output: {_short(step['output']) if step['output'] is not None else '(never left this state)'}")


def cmd_runs_show(args: argparse.Namespace) -> int:
    """Where one run stands: each state's input and output, checkpoint, pending clause types, last error."""
    from longdoc import wiring
    from longdoc.config import get_settings
    from longdoc.local.console import show_run

    view = show_run(wiring.state_store(), get_settings().home, args.run_id)
    if args.json:
        print(json.dumps(view, indent=1, ensure_ascii=False))
    else:
        _print_show(view)
    return 0


def cmd_runs_resume(args: argparse.Namespace) -> int:
    """Continue a FAILED or STALE run from its checkpoint in this process (the local redrive)."""
    from longdoc import wiring
    from longdoc.config import get_settings
    from longdoc.local.console import resume
    from longdoc.local.lambda_runtime import load_handler
    from longdoc.local.runner import LeasedEngine

    settings = get_settings()
    state = wiring.state_store()
    handlers = {"ExtractFunctionArn": load_handler("extract").handler}
    prices = str(settings.price_table) if settings.price_table else None
    with LeasedEngine(state, settings.home, statemachine_path(), handlers, prices_path=prices) as engine:
        result = resume(engine, state, args.run_id, max_iterations=settings.max_iterations,
                        iterations_per_execution=settings.iterations_per_execution)
    if args.json:
        print(json.dumps(result, indent=1, ensure_ascii=False))
    else:
        print(f"run {result['run_id']}  doc {result['doc_id']}  {result['status']}  model {result['model']}  "
              f"sessions {result['sessions']}  checkpoints {result['checkpoints']}")
        print_table(result)
    if result["status"] != "SUCCEEDED":
        print(f"longdoc: {run_failure(result)}", file=sys.stderr)
        return 1
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``runs`` (with ``show`` and ``resume``) to the ``longdoc`` parser."""
    p = sub.add_parser("runs", help="list local runs; show one; resume a failed or stale one")
    p.add_argument("--status", choices=STATES, default=None, help="only runs in this state")
    p.add_argument("--json", action="store_true",
                   help="the runs as a JSON list: run_id, state, doc_id, clause_types, sessions, checkpoints, age")
    p.set_defaults(func=cmd_runs)
    actions = p.add_subparsers(dest="runs_command")
    show = actions.add_parser("show", help="where a run stands: states, checkpoint, pending, last error")
    show.add_argument("run_id", metavar="RUN_ID", help="the run to show")
    show.add_argument("--json", action="store_true", help="the run's state as JSON")
    show.set_defaults(func=cmd_runs_show)
    again = actions.add_parser("resume", help="continue a FAILED or STALE run from its checkpoint")
    again.add_argument("run_id", metavar="RUN_ID", help="a FAILED or STALE run")
    again.add_argument("--json", action="store_true", help="the finished run's result as JSON, as `extract --json`")
    again.set_defaults(func=cmd_runs_resume)
