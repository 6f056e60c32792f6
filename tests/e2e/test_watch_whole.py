"""``longdoc watch`` takes a file only when it is whole, never overwrites in failed/, and applies
sidecar changes while running (issue 27), through the real ingest handler."""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from longdoc import wiring
from longdoc.local.watch import Outcome, Watcher, is_whole, unique_target
from longdoc.local.whole import wholeness
from tests.unit.docx_builder import build_docx, paragraph
from tests.unit.pdf_builder import text_pdf

pytestmark = pytest.mark.slow

SETTLE = 0.6


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A fresh local-mode LONGDOC_HOME."""
    for name in ("LONGDOC_MODE", "LONGDOC_BUCKET", "LONGDOC_TABLE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("LONGDOC_HOME", str(tmp_path / "home"))
    wiring.reset()
    yield tmp_path / "home"
    wiring.reset()


@contextmanager
def serving(drop: Path, outcomes: list[Outcome], notices: list[str] | None = None) -> Iterator[None]:
    """A watcher serving ``drop`` (created empty) in a thread with a :data:`SETTLE` s window; its
    waiting lines go to ``notices``."""
    drop.mkdir(exist_ok=True)
    stop = threading.Event()
    watcher = Watcher(drop, outcomes.append, (notices if notices is not None else []).append)
    thread = threading.Thread(target=watcher.serve, args=(stop,),
                              kwargs={"settle": SETTLE}, daemon=True)
    thread.start()
    try:
        time.sleep(0.3)
        yield
    finally:
        stop.set()
        thread.join(timeout=10)


def _wait(outcomes: list[Outcome], count: int, seconds: float = 90) -> None:
    deadline = time.monotonic() + seconds
    while len(outcomes) < count and time.monotonic() < deadline:
        time.sleep(0.1)


def _pdf() -> bytes:
    words = ["goods", "services", "fees", "notices", "terms", "records", "audits", "claims", "payments"]
    return text_pdf([[f"{3 * n + k + 1}. The agreement covers the {words[3 * n + k]} of the parties."
                      for k in range(3)] for n in range(3)])


def _write_slowly(path: Path, data: bytes, pieces: int, pause: float, *, reopen: bool) -> threading.Thread:
    """A writer thread putting ``data`` into ``path`` in ``pieces``, ``pause`` seconds apart: through one
    open file (flushed after each piece), or reopening the file to append each piece."""
    size = -(-len(data) // pieces)
    chunks = [data[i:i + size] for i in range(0, len(data), size)]

    def write() -> None:
        if reopen:
            for chunk in chunks:
                with path.open("ab") as out:
                    out.write(chunk)
                time.sleep(pause)
        else:
            with path.open("wb") as out:
                for chunk in chunks:
                    out.write(chunk)
                    out.flush()
                    time.sleep(pause)

    thread = threading.Thread(target=write, daemon=True)
    thread.start()
    return thread


@pytest.mark.parametrize(("reopen", "pause"), [(False, 0.3 * SETTLE), (True, 2.5 * SETTLE)])
def test_a_pdf_written_in_pieces_is_taken_once_whole(home: Path, tmp_path: Path, reopen: bool,
                                                       pause: float) -> None:
    # Given a watcher, and a PDF written into its folder in six pieces: by one writer pausing under the
    # settle window, or by a writer that reopens the file to append, pausing longer than the window
    data = _pdf()
    outcomes: list[Outcome] = []
    drop = tmp_path / "drop"
    with serving(drop, outcomes):
        writer = _write_slowly(drop / "deed.pdf", data, 6, pause, reopen=reopen)
        writer.join()
        _wait(outcomes, 1)
        time.sleep(3 * SETTLE)  # nothing further is taken
    # Then the whole file was ingested once, nothing went to failed/, the file is where it was
    assert [(o.status, o.pages) for o in outcomes] == [("READY", 3)]
    assert not (drop / "failed").exists()
    assert (drop / "deed.pdf").read_bytes() == data
    record = wiring.state_store().get_document(outcomes[0].doc_id or "")
    assert record is not None and record.status == "READY" and record.pages == 3


def test_is_whole_wants_a_pdf_trailer_that_pdfium_opens(tmp_path: Path) -> None:
    # Given a PDF, its first half, and a text file
    data = _pdf()
    (tmp_path / "whole.pdf").write_bytes(data)
    (tmp_path / "half.pdf").write_bytes(data[: len(data) // 2])
    (tmp_path / "mangled.pdf").write_bytes(b"%PDF-1.7\nnothing here\n%%EOF\n")
    (tmp_path / "notes.txt").write_text("plain text")
    # Then only the whole PDF and the text file are whole
    assert [is_whole(tmp_path / n) for n in ("whole.pdf", "half.pdf", "mangled.pdf", "notes.txt")] == [
        True, False, False, True]


def test_failed_files_of_one_name_never_overwrite_each_other(home: Path, tmp_path: Path) -> None:
    # Given a folder into which a bad PDF of one name is dropped three times, processed each time
    drop = tmp_path / "drop"
    drop.mkdir()
    watcher = Watcher(drop)
    bodies = [b"%PDF-1.7\n" + bytes([65 + n]) * 50 + b"\n%%EOF\n" for n in range(3)]
    for body in bodies:
        (drop / "scan.pdf").write_bytes(body)
        old = time.time() - 700  # unchanged for longer than the wait for a file to become whole
        os.utime(drop / "scan.pdf", (old, old))
        assert [o.status for o in watcher.run_once()] == ["FAILED"]
    # Then failed/ holds all three, each beside its own reason
    parked = sorted(p for p in (drop / "failed").iterdir() if not p.name.endswith(".reason.txt"))
    assert sorted(p.read_bytes() for p in parked) == sorted(bodies)
    assert parked[-1].name == "scan.pdf" and all(p.name.startswith("scan.") for p in parked)
    assert all((p.parent / (p.name + ".reason.txt")).is_file() for p in parked)
    assert unique_target(drop / "failed" / "new.pdf") == drop / "failed" / "new.pdf"


def test_a_sidecar_changed_while_watching_is_applied(home: Path, tmp_path: Path) -> None:
    # Given a watcher that has ingested a PDF without a sidecar
    outcomes: list[Outcome] = []
    drop = tmp_path / "drop"
    drop.mkdir()
    (drop / "deed.pdf").write_bytes(_pdf())
    with serving(drop, outcomes):
        _wait(outcomes, 1)
        # When a sidecar is written beside it, then changed
        (drop / "deed.pdf.metadata.json").write_text(json.dumps({"doc_type": "Deed"}))
        _wait(outcomes, 2)
        (drop / "deed.pdf.metadata.json").write_text(json.dumps({"doc_type": "Lease"}))
        _wait(outcomes, 3)
    # Then each change re-delivered the document and the registry holds the latest metadata
    assert [o.status for o in outcomes] == ["READY", "READY", "READY"]
    record = wiring.state_store().get_document(outcomes[0].doc_id or "")
    assert record is not None and record.metadata.doc_type == "Lease"


def _docx() -> bytes:
    """A small DOCX (a ZIP package) of three clauses."""
    return build_docx([paragraph(f"{n}. The tenant pays the rent for month {n} in advance.") for n in range(1, 4)])


def test_a_docx_written_by_a_writer_that_reopens_to_append_is_taken_once_whole(home: Path, tmp_path: Path) -> None:
    # Given a watcher, and a DOCX appended in four pieces by a writer that reopens the file each time,
    # pausing longer than the settle window (each fragment is stable for a while, none is a ZIP yet)
    data = _docx()
    outcomes: list[Outcome] = []
    notices: list[str] = []
    drop = tmp_path / "drop"
    with serving(drop, outcomes, notices):
        writer = _write_slowly(drop / "lease.docx", data, 4, 2.5 * SETTLE, reopen=True)
        writer.join()
        _wait(outcomes, 1)
        time.sleep(3 * SETTLE)
    # Then the whole package was ingested once, nothing went to failed/, the file is where it was
    assert [o.status for o in outcomes] == ["READY"]
    assert not (drop / "failed").exists() and (drop / "lease.docx").read_bytes() == data
    # and while it waited, a line said so, naming the file and the missing ZIP directory
    assert notices and notices[0].startswith(f"waiting for {drop / 'lease.docx'} to be whole (")
    assert "end-of-central-directory" in notices[0] or "central directory" in notices[0]


def test_a_file_that_can_never_be_whole_fails_at_once(home: Path, tmp_path: Path) -> None:
    # Given a watcher, and a ".pdf" that holds plain text (no %PDF- header at all)
    outcomes: list[Outcome] = []
    notices: list[str] = []
    drop = tmp_path / "drop"
    with serving(drop, outcomes, notices):
        (drop / "notes.pdf").write_text("These are meeting notes, not a PDF. " * 40)
        _wait(outcomes, 1, seconds=10 * SETTLE)
    # Then it failed after the settle window, without waiting to become whole, with a reason
    assert [o.status for o in outcomes] == ["FAILED"] and outcomes[0].reason
    assert notices == [] and (drop / "failed" / "notes.pdf").is_file()


def test_wholeness_per_format(tmp_path: Path) -> None:
    # Given a DOCX, its first 90 %, a ".docx" of other bytes, a PDF without a header and an empty file
    data = _docx()
    (tmp_path / "whole.docx").write_bytes(data)
    (tmp_path / "part.docx").write_bytes(data[: len(data) * 9 // 10])
    (tmp_path / "text.docx").write_text("not a package")
    (tmp_path / "text.pdf").write_text("hello, not a PDF at all")
    (tmp_path / "empty.pdf").write_bytes(b"")
    # Then each gets its state
    states = {n: wholeness(tmp_path / n).state for n in ("whole.docx", "part.docx", "text.docx", "text.pdf",
                                                         "empty.pdf")}
    assert states == {"whole.docx": "whole", "part.docx": "incomplete", "text.docx": "never",
                      "text.pdf": "never", "empty.pdf": "incomplete"}
    assert "%PDF-" in wholeness(tmp_path / "text.pdf").reason


def test_once_leaves_a_pdf_still_arriving_in_place(home: Path, tmp_path: Path) -> None:
    # Given a drop folder holding the first half of a PDF being copied in, and a whole text file
    drop = tmp_path / "drop"
    drop.mkdir()
    data = _pdf()
    (drop / "policy.pdf").write_bytes(data[: len(data) // 2])
    (drop / "notes.txt").write_text("Section 1. Cover. We pay for fire damage to the home.\n")
    outcomes = Watcher(drop).run_once(settle=SETTLE)
    by_name = {o.path.name: o for o in outcomes}
    # Then the half PDF is left where it is for the next run, not failed, and the text file is ingested
    assert by_name["policy.pdf"].status == "RETRY"
    assert "not whole yet (no %%EOF trailer at its end yet)" in (by_name["policy.pdf"].reason or "")
    assert (drop / "policy.pdf").is_file() and not (drop / "failed").exists()
    assert by_name["notes.txt"].status == "READY"
    # When the copy finishes, Then the next run ingests it
    (drop / "policy.pdf").write_bytes(data)
    again = {o.path.name: o for o in Watcher(drop).run_once(settle=SETTLE)}
    assert again["policy.pdf"].status == "READY"
