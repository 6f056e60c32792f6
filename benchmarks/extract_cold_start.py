"""Cold start of the extract function: import + init time in fresh interpreters, against baselines.

Each measurement runs in a new ``python`` subprocess (nothing cached in memory), ``--runs``
times, and reports the median wall clock in milliseconds:

* ``baseline: python -c 'import json'``  - interpreter start-up, the floor every Lambda pays;
* ``import anthropic``                   - the SDK alone;
* ``handler import``                     - ``functions/extract/app.py`` loaded as Lambda loads it
  (the SDK stays unimported: it is imported lazily when the Claude adapter is built);
* ``handler import + Claude client``     - the above plus building ``ClaudeModel`` (what the
  first invocation pays; no network call is made).

It prints each figure and its ratio to the interpreter baseline, plus the top ``-X importtime``
entries of the handler + client case. Run: ``python benchmarks/extract_cold_start.py [--runs 5]``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
ENV = {**os.environ, "PYTHONPATH": f"{REPO / 'layers' / 'longdoc'}:{REPO}", "POWERTOOLS_METRICS_DISABLED": "true",
       "LONGDOC_MODE": "aws", "LONGDOC_TABLE": "t", "LONGDOC_BUCKET": "b", "AWS_DEFAULT_REGION": "us-east-1"}
LOAD_HANDLER = ("import importlib.util as u; s = u.spec_from_file_location('app', {path!r}); "
                "m = u.module_from_spec(s); s.loader.exec_module(m)").format(path=str(REPO / "functions/extract/app.py"))
CASES = {
    "baseline: import json": "import json",
    "import anthropic": "import anthropic",
    "handler import": LOAD_HANDLER,
    "handler import + Claude client": LOAD_HANDLER + "; from longdoc.adapters.claude import ClaudeModel; "
                                      "ClaudeModel('test-key-not-real', 'claude-sonnet-5-5')",
}


def wall_ms(code: str, runs: int) -> float:
    """Median wall-clock milliseconds of ``python -c code`` over ``runs`` fresh processes."""
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run([sys.executable, "-c", code], env=ENV, check=True, capture_output=True)
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


def top_imports(code: str, n: int = 8) -> list[tuple[int, str]]:
    """The ``n`` largest cumulative import times (microseconds, module) from ``-X importtime``."""
    err = subprocess.run([sys.executable, "-X", "importtime", "-c", code], env=ENV, check=True,
                         capture_output=True, text=True).stderr
    rows = []
    for line in err.splitlines():
        if line.startswith("import time:") and "|" in line and "cumulative" not in line:
            _, cumulative, name = (p.strip() for p in line.removeprefix("import time:").split("|"))
            if name.strip() == name:  # top-level entries only
                rows.append((int(cumulative), name))
    return sorted(rows, reverse=True)[:n]


def main() -> None:
    """Measure and print every case with its ratio to the interpreter baseline."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    results = {name: wall_ms(code, args.runs) for name, code in CASES.items()}
    base = results["baseline: import json"]
    print(f"python {sys.version.split()[0]}, median of {args.runs} fresh processes")
    for name, ms in results.items():
        print(f"{name:<34} {ms:8.0f} ms   x{ms / base:5.1f} of baseline")
    print("largest imports (cumulative, handler import + Claude client):")
    for micros, name in top_imports(CASES["handler import + Claude client"]):
        print(f"  {micros / 1000:8.0f} ms  {name}")


if __name__ == "__main__":
    main()
