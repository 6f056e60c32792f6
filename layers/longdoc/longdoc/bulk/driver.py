"""Run a bulk job's rounds in-process, step for step as ``statemachine/bulk.asl.json`` does
(Prepare -> Prime -> Wait/PollPriming -> Submit -> Wait/Poll -> Harvest -> next round or Done); tests and
benchmarks use it."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from longdoc.bulk.plan import poll_wait
from longdoc.bulk.steps import BulkDeps, harvest, poll, poll_prime, prepare, prime, submit


def run_rounds(deps: BulkDeps, bulk_id: str, *, sleep: Callable[[float], None] = time.sleep,
               on_round: Callable[[dict[str, Any]], None] | None = None) -> dict[str, Any]:
    """Run rounds until no run is pending (or the round cap fails the rest); returns the last
    Harvest output plus ``rounds`` and ``polls`` (total)."""
    round_number, polls_total = 0, 0
    while True:
        prepared = prepare(deps, bulk_id, round_number)
        if prepared["batches"]:
            if prime(deps, bulk_id, round_number)["primed"]:  # the priming batch ends before the round's
                state = {"ended": False, "polls": 0, "not_found": 0, "wait_seconds": poll_wait(0, deps.limits)}
                while not state["ended"]:
                    sleep(state["wait_seconds"])
                    state = poll_prime(deps, bulk_id, round_number, state["polls"], state["not_found"])
                polls_total += state["polls"]
            submit(deps, bulk_id, round_number)
            state = {"ended": False, "polls": 0, "not_found": 0, "wait_seconds": poll_wait(0, deps.limits)}
            while not state["ended"]:
                sleep(state["wait_seconds"])
                state = poll(deps, bulk_id, round_number, state["polls"], state["not_found"])
            polls_total += state["polls"]
        out = harvest(deps, bulk_id, round_number)
        if on_round:
            on_round(out)
        round_number = out["round"]
        if not out["pending"] or not prepared["batches"]:
            return {**out, "rounds": round_number, "polls": polls_total}
