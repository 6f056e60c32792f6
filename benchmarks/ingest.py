"""Local ingest of a ~1,000-page PDF: the PyTorch MiniLM against the int8 ONNX one, same run (issue 19).

Builds the PDF by concatenating the corpus PDFs (every ``*.pdf`` under ``--corpus``,
recursively, ``bad/`` skipped and any file PDFium cannot open skipped) with pypdfium2's
``import_pages`` until it has at least ``--pages`` pages, written to the temp folder. Then,
for each local embedder variant (``LONGDOC_LOCAL_EMBEDDER``: ``torch``, the baseline, then
``onnx``; ``--variants`` changes the order), runs ``longdoc ingest`` on it in a fresh process with a fresh
``LONGDOC_HOME`` and measures, for that process alone (``os.wait4``): wall seconds, CPU
seconds (user + system, all threads), peak RSS (bytes), chunks per wall second, and the
ingest's own step timings (parse+chunk, embed, upsert: seconds, from the registry). The
1-minute load average before and after each run is printed: the machine may be shared, so
CPU seconds are the steadier figure.

Then (unless ``--skip-recall``) ``longdoc eval retrieval --gold GOLD --json`` for each
variant under ``--eval-home`` (default ``$LONGDOC_HOME``): the eval caches ingested
documents per chunker code and embedder (``eval/store.store_root``), so the first run
embeds the 20 CUAD contracts once per variant and later runs reuse them. Prints recall
within the 5,000-token budget (hybrid with headers, what sessions use), dense-only and the
naive baseline, and whether the ONNX figure is within ``--tolerance`` (0.005) of PyTorch's.

``--profile VARIANT`` also records that variant's ingest with py-spy (``bench`` extra) and
prints where the samples fall (forward passes, windowing, parsing, LanceDB, caches).

The Voyage path on AWS (``LONGDOC_MODE=aws``) does not use either variant and is unaffected.

Run: ``make bench-ingest`` or ``PYTHONPATH=layers/longdoc python benchmarks/ingest.py --corpus ../shared/corpus``.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
VARIANTS = ("torch", "onnx")
CLI = "import sys; from longdoc.cli import main; sys.exit(main())"
PROFILE_RULES = (  # (label, regex on the whole sampled stack), first match wins
    ("model forward passes", r"sentence_transformers.*encode|forward \(|_encode \(|InferenceSession\.run"),
    ("windowing / tokenising", r"_windows|encode_batch|_load_tokenizers"),
    ("parse", r"parse_document|longdoc/ingest/parse/"),
    ("chunk", r"chunk_document|longdoc/ingest/chunk/"),
    ("LanceDB upsert", r"vector_index\.py|lancedb"),
    ("embedding cache (JSON)", r"ingest/embeddings\.py"),
    ("registry (SQLite)", r"adapters/state/"),
    ("idle helper threads", r"EpollSelector\.select|TMonitor\.run|Condition\.wait"),
    ("model load / imports", r"_load_minilm|_load_session|_find_and_load|<module>"),
)


@dataclass
class Run:
    """One measured ingest: seconds, CPU seconds, peak RSS in bytes, chunks, step timings, load averages."""

    variant: str
    wall: float
    cpu: float
    rss: int
    chunks: int
    pages: int
    steps: dict[str, float] = field(default_factory=dict)
    load: tuple[float, float] = (0.0, 0.0)
    attempts: int = 1


def long_pdf(corpus: Path, pages: int) -> Path:
    """Concatenate the corpus PDFs (recursively, ``bad/`` skipped) into exactly ``pages`` pages; return the file.

    The last document contributes only the pages still missing.
    """
    import pypdfium2 as pdfium

    sources = [p for p in sorted(corpus.rglob("*.pdf")) if "bad" not in p.relative_to(corpus).parts]
    out = pdfium.PdfDocument.new()
    while len(out) < pages:
        before = len(out)
        for path in sources:
            try:
                src = pdfium.PdfDocument(path.read_bytes())
            except pdfium.PdfiumError:
                continue
            out.import_pages(src, list(range(min(len(src), pages - len(out)))))
            src.close()
            if len(out) >= pages:
                break
        if len(out) == before:
            raise SystemExit(f"no readable PDF under {corpus}")
    target = Path(tempfile.gettempdir()) / f"longdoc-bench-{len(out)}-pages.pdf"
    buffer = io.BytesIO()
    out.save(buffer)
    out.close()
    target.write_bytes(buffer.getvalue())
    return target


def _env(variant: str, home: Path) -> dict[str, str]:
    """The child's environment: this repo's package first, the variant, a given home, offline."""
    path = os.pathsep.join([str(REPO / "layers" / "longdoc"), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    return {**os.environ, "PYTHONPATH": path, "LONGDOC_HOME": str(home), "LONGDOC_MODE": "local",
            "LONGDOC_LOCAL_EMBEDDER": variant, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1",
            "TOKENIZERS_PARALLELISM": "false"}


def _measured(argv: list[str], env: dict[str, str], attempts: int = 1) -> tuple[float, float, int, str, int]:
    """Run ``argv``; return (wall seconds, CPU seconds, peak RSS bytes, stdout, attempts) of that process.

    CPU seconds and peak RSS come from ``os.wait4`` (the child and the threads it ran; a
    profiler parent counts its own). An ingest that stopped at the simulated Lambda deadline
    (900 s; only on a heavily loaded machine) says "retry later": it is run again, as SQS
    would redeliver it, up to ``attempts`` times, and the figures add up (RSS: the peak).
    Raises ``SystemExit`` when the command fails otherwise.
    """
    wall = cpu = 0.0
    rss = 0
    for attempt in range(1, attempts + 1):
        started = time.perf_counter()
        with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
            child = subprocess.Popen(argv, env=env, stdout=out, stderr=err)
            _, status, usage = os.wait4(child.pid, 0)
            child.returncode = os.waitstatus_to_exitcode(status)
            wall += time.perf_counter() - started
            cpu += usage.ru_utime + usage.ru_stime
            rss = max(rss, usage.ru_maxrss * 1024)
            out.seek(0)
            err.seek(0)
            stdout, stderr = out.read().decode(), err.read().decode()
        if not child.returncode:
            return wall, cpu, rss, stdout, attempt
        if "retry later" not in stderr or attempt == attempts:
            break
    raise SystemExit(f"{' '.join(argv[-3:])} failed ({child.returncode}):\n{stderr[-2000:]}")


def ingest(variant: str, pdf: Path, profile: Path | None = None) -> Run:
    """Ingest ``pdf`` with ``variant`` into a fresh home; measured as :func:`_measured` says."""
    from longdoc.adapters.state import SqliteStateStore

    with tempfile.TemporaryDirectory(prefix=f"longdoc-bench-{variant}-") as tmp:
        home = Path(tmp)
        argv = [sys.executable, "-c", CLI, "ingest", "--json", str(pdf)]
        if profile is not None:
            argv = [str(Path(sys.executable).with_name("py-spy")), "record", "-r", "50", "-f", "raw", "-o",
                    str(profile), "--", *argv]
        load_before = os.getloadavg()[0]
        wall, cpu, rss, stdout, attempts = _measured(argv, _env(variant, home), attempts=5)
        row = json.loads(stdout.strip().splitlines()[-1])
        record = SqliteStateStore(home / "state.sqlite3").get_document(row["doc_id"], row["doc_version"])
        steps = {k: float(v) for k, v in (record.timings if record else {}).items()}
        return Run(variant, wall, cpu, rss, row["chunks"], row["pages"], steps, (load_before, os.getloadavg()[0]),
                   attempts)


def profile_summary(raw: Path) -> list[tuple[str, int, float]]:
    """Samples per :data:`PROFILE_RULES` label in a py-spy raw file: (label, samples, share of all)."""
    counts: Counter[str] = Counter()
    for line in raw.read_text().splitlines():
        stack, _, n = line.rpartition(" ")
        label = next((name for name, pattern in PROFILE_RULES if re.search(pattern, stack)), "other")
        counts[label] += int(n)
    total = sum(counts.values()) or 1
    return [(label, n, n / total) for label, n in counts.most_common()]


def recall(variant: str, gold: Path, home: Path) -> dict:
    """``longdoc eval retrieval --json`` with ``variant``; returns the report (with ``seconds_wall``)."""
    started = time.perf_counter()
    argv = [sys.executable, "-c", CLI, "eval", "retrieval", "--gold", str(gold), "--json"]
    _, _, _, stdout, _ = _measured(argv, _env(variant, home))
    report = json.loads(stdout)
    report["seconds_wall"] = round(time.perf_counter() - started, 1)
    return report


def _ratio(value: float, base: float) -> str:
    return f"{value / base:.2f}x" if base else "-"


def print_runs(runs: list[Run], baseline: str) -> None:
    """The ingest table, in the order run; every ratio is against the ``baseline`` variant's run.

    Step timings are those of the last attempt (the registry keeps one record).
    """
    base = next(r for r in runs if r.variant == baseline)
    print("| embedder | wall s | CPU s | peak RSS MB | chunks | chunks/s | parse+chunk s | embed s | upsert s "
          "| load avg 1 min (before -> after) | attempts |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|")
    for r in runs:
        print(f"| {r.variant} | {r.wall:.1f} ({_ratio(r.wall, base.wall)}) | {r.cpu:.1f} ({_ratio(r.cpu, base.cpu)}) "
              f"| {r.rss / 1e6:.0f} ({_ratio(r.rss, base.rss)}) | {r.chunks} | {r.chunks / r.wall:.1f} "
              f"| {r.steps.get('parse', 0):.1f} | {r.steps.get('embed', 0):.1f} | {r.steps.get('upsert', 0):.1f} "
              f"| {r.load[0]:.2f} -> {r.load[1]:.2f} | {r.attempts} |")


def print_recall(reports: dict[str, dict], tolerance: float, baseline: str) -> bool:
    """The recall table; returns whether every variant is within ``tolerance`` of ``baseline``'s primary figure."""
    names = list(reports)
    base = reports[baseline]["recall_at_budget"]
    print("| embedder | within 5,000 tokens (hybrid+headers) | dense only, within budget | naive baseline (dense) "
          "| R@5 | MRR | cases | eval s |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    ok = True
    for name in names:
        r = reports[name]
        diff = r["recall_at_budget"] - base
        ok = ok and abs(diff) <= tolerance
        print(f"| {name} ({r.get('embedder', '?')}) | {r['recall_at_budget']:.4f} ({diff:+.4f}) "
              f"| {r['configs']['dense']['recall_at_budget']:.4f} | {r['baseline']['recall_at_budget']:.4f} "
              f"| {r['recall_at']['5']:.4f} | {r['mrr']:.4f} | {r['cases']} | {r['seconds_wall']} |")
    return ok


def main() -> int:
    """Build the PDF, measure both ingests back to back, then recall; print markdown tables."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--corpus", type=Path, default=REPO / ".." / "shared" / "corpus")
    parser.add_argument("--gold", type=Path, default=None, help="default: ../gold/cuad-dev.jsonl beside the corpus")
    parser.add_argument("--pages", type=int, default=1000)
    parser.add_argument("--variants", default=",".join(VARIANTS), help="comma-separated, in the order run")
    parser.add_argument("--baseline", default="torch", choices=VARIANTS, help="what ratios are against")
    parser.add_argument("--skip-recall", action="store_true")
    parser.add_argument("--eval-home", type=Path, default=Path(os.environ.get("LONGDOC_HOME", ".longdoc")))
    parser.add_argument("--tolerance", type=float, default=0.005)
    parser.add_argument("--profile", choices=VARIANTS, default=None, help="also record this variant with py-spy")
    args = parser.parse_args()
    sys.path.insert(0, str(REPO / "layers" / "longdoc"))
    variants = args.variants.split(",")
    pdf = long_pdf(args.corpus, args.pages)
    print(f"long PDF: {pdf} ({pdf.stat().st_size / 1e6:.1f} MB); {os.cpu_count()} CPUs; "
          f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}", flush=True)
    runs = [ingest(v, pdf) for v in variants]
    print_runs(runs, args.baseline)
    print("(AWS mode embeds with Voyage: neither local variant is used there, so it is unaffected.)", flush=True)
    if args.profile:
        raw = Path(tempfile.gettempdir()) / f"longdoc-bench-{args.profile}.pyspy.raw"
        prof = ingest(args.profile, pdf, profile=raw)
        print(f"\nprofile of the {args.profile} ingest (py-spy, 50 Hz, {prof.wall:.1f} s wall under the profiler):")
        for label, samples, share in profile_summary(raw):
            print(f"  {label:28s} {samples:7d} samples {100 * share:5.1f} %")
    if args.skip_recall:
        return 0
    gold = args.gold or args.corpus.resolve().parent / "gold" / "cuad-dev.jsonl"
    reports = {}
    for v in variants:
        reports[v] = recall(v, gold, args.eval_home)
    print()
    ok = print_recall(reports, args.tolerance, args.baseline)
    print(f"recall within {args.tolerance} of {args.baseline}: {'yes' if ok else 'NO'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
