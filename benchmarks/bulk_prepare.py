"""Bulk Prepare at 10,000 documents (issue 26): per-slice time and peak memory flat in N.

    make bench-bulk-prepare
    python benchmarks/bulk_prepare.py [--sizes 1000 10000] [--types 8]

One small generated contract is ingested into a fresh local home with in-process fakes (a hash
embedder counting query embeddings, an in-memory index counting queries: no network). Then, per
size N, a bulk job of N runs over it x ``--types`` clause types is prepared slice by slice
exactly as the ``PrepareSlices`` Map does (:func:`longdoc.bulk.slices.plan_round`,
:func:`~longdoc.bulk.slices.prepare_slice`, :func:`~longdoc.bulk.slices.close_round`), with
the real SQLite state and bulk stores and the real session code (retrieval, BM25, requests).
Printed per N: slices, mean and max seconds per slice, the peak Python heap of a slice
(tracemalloc, started per slice; mean and max over the slices), and query embeddings per (documents x clause types); then the
10,000/1,000 ratios.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
import tracemalloc
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "layers" / "longdoc"), str(ROOT)]

from longdoc import wiring  # noqa: E402
from longdoc.bulk import slices  # noqa: E402
from longdoc.bulk.steps import create_bulk  # noqa: E402
from longdoc.core.documents import INCOMING_PREFIX  # noqa: E402
from longdoc.extract.catalogue import load_catalogue  # noqa: E402
from longdoc.extract.query_memo import MemoisedQueries  # noqa: E402
from longdoc.extract.runs import start_run  # noqa: E402
from longdoc.ingest.pipeline import IngestDeps, ingest_document  # noqa: E402
from longdoc.ingest.source import IngestSource  # noqa: E402
from tests.fakes.retrieval_counters import CountingIndex, HashEmbedder  # noqa: E402

TYPES = ["Agreement Date", "Expiration Date", "Governing Law", "Anti-Assignment", "Insurance", "Audit Rights",
         "Cap On Liability", "Termination For Convenience"]
SECTIONS = ["Term. This Agreement begins on 1 March 2024 and expires on 28 February 2027.",
            "Governing Law. This Agreement is governed by the laws of the State of New York.",
            "Assignment. Neither party may assign this Agreement without the other's prior written consent.",
            "Insurance. The Supplier shall maintain general liability insurance of USD 2,000,000.",
            "Audit. The Customer may audit the Supplier's records once a year on 30 days' notice.",
            "Liability. Each party's liability is capped at the fees paid in the preceding 12 months.",
            "Termination. The Customer may terminate for convenience on 90 days' written notice."]


def contract_text() -> bytes:
    """A small invented services agreement (about 10 sections)."""
    body = ["MASTER SERVICES AGREEMENT", "This Agreement is made on 1 March 2024 between Alpha Ltd and Beta Inc."]
    body += [f"{i}. {text}" for i, text in enumerate(SECTIONS * 2, start=1)]
    return "\n\n".join(body).encode()


def run_size(deps, doc_id: str, n: int, types: list[str], tag: str) -> dict[str, float]:  # type: ignore[no-untyped-def]
    """Prepare one job of ``n`` runs; returns its per-slice figures."""
    catalogue = load_catalogue()
    runs = [start_run(deps.extract.state, catalogue, doc_id=doc_id, clause_types=types, model_name="offline-extractive-baseline-v1",
                      max_tokens=1024, top_k=4, run_id=f"{tag}-{i:05d}") for i in range(n)]
    bulk_id = f"bench-{tag}"
    create_bulk(deps, bulk_id, [(r.run_id, r.doc_id) for r in runs], types)
    embedder = MemoisedQueries(deps.extract.embedder.inner)  # a fresh memo per job (a new container)
    deps = replace(deps, extract=replace(deps.extract, embedder=embedder))
    inner = embedder.inner
    before = inner.query_calls
    numbers = slices.plan_round(deps, bulk_id, 0)["slices"]
    seconds, peaks = [], []
    for number in numbers:
        tracemalloc.start()
        started = time.perf_counter()
        slices.prepare_slice(deps, bulk_id, 0, number)
        seconds.append(time.perf_counter() - started)
        peaks.append(tracemalloc.get_traced_memory()[1] / 2**20)
        tracemalloc.stop()
    prepared = slices.close_round(deps, bulk_id, 0)
    assert prepared["requests"] == n, prepared
    calls = inner.query_calls - before
    return {"n": n, "slices": len(numbers), "mean_s": statistics.mean(seconds), "max_s": max(seconds),
            "peak_mb": max(peaks), "peak_mean_mb": statistics.mean(peaks), "query_calls": calls, "calls_per_item": calls / (n * len(types)),
            "batches": prepared["batches"]}


def main() -> None:
    """Run the sizes and print the table and the ratios."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000])
    parser.add_argument("--types", type=int, default=8)
    args = parser.parse_args()
    shm = Path("/dev/shm")  # SQLite fsyncs are the slowest part on a plain disk; RAM when Linux has it
    home = Path(tempfile.mkdtemp(prefix="longdoc-bench-prepare-", dir=shm if shm.is_dir() else None))
    os.environ.update({"LONGDOC_HOME": str(home), "LONGDOC_MODE": "local", "LONGDOC_MODEL": "baseline"})
    wiring.reset()
    embedder, index = HashEmbedder(), CountingIndex()
    key = INCOMING_PREFIX + "bench-services-agreement.txt"
    wiring.blob_store().put(key, contract_text())
    doc = ingest_document(IngestSource(key=key, data=contract_text()),
                          IngestDeps(blobs=wiring.blob_store(), state=wiring.state_store(), embedder=embedder,
                                     index=index))
    base = wiring.bulk_deps()
    deps = replace(base, extract=replace(base.extract, embedder=MemoisedQueries(embedder), index=index))
    types = TYPES[:args.types]
    rows = [run_size(deps, doc.doc_id, n, types, f"n{n}") for n in args.sizes]
    print(f"Prepare, {len(types)} clause types, slice {deps.limits.slice_docs} documents, "
          f"window {deps.limits.piece_docs}, pool {deps.limits.query_pool} (fakes, no network)")
    print(f"{'N':>7} {'slices':>6} {'s/slice mean':>12} {'s/slice max':>11} {'peak MB mean':>12} {'peak MB max':>11} "
          f"{'query embeds':>12} {'per doc x type':>14}")
    for r in rows:
        print(f"{r['n']:>7} {r['slices']:>6} {r['mean_s']:>12.2f} {r['max_s']:>11.2f} {r['peak_mean_mb']:>12.2f} "
              f"{r['peak_mb']:>11.2f} {r['query_calls']:>12} {r['calls_per_item']:>14.6f}")
    if len(rows) >= 2:
        small, big = rows[0], rows[-1]
        print(f"ratio N={big['n']} / N={small['n']}: s/slice {big['mean_s'] / small['mean_s']:.2f}, "
              f"peak MB/slice mean {big['peak_mean_mb'] / small['peak_mean_mb']:.2f} max {big['peak_mb'] / small['peak_mb']:.2f}, "
              f"query embeds per doc x type {big['calls_per_item'] / small['calls_per_item']:.3f}, documents {big['n'] / small['n']:.0f}")


if __name__ == "__main__":
    main()
