"""Cold-start guard: importing each handler stays within a time budget and loads only its own SDKs.

Each ``functions/<fn>/app.py`` is imported as Lambda imports it, in a fresh interpreter in
AWS mode, and the import is timed with a wall clock inside that interpreter (interpreter
start-up excluded). Measured on the 2-core development machine while four other test
suites ran on it (load average about 4), five fresh imports each:

=========  ==========================  ===========
handler    measured (s)                budget (s)
=========  ==========================  ===========
ingest     0.75 0.77 0.79 1.18 1.23    2.5
extract    0.93 0.95 0.96 1.29 1.31    2.5
api        1.42 1.44 1.45 1.50 1.50    3.0
=========  ==========================  ===========

The largest shares (``-X importtime``, api): boto3 0.24 s, Powertools Logger/Tracer/Metrics
(``longdoc.observability``) 0.24 s, ``longdoc.wiring`` with pydantic-settings 0.19 s, the
OpenAPI parameter models 0.12 s. A budget is about twice the loaded median; a run over
budget is retried up to twice (the machine is shared), and the failure message lists the
slowest imports.

Which modules a handler may load: the ingest function never imports ``anthropic`` (the
model SDK belongs to extract); the API function imports neither the PDF stack
(``pypdfium2``) nor a model, embedding or index SDK (``anthropic``, ``voyageai``,
``pinecone``).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

# A timing guard (fresh interpreters, a wall clock): `slow`, so `make unit` stays quick and steady.
pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]

BUDGET_SECONDS = {"ingest": 2.5, "extract": 2.5, "api": 3.0}
"""Seconds allowed for importing ``functions/<fn>/app.py`` (see the module docstring for measurements)."""

WATCHED = ("anthropic", "voyageai", "pinecone", "pypdfium2", "torch", "lancedb", "sentence_transformers")
"""Heavy top-level packages whose presence in ``sys.modules`` is reported by the probe."""

FORBIDDEN = {
    "ingest": {"anthropic"},
    "extract": set(),
    "api": {"pypdfium2", "anthropic", "voyageai", "pinecone"},
}
"""Packages a handler's import must not load."""

PROBE = """
import importlib.util, json, sys, time
started = time.perf_counter()
spec = importlib.util.spec_from_file_location("app", {path!r})
module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)
seconds = time.perf_counter() - started
print(json.dumps({{"seconds": seconds, "loaded": sorted(m for m in {watched!r} if m in sys.modules)}}))
"""

ATTEMPTS = 3


def _env() -> dict[str, str]:
    """Environment of a Lambda in AWS mode (no network is used: nothing is called at import)."""
    return {**os.environ, "LONGDOC_MODE": "aws", "LONGDOC_BUCKET": "b", "LONGDOC_TABLE": "t",
            "AWS_DEFAULT_REGION": "us-east-1",
            "PYTHONPATH": os.pathsep.join([str(REPO / "layers" / "longdoc"), str(REPO)])}


def import_handler(function: str, *, importtime: bool = False) -> subprocess.CompletedProcess[str]:
    """Import ``functions/<function>/app.py`` in a fresh interpreter and return the finished process.

    stdout's last line is JSON ``{"seconds": float, "loaded": [package, ...]}``; with
    ``importtime`` stderr holds Python's ``-X importtime`` report. Raises
    ``subprocess.CalledProcessError`` when the import fails.
    """
    code = PROBE.format(path=str(REPO / "functions" / function / "app.py"), watched=WATCHED)
    flags = ["-X", "importtime"] if importtime else []
    return subprocess.run([sys.executable, *flags, "-c", code], env=_env(), capture_output=True, text=True,
                          timeout=120, check=True)


def slowest_imports(function: str, count: int = 10) -> list[str]:
    """The ``count`` top-level imports with the largest cumulative time, as ``"<microseconds> <module>"``."""
    report = import_handler(function, importtime=True).stderr.splitlines()
    rows = []
    for line in report:
        if not line.startswith("import time:") or "|" not in line:
            continue
        _, cumulative, name = line.split("|", 2)
        if cumulative.strip().isdigit() and not name.startswith("   "):  # top level: one leading space
            rows.append((int(cumulative), name.strip()))
    return [f"{us} {name}" for us, name in sorted(rows, reverse=True)[:count]]


def measure(function: str) -> tuple[float, list[str]]:
    """Import seconds (the best of up to :data:`ATTEMPTS` fresh imports, stopping once within budget)
    and the watched packages loaded."""
    best = float("inf")
    loaded: list[str] = []
    for _ in range(ATTEMPTS):
        result = json.loads(import_handler(function).stdout.strip().splitlines()[-1])
        best, loaded = min(best, result["seconds"]), result["loaded"]
        if best <= BUDGET_SECONDS[function]:
            break
    return best, loaded


@pytest.mark.parametrize("function", sorted(BUDGET_SECONDS))
def test_handler_import_within_budget_and_loads_only_its_sdks(function: str) -> None:
    # Given a fresh interpreter in AWS mode
    # When the handler module is imported as Lambda imports it
    seconds, loaded = measure(function)
    # Then it loads none of the packages it must not load
    assert not FORBIDDEN[function] & set(loaded), f"{function} handler import loaded {sorted(loaded)}"
    # And the import fits the budget
    assert seconds <= BUDGET_SECONDS[function], (
        f"{function} handler import took {seconds:.2f} s > {BUDGET_SECONDS[function]} s; slowest imports (us): "
        + "; ".join(slowest_imports(function)))
