"""Shared pytest fixtures: where the read-only corpus and gold cases live, and a parse cache.

The shared corpus sits next to the repository (``../shared/corpus`` relative to the repo
root, i.e. ``/work/shared/corpus``). Tests that use it must fail loudly when it is missing,
never skip: a silently skipped corpus test hides a broken checkout.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator
from functools import lru_cache
from pathlib import Path
from typing import Any

import pytest

from longdoc.ingest.parse import parse_document
from longdoc.ingest.models import ParsedDocument

REPO_ROOT = Path(__file__).resolve().parents[1]
"""The repository root (the folder holding ``pyproject.toml``)."""

SHARED = (REPO_ROOT / ".." / "shared").resolve()
"""The shared, read-only data folder beside the repository (never copied into it)."""


def _shared_dir(name: str) -> Path:
    """Return ``SHARED/<name>``; fail the test (not skip) if it is absent."""
    path = SHARED / name
    if not path.is_dir():
        pytest.fail(f"shared {name} folder missing at {path} (expected ../shared/{name} next to the repo)")
    return path


@pytest.fixture(scope="session")
def corpus_dir() -> Path:
    """The read-only shared corpus (``../shared/corpus``, resolved). Fails if it is missing."""
    return _shared_dir("corpus")


@pytest.fixture(scope="session")
def gold_dir() -> Path:
    """The read-only labelled gold cases (``../shared/gold``, resolved). Fails if missing."""
    return _shared_dir("gold")


@pytest.fixture(scope="session")
def parse_corpus(corpus_dir: Path) -> Callable[[str], ParsedDocument]:
    """Return ``parse(relative_path) -> ParsedDocument`` for corpus files, cached per session.

    ``relative_path`` is a path under the corpus (``"cuad/gooseheadinsurance-franchise-agreement.pdf"``);
    it is also the ``source`` recorded on the parsed document. Parsing the 261-page GDPR PDF
    takes about 0.4 s, so modules share one parse per file.
    """

    @lru_cache(maxsize=None)
    def parse(relative_path: str) -> ParsedDocument:
        path = corpus_dir / relative_path
        assert path.is_file(), f"corpus file missing: {path}"
        return parse_document(relative_path, path.read_bytes())

    return parse


@pytest.fixture(scope="session", autouse=True)
def _own_longdoc_home(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """Give this pytest process (each xdist worker is one) a ``LONGDOC_HOME`` of its own.

    The Makefile exports ``LONGDOC_HOME=<repo>/.longdoc`` (the demo's home); a test that
    writes the default home would otherwise share it with the other worker, with the
    developer's own runs, and with tests run before it. Tests and module fixtures that need a
    fresh home still set their own (``monkeypatch.setenv("LONGDOC_HOME", ...)``); this is only
    the default they start from. The folder lives under pytest's per-worker ``basetemp``.
    """
    home = tmp_path_factory.mktemp("longdoc-home")
    before = os.environ.get("LONGDOC_HOME")
    os.environ["LONGDOC_HOME"] = str(home)
    yield home
    if before is None:
        os.environ.pop("LONGDOC_HOME", None)
    else:
        os.environ["LONGDOC_HOME"] = before


SLOW_FIXTURES = frozenset({
    "minilm",  # tests/functional/conftest.py: the local embedding model
    "aws_stack",  # moto S3 + DynamoDB wired with MiniLM and a LanceDB table
    "ingested_contract",  # a real contract parsed, chunked and embedded
})
"""Fixtures whose users count as ``slow`` (they load the embedding model, ingest a document,
run a state machine or start a subprocess). ``make unit`` (``-m "not slow"``) leaves them out."""


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark ``slow`` every test that uses one of :data:`SLOW_FIXTURES` (directly or through another fixture)."""
    slow = pytest.mark.slow
    for item in items:
        if SLOW_FIXTURES.intersection(getattr(item, "fixturenames", ())) and item.get_closest_marker("slow") is None:
            item.add_marker(slow)


UNIT_CPU_BUDGET = 2.0
"""CPU-seconds (this process plus the subprocesses it waited for, setup to teardown) over which a
test not marked ``slow`` is named at the end of the run: the ``make unit`` tier is meant to stay
under 2 minutes on 2 cores, so a test this heavy belongs in the slow tier."""

_CPU_KEY = "cpu_seconds"
_heavy_unmarked: list[tuple[str, float]] = []


def _cpu_now() -> float:
    """CPU-seconds used so far by this process and by the children it has waited for."""
    times = os.times()
    return time.process_time() + times.children_user + times.children_system


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    """Note the CPU clock as the test's setup starts."""
    item.stash[_cpu_start] = _cpu_now()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
    """After teardown, record the test's CPU-seconds on the teardown report (it reaches xdist's controller)."""
    try:
        return (yield)
    finally:
        start = item.stash.get(_cpu_start, None)
        if start is not None:
            item.user_properties.append((_CPU_KEY, round(_cpu_now() - start, 3)))


_cpu_start = pytest.StashKey[float]()


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    """Collect the tests not marked ``slow`` whose CPU-seconds passed :data:`UNIT_CPU_BUDGET`."""
    if report.when != "teardown" or "slow" in report.keywords:
        return
    for key, value in report.user_properties:
        if key == _CPU_KEY and float(value) > UNIT_CPU_BUDGET:
            _heavy_unmarked.append((report.nodeid, float(value)))


def pytest_terminal_summary(terminalreporter: Any) -> None:
    """Name the heavy tests that are not marked ``slow`` (a hint, never a failure: timings vary with load)."""
    if not _heavy_unmarked:
        return
    terminalreporter.section(f"tests not marked slow that used over {UNIT_CPU_BUDGET:g} CPU-s")
    for nodeid, seconds in sorted(_heavy_unmarked, key=lambda row: -row[1]):
        terminalreporter.write_line(f"{seconds:7.2f} CPU-s  {nodeid}")
