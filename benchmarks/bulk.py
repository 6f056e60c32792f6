"""Bulk extraction at scale (issue 14): 1,000 document runs x 8 clause types through the Message Batches path.

    make bench-bulk
    python benchmarks/bulk.py [--corpus ../shared/corpus] [--runs 1000] [--home DIR]

The 20 CUAD contracts (``<corpus>/cuad/*.pdf``) are ingested once into ``--home`` (default: a
fresh folder under /tmp; an existing home with them READY is reused). Then, in this process:

1. **Synchronous baseline**: ``longdoc extract DOC --json`` once per contract (the local engine,
   ``statemachine/extract.asl.json``, one execution per document), the real ``anthropic`` SDK
   against the loopback Messages fake;
2. **Bulk**: one job of ``--runs`` document runs (the 20 contracts under distinct run ids, in
   turn) through the local engine running ``statemachine/bulk.asl.json`` with the real bulk
   handler and the real SDK against the loopback Message Batches fake (``tests/fakes``).

Both fakes answer with the offline baseline's tool calls (so the work is the same) under the
model id ``claude-sonnet-5-5``, and compute ``usage`` from the request's cache breakpoints
(:class:`tests.fakes.anthropic_server.PromptCache`, 1,024-token minimum), so costs are priced
with ``longdoc/data/prices.json``.

Printed, each with its baseline from the same run where one applies: wall time per document;
rounds (model turns) per document; the largest history (events per execution) and the largest
state payload (bytes); the largest stored item (SQLite here; the same bodies go into DynamoDB,
whose item limit is 400 KB); Harvest's peak Python heap (tracemalloc, on only inside Harvest)
against the same figure for a bulk job of one run per contract; and the cost of the bulk job against the same work run
synchronously (measured on the 20 contracts, scaled) and against the same tokens without cache.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import sqlite3
import sys
import tempfile
import time
import tracemalloc
from collections import Counter
from decimal import Decimal
from functools import wraps
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "layers" / "longdoc"), str(ROOT)]

from longdoc import wiring  # noqa: E402
from longdoc.cli import main as cli  # noqa: E402
from longdoc.core.messages import Usage  # noqa: E402
from longdoc.core.cost import estimate_cost, load_prices  # noqa: E402

PRICED_AS = "claude-sonnet-5-5"
TYPES = ["Agreement Date", "Expiration Date", "Governing Law", "Anti-Assignment", "Insurance", "Audit Rights",
         "Cap On Liability", "Termination For Convenience"]


def _env(home: Path, base_url: str | None = None) -> None:
    """Set the local-mode environment (Claude through ``base_url``, or the baseline for ingest)."""
    os.environ.update({"LONGDOC_HOME": str(home), "LONGDOC_MODE": "local", "POWERTOOLS_METRICS_DISABLED": "true",
                       "LONGDOC_BULK_POLL_FIRST": "0", "LONGDOC_BULK_POLL_CAP": "0"})
    if base_url:
        os.environ.update({"LONGDOC_MODEL": "claude", "LONGDOC_CLAUDE_MODEL": PRICED_AS,
                           "ANTHROPIC_API_KEY": "test-key-not-real", "ANTHROPIC_BASE_URL": base_url})
    else:
        os.environ["LONGDOC_MODEL"] = "baseline"
    wiring.reset()


def _cli(*argv: str) -> tuple[int, str]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = cli(list(argv))
    return code, out.getvalue()


def ingest(home: Path, corpus: Path) -> list[str]:
    """The doc ids of the CUAD contracts, ingested into ``home`` unless already READY there."""
    _env(home)
    pdfs = sorted((corpus / "cuad").glob("*.pdf"))
    if not pdfs:
        raise SystemExit(f"bench-bulk: no PDFs under {corpus / 'cuad'} (pass --corpus DIR)")
    state = wiring.state_store()
    ids = sorted(getattr(state, "list_document_ids", lambda: [])())
    if len(ids) >= len(pdfs):
        return ids[:len(pdfs)]
    started = time.perf_counter()
    code, out = _cli("ingest", *map(str, pdfs), "--json")
    ids = [json.loads(line)["doc_id"] for line in out.splitlines() if line.strip()]
    print(f"ingested {len(ids)} contracts in {time.perf_counter() - started:.0f} s (exit {code})", flush=True)
    return ids


def shaped(params: dict[str, Any]) -> dict[str, Any]:
    """A Messages API message: the offline baseline's answer to ``params``, under the request's model id."""
    from longdoc.adapters.baseline import OfflineBaselineModel
    from longdoc.bulk.requests import model_request

    response = OfflineBaselineModel().create(model_request(params))
    return {"type": "message", "role": "assistant", "stop_sequence": None,
            **response.model_dump(exclude={"stop_details"}), "model": params["model"]}


def _largest_payload(history: list[dict[str, Any]]) -> int:
    """Bytes of the largest input or output a state passed on (every ``*EventDetails`` string)."""
    sizes = [len(str(v).encode()) for e in history for k, d in e.items() if k.endswith("EventDetails")
             and isinstance(d, dict) for f, v in d.items() if f in ("input", "output")]
    return max(sizes, default=0)


def run_sync(home: Path, doc_ids: list[str]) -> dict[str, Any]:
    """``longdoc extract`` once per document against the Messages fake: totals and largest figures."""
    from tests.fakes.anthropic_server import FakeAnthropic, PromptCache, Reply

    totals: dict[str, Any] = {"wall": 0.0, "usage": Usage(), "calls": 0, "events": 0, "payload": 0,
                              "docs": len(doc_ids), "succeeded": 0, "calls_ok": 0}
    with FakeAnthropic(responder=lambda body: Reply(body=shaped(body)), cache=PromptCache(1024)) as fake:
        _env(home, fake.base_url)
        for doc_id in doc_ids:
            started = time.perf_counter()
            code, out = _cli("extract", doc_id, "--clause-types", ",".join(TYPES), "--json")
            totals["wall"] += time.perf_counter() - started
            result = json.loads(out)
            totals["usage"] = totals["usage"].add(Usage(**result["usage"]))
            totals["calls"] += len(result["calls"])
            totals["calls_ok"] += len(result["calls"]) if code == 0 else 0
            totals["events"] = max(totals["events"], result["execution"]["events"])
            history = json.loads(Path(result["execution"]["history"]).read_text())
            totals["payload"] = max(totals["payload"], _largest_payload(history))
            totals["succeeded"] += 1 if code == 0 else 0
    return totals


class Meter:
    """Wall seconds and calls per bulk step, and the peak Python heap inside Harvest (tracemalloc:
    every thread's allocations count, so the engine polls slowly while a job runs)."""

    def __init__(self) -> None:
        self.seconds: Counter[str] = Counter()
        self.calls: Counter[str] = Counter()
        self.harvest_peak = 0

    def install(self) -> Meter:
        """Measure the four steps of :mod:`longdoc.bulk.steps` (as the bulk handler calls them)."""
        from longdoc.bulk import steps

        for step in ("prepare", "submit", "poll", "harvest"):
            self.wrap(steps, step)
        return self

    def take(self) -> Meter:
        """A copy of the figures so far; the meter starts again from zero."""
        taken = Meter()
        taken.seconds, taken.calls, taken.harvest_peak = self.seconds, self.calls, self.harvest_peak
        self.seconds, self.calls, self.harvest_peak = Counter(), Counter(), 0
        return taken

    def wrap(self, module: Any, name: str) -> None:
        """Replace ``module.name`` with a measured call of it."""
        real = getattr(module, name)

        @wraps(real)
        def measured(*args: Any, **kwargs: Any) -> Any:
            if name == "harvest":
                tracemalloc.start()
            started = time.perf_counter()
            try:
                return real(*args, **kwargs)
            finally:
                self.seconds[name] += time.perf_counter() - started
                self.calls[name] += 1
                if name == "harvest":
                    self.harvest_peak = max(self.harvest_peak, tracemalloc.get_traced_memory()[1])
                    tracemalloc.stop()

        setattr(module, name, measured)


def run_bulk(doc_ids: list[str], runs: int, meter: Meter) -> dict[str, Any]:
    """One bulk job of ``runs`` document runs through the local engine and the Batches fake
    (a fresh prompt cache: the job starts cold); ``meter`` is taken at the end."""
    from longdoc.bulk.runs import Selection, Stores, bulk_status, execution_input, start_bulk
    from longdoc.config import get_settings
    from longdoc.local.engine import LocalStepFunctions
    from longdoc.local.lambda_runtime import load_handler
    from tests.fakes.anthropic_server import PromptCache
    from tests.fakes.batches_server import FakeBatches

    cache = PromptCache(1024)

    def answer(params: dict[str, Any]) -> dict[str, Any]:  # batch requests are answered one at a time
        message = shaped(params)
        return {**message, "usage": {**message["usage"], **cache.usage(params)}}

    with FakeBatches(answer) as fake:
        _env(Path(os.environ["LONGDOC_HOME"]), fake.url)
        app = load_handler("bulk")
        wiring.bulk_deps.cache_clear()
        deps, settings, bulk_id = wiring.bulk_deps(), get_settings(), f"bulk-bench-{int(time.time())}"
        stores = Stores.of(deps)
        started = time.perf_counter()
        start_bulk(stores, deps.extract.catalogue, bulk_id, Selection(doc_ids=[doc_ids[n % len(doc_ids)]
                                                                               for n in range(runs)]),
                   clause_types=TYPES, model_name=wiring.model_name(), max_tokens=settings.max_tokens,
                   top_k=settings.top_k)
        with LocalStepFunctions(ROOT / "statemachine" / "bulk.asl.json", {"BulkFunctionArn": app.handler},
                                poll_seconds=2.0) as sfn:
            execution = sfn.wait(sfn.start_execution(bulk_id, execution_input(bulk_id)), timeout_seconds=6 * 3600)
        wall = time.perf_counter() - started
        status = bulk_status(stores, bulk_id, None)
        streamed = sum(len(json.dumps(line)) + 1 for b in fake.batches.values() for line in b["results"])
        batches = fake.created()
    pk = f"bulk#{bulk_id}"
    turns = Counter(item["run_id"] for _, item in stores.store.query(pk, "cid#"))
    usage = Usage()
    for run_id in turns:
        checkpoint = deps.extract.state.load_checkpoint(run_id)
        usage = usage.add(checkpoint.usage if checkpoint else Usage())
    succeeded = {d["run_id"] for d in status["documents"] if d["status"] == "SUCCEEDED"}
    return {"wall": wall, "status": status, "execution": execution, "turns": turns, "usage": usage,
            "meter": meter.take(), "streamed": streamed, "batches": batches, "bulk_id": bulk_id, "succeeded": succeeded}


def largest_items(home: Path, bulk_id: str) -> dict[str, tuple[int, str]]:
    """The largest stored body (bytes, key) of the bulk job (its bulk items and its runs' run,
    checkpoint and extraction items) and of the synchronous runs (every other run)."""
    out = {"bulk": (0, ""), "sync": (0, "")}
    with contextlib.closing(sqlite3.connect(home / "bulk.sqlite3")) as db:
        row = db.execute("SELECT length(body), sk FROM bulk WHERE pk = ? ORDER BY 1 DESC LIMIT 1",
                         (f"bulk#{bulk_id}",)).fetchone()
        out["bulk"] = (int(row[0]), f"bulk item {row[1]}") if row else (0, "")
    with contextlib.closing(sqlite3.connect(home / "state.sqlite3")) as db:
        for table in ("runs", "checkpoints", "extractions"):
            for side, test in (("bulk", "run_id LIKE ?"), ("sync", "run_id NOT LIKE ?")):
                row = db.execute(f"SELECT length(body), run_id FROM {table} WHERE {test} ORDER BY 1 DESC LIMIT 1",
                                 (f"{bulk_id}-%",)).fetchone()
                if row and int(row[0]) > out[side][0]:
                    out[side] = (int(row[0]), f"{table[:-1]} of {row[1]}")
    return out


def _usd(usage: Usage, discount: str = "1", no_cache: bool = False) -> Decimal:
    """``usage`` at :data:`PRICED_AS` list prices (times ``discount``); ``no_cache``: every input token at the input price."""
    if no_cache:
        usage = Usage(input_tokens=usage.input_tokens + usage.cache_read_input_tokens
                      + usage.cache_creation_input_tokens, output_tokens=usage.output_tokens)
    return Decimal(estimate_cost(usage, PRICED_AS, load_prices()) or "0") * Decimal(discount)


def _ratio(a: float | Decimal, b: float | Decimal) -> str:
    return f"{float(a) / float(b):.3f}" if b else "n/a"


def _rows(bulk: dict[str, Any], small: dict[str, Any], sync: dict[str, Any], items: dict[str, tuple[int, str]],
          runs: int) -> list[tuple[str, str, str, str]]:
    """``(figure, bulk, baseline, ratio)`` rows of the report."""
    meter, execution = bulk["meter"], bulk["execution"]
    per_doc, sync_per_doc = bulk["wall"] / runs, sync["wall"] / sync["docs"]
    turns = sorted(bulk["turns"].values())
    done = sorted(n for run_id, n in bulk["turns"].items() if run_id in bulk["succeeded"])
    bulk_cost, same_tokens_sync = _usd(bulk["usage"], "0.5"), _usd(bulk["usage"])
    no_cache, payload = _usd(bulk["usage"], no_cache=True), _largest_payload(execution.history)
    sync_measured = _usd(sync["usage"]) * Decimal(runs) / Decimal(sync["docs"])
    events = len(execution.history)
    return [
        ("wall time per document (s)", f"{per_doc:.3f}", f"{sync_per_doc:.3f} (longdoc extract, 1 execution each)",
         _ratio(per_doc, sync_per_doc)),
        ("model turns per document", f"mean {sum(turns) / len(turns):.2f}, max {turns[-1]}",
         f"{sync['calls'] / sync['docs']:.2f} calls (synchronous)",
         _ratio(sum(turns) / len(turns), sync["calls"] / sync["docs"])),
        ("  documents that succeeded", f"mean {sum(done) / max(len(done), 1):.2f}",
         f"{sync['calls_ok'] / max(sync['succeeded'], 1):.2f}",
         _ratio(sum(done) / max(len(done), 1), sync["calls_ok"] / max(sync["succeeded"], 1))),
        ("largest history (events per execution)", f"{events} (1 execution, {runs} documents)",
         f"{sync['events']} (1 execution, 1 document)", _ratio(events, sync["events"])),
        ("  events per document", f"{events / runs:.3f}", f"{sync['events']}", _ratio(events / runs, sync["events"])),
        ("largest state payload (bytes)", str(payload), f"{sync['payload']} (synchronous)",
         _ratio(payload, sync["payload"])),
        ("largest stored item (bytes)", f"{items['bulk'][0]} ({items['bulk'][1]})",
         f"{items['sync'][0]} ({items['sync'][1]})", _ratio(items["bulk"][0], items["sync"][0])),
        ("Harvest peak Python heap (bytes)", f"{meter.harvest_peak} ({bulk['streamed']} result bytes streamed)",
         f"{small['meter'].harvest_peak} ({small['streamed']} bytes; bulk job of {len(small['turns'])} runs)",
         _ratio(meter.harvest_peak, small["meter"].harvest_peak)),
        ("cost of the job (USD)", f"{bulk_cost:.6f} (batch: 50 % of list)",
         f"{sync_measured:.6f} (synchronous, measured x {runs}/{sync['docs']})", _ratio(bulk_cost, sync_measured)),
        ("  same tokens at synchronous prices", f"{same_tokens_sync:.6f}", f"{no_cache:.6f} (same tokens, no cache)",
         _ratio(same_tokens_sync, no_cache)),
        ("  batch against no cache", f"{bulk_cost:.6f}", f"{no_cache:.6f}", _ratio(bulk_cost, no_cache)),
    ]


def report(bulk: dict[str, Any], small: dict[str, Any], sync: dict[str, Any], items: dict[str, tuple[int, str]],
           runs: int) -> None:
    """Print the figures, each against its baseline from this run."""
    meter, execution, status = bulk["meter"], bulk["execution"], bulk["status"]
    print(f"\nbulk {bulk['bulk_id']}: {status['status']}, {status['done']} done, {status['failed']} failed, "
          f"{status['rounds']} rounds, {bulk['batches']} batches; execution {execution.status}")
    print(f"{'figure':<42} {'bulk':<46} {'baseline (same run)':<56} ratio")
    for name, ours, base, ratio in _rows(bulk, small, sync, items, runs):
        print(f"{name:<42} {ours:<46} {base:<56} {ratio}")
    for label, u in (("bulk", bulk["usage"]), ("synchronous", sync["usage"])):
        print(f"{label} tokens: input {u.input_tokens}, cache read {u.cache_read_input_tokens}, cache write "
              f"{u.cache_creation_input_tokens}, output {u.output_tokens}")
    print(f"job cost as reported: {status['cost']}")
    print("bulk steps (s, calls): " + ", ".join(f"{k} {meter.seconds[k]:.1f} ({meter.calls[k]})" for k in meter.seconds))


def main_bench() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--corpus", type=Path, default=ROOT.parent / "shared" / "corpus")
    parser.add_argument("--runs", type=int, default=1000, help="document runs in the bulk job (default 1000)")
    parser.add_argument("--home", type=Path, default=None, help="LONGDOC_HOME to use (default: a fresh one in /tmp)")
    args = parser.parse_args()
    began = time.perf_counter()
    home = args.home or Path(tempfile.mkdtemp(prefix="longdoc-bench-bulk-"))
    print(f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; home {home}; load average "
          f"{os.getloadavg()[0]:.2f} (1 min), {os.cpu_count()} CPUs", flush=True)
    doc_ids = ingest(home, args.corpus)
    sync = run_sync(home, doc_ids)
    print(f"synchronous: {sync['docs']} documents ({sync['succeeded']} succeeded) in {sync['wall']:.0f} s", flush=True)
    meter = Meter().install()
    small = run_bulk(doc_ids, len(doc_ids), meter)
    print(f"bulk job of {len(doc_ids)} runs (Harvest's baseline) in {small['wall']:.0f} s", flush=True)
    bulk = run_bulk(doc_ids, args.runs, meter)
    report(bulk, small, sync, largest_items(home, bulk["bulk_id"]), args.runs)
    print(f"\nload average after {os.getloadavg()[0]:.2f} (1 min); {time.perf_counter() - began:.0f} s in all")
    return 0


if __name__ == "__main__":
    sys.exit(main_bench())
