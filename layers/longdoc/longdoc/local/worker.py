"""The background worker of ``longdoc serve``: runs one execution of a run in the local engine, then exits.

Started by :class:`longdoc.local.server.BackgroundStarter` as
``python -m longdoc.local.worker --owner O --name N --definition ASL --input JSON``; ``O`` is
the lease owner the server already claimed the run for, so the worker continues that lease
(:class:`~longdoc.local.runner.LeasedEngine`), renews it while it runs, and writes the run's
``history.json`` and ``result.json``. Exit status 0 when the run succeeded, 1 otherwise.
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path


def main(argv: list[str] | None = None) -> int:
    """Run one execution of the run named in ``--input``; returns the exit status."""
    parser = argparse.ArgumentParser(prog="longdoc-worker")
    parser.add_argument("--owner", required=True)
    parser.add_argument("--name", required=True)
    parser.add_argument("--definition", required=True, type=Path)
    parser.add_argument("--input", required=True)
    args = parser.parse_args(argv)
    os.environ.setdefault("POWERTOOLS_METRICS_DISABLED", "true")
    os.environ.setdefault("POWERTOOLS_LOG_LEVEL", os.environ.get("LONGDOC_LOG_LEVEL", "CRITICAL"))
    from longdoc import wiring
    from longdoc.config import get_settings
    from longdoc.local.lambda_runtime import load_handler
    from longdoc.local.runner import LeasedEngine

    settings = get_settings()
    prices = str(settings.price_table) if settings.price_table else None
    with LeasedEngine(wiring.state_store(), settings.home, args.definition,
                      {"ExtractFunctionArn": load_handler("extract").handler}, owner=args.owner,
                      prices_path=prices) as engine:
        result = engine.finish(engine.start_execution(args.name, json.loads(args.input)))
    print(json.dumps({"run_id": result["run_id"], "status": result["status"], "execution": result["execution"]}))
    return 0 if result["status"] == "SUCCEEDED" else 1


if __name__ == "__main__":  # pragma: no cover - the process entry point
    raise SystemExit(main())
