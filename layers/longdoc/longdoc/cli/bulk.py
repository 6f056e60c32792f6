"""``longdoc bulk``: many documents through the Message Batches API in rounds (``statemachine/bulk.asl.json``
in the local engine), ``longdoc bulk status BULK_ID`` and ``longdoc bulk resume BULK_ID``.

Documents come as ids, ``--all`` (every ingested document) or ``--manifest FILE`` (one id, or a
JSON object with ``doc_id``, per line). Rejected lines and ids are printed on stderr with their
line number and reason; the good ones run. Progress (documents done/failed/pending, round,
batches in flight) goes to stderr. Results: ``$LONGDOC_HOME/results/<bulk_id>/<run_id>.json`` per
document (the shape of ``extract --json``) and ``summary.jsonl``. The job is ``SUCCEEDED`` only when
every document is done, else ``PARTIAL`` (some done) or ``FAILED`` (none). Exit status 1 when a
document failed or an input was rejected.

The process running the job is recorded as its worker (a pid file); ``bulk status`` shows a job
whose worker died (killed) as ``STALE``, and ``bulk resume`` continues it from its stores: prepared
rounds, submitted batches (harvested, never sent again) and applied results are reused.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any, TextIO

from longdoc.cli.common import REPO_ROOT, int_between, max_tokens_bounds
from longdoc.cli.progress import StderrProgress
from longdoc.core.errors import CliError
from longdoc.core.text import one_line
from longdoc.local.lambda_runtime import load_handler


def statemachine() -> Path:
    """``statemachine/bulk.asl.json`` (override: ``LONGDOC_BULK_STATEMACHINE``)."""
    return Path(os.environ.get("LONGDOC_BULK_STATEMACHINE", REPO_ROOT / "statemachine" / "bulk.asl.json"))


def _selection(args: argparse.Namespace, state: Any) -> Any:
    """The documents asked for: exactly one of ids, ``--all`` or ``--manifest``."""
    from longdoc.bulk.runs import Selection, parse_manifest

    given = sum((bool(args.targets), args.all, args.manifest is not None))
    if given != 1:
        raise CliError("give document ids, --all or --manifest FILE (exactly one of them)")
    if args.manifest is not None:
        try:
            text = Path(args.manifest).read_text(encoding="utf-8")
        except UnicodeDecodeError as exc:
            raise CliError(f"manifest {args.manifest} is not UTF-8 text ({exc.reason})") from None
        return parse_manifest(text)
    if args.all:
        if not hasattr(state, "list_document_ids"):
            raise CliError(f"{type(state).__name__} cannot list documents; give ids or a manifest")
        return Selection(doc_ids=sorted(state.list_document_ids()))
    return Selection(doc_ids=list(dict.fromkeys(args.targets)))


PROGRESS_SECONDS = 10.0
"""Off a terminal, at most one progress line per this many seconds (the counts change faster while
Harvest applies results; a log wants a line now and then, not one per document)."""


def _counts_text(p: dict[str, int]) -> str:
    return (f"{p['done']} done, {p['failed']} failed, {p['pending']} pending; round {p['round']}, "
            f"{p['in_flight']} batches in flight")


class Progress:
    """A bulk job's progress on ``err``: on a terminal a tqdm bar of documents finished (done or
    failed) of the job's, with rate and ETA, the failed count, round and batches in flight after it
    (:class:`~longdoc.cli.progress.StderrProgress`); elsewhere (a pipe, a log file) a plain line only
    when the counts changed and at least ``every`` seconds (``clock``, seconds) after the last one,
    and the final counts once (a job of hours shows a line now and then in a log, not one per document)."""

    STAGE = "bulk"

    def __init__(self, err: TextIO, every: float = PROGRESS_SECONDS,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.err, self.every, self.clock = err, every, clock
        self.tty = err.isatty()
        self.bar = StderrProgress(err, tty=True) if self.tty else None
        self._last, self._at, self._finished = "", -every, 0

    def _write(self, text: str) -> None:
        self.err.write(text)
        self.err.flush()

    def _draw(self, p: dict[str, int]) -> None:
        assert self.bar is not None
        finished = p["done"] + p["failed"]
        self.bar.start(self.STAGE, finished + p["pending"], "documents")
        self.bar.note(self.STAGE, f"{p['failed']} failed; round {p['round']}, {p['in_flight']} batches in flight")
        self.bar.advance(self.STAGE, finished - self._finished)
        self._finished = finished

    def update(self, p: dict[str, int]) -> None:
        """Show ``p`` (``done``, ``failed``, ``pending``, ``round``, ``in_flight``) if it is news."""
        text = _counts_text(p)
        if text == self._last or (not self.tty and self.clock() - self._at < self.every):
            return
        if self.bar is not None:
            self._draw(p)
        else:
            self._write("bulk progress: " + text + "\n")
        self._last, self._at = text, self.clock()

    def close(self, p: dict[str, int]) -> None:
        """Show the final counts (once) and end the bar or the lines."""
        text = _counts_text(p)
        if self.bar is not None:
            self._draw(p)
            self.bar.finish(self.STAGE)
            self.bar.close()
        elif text != self._last:
            self._write("bulk progress: " + text + "\n")
        self._last = text


def _watch(machine: Any, stores: Any, bulk_id: str, arn: str, err: TextIO) -> None:
    """Show the job's progress on ``err`` (:class:`Progress`) until the execution ends."""
    from longdoc.bulk.runs import progress

    shown = Progress(err)
    while machine.sfn.describe_execution(executionArn=arn)["status"] == "RUNNING":
        began = time.monotonic()
        shown.update(progress(stores, bulk_id))
        # reading the counts reads every run: with thousands, poll less often than they take
        time.sleep(max(0.5, 4 * (time.monotonic() - began)))
    shown.close(progress(stores, bulk_id))


def _execute(deps: Any, settings: Any, bulk_id: str, name: str, execution_input: dict[str, Any]) -> Any:
    """Run execution ``name`` of the bulk machine in this process, recorded as its worker (a pid file,
    :func:`longdoc.local.pids.record_in_process_worker`, so ``bulk status`` shows the job ``STALE``
    if this process dies), showing progress on stderr; returns the finished execution."""
    from longdoc.bulk.runs import Stores
    from longdoc.local.engine import LocalStepFunctions
    from longdoc.local.pids import record_in_process_worker

    app = load_handler("bulk")  # the handler the local engine invokes; the adapters come from wiring
    record_in_process_worker(settings.home, "bulk", name)
    with LocalStepFunctions(statemachine(), {"BulkFunctionArn": app.handler}) as machine:
        arn = machine.start_execution(name, execution_input)
        _watch(machine, Stores.of(deps), bulk_id, arn, sys.stderr)
        return machine.wait(arn)


def _report(deps: Any, settings: Any, bulk_id: str, execution: Any) -> dict[str, Any]:
    """The job's status (:func:`longdoc.bulk.runs.bulk_status`) with its results folder and execution."""
    from longdoc.bulk.runs import Stores, bulk_status

    status = bulk_status(Stores.of(deps), bulk_id, str(settings.price_table) if settings.price_table else None,
                         _gone(settings))
    status["results"] = str(settings.home / "results" / bulk_id)
    status["execution"] = {"arn": execution.execution_arn, "status": execution.status, "events": len(execution.history),
                           "error": execution.error, "cause": execution.cause}
    return status


def _gone(settings: Any) -> Callable[[str], bool]:
    """The liveness probe of a bulk execution's local worker (by its recorded pid)."""
    from longdoc.local.pids import execution_worker_gone

    return lambda name: execution_worker_gone(settings.home, "bulk", name)


def _run(args: argparse.Namespace) -> tuple[dict[str, Any], list[Any]]:
    from longdoc import wiring
    from longdoc.bulk.runs import Stores, execution_input, start_bulk
    from longdoc.config import get_settings

    settings = get_settings()
    if not [c for c in args.clause_types.split(",") if c.strip()]:
        raise CliError("--clause-types is required (comma-separated clause type names)")
    load_handler("bulk")  # fail before storing anything when the handler cannot load
    deps = wiring.bulk_deps()
    selection = _selection(args, deps.extract.state)
    bulk_id = f"bulk-{uuid.uuid4().hex[:12]}"
    accepted = start_bulk(Stores.of(deps), deps.extract.catalogue, bulk_id, selection,
                          clause_types=[c for c in args.clause_types.split(",") if c.strip()],
                          model_name=wiring.model_name(settings), max_tokens=args.max_tokens or settings.max_tokens,
                          top_k=settings.top_k)
    for r in accepted.rejected:
        print(f"longdoc: skipped {r.where}: {one_line(r.reason, 300)}", file=sys.stderr)
    print(f"bulk {bulk_id}: {len(accepted.doc_ids)} documents", file=sys.stderr)
    execution = _execute(deps, settings, bulk_id, bulk_id, execution_input(bulk_id))
    status = _report(deps, settings, bulk_id, execution)
    status["rejected"] = [{"where": r.where, "reason": r.reason} for r in accepted.rejected]
    return status, accepted.rejected


def print_status(status: dict[str, Any], out: TextIO) -> None:
    """The job's line of counts and costs, then one line per document (to ``out``)."""
    print(f"bulk {status['bulk_id']}  {status['status']}  {status['done']} done, {status['failed']} failed, "
          f"{status['pending']} pending; {status['rounds']} rounds; cost: {status['cost']}", file=out)
    if status.get("reason"):
        print(f"  {status['status']}: {one_line(status['reason'], 300)}", file=out)
    if status["status"] == "STALE":
        print(f"  {STALE_NEXT}", file=out)
    for c in status.get("cache") or []:  # prompt-cache figures of primed rounds (issue 25)
        if c["primed"]:
            print(f"  round {c['round']}: primed; {c['reading']}/{c['items']} requests read the cache "
                  f"(hit rate {c['hit_rate']:.0%}), {c['read_share']:.0%} of their input tokens"
                  + ("  WARNING: nothing read" if c["primed_miss"] else ""), file=out)
    priming = status.get("priming") or {}
    if priming.get("batches"):  # their cost is inside the job's (none offline: the baseline is not primed)
        print(f"  priming: {priming['batches']} one-request batches, {priming['cost_usd']} USD at batch prices "
              f"(synchronous: {priming['sync_cost_usd']} USD), included in the cost", file=out)
    for d in status["documents"]:
        error = f"  {one_line(d['error'] or '', 120)}" if d["error"] else ""
        print(f"  {d['run_id']:<26} {d['doc_id'][:40]:<40} {d['status']:<10} {d['extractions']:>3} extractions{error}",
              file=out)
    if status.get("results"):
        print(f"results in {status['results']}", file=out)


STALE_NEXT = "its worker died (the process running it was killed): `longdoc bulk resume BULK_ID` continues it"
"""What ``bulk status`` says under a ``STALE`` job."""


def _finish(args: argparse.Namespace, status: dict[str, Any], rejected: list[Any]) -> int:
    """Print the job; exit status 0 only when it is ``SUCCEEDED`` and no input was rejected. An
    execution that failed for another reason than every document failing raises :class:`CliError`."""
    if args.json:
        print(json.dumps(status, ensure_ascii=False, indent=1))
    else:
        print_status(status, sys.stdout)
    execution = status["execution"]
    if execution["status"] != "SUCCEEDED" and execution["error"] != "BulkJobFailed":
        raise CliError(f"bulk {status['bulk_id']} failed: {execution['error']}: "
                       f"{one_line(execution['cause'] or '', 300)}")
    return 0 if status["status"] == "SUCCEEDED" and not rejected else 1


def cmd_bulk(args: argparse.Namespace) -> int:
    """``longdoc bulk ...``, ``longdoc bulk status BULK_ID`` or ``longdoc bulk resume BULK_ID``."""
    if args.targets[:1] == ["status"]:
        return _status(args)
    if args.targets[:1] == ["resume"]:
        return _resume(args)
    status, rejected = _run(args)
    return _finish(args, status, rejected)


def _resume(args: argparse.Namespace) -> int:
    """Continue a ``STALE`` job (its worker died) in this process from its stores: a new execution
    (:func:`longdoc.bulk.intake.restart_execution`, as the API's re-POST) that reuses the prepared
    rounds, the batches already submitted (polled and harvested, never sent again) and the results
    already applied. Raises :class:`CliError` for a job that is not ``STALE``."""
    from longdoc import wiring
    from longdoc.bulk.intake import restart_execution
    from longdoc.bulk.runs import Stores, bulk_status
    from longdoc.config import get_settings

    if len(args.targets) != 2:
        raise CliError("usage: longdoc bulk resume BULK_ID")
    bulk_id, settings = args.targets[1], get_settings()
    deps = wiring.bulk_deps()
    current = bulk_status(Stores.of(deps), bulk_id, None, _gone(settings))["status"]
    if current != "STALE":
        why = ("its worker is still running" if current == "RUNNING" else "it has ended")
        raise CliError(f"bulk {bulk_id} is {current}; only a STALE job resumes ({why})")
    name, execution_input = restart_execution(deps.store, bulk_id)
    print(f"bulk {bulk_id}: resumed as execution {name} from round {execution_input['round']}", file=sys.stderr)
    status = _report(deps, settings, bulk_id, _execute(deps, settings, bulk_id, name, execution_input))
    return _finish(args, status, [])


def _status(args: argparse.Namespace) -> int:
    from longdoc import wiring
    from longdoc.bulk.runs import Stores, bulk_status
    from longdoc.config import get_settings

    if len(args.targets) != 2:
        raise CliError("usage: longdoc bulk status BULK_ID")
    settings = get_settings()
    status = bulk_status(Stores.of(wiring.bulk_deps()), args.targets[1],
                         str(settings.price_table) if settings.price_table else None, _gone(settings))
    if args.json:
        print(json.dumps(status, ensure_ascii=False, indent=1))
    else:
        print_status(status, sys.stdout)
    return 0


BULK_EPILOG = """\
examples:
  longdoc bulk --clause-types "Governing Law,Cap On Liability" --manifest contracts.txt
  longdoc bulk --clause-types "Governing Law" doc-a doc-b       # or --all
  longdoc bulk status bulk-5f0c2a9e1b7d
  longdoc bulk resume bulk-5f0c2a9e1b7d                          # a STALE job: its worker died

A manifest holds one document id per line ({"doc_id": ...} too; blank lines and # comments skipped).
A job is SUCCEEDED only when every document is done, else PARTIAL (some done) or FAILED (none), with
its reason. Exit status 1 unless SUCCEEDED, or when a line was skipped; each is listed with its reason.
"""


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``bulk`` (and ``bulk status``) to the ``longdoc`` parser."""
    p = sub.add_parser("bulk", help="extract from many documents with the Message Batches API (half price)",
                       description="Extract clause types from many documents in rounds of Message Batches (half "
                                   "the synchronous price); `longdoc bulk status BULK_ID` shows a job, `longdoc bulk "
                                   "resume BULK_ID` continues a STALE one (its worker died).",
                       epilog=BULK_EPILOG)
    p.add_argument("targets", nargs="*", metavar="DOC_ID", help="document ids (or: status BULK_ID, resume BULK_ID)")
    p.add_argument("--clause-types", default="", help="comma-separated clause type names")
    p.add_argument("--all", action="store_true", help="every ingested document")
    p.add_argument("--manifest", default=None, metavar="FILE", help="one document id (or {\"doc_id\": ...}) per line")
    p.add_argument("--max-tokens", type=int_between(*max_tokens_bounds()), default=None, metavar="N",
                   help="output tokens per model call (64-64000, the settings' bounds)")
    p.add_argument("--json", action="store_true",
                   help="the job's summary as JSON: bulk_id, status, counts, cost, documents, rejected, results")
    p.set_defaults(func=cmd_bulk, progress=True)
