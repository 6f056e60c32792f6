"""Cold-start import cost of each Lambda handler, against a bare interpreter start.

Each measurement runs in a fresh subprocess (`python -X importtime`), so nothing is cached
in memory; the OS file cache is warm after the first round, as in a reused sandbox.
Baseline, measured in the same run: the interpreter starting and importing nothing
(``python -X importtime -c pass``). For each handler (``functions/<name>/app.py`` loaded as
Lambda loads it, in AWS mode) prints the median wall time over ``--rounds`` runs, the
cumulative import time Python reports, the ratio to the baseline, and the five heaviest
top-level imports. Then the adapters a first ingest call builds (voyageai, pinecone)
are imported too, since they load lazily on the first record.

Run: PYTHONPATH=layers/longdoc:. python benchmarks/ingest_import_time.py [--rounds 5]
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
LINE = re.compile(r"import time:\s+(\d+) \|\s+(\d+) \|(\s*)(\S+)")

LOAD = ("import importlib.util, sys; spec = importlib.util.spec_from_file_location('app', {path!r}); "
        "m = importlib.util.module_from_spec(spec); spec.loader.exec_module(m)")


def run(code: str) -> tuple[float, int, list[tuple[int, str]]]:
    """Run ``code`` under -X importtime; return (wall seconds, total cumulative us, top-level imports)."""
    env = {**os.environ, "LONGDOC_MODE": "aws", "LONGDOC_BUCKET": "b", "LONGDOC_TABLE": "t",
           "AWS_DEFAULT_REGION": "us-east-1", "PYTHONPATH": f"{REPO / 'layers' / 'longdoc'}{os.pathsep}{REPO}"}
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-X", "importtime", "-c", code], env=env, capture_output=True, text=True)
    wall = time.perf_counter() - start
    if done.returncode:
        raise SystemExit(done.stderr[-2000:])
    top = []
    for line in done.stderr.splitlines():
        m = LINE.match(line)
        if m and len(m.group(3)) == 1:
            top.append((int(m.group(2)), m.group(4)))
    return wall, sum(us for us, _ in top), sorted(top, reverse=True)[:5]


def main() -> None:
    """Print the table described in the module docstring."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    cases = {"baseline (bare interpreter)": "pass"}
    for name in ("ingest", "extract", "api"):
        cases[f"{name} handler"] = LOAD.format(path=str(REPO / "functions" / name / "app.py"))
    cases["ingest handler + voyageai + pinecone"] = cases["ingest handler"] + "; import voyageai, pinecone"
    results = {}
    for label, code in cases.items():
        rounds = [run(code) for _ in range(args.rounds)]
        results[label] = (statistics.median(r[0] for r in rounds), statistics.median(r[1] for r in rounds),
                          rounds[-1][2])
    base = results["baseline (bare interpreter)"][0]
    print(f"{'case':40} {'wall ms':>9} {'imports ms':>11} {'x baseline':>11}  heaviest top-level imports (ms)")
    for label, (wall, imports, top) in results.items():
        heavy = ", ".join(f"{name} {us / 1000:.0f}" for us, name in top)
        print(f"{label:40} {wall * 1000:9.0f} {imports / 1000:11.0f} {wall / base:11.1f}  {heavy}")


if __name__ == "__main__":
    main()
