"""Test support: a policy set loaded into local stores without embedding (chunks and registry only).

Each file is parsed and chunked as ingest does (:func:`longdoc.ingest.pipeline.chunk_bytes`,
at the dev set's chunk sizes), its chunk list written to a folder blob store and a ``READY``
record to a SQLite registry, with the metadata of its ``<file>.metadata.json`` sidecar.
Triage then runs BM25-only (no vector index), which needs nothing else.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

from longdoc.adapters.blob import LocalBlobStore
from longdoc.adapters.state import SqliteStateStore
from longdoc.core.documents import chunks_key
from longdoc.core.models import DocumentMetadata, DocumentRecord
from longdoc.ingest.ids import doc_id_for_key, version_for
from longdoc.ingest.pipeline import chunk_bytes
from longdoc.triage.collections import Member

REPO = Path(__file__).resolve().parents[2]
POLICY_SET = REPO / "tests" / "data" / "triage" / "policy-set"
GOLD = REPO / "tests" / "data" / "triage" / "gold-claims.jsonl"
CLAIMS = REPO / "tests" / "data" / "triage" / "claims"
TARGET_TOKENS, MAX_TOKENS = 300, 400
"""The dev set's chunk sizes (LONGDOC_CHUNK_TARGET_TOKENS / LONGDOC_CHUNK_MAX_TOKENS in make demo)."""


def load_file(blobs: LocalBlobStore, state: SqliteStateStore, path: Path,
              metadata: dict | None = None) -> DocumentRecord:
    """Chunk ``path`` and register it READY with ``metadata`` (default: its sidecar beside it)."""
    data = path.read_bytes()
    if metadata is None:
        sidecar = path.with_name(path.name + ".metadata.json")
        metadata = json.loads(sidecar.read_text()) if sidecar.is_file() else {}
    meta = DocumentMetadata.from_mapping(metadata)
    doc_id, version = doc_id_for_key(path.name), version_for(data)
    chunks = chunk_bytes(path.name, data, doc_id=doc_id, target_tokens=TARGET_TOKENS, max_tokens=MAX_TOKENS,
                         metadata=meta)
    blobs.put(chunks_key(doc_id, version), "".join(c.model_dump_json() + "\n" for c in chunks).encode())
    record = DocumentRecord(doc_id=doc_id, doc_version=version, source=path.name, status="READY",
                            chunks=len(chunks), metadata=meta, updated_at="2024-01-01T00:00:00Z")
    state.put_document(record)
    return record


def load_policy_set(root: Path, corpus: Path | None = None) -> tuple[LocalBlobStore, SqliteStateStore]:
    """The dev policy set's Markdown wordings (and, given ``corpus``, the travel PDF) under ``root``."""
    blobs, state = LocalBlobStore(root / "bucket"), SqliteStateStore(root / "state.sqlite3")
    for path in sorted(POLICY_SET.glob("*.md")):
        load_file(blobs, state, path)
    if corpus is not None:
        pdf = corpus / "chubb-travellershield-plus-policy-wording.pdf"
        sidecar = POLICY_SET / (pdf.name + ".metadata.json")
        load_file(blobs, state, pdf, json.loads(sidecar.read_text()))
    return blobs, state


def policy_set_home(tmp_path: Path, monkeypatch: object, also_unset: tuple[str, ...] = ()) -> Iterator[Path]:
    """Body of a ``home`` fixture: ``LONGDOC_HOME`` = ``tmp_path`` holding the dev policy set (the layout
    the local wiring reads), offline (no API key, no mode or model override, nor ``also_unset``), the
    wiring reset before and after; yields ``tmp_path``."""
    from longdoc import wiring

    for name in ("ANTHROPIC_API_KEY", "LONGDOC_MODE", "LONGDOC_MODEL", *also_unset):
        monkeypatch.delenv(name, raising=False)  # type: ignore[attr-defined]
    monkeypatch.setenv("LONGDOC_HOME", str(tmp_path))  # type: ignore[attr-defined]
    load_policy_set(tmp_path)
    wiring.reset()
    yield tmp_path
    wiring.reset()


def member(doc_id: str, start: str | None, end: str | None, lob: str = "home", endorses: str | None = None,
           term: str | None = None) -> Member:
    """A collection member of version ``v1`` with 3 chunks (term resolution and overlap tests)."""
    return Member(doc_id, "v1", doc_id + ".md", lob, term, start, end, endorses, 3)


TERMS = [member("home-2023", "2023-01-01", "2023-12-31"), member("home-2024", "2024-01-01", "2024-12-31"),
         member("sewer-e", "2024-03-01", "2024-12-31", endorses="home-2024"),
         member("travel-2022", "2022-07-01", None, lob="travel")]
"""Two consecutive home terms, an endorsement of the second, and an open-ended travel wording."""
