"""``longdoc watch DIR``: a local folder as the bucket's incoming/ prefix, through the real ingest handler."""

from __future__ import annotations

import json
import os
import shutil
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from longdoc import wiring
from longdoc.cli import main
from longdoc.local.watch import Outcome, Watcher

pytestmark = pytest.mark.slow


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A fresh local-mode LONGDOC_HOME."""
    for name in ("LONGDOC_MODE", "LONGDOC_BUCKET", "LONGDOC_TABLE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("LONGDOC_HOME", str(tmp_path / "home"))
    wiring.reset()
    yield tmp_path / "home"
    wiring.reset()


def test_watch_once_ingests_good_files_ignores_duplicates_and_parks_bad_ones(
    home: Path, tmp_path: Path, corpus_dir: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    # Given a drop folder with a licence, a copy of it under another name in a sub-folder,
    # an empty "PDF" and a password-protected PDF
    drop = tmp_path / "drop"
    (drop / "sub").mkdir(parents=True)
    shutil.copy(corpus_dir / "Apache-2.0.txt", drop / "Apache License.txt")
    shutil.copy(corpus_dir / "Apache-2.0.txt", drop / "sub" / "copy.txt")
    shutil.copy(corpus_dir / "bad" / "empty-0-bytes.pdf", drop / "empty.pdf")
    shutil.copy(corpus_dir / "bad" / "password-example.pdf", drop / "locked.pdf")
    _dropped_long_ago(drop / "empty.pdf", drop / "locked.pdf")  # not still arriving: --once takes them

    # When `longdoc watch DIR --once --json` runs
    code = main(["watch", str(drop), "--once", "--json"])
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]

    # Then it exits 1 (some files failed), the good files are READY under doc ids from their paths
    assert code == 1
    by_name = {Path(r["path"]).name: r for r in rows}
    assert by_name["Apache License.txt"]["status"] == "READY"
    assert by_name["Apache License.txt"]["doc_id"] == "apache-license--b142bb41"
    assert by_name["copy.txt"]["status"] == "READY" and by_name["copy.txt"]["doc_id"] == "sub-copy--de24943c"
    assert wiring.state_store().get_document("apache-license--b142bb41").status == "READY"
    # And the copy under another name is its own document with the same chunking
    assert by_name["copy.txt"]["chunks"] == by_name["Apache License.txt"]["chunks"]
    # And the bad files were moved to failed/ beside a reason file saying why
    assert {by_name["empty.pdf"]["status"], by_name["locked.pdf"]["status"]} == {"FAILED"}
    assert sorted(p.name for p in (drop / "failed").iterdir()) == [
        "empty.pdf", "empty.pdf.reason.txt", "locked.pdf", "locked.pdf.reason.txt"]
    assert "password" in (drop / "failed" / "locked.pdf.reason.txt").read_text().lower()
    assert (drop / "failed" / "empty.pdf.reason.txt").read_text().strip()
    assert not (drop / "empty.pdf").exists()

    # When the watcher sees the same files again in one session
    seen: list[Outcome] = []
    watcher = Watcher(drop, seen.append)
    watcher.run_once()
    again = watcher.run_once()
    # Then unchanged files are ignored (failed/ is never re-read)
    assert [o.status for o in again] == ["DUPLICATE", "DUPLICATE"]


def test_a_file_name_too_long_for_a_sidecar_is_ingested_and_never_stops_the_others(
    home: Path, tmp_path: Path, corpus_dir: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    # Given a drop folder with a file whose name is 250 bytes (its sidecar's name could not
    # exist), a corrupt PDF with a 251-byte name, and two ordinary files around them
    drop = tmp_path / "drop"
    drop.mkdir()
    long_name = "a" * 246 + ".txt"
    shutil.copy(corpus_dir / "Apache-2.0.txt", drop / long_name)
    shutil.copy(corpus_dir / "bad" / "empty-0-bytes.pdf", drop / ("b" * 247 + ".pdf"))
    _dropped_long_ago(drop / ("b" * 247 + ".pdf"))
    shutil.copy(corpus_dir / "Apache-2.0.txt", drop / "00-apache.txt")
    shutil.copy(corpus_dir / "MPL-2.0.txt", drop / "zz-mpl.txt")

    # When `longdoc watch DIR --once --json` runs
    code = main(["watch", str(drop), "--once", "--json"])
    rows = {Path(r["path"]).name: r for r in map(json.loads, capsys.readouterr().out.splitlines())}

    # Then the long-named text and both ordinary files are READY, the corrupt PDF alone failed
    assert code == 1
    assert {name: row["status"] for name, row in rows.items()} == {
        long_name: "READY", "b" * 247 + ".pdf": "FAILED", "00-apache.txt": "READY", "zz-mpl.txt": "READY"}
    # And the PDF was parked with its reason beside it under a name the file system accepts
    reason, pdf = sorted(p.name for p in (drop / "failed").iterdir())
    assert pdf == "b" * 247 + ".pdf"
    assert reason.startswith("b" * 200 + "-") and reason.endswith(".reason.txt") and len(reason) == 220
    assert (drop / "failed" / reason).read_text().strip()


def _dropped_long_ago(*paths: Path) -> None:
    """Set ``paths``' times to 700 s ago: files that have sat unchanged longer than the wait for a
    file to become whole (``INCOMPLETE_WAIT_SECONDS``), so ``--once`` takes (and fails) them."""
    old = time.time() - 700
    for path in paths:
        os.utime(path, (old, old))


@contextmanager
def serving(drop: Path, outcomes: list[Outcome]) -> Iterator[threading.Thread]:
    """A watcher serving ``drop`` (created empty) in a background thread, its outcomes appended to
    ``outcomes``; stopped and joined on exit. Yields the thread."""
    drop.mkdir()
    stop = threading.Event()
    thread = threading.Thread(target=Watcher(drop, outcomes.append).serve, args=(stop,), kwargs={"settle": 0.2},
                              daemon=True)
    thread.start()
    try:
        time.sleep(0.5)
        yield thread
    finally:
        stop.set()
        thread.join(timeout=10)


def wait_for_outcomes(outcomes: list[Outcome], count: int, deadline: float) -> None:
    """Wait until ``outcomes`` holds ``count`` entries or ``deadline`` (time.monotonic) passes."""
    while len(outcomes) < count and time.monotonic() < deadline:
        time.sleep(0.1)


def test_watch_picks_up_a_file_that_appears_while_running(home: Path, tmp_path: Path, corpus_dir: Path) -> None:
    # Given a watcher serving an empty folder in a background thread
    outcomes: list[Outcome] = []
    with serving(tmp_path / "drop", outcomes) as thread:
        # When a document is copied in
        shutil.copy(corpus_dir / "MPL-2.0.txt", tmp_path / "drop" / "mpl.txt")
        wait_for_outcomes(outcomes, 1, time.monotonic() + 60)
    # Then it was ingested once, through the same handler
    assert [(o.status, o.doc_id) for o in outcomes] == [("READY", "mpl")]
    assert wiring.state_store().get_document("mpl").status == "READY"
    assert not thread.is_alive()


def test_a_watched_file_deleted_right_after_it_is_dropped_ends_deleted(home: Path, tmp_path: Path,
                                                                      corpus_dir: Path) -> None:
    # Given a watcher serving a folder in a background thread
    outcomes: list[Outcome] = []
    with serving(tmp_path / "drop", outcomes):
        # When a document is dropped in and deleted again once it has been picked up (as S3's ObjectRemoved)
        shutil.copy(corpus_dir / "MPL-2.0.txt", tmp_path / "drop" / "mpl.txt")
        deadline = time.monotonic() + 60
        wait_for_outcomes(outcomes, 1, deadline)
        (tmp_path / "drop" / "mpl.txt").unlink()
        wait_for_outcomes(outcomes, 2, deadline)
    # Then it was ingested, then removed: DELETED in the registry, its staged object gone
    assert [(o.status, o.doc_id) for o in outcomes] == [("READY", "mpl"), ("DELETED", "mpl")]
    assert wiring.state_store().get_document("mpl").status == "DELETED"
    assert not wiring.blob_store().exists("incoming/mpl.txt")


def test_watch_applies_a_metadata_sidecar_and_never_ingests_it(
    home: Path, tmp_path: Path, corpus_dir: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    # Given a document with a sidecar that sorts after it
    drop = tmp_path / "drop"
    drop.mkdir()
    shutil.copy(corpus_dir / "MPL-2.0.txt", drop / "msa.txt")
    (drop / "msa.txt.metadata.json").write_text(json.dumps({"doc_type": "License", "term": "2024"}))
    # When the folder is processed once
    code = main(["watch", str(drop), "--once", "--json"])
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    # Then only the document is ingested, and every chunk carries the sidecar's metadata
    assert code == 0
    assert [Path(r["path"]).name for r in rows] == ["msa.txt"]
    _, out = main(["chunks", "msa", "--json"]), capsys.readouterr().out
    chunks = json.loads(out)
    assert chunks and {(c["doc_type"], c["term"]) for c in chunks} == {("License", "2024")}


def test_a_failed_files_sidecar_goes_with_it_to_failed(home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # Given a file whose sidecar is not JSON (outside tester: the sidecar was left behind in the folder)
    drop = tmp_path / "drop"
    drop.mkdir()
    (drop / "terms.txt").write_text("1. Cover\n\nWe cover the contents of your home against theft.\n")
    (drop / "terms.txt.metadata.json").write_text("{not json")
    _dropped_long_ago(drop / "terms.txt", drop / "terms.txt.metadata.json")
    # When watch --once runs
    assert main(["watch", str(drop), "--once", "--json"]) == 1
    # Then the file, its sidecar and the reason are in failed/, and nothing is left in the folder
    assert sorted(p.name for p in (drop / "failed").iterdir()) == [
        "terms.txt", "terms.txt.metadata.json", "terms.txt.reason.txt"]
    assert sorted(p.name for p in drop.iterdir()) == ["failed"]
    assert "not valid JSON" in (drop / "failed" / "terms.txt.reason.txt").read_text()
