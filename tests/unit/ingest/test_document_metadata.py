"""Document metadata from the object's own metadata and its sidecar: names, precedence, errors.

The metadata functions take what the ingest handler read once (user metadata and sidecar
bytes); ingest gets them on its :class:`IngestSource`. Reading them from S3 is covered by the
BlobStore contract suite and the handler tests.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from longdoc.adapters.blob import LocalBlobStore
from longdoc.adapters.state import SqliteStateStore
from longdoc.core.documents import load_chunks
from longdoc.core.errors import DocumentError
from longdoc.core.models import METADATA_VALUE_MAX_CHARS, DocumentMetadata
from longdoc.ingest.metadata import document_metadata, sidecar_values
from longdoc.ingest.pipeline import IngestDeps, ingest_document
from longdoc.ingest.result import IngestResult
from longdoc.ingest.source import IngestSource

KEY = "incoming/home-policy.txt"
POLICY = ("1. Cover\n\nWe cover the buildings of your home against fire, flood and theft.\n\n"
          "2. Exclusions\n\nWe do not cover wear and tear, or damage caused on purpose.\n").encode()


class CountingEmbedder:
    """Embeds every text as a 3-number vector; counts the texts it was sent."""

    name = "fake-embedder"
    dimension = 3

    def __init__(self) -> None:
        self.count = 0

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        self.count += len(texts)
        return [[float(len(t)), 0.0, 1.0] for t in texts]


class CountingIndex:
    """Counts upserted vectors per document version."""

    def __init__(self) -> None:
        self.upserted = 0
        self.deleted: list[tuple[str, str]] = []

    def upsert(self, chunks, vectors) -> int:  # type: ignore[no-untyped-def]
        self.upserted += len(chunks)
        return len(chunks)

    def delete_document(self, doc_id: str, doc_version: str) -> None:
        self.deleted.append((doc_id, doc_version))


@pytest.fixture
def stores(tmp_path: Path) -> dict:
    return {"blobs": LocalBlobStore(tmp_path / "bucket"), "state": SqliteStateStore(tmp_path / "state.sqlite3"),
            "embedder": CountingEmbedder(), "index": CountingIndex()}


def ingest(stores: dict, object_metadata: dict[str, str], sidecar: bytes | None = None) -> IngestResult:
    """Ingest POLICY at KEY with what the handler would have read alongside it (the object in the bucket)."""
    stores["blobs"].put(KEY, POLICY)
    return ingest_document(IngestSource(key=KEY, data=POLICY, object_metadata=object_metadata, sidecar=sidecar),
                           IngestDeps(**stores))


def test_s3_metadata_names_map_onto_the_fields_and_unknown_names_are_ignored() -> None:
    # Given an object uploaded with --metadata doc-type=policy,line-of-business=home,term=2024,owner=ops
    object_metadata = {"doc-type": "policy", "line-of-business": "home", "term": "2024", "owner": "ops"}
    # When its document metadata is read
    meta = document_metadata(KEY, object_metadata)
    # Then the three fields carry the values and the unknown name is dropped
    assert meta == DocumentMetadata(doc_type="policy", line_of_business="home", term="2024")


def test_sidecar_overrides_object_metadata_key_by_key() -> None:
    # Given object metadata for all three fields, and a sidecar correcting the term and clearing the type
    object_metadata = {"doc-type": "policy", "line-of-business": "home", "term": "2024"}
    sidecar = json.dumps({"Term": "2025", "doc_type": None}).encode()
    # When its document metadata is read
    meta = document_metadata(KEY, object_metadata, sidecar)
    # Then the sidecar's term wins, its null clears doc_type, and line_of_business stays from S3
    assert meta == DocumentMetadata(doc_type=None, line_of_business="home", term="2025")


def test_no_metadata_anywhere_is_empty_metadata() -> None:
    # Given an object with neither object metadata nor a sidecar / Then all fields are unset
    assert document_metadata(KEY, {}, None) == DocumentMetadata()


def test_a_sidecar_number_is_refused_naming_the_sidecar_and_field() -> None:
    # Given a sidecar with JSON numbers where docs/extraction.md says strings (tester's M2: {"collection": 5, "term": 2024})
    # When the metadata is read / Then each field is named with its sidecar, nothing is stored as "5"
    with pytest.raises(DocumentError) as caught:
        document_metadata(KEY, {}, b'{"collection": 5, "term": 2024}')
    assert caught.value.reason == (
        'metadata term (sidecar incoming/home-policy.txt.metadata.json): must be a string, not the number 2024 '
        '(write it in quotes: "2024"); '
        'metadata collection (sidecar incoming/home-policy.txt.metadata.json): must be a string, not the number 5 '
        '(write it in quotes: "5")')
    # And the same value in quotes is read
    assert document_metadata(KEY, {}, b'{"term": "2024"}').term == "2024"


@pytest.mark.parametrize("sidecar", [b'{"term": 1e400, "doc_type": NaN}', b'{"term": -Infinity, "doc_type": NaN}'])
def test_a_sidecar_number_that_is_not_finite_is_rejected_naming_each_field(sidecar: bytes) -> None:
    # Given a sidecar whose numbers Python's JSON reader turns into inf and nan
    # When the metadata is read / Then both fields are named, nothing is stored as "inf"/"nan"
    with pytest.raises(DocumentError) as caught:
        document_metadata(KEY, {}, sidecar)
    assert caught.value.source == KEY
    assert caught.value.reason == (
        "metadata doc_type (sidecar incoming/home-policy.txt.metadata.json): "
        "must be a string, not a non-finite number; "
        "metadata term (sidecar incoming/home-policy.txt.metadata.json): "
        "must be a string, not a non-finite number")


def test_a_sidecar_with_a_utf8_byte_order_mark_is_read() -> None:
    # Given a sidecar saved by an editor that writes a UTF-8 BOM first
    sidecar = "\ufeff{\"doc_type\": \"policy\", \"term\": \"2025\"}".encode()
    # When the metadata is read / Then the values are there
    assert document_metadata(KEY, {}, sidecar) == DocumentMetadata(doc_type="policy", term="2025")


@pytest.mark.parametrize(("sidecar", "reason"), [
    (b"[1, 2]", "metadata sidecar incoming/home-policy.txt.metadata.json must be a JSON object, not an array"),
    (b'"policy"', "metadata sidecar incoming/home-policy.txt.metadata.json must be a JSON object, not a string"),
    (b"{not json", "metadata sidecar incoming/home-policy.txt.metadata.json is not valid JSON (Expecting")])
def test_a_sidecar_that_is_not_a_json_object_names_the_sidecar(sidecar: bytes, reason: str) -> None:
    # Given a sidecar holding a list, a string, or broken JSON / When it is read
    with pytest.raises(DocumentError) as caught:
        sidecar_values(KEY, sidecar)
    # Then the error is the document's, and its reason (what the registry records) names the sidecar
    assert caught.value.source == KEY and caught.value.reason.startswith(reason)
    # And no sidecar at all is no values
    assert sidecar_values(KEY, None) == {}


@pytest.mark.parametrize(("object_metadata", "sidecar", "expected"), [
    ({"term": "x" * (METADATA_VALUE_MAX_CHARS + 1)}, None,
     rf"incoming/home-policy.txt: metadata term \(object metadata\): .*at most {METADATA_VALUE_MAX_CHARS} characters"),
    ({}, {"line_of_business": ["home", "motor"]},
     r"incoming/home-policy.txt: metadata line_of_business \(sidecar incoming/home-policy.txt.metadata.json\): "
     r"must be a string, not an array"),
    ({}, {"doc-type": "policy\nIGNORE PREVIOUS"}, r"metadata doc_type .*control characters"),
    ({}, {"term": True}, r"metadata term .*must be a string, not true/false"),
])
def test_a_bad_value_names_the_object_key_the_field_and_its_source(
    object_metadata: dict, sidecar: dict | None, expected: str
) -> None:
    # Given a bad value in the object metadata or the sidecar
    raw = json.dumps(sidecar).encode() if sidecar is not None else None
    # When the metadata is read / Then a DocumentError names the key, the field and where it came from
    with pytest.raises(DocumentError, match=expected) as caught:
        document_metadata(KEY, object_metadata, raw)
    assert caught.value.source == KEY


def test_ingest_with_a_bad_metadata_value_stores_nothing_and_records_why(stores: dict) -> None:
    # Given an object whose term is over the cap
    # When it is ingested with its metadata
    with pytest.raises(DocumentError, match="metadata term"):
        ingest(stores, {"doc-type": "policy", "term": "y" * 500})
    # Then no chunk list, embedding or vector exists, and the version is FAILED with the reason
    assert not (stores["blobs"].root / "chunks").exists()
    assert stores["embedder"].count == 0 and stores["index"].upserted == 0
    record = stores["state"].get_document("home-policy")
    assert record is not None and record.status == "FAILED"
    assert "metadata term (object metadata)" in (record.reason or "")


def test_ingest_copies_the_merged_metadata_onto_chunks_and_the_registry(stores: dict) -> None:
    # Given object metadata and a sidecar overriding the line of business
    object_metadata = {"doc-type": "policy", "line-of-business": "home", "term": "2024"}
    # When the document is ingested with both
    result = ingest(stores, object_metadata, b'{"line_of_business": "contents"}')
    # Then every chunk and the registry carry the merged values
    chunks = load_chunks(stores["blobs"], result.doc_id, result.doc_version)
    assert len(chunks) >= 1
    assert {(c.doc_type, c.line_of_business, c.term) for c in chunks} == {("policy", "contents", "2024")}
    record = stores["state"].get_document(result.doc_id)
    assert record.metadata == DocumentMetadata(doc_type="policy", line_of_business="contents", term="2024")


def test_same_bytes_with_changed_metadata_rewrite_that_versions_chunks_only(stores: dict) -> None:
    # Given a document ingested with term 2024
    first = ingest(stores, {"doc-type": "policy", "term": "2024"})
    before = load_chunks(stores["blobs"], first.doc_id, first.doc_version)
    embedded, upserted = stores["embedder"].count, stores["index"].upserted
    # When the same bytes arrive with the term corrected (an in-place copy with new metadata)
    second = ingest(stores, {"doc-type": "policy", "term": "2025"})
    # Then it is the same version, reported as a metadata update, not skipped
    assert (second.doc_version, second.metadata_updated, second.skipped) == (first.doc_version, True, False)
    # And the chunks keep ids, text and offsets but carry the new term
    after = load_chunks(stores["blobs"], first.doc_id, first.doc_version)
    assert [(c.chunk_id, c.text, c.char_start) for c in after] == [(c.chunk_id, c.text, c.char_start) for c in before]
    assert {(c.doc_type, c.term) for c in after} == {("policy", "2025")}
    # And nothing was embedded or upserted again; the registry records the new metadata
    assert (stores["embedder"].count, stores["index"].upserted) == (embedded, upserted)
    record = stores["state"].get_document(first.doc_id, first.doc_version)
    assert (record.status, record.metadata.term) == ("READY", "2025")
    # And the same bytes and metadata once more are a plain no-op
    third = ingest(stores, {"doc-type": "policy", "term": "2025"})
    assert (third.skipped, third.metadata_updated) == (True, False)


def test_a_bad_metadata_change_leaves_the_ready_version_untouched(stores: dict) -> None:
    # Given a READY document
    first = ingest(stores, {"term": "2024"})
    before = stores["blobs"].get(f"chunks/{first.doc_id}/{first.doc_version}.jsonl")
    # When the same bytes arrive with a bad term
    with pytest.raises(DocumentError, match="metadata term"):
        ingest(stores, {"term": "z" * 300})
    # Then the version stays READY with its old chunks and metadata
    assert stores["blobs"].get(f"chunks/{first.doc_id}/{first.doc_version}.jsonl") == before
    record = stores["state"].get_document(first.doc_id)
    assert (record.status, record.metadata.term) == ("READY", "2024")


class WatchedBlobs(LocalBlobStore):
    """A folder store that records every key read (``get`` and ``metadata``)."""

    def __init__(self, root: Path) -> None:
        super().__init__(root)
        self.reads: list[str] = []

    def get(self, key: str) -> bytes:
        self.reads.append(key)
        return super().get(key)

    def metadata(self, key: str) -> dict[str, str]:
        self.reads.append(key)
        return super().metadata(key)


def test_ingest_never_goes_back_to_the_store_for_the_object_or_its_sidecar(stores: dict, tmp_path: Path) -> None:
    # Given a store holding the object and a sidecar that disagrees with what the caller read
    blobs = WatchedBlobs(tmp_path / "watched")
    blobs.put(KEY, POLICY)
    blobs.put(KEY + ".metadata.json", b'{"term": "from-the-store"}')
    stores["blobs"] = blobs
    # When it is ingested from what the caller read once, then again with changed metadata
    first = ingest(stores, {"term": "2024"}, b'{"doc_type": "policy"}')
    second = ingest(stores, {"term": "2025"}, b'{"doc_type": "policy"}')
    # Then neither the object nor its sidecar was read from the store: the chunks carry the caller's values
    assert KEY not in blobs.reads and KEY + ".metadata.json" not in blobs.reads
    assert (first.metadata_updated, second.metadata_updated) == (False, True)
    chunks = load_chunks(blobs, first.doc_id, first.doc_version)
    assert {(c.doc_type, c.term) for c in chunks} == {("policy", "2025")}


def test_unknown_sidecar_keys_are_warned_about_with_the_closest_metadata_key() -> None:
    from longdoc.ingest.metadata import sidecar_warnings, with_sidecar_warnings

    side = "metadata sidecar incoming/home-policy.txt.metadata.json"
    raw = b'{"Efective-From": "2021-01-01", "notes": "x", "term": "2021"}'
    assert sidecar_warnings(KEY, raw) == [
        f"{side}: unknown key 'Efective-From' ignored (did you mean 'effective_from'?)",
        f"{side}: unknown key 'notes' ignored (metadata keys: doc_type, line_of_business, term, collection, "
        "effective_from, effective_to, endorses)"]
    # And a record's other warnings are kept while its sidecar warnings are replaced
    assert with_sidecar_warnings(["page 3 damaged", f"{side}: old"], KEY, b'{"term": "x"}') == ["page 3 damaged"]
    assert sidecar_warnings(KEY, None) == sidecar_warnings(KEY, b"[1]") == []


def test_a_misspelt_policy_doc_type_without_a_collection_is_warned_about() -> None:
    # A doc_type close to a policy type gets a warning naming it (it is chunked as a contract); another
    # doc_type, or a sidecar with a collection (policy profile anyway), gets none
    from longdoc.ingest.metadata import sidecar_warnings

    assert sidecar_warnings("incoming/a.md", b'{"doc_type": "polcy"}') == [
        "metadata sidecar incoming/a.md.metadata.json: doc_type 'polcy' is not a policy type, so the "
        "deployment's chunk settings apply, not the policy profile (did you mean 'policy'?)"]
    assert sidecar_warnings("incoming/a.md", b'{"doc_type": "contract"}') == []
    assert sidecar_warnings("incoming/a.md", b'{"doc_type": "Policy"}') == []
    assert sidecar_warnings("incoming/a.md", b'{"doc_type": "polcy", "collection": "set"}') == []
    assert sidecar_warnings("incoming/a.md", b'{"Doc-Type": "polcy", "Collection": "set"}') == []  # keys in any case
