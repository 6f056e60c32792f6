"""Chunk profiles per document kind (issue 31): a policy with a collection sidecar gets the policy
clause chunks with no environment variable set, and a READY version re-chunks on the next ingest of
the same bytes when its profile changed, embedding only the chunk texts it has not embedded before."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from longdoc.adapters.blob import LocalBlobStore
from longdoc.adapters.state import SqliteStateStore
from longdoc.core.documents import load_chunks
from longdoc.core.errors import DocumentError
from longdoc.core.models import Chunk, DocumentMetadata
from longdoc.ingest.pipeline import IngestDeps, IngestOptions, ingest_document
from longdoc.ingest.profiles import POLICY, options_for, profile_for
from longdoc.ingest.source import IngestSource


class CountingEmbedder:
    """A 3-number vector per text; counts its calls and the texts it embedded."""

    name = "counting-embedder"
    dimension = 3

    def __init__(self) -> None:
        self.calls = 0
        self.texts: list[str] = []

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        self.calls += 1
        self.texts.extend(texts)
        return [[float(len(t)), 0.0, 1.0] for t in texts]


class MemoryIndex:
    """Upserted chunk ids per (doc_id, doc_version)."""

    def __init__(self) -> None:
        self.ids: dict[tuple[str, str], set[str]] = {}

    def upsert(self, chunks: list[Chunk], vectors: list[list[float]]) -> int:
        for chunk in chunks:
            self.ids.setdefault((chunk.doc_id, chunk.doc_version), set()).add(chunk.chunk_id)
        return len(chunks)

    def delete_document(self, doc_id: str, doc_version: str) -> None:
        self.ids.pop((doc_id, doc_version), None)


def policy_text() -> bytes:
    """An invented wording: 12 numbered sections of four paragraphs each (about 2,600 estimated tokens)."""
    parts = ["# Home Policy\n"]
    for n in range(1, 13):
        parts.append(f"## {n} Cover part {n}\n")
        for p in range(1, 5):
            parts.append(f"We will pay for loss of kind {n}-{p} caused by the event named here, provided the "
                         f"insured tells us within {n + p} days and keeps the receipts for the property damaged "
                         "in that event, and subject to the limits shown in the schedule for this part.\n")
    return "\n".join(parts).encode()


@pytest.fixture
def stores(tmp_path: Path) -> dict:
    return {"blobs": LocalBlobStore(tmp_path / "bucket"), "state": SqliteStateStore(tmp_path / "state.sqlite3"),
            "embedder": CountingEmbedder(), "index": MemoryIndex()}


def ingest(stores: dict, data: bytes, sidecar: dict | None) -> object:
    key = "incoming/home-policy.md"
    stores["blobs"].put(key, data)
    raw = json.dumps(sidecar).encode() if sidecar is not None else None
    return ingest_document(IngestSource(key=key, data=data, sidecar=raw), IngestDeps(**stores), IngestOptions())


def test_profile_is_chosen_from_doc_type_or_collection_else_the_deployment_settings() -> None:
    # Given metadata of a policy (by doc_type or by collection) and of a contract
    # When the profile is resolved over the deployment defaults (1000/2000 tokens)
    defaults = IngestOptions()
    # Then policy kinds get the design's 300/400 and the contract keeps the defaults
    assert profile_for(DocumentMetadata(doc_type="Policy")) is POLICY
    assert profile_for(DocumentMetadata(doc_type="wording")) is POLICY
    assert profile_for(DocumentMetadata(collection="home-set")) is POLICY
    assert profile_for(DocumentMetadata(doc_type="contract")) is None
    sized = options_for(defaults, DocumentMetadata(collection="home-set"))
    assert (sized.target_tokens, sized.max_tokens) == (300, 400)
    assert options_for(defaults, DocumentMetadata(doc_type="contract")) is defaults


def test_collection_sidecar_without_env_gives_policy_chunks_and_a_profile_change_rechunks(stores, monkeypatch) -> None:
    # Given no chunk environment variable set, and a wording ingested first without a sidecar
    for name in ("LONGDOC_CHUNK_TARGET_TOKENS", "LONGDOC_CHUNK_MAX_TOKENS"):
        monkeypatch.delenv(name, raising=False)
    data = policy_text()
    first = ingest(stores, data, None)
    default_chunks = load_chunks(stores["blobs"], first.doc_id, first.doc_version)
    record = stores["state"].get_document(first.doc_id, first.doc_version)
    assert record.chunking == "1000/2000/0.15"
    assert max(c.token_count for c in default_chunks) > 400
    calls, embedded = stores["embedder"].calls, len(stores["embedder"].texts)
    # When the same bytes are ingested again with a collection sidecar
    again = ingest(stores, data, {"collection": "home-set", "line_of_business": "home"})
    # Then the version is re-chunked with the policy profile (300/400), recorded so, and re-indexed
    chunks = load_chunks(stores["blobs"], again.doc_id, again.doc_version)
    record = stores["state"].get_document(again.doc_id, again.doc_version)
    assert again.doc_version == first.doc_version and record.status == "READY"
    assert record.chunking == "300/400/0.15" and len(chunks) > len(default_chunks)
    assert max(c.token_count for c in chunks) <= 400 and {c.collection for c in chunks} == {"home-set"}
    assert stores["index"].ids[(again.doc_id, again.doc_version)] == {c.chunk_id for c in chunks}
    # And a third ingest of the same bytes and sidecar embeds nothing and changes nothing
    calls_after = stores["embedder"].calls
    third = ingest(stores, data, {"collection": "home-set", "line_of_business": "home"})
    assert stores["embedder"].calls == calls_after and third.chunks == len(chunks)
    # And going back to the defaults re-chunks without one embed call: those texts are cached by content
    ingest(stores, data, None)
    assert stores["embedder"].calls == calls_after
    assert len(load_chunks(stores["blobs"], first.doc_id, first.doc_version)) == len(default_chunks)
    assert calls >= 1 and embedded == len(default_chunks)


def test_the_result_says_metadata_updated_or_rechunked_for_the_same_bytes(stores) -> None:
    # Given a wording READY under its collection sidecar
    data = policy_text()
    first = ingest(stores, data, {"collection": "home-set", "term": "2024"})
    assert not (first.skipped or first.metadata_updated or first.rechunked)
    # When only the term changes / Then the result says the metadata was updated, nothing re-chunked
    updated = ingest(stores, data, {"collection": "home-set", "term": "2025"})
    assert (updated.skipped, updated.metadata_updated, updated.rechunked) == (False, True, False)
    # When the sidecar goes (the deployment's profile again) / Then it says re-chunked, not skipped
    rechunked = ingest(stores, data, None)
    assert (rechunked.skipped, rechunked.metadata_updated, rechunked.rechunked) == (False, False, True)
    # And the same again is a no-op
    assert ingest(stores, data, None).skipped


def test_a_rechunk_that_fails_keeps_the_ready_version_and_its_chunks(stores) -> None:
    # Given a wording READY with the deployment's chunks
    data = policy_text()
    first = ingest(stores, data, None)
    before = load_chunks(stores["blobs"], first.doc_id, first.doc_version)
    # When a collection sidecar asks for a re-chunk but the file is now over the deployment's size cap
    key = "incoming/home-policy.md"
    source = IngestSource(key=key, data=data, sidecar=json.dumps({"collection": "home-set"}).encode())
    with pytest.raises(DocumentError, match="bytes"):
        ingest_document(source, IngestDeps(**stores), IngestOptions(max_bytes=1000))
    # Then the READY version is left as it was (before: recorded FAILED, hiding its chunks)
    record = stores["state"].get_document(first.doc_id, first.doc_version)
    assert (record.status, record.chunking, record.metadata.collection) == ("READY", "1000/2000/0.15", None)
    assert load_chunks(stores["blobs"], first.doc_id, first.doc_version) == before


class ProcessDied(BaseException):
    """Stands for ``kill -9`` in the middle of an embedding call: nothing below catches it."""


class DyingEmbedder(CountingEmbedder):
    """Embeds two texts per call and dies (or fails) on call number ``die_on``."""

    def __init__(self, die_on: int, error: BaseException) -> None:
        super().__init__()
        self.die_on, self.error = die_on, error

    def batches(self, texts: list[str]) -> list[list[str]]:
        return [texts[i:i + 2] for i in range(0, len(texts), 2)]

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        if self.calls + 1 == self.die_on:
            self.calls += 1
            raise self.error
        return super().embed_documents(texts)


@pytest.mark.parametrize("error", [ProcessDied(), RuntimeError("embedding service unavailable")],
                         ids=["killed", "embedder-down"])
def test_a_rechunk_cut_short_while_embedding_leaves_the_ready_version_served(stores, error) -> None:
    # Given a wording READY with the deployment's chunks, indexed
    data = policy_text()
    first = ingest(stores, data, None)
    before = load_chunks(stores["blobs"], first.doc_id, first.doc_version)
    indexed = set(stores["index"].ids[(first.doc_id, first.doc_version)])
    # When a collection sidecar asks for the policy profile and the embedder dies on its second call
    stores["embedder"] = DyingEmbedder(die_on=2, error=error)
    with pytest.raises(type(error)):
        ingest(stores, data, {"collection": "home-set"})
    # Then the version is still READY with its old chunking, chunk list and vectors (before: INGESTING or
    # FAILED with its vectors deleted, so the wording was missing from its collection until re-ingested)
    record = stores["state"].get_document(first.doc_id, first.doc_version)
    assert (record.status, record.chunking, record.metadata.collection) == ("READY", "1000/2000/0.15", None)
    assert load_chunks(stores["blobs"], first.doc_id, first.doc_version) == before
    assert stores["index"].ids[(first.doc_id, first.doc_version)] == indexed
    # And the next ingest finishes the re-chunk, embedding only the texts the first call did not cache
    stores["embedder"] = DyingEmbedder(die_on=0, error=error)
    again = ingest(stores, data, {"collection": "home-set"})
    chunks = load_chunks(stores["blobs"], again.doc_id, again.doc_version)
    record = stores["state"].get_document(again.doc_id, again.doc_version)
    assert (record.status, record.chunking, again.rechunked) == ("READY", "300/400/0.15", True)
    assert stores["index"].ids[(again.doc_id, again.doc_version)] == {c.chunk_id for c in chunks}
    new_texts = {c.text for c in chunks} - {c.text for c in before}
    assert again.embedded == len(stores["embedder"].texts) <= len(new_texts) - 2
    assert record.embedding_tokens > 0
