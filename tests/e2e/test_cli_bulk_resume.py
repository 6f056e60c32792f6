"""A ``longdoc bulk`` killed with SIGKILL mid-job shows as ``STALE`` in ``longdoc bulk status``, and
``longdoc bulk resume`` finishes it without sending a finished request again (requests counted at
the local batches, which keep every batch's requests as a file)."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from longdoc.cli import main

pytestmark = pytest.mark.slow

TYPES = "Governing Law,Cap On Liability"
REPO = Path(__file__).resolve().parents[2]




def _cli(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def _sent(batches: Path) -> list[str]:
    """The ``custom_id`` of every request the local batches were sent, over all batches."""
    return [json.loads(line)["custom_id"] for path in sorted(batches.glob("*.jsonl"))
            for line in path.read_text().splitlines() if line.strip()]


def test_a_killed_bulk_shows_stale_and_resumes_without_resending_a_finished_request(home, capsys, corpus_dir):
    # Given two ingested documents
    for name in ("Apache-2.0.txt", "MPL-2.0.txt"):
        shutil.copy(corpus_dir / name, home / name)
        assert _cli(capsys, "ingest", str(home / name))[0] == 0
    # And a `longdoc bulk` in its own process, whose batches stay in progress for ten minutes
    env = {**os.environ, "LONGDOC_LOCAL_BATCH_HOLD_SECONDS": "600", "LONGDOC_BULK_POLL_FIRST": "1",
           "LONGDOC_BULK_POLL_CAP": "1",
           "PYTHONPATH": os.pathsep.join([str(REPO / "layers" / "longdoc"), str(REPO)])}
    log = home / "bulk.err"
    with log.open("wb") as err:
        proc = subprocess.Popen([sys.executable, "-m", "longdoc.cli", "bulk", "apache-2-0--2af71558",
                                 "mpl-2-0--09962c1d", "--clause-types", TYPES], env=env, stdout=subprocess.DEVNULL,
                                stderr=err, cwd=REPO)
    try:
        # When it is killed (SIGKILL) once the first round's batch is submitted and being polled
        batches = home / "home" / "batches"
        deadline = time.monotonic() + 240
        while not re.search(r"[1-9] batches in flight", log.read_text()) and time.monotonic() < deadline:
            assert proc.poll() is None, log.read_text()
            time.sleep(0.5)
        assert list(batches.glob("*.jsonl")), log.read_text()
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    bulk_id = re.search(r"bulk (bulk-[0-9a-f]+): 2 documents", log.read_text()).group(1)
    first = _sent(batches)
    assert len(first) == 2  # the round's two requests, sent once
    # Then `bulk status` shows the job STALE (its worker died), with what to do
    code, out, _ = _cli(capsys, "bulk", "status", bulk_id, "--json")
    stale = json.loads(out)
    assert code == 0 and stale["status"] == "STALE" and stale["pending"] == 2
    code, out, _ = _cli(capsys, "bulk", "status", bulk_id)
    assert f"bulk {bulk_id}  STALE" in out and "longdoc bulk resume BULK_ID" in out
    # When `bulk resume` continues it (the batches now end at once)
    code, out, err = _cli(capsys, "bulk", "resume", bulk_id, "--json")
    # Then it finishes: every document done, the job SUCCEEDED
    done = json.loads(out)
    assert code == 0, err
    assert (done["status"], done["done"], done["failed"], done["pending"]) == ("SUCCEEDED", 2, 0, 0)
    assert f"bulk {bulk_id}: resumed as execution {bulk_id}-s1 from round 0" in err
    # And no request was sent twice: the submitted batch was polled and harvested, not sent again
    sent = _sent(batches)
    assert sent[:2] == first and len(sent) == len(set(sent))
    # And a job that has ended does not resume
    assert main(["bulk", "resume", bulk_id]) == 1
    assert "only a STALE job resumes (it has ended)" in capsys.readouterr().err
