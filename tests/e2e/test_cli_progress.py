"""Progress of ``longdoc ingest`` on stderr, as a user sees it in a log and on a terminal.

Given a real 18-page filing from the corpus: off a terminal, stderr gets one line per stage (parse,
chunk, embed, index) with its count and rate, and the ``--json`` row on stdout stays pure JSON; on a
pseudo-terminal (:mod:`pty`), stderr gets tqdm bars redrawn in place.
"""

from __future__ import annotations

import json
import os
import pty
import re
import select
import subprocess
import sys
import time

import pytest

from longdoc.cli import main
from tests.e2e.cli_support import offline_home

pytestmark = pytest.mark.slow
FILING = "dmca-1998-copyright-office-summary.pdf"


@pytest.fixture()
def home(tmp_path, monkeypatch):
    yield from offline_home(tmp_path, monkeypatch)


def test_off_a_terminal_ingest_prints_one_line_per_stage_and_json_stdout_stays_clean(home, capsys, corpus_dir):
    # When a filing is ingested with --json and stderr is not a terminal (captured)
    code = main(["ingest", str(corpus_dir / FILING), "--json"])
    out, err = capsys.readouterr()
    # Then stdout is the one JSON row and nothing else
    assert code == 0
    row = json.loads(out)
    assert row["pages"] == 18 and out.count("\n") == 1
    # And stderr holds one line per long stage, in order, with its count, time and rate
    lines = err.splitlines()
    stages = [re.match(r"longdoc: (\w+) (\S+): (\d+) (\w+) in [\d.]+ s( \([\d.]+ \w+/s\))?$", line) for line in lines]
    assert all(stages), lines
    assert [(m.group(1), m.group(2), m.group(4)) for m in stages if m] == [
        ("parse", FILING, "pages"), ("chunk", FILING, "passes"), ("embed", FILING, "chunks"), ("index", FILING, "chunks")]
    counts = {m.group(1): int(m.group(3)) for m in stages if m}
    assert counts == {"parse": 18, "chunk": 6, "embed": row["chunks"], "index": row["chunks"]}


def _run_on_a_pty(argv: list[str], env: dict[str, str], timeout: float = 300) -> tuple[int, bytes, bytes]:
    """Run ``argv`` with stderr on a new pseudo-terminal and stdout on a pipe: ``(status, stdout, stderr bytes)``."""
    master, slave = pty.openpty()
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=slave, stdin=subprocess.DEVNULL, env=env)
    os.close(slave)
    assert proc.stdout is not None
    os.set_blocking(proc.stdout.fileno(), False)
    err, out, end = b"", b"", time.monotonic() + timeout
    try:
        while time.monotonic() < end:
            ready, _, _ = select.select([master, proc.stdout], [], [], 0.5)
            if proc.stdout in ready:
                out += proc.stdout.read() or b""
            if master in ready:
                try:
                    data = os.read(master, 65536)
                except OSError:  # EIO: the child closed the terminal
                    data = b""
                if not data and proc.poll() is not None:
                    break
                err += data
            elif proc.poll() is not None:
                break
        status = proc.wait(timeout=5)
        out += proc.stdout.read() or b""
    finally:
        os.close(master)
        if proc.poll() is None:
            proc.kill()
    return status, out, err


def test_on_a_terminal_ingest_draws_bars_with_rates_and_json_stdout_stays_clean(home, corpus_dir):
    env = {**os.environ, "LONGDOC_HOME": str(home / "home"), "LONGDOC_MODEL": "baseline",
           "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
    env.pop("ANTHROPIC_API_KEY", None)
    status, out, err = _run_on_a_pty([sys.executable, "-m", "longdoc.cli", "ingest", str(corpus_dir / FILING),
                                      "--json"], env)
    assert status == 0, err.decode(errors="replace")
    assert json.loads(out)["pages"] == 18  # stdout: the JSON row only
    frames = err.decode("utf-8", errors="replace").replace("\r\n", "\n").split("\r")
    # Bars redrawn in place (carriage returns), one per stage, each reaching its total with a rate
    assert len(frames) > 4
    for label, total, unit in (("parse", 18, "pages"), ("embed", None, "chunks"), ("index", None, "chunks")):
        drawn = [f for f in frames if f.startswith(f"{label} {FILING}:")]
        assert drawn, (label, frames[-6:])
        done = [f for f in drawn if "100%" in f]
        assert done and (f"{unit}/s" in done[-1] or f"s/ {unit}" in done[-1]), done[-1:]  # rate (or s/item)
        if total is not None:
            assert f"{total}/{total}" in done[-1]
    assert "longdoc: parse" not in err.decode(errors="replace")  # no plain lines on a terminal
