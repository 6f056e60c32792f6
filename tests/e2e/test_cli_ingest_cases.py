"""``longdoc ingest`` / ``chunks`` edge cases of issue 13: names in other scripts, a sidecar gone bad on
the same bytes, a reader that closes the pipe, an interrupted ingest, three ingests of one file at once,
and an ingest run again after one was killed."""

from __future__ import annotations

import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from longdoc import wiring
from tests.e2e.cli_support import run_cli
from longdoc.core.models import DocumentRecord
from longdoc.ingest.lease import CLAIM_LEASE_SECONDS

pytestmark = pytest.mark.slow
REPO = Path(__file__).resolve().parents[2]
LONGDOC = [sys.executable, "-c", "import sys; from longdoc.cli import main; sys.exit(main())"]
"""The ``longdoc`` console script, run from this checkout."""


@pytest.fixture()
def home(tmp_path, monkeypatch):
    monkeypatch.setenv("LONGDOC_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("LONGDOC_MODEL", "baseline")
    wiring.reset()
    yield tmp_path
    wiring.reset()


def _cli(capsys, *argv: str) -> tuple[int, str, str]:
    return run_cli(capsys, *argv)  # stderr without the progress lines


def _env(home: Path) -> dict[str, str]:
    return {**os.environ, "LONGDOC_HOME": str(home / "home"), "LONGDOC_MODEL": "baseline",
            "PYTHONPATH": str(REPO / "layers" / "longdoc") + os.pathsep + os.environ.get("PYTHONPATH", "")}


def test_a_chinese_file_name_is_ingested_locally(home, capsys, corpus_dir):
    # Given a licence saved as 合同.txt
    shutil.copy(corpus_dir / "Apache-2.0.txt", home / "合同.txt")
    # When ingested / Then it gets the id doc--<hash of the name> and its chunks are readable
    code, out, err = _cli(capsys, "ingest", str(home / "合同.txt"), "--json")
    assert (code, err) == (0, "") and json.loads(out)["doc_id"] == "doc--06c89180"
    assert _cli(capsys, "chunks", "doc--06c89180", "--json")[0] == 0


def test_same_bytes_with_a_sidecar_gone_bad_fail_naming_the_field(home, capsys, corpus_dir):
    # Given a licence ingested with a good sidecar
    doc, sidecar = home / "license.txt", home / "license.txt.metadata.json"
    shutil.copy(corpus_dir / "Apache-2.0.txt", doc)
    sidecar.write_text(json.dumps({"term": "2024"}))
    assert _cli(capsys, "ingest", str(doc), "--json")[0] == 0
    # When the same bytes are ingested with a sidecar whose term is now a list
    sidecar.write_text(json.dumps({"term": ["2024", "2025"]}))
    code, out, err = _cli(capsys, "ingest", str(doc), "--json")
    # Then it fails in one line naming the field and the sidecar (before: "skipped": true, exit 0),
    # and --json prints one failed row carrying the same error
    assert code == 1 and len(err.strip().splitlines()) == 1
    assert "metadata term (sidecar incoming/license.txt.metadata.json)" in err
    (row,) = [json.loads(line) for line in out.splitlines()]
    assert row["change"] == "failed" and row["source"] == str(doc)
    assert "metadata term (sidecar incoming/license.txt.metadata.json)" in row["error"]
    # And the READY version keeps its metadata
    _, shown, _ = _cli(capsys, "chunks", "license", "--json")
    assert {c["term"] for c in json.loads(shown)} == {"2024"}


def test_an_interrupted_ingest_says_to_run_ingest_again(home, capsys):
    # Given a version left INGESTING by a killed ingest (no READY version)
    wiring.state_store().put_document(DocumentRecord(doc_id="lease", doc_version="0123456789abcdef",
                                                     source="lease.pdf", status="INGESTING", stage="embedding"))
    hint = ("its ingest was interrupted or is still running; ingest the file again (`longdoc ingest FILE` "
            "locally, or upload it to incoming/ again on AWS) to finish it (progress is kept)")
    # When its chunks are asked for / Then the message says how to finish it
    code, _, err = _cli(capsys, "chunks", "lease")
    assert code == 1
    assert err.strip() == f"longdoc: document lease is INGESTING: {hint}"
    # And so do an extraction, a bulk job and a summary of it
    code, _, err = _cli(capsys, "extract", "lease", "--clause-types", "Governing Law")
    assert (code, err.strip()) == (1, f"longdoc: document lease is not ingested (status INGESTING: {hint})")
    code, _, err = _cli(capsys, "bulk", "--clause-types", "Governing Law", "lease")
    assert code == 1 and err.strip().endswith(f"lease: document lease is not ingested (status INGESTING: {hint})")
    code, _, err = _cli(capsys, "summarize", "lease")
    assert (code, err.strip()) == (1, f"longdoc: document lease version 0123456789abcdef is INGESTING, not READY: {hint}")


def test_chunks_into_a_closed_pipe_ends_quietly(home, capsys, corpus_dir):
    # Given an ingested document
    shutil.copy(corpus_dir / "GPL-3.0.txt", home / "gpl.txt")
    assert _cli(capsys, "ingest", str(home / "gpl.txt"))[0] == 0
    # When `longdoc chunks gpl --json` writes into a pipe whose reader is already gone (| head)
    proc = subprocess.Popen([*LONGDOC, "chunks", "gpl", "--json"], env=_env(home),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()
    err = proc.stderr.read().decode()
    # Then nothing is printed on stderr (before: "Broken pipe") and the status is 141
    assert (proc.wait(timeout=120), err) == (141, "")


def test_three_concurrent_ingests_of_one_file_leave_one_row_per_chunk(home, corpus_dir):
    # Given one licence and three `longdoc ingest` processes started together
    shutil.copy(corpus_dir / "MPL-2.0.txt", home / "mpl.txt")
    procs = [subprocess.Popen([*LONGDOC, "ingest", str(home / "mpl.txt"), "--json"],
                              env=_env(home), stdout=subprocess.PIPE, stderr=subprocess.PIPE) for _ in range(3)]
    results = [(p.wait(timeout=600), p.stdout.read().decode(), p.stderr.read().decode())  # type: ignore[union-attr]
               for p in procs]
    # Then all three succeed on the same version, one of them having embedded it
    assert [code for code, _, _ in results] == [0, 0, 0], results
    rows = [json.loads(out) for _, out, _ in results]
    assert len({r["doc_version"] for r in rows}) == 1
    chunks = rows[0]["chunks"]
    # And LanceDB holds one row per chunk (before: 3 per chunk), so a top-5 query gives 5 distinct chunks
    index = wiring.vector_index()
    assert index.count() == chunks
    hits = index.query(wiring.embedder().embed_query("patent licence termination"), "mpl", rows[0]["doc_version"], 5)
    assert len({chunk_id for chunk_id, _ in hits}) == 5


def test_running_ingest_again_after_a_killed_one_takes_its_claim_over_at_once(home, capsys, corpus_dir):
    # Given `longdoc ingest` of a long regulation killed (SIGKILL) while it holds the version's claim
    doc = home / "gdpr.txt"
    shutil.copy(corpus_dir / "gdpr-regulation-2016-679-eurlex.txt", doc)
    proc = subprocess.Popen([*LONGDOC, "ingest", str(doc)], env=_env(home),
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    state = home / "home" / "state.sqlite3"
    deadline = time.monotonic() + 300
    while not _claim_held(state) and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.02)
    assert proc.poll() is None, "the first ingest ended before it could be killed"
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=60)
    # When it is run again
    started = time.monotonic()
    code, out, err = _cli(capsys, "ingest", str(doc), "--json")
    # Then it does not wait out the 120 s lease: it says in one line that it took the claim of
    # the killed process over, and the version is READY
    assert code == 0 and time.monotonic() - started < CLAIM_LEASE_SECONDS
    assert err.splitlines() == [f"longdoc: {doc}: the earlier ingest of this version (pid {proc.pid}) is no longer "
                                f"running; took its claim over at once instead of waiting out its 120 s lease"]
    row = json.loads(out)
    assert wiring.state_store().get_document(row["doc_id"], row["doc_version"]).status == "READY"


def _claim_held(path: Path) -> bool:
    """Whether the local store at ``path`` holds an ingest claim (read-only; the table may not exist yet)."""
    if not path.exists():
        return False
    try:
        with sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=1) as conn:
            return conn.execute("SELECT COUNT(*) FROM claims").fetchone()[0] > 0
    except sqlite3.OperationalError:  # no claims table yet, or the database is locked for a moment
        return False
