"""A manifest of 10,000 lines with 3 bad ones: each bad line is reported with its line number and
reason, and the 9,997 good ones run to the end.

The fast path: the real manifest parser, job start, bulk steps, harness, SQLite stores (the state
store in memory) and local batches (answered by the offline baseline); documents are registry
entries of one short chunk
each (served by a blob store that makes the chunk from the key) with a stand-in embedder and
index, so ten thousand runs take seconds rather than ten thousand ingests.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

from longdoc.adapters.baseline import OfflineBaselineModel
from longdoc.adapters.batches import LocalBatches
from longdoc.adapters.blob import LocalBlobStore
from longdoc.adapters.bulk_store import SqliteBulkStore
from longdoc.bulk.driver import run_rounds
from longdoc.bulk.runs import Stores, parse_manifest, start_bulk
from longdoc.bulk.plan import BulkLimits
from longdoc.bulk.steps import BulkDeps
from longdoc.core.models import Chunk, DocumentRecord, PageSpan, SectionSpan
from longdoc.extract.catalogue import load_catalogue
from longdoc.extract.session import Deps
from tests.fakes.memory_state import MemoryStateStore

pytestmark = pytest.mark.slow

LINES = 10_000
BAD = {17: "doc-no-such-document", LINES // 2: "doc-failed-ingest", LINES - 1: '{"doc_id": "doc-09999"'}
TEXT = "This Agreement shall be governed by and construed in accordance with the laws of the State of New York."
VERSION = "v" * 16


def _chunk(doc_id: str) -> Chunk:
    return Chunk(chunk_id=f"{doc_id}:{VERSION[:8]}:0000", doc_id=doc_id, doc_version=VERSION, ordinal=0,
                 source=f"{doc_id}.txt", page_start=None, page_end=None, section_id=None, text=TEXT, char_start=0,
                 char_end=len(TEXT), token_count=len(TEXT) // 4, content_hash=hashlib.sha256(TEXT.encode()).hexdigest(),
                 page_spans=[PageSpan(page=None, char_start=0, char_end=len(TEXT))],
                 section_spans=[SectionSpan(section_id=None, char_start=0, char_end=len(TEXT))])


class OneChunkDocuments(LocalBlobStore):
    """A local blob store in which every document version's chunk list is one short chunk."""

    def get(self, key: str) -> bytes:
        if key.startswith("chunks/"):
            return _chunk(key.split("/")[1]).model_dump_json().encode()
        return super().get(key)


class StandIn:
    """Embedder and index in one: a constant query vector, the document's one chunk as the match."""

    dimension = 4

    def embed_query(self, text: str) -> list[float]:
        return [1.0, 0.0, 0.0, 0.0]

    def query(self, vector: Any, doc_id: str, doc_version: str, top_k: int) -> list[tuple[str, float]]:
        return [(f"{doc_id}:{doc_version[:8]}:0000", 1.0)]


def _manifest() -> tuple[str, list[str]]:
    """10,000 lines (ids, every tenth as a JSON object); lines 17, 5,000 and 9,999 are bad: an unknown
    document, one whose ingest failed, a cut JSON line."""
    lines, good = [], []
    for number in range(1, LINES + 1):
        doc_id = f"doc-{number:05d}"
        if number in BAD:
            lines.append(BAD[number])
            continue
        lines.append(json.dumps({"doc_id": doc_id}) if number % 10 == 0 else doc_id)
        good.append(doc_id)
    return "\n".join(lines) + "\n", good


def test_a_manifest_of_10000_lines_with_3_bad_ones_reports_them_and_runs_the_rest(tmp_path: Path) -> None:
    # Given 9,997 READY documents, one whose ingest FAILED, and a manifest naming them line by line
    text, good = _manifest()
    state = MemoryStateStore()
    for doc_id in [*good, "doc-failed-ingest"]:
        failed = doc_id == "doc-failed-ingest"
        state.put_document(DocumentRecord(doc_id=doc_id, doc_version=VERSION, source=f"{doc_id}.txt", chunks=1,
                                          status="FAILED" if failed else "READY",
                                          reason="no text: the file is empty" if failed else None))
    stand_in = StandIn()
    extract = Deps(state=state, blobs=OneChunkDocuments(tmp_path / "bucket"), embedder=stand_in,  # type: ignore[arg-type]
                   index=stand_in, model=OfflineBaselineModel(), catalogue=load_catalogue())  # type: ignore[arg-type]
    deps = BulkDeps(extract=extract, batches=LocalBatches(OfflineBaselineModel(), tmp_path / "batches"),
                    store=SqliteBulkStore(Path(":memory:")), limits=BulkLimits(poll_first=0))
    # When the manifest is parsed and the job started
    accepted = start_bulk(Stores.of(deps), extract.catalogue, "bulk-big", parse_manifest(text),
                          clause_types=["Governing Law", "Insurance"], model_name=OfflineBaselineModel.name,
                          max_tokens=1024, top_k=2)
    # Then each bad line is reported with its number and reason, in line order
    assert [(r.where, r.reason) for r in accepted.rejected] == [
        ("line 17", "document doc-no-such-document is not ingested"),
        (f"line {LINES // 2}", "document doc-failed-ingest is not ingested (status FAILED: no text: the file is empty)"),
        (f"line {LINES - 1}", "not valid JSON (Expecting ',' delimiter)")]
    assert accepted.doc_ids == good and len(good) == LINES - 3
    # When its rounds run
    out = run_rounds(deps, "bulk-big", sleep=lambda s: None)
    # Then every good document ran to the end, in one round, with its clause types resolved
    assert (out["done"], out["failed"], out["pending"], out["rounds"]) == (LINES - 3, 0, 0, 2)  # round 1: the search
    last = state.list_extractions(f"bulk-big-{LINES - 4:05d}")
    assert {(e.clause_type, e.status) for e in last} == {("Governing Law", "found"), ("Insurance", "not_found")}
