"""The background worker of ``longdoc serve``: runs one execution in the local engine, then exits.

Started by :class:`longdoc.local.server.BackgroundStarter` (extraction runs) as
``python -m longdoc.local.worker --owner O --name N --definition ASL --input JSON``; ``O`` is
the lease owner the server already claimed the run for (``-``: read it from the first line of
stdin, which the server writes once it has claimed the lease for an owner naming this
worker's pid), so the worker continues that lease (:class:`~longdoc.local.runner.LeasedEngine`),
renews it while it runs, and writes the run's ``history.json`` and ``result.json``. With
``--resume RUN_ID`` it continues that ``FAILED`` or ``STALE`` run from its checkpoint instead, as
``longdoc runs resume`` does (the server checked the run and claimed its lease).

Started by :class:`longdoc.local.server.MachineStarter` (summaries, bulk extractions) as
``python -m longdoc.local.worker --kind summarize|bulk --name N --definition ASL --input JSON``:
the execution runs in :class:`~longdoc.local.engine.LocalStepFunctions` with that function's
handler; its progress lives in the summary or bulk records the handler writes, as on AWS.

Exit status 0 when the execution succeeded, 1 otherwise.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

MACHINES = {"summarize": ("summarize", "SummarizeFunctionArn"), "bulk": ("bulk", "BulkFunctionArn")}
"""``--kind`` -> (the function under ``functions/``, its placeholder in the ASL definition)."""

TIMEOUT_SECONDS = 24 * 3600
"""How long a summary or bulk execution may run locally (a Message Batch ends within 24 hours, Anthropic docs)."""


def _extract(args: argparse.Namespace) -> dict[str, Any]:
    """One execution of an extraction run under the lease the server claimed (``--owner``)."""
    from longdoc import wiring
    from longdoc.config import get_settings
    from longdoc.local.lambda_runtime import load_handler
    from longdoc.local.runner import LeasedEngine

    settings = get_settings()
    prices = str(settings.price_table) if settings.price_table else None
    owner = sys.stdin.readline().strip() if args.owner == "-" else args.owner
    if not owner:  # the server died, or was refused the lease, before handing it over
        return {"run_id": args.resume, "status": "NOT_STARTED", "execution": None}
    state = wiring.state_store()
    with LeasedEngine(state, settings.home, args.definition,
                      {"ExtractFunctionArn": load_handler("extract").handler}, owner=owner,
                      prices_path=prices) as engine:
        if args.resume:
            from longdoc.local.console import resume

            result = resume(engine, state, args.resume, max_iterations=settings.max_iterations,
                            iterations_per_execution=settings.iterations_per_execution, checked=True)
        else:
            result = engine.finish(engine.start_execution(args.name, json.loads(args.input)))
    return {"run_id": result["run_id"], "status": result["status"], "execution": result["execution"]}


def _machine(args: argparse.Namespace) -> dict[str, Any]:
    """One execution of the summary or bulk state machine, its handler in this process."""
    from longdoc.local.engine import LocalStepFunctions
    from longdoc.local.lambda_runtime import load_handler

    function, placeholder = MACHINES[args.kind]
    with LocalStepFunctions(args.definition, {placeholder: load_handler(function).handler},
                            poll_seconds=0.5) as machine:
        arn = machine.start_execution(args.name, json.loads(args.input))
        execution = machine.wait(arn, timeout_seconds=TIMEOUT_SECONDS)
    return {"name": args.name, "status": execution.status, "execution": execution.execution_arn,
            "error": execution.error}


def main(argv: list[str] | None = None) -> int:
    """Run one execution of ``--kind`` (default ``extract``); returns the exit status."""
    parser = argparse.ArgumentParser(prog="longdoc-worker")
    parser.add_argument("--kind", choices=["extract", *MACHINES], default="extract")
    parser.add_argument("--owner", help="the run lease the server claimed (extract only; '-': read it from stdin)")
    parser.add_argument("--resume", metavar="RUN_ID", help="continue this FAILED or STALE run (extract only)")
    parser.add_argument("--name", required=True)
    parser.add_argument("--definition", required=True, type=Path)
    parser.add_argument("--input", required=True)
    args = parser.parse_args(argv)
    if args.kind == "extract" and not args.owner:
        parser.error("--owner is required with --kind extract")
    os.environ.setdefault("POWERTOOLS_METRICS_DISABLED", "true")
    os.environ.setdefault("POWERTOOLS_LOG_LEVEL", os.environ.get("LONGDOC_LOG_LEVEL", "CRITICAL"))
    outcome = _extract(args) if args.kind == "extract" else _machine(args)
    print(json.dumps(outcome))
    return 0 if outcome["status"] == "SUCCEEDED" else 1


if __name__ == "__main__":  # pragma: no cover - the process entry point
    raise SystemExit(main())
