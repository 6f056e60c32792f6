"""history.json is written by several threads of one local run (start, each task, the heartbeat)."""

from __future__ import annotations

import json
import threading
from pathlib import Path

from longdoc.local.runner import _write_json


def test_json_writes_from_two_threads_never_fail_and_leave_one_whole_file(tmp_path: Path) -> None:
    # Given one file written 300 times by each of two threads (as start, tasks and heartbeat do)
    path = tmp_path / "history.json"
    errors: list[BaseException] = []

    def writer(tag: str) -> None:
        for i in range(300):
            try:
                _write_json(path, [{"writer": tag, "i": i}])
            except BaseException as exc:  # noqa: BLE001 - collected for the assertion
                errors.append(exc)

    threads = [threading.Thread(target=writer, args=(tag,)) for tag in ("a", "b")]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    # Then no write failed (one shared temporary name made the other's rename fail), the file is
    # whole JSON from the last write, and no temporary file is left
    assert errors == []
    assert json.loads(path.read_text())[0]["i"] == 299
    assert [p.name for p in tmp_path.iterdir()] == ["history.json"]
