"""A second ``longdoc ingest`` while another process re-chunks the same version (outside tester,
ninth session): the version stays READY while the other embeds, so the second one used to read the
READY entry and print "unchanged" at once, its sidecar never applied. It now waits for the claim."""

from __future__ import annotations

import json
import os
import socket
import threading
from pathlib import Path

import pytest

from longdoc import wiring
from longdoc.local.ingest_runner import ingest_file
from tests.e2e.cli_support import offline_home

pytestmark = pytest.mark.slow
WORDING = Path(__file__).resolve().parents[1] / "data" / "triage" / "policy-set" / "homeowners-wording-2024.md"


@pytest.fixture()
def home(tmp_path, monkeypatch):
    yield from offline_home(tmp_path, monkeypatch)


def test_an_ingest_while_another_process_rechunks_waits_and_then_reports_the_rechunk(home: Path) -> None:
    # Given a wording READY with the deployment's chunks (no sidecar)
    data = WORDING.read_bytes()
    first = ingest_file("home.md", data, None)
    assert first.record.status == "READY" and first.record.chunking == "1000/2000/0.15"
    # And another live process holding the version's claim (as a re-chunk does while it embeds)
    state = wiring.state_store()
    other = f"{socket.gethostname()}:{os.getpid()}:0therpr0"
    assert state.claim_version(first.doc_id, first.doc_version, other, 120)
    threading.Timer(1.5, lambda: state.release_version(first.doc_id, first.doc_version, other)).start()
    waits: list[str] = []
    # When the same bytes are ingested with a collection sidecar
    sidecar = json.dumps({"collection": "home-set", "line_of_business": "home"}).encode()
    done = ingest_file("home.md", data, sidecar, wait_seconds=20, on_wait=lambda: waits.append("waiting"))
    # Then it said it waited (before: "unchanged" at once, the READY entry read as the answer), and once
    # the claim was released it re-chunked the version under the policy profile itself
    assert waits == ["waiting"] and done.waited
    assert (done.record.status, done.record.chunking, done.change) == ("READY", "300/400/0.15", "re-chunked")
    assert done.record.metadata.collection == "home-set"
