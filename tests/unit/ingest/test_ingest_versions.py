"""ingest_document with the local blob and state stores: metadata, versions, OCR pages, caps.

The embedder and index are small in-memory stand-ins (this module tests what ingest
stores, not retrieval; the adapters have their own contract suites).
"""

from __future__ import annotations

import io
import json
from pathlib import Path

import pypdfium2 as pdfium
import pytest
from pydantic import ValidationError

from longdoc.adapters.blob import LocalBlobStore
from longdoc.adapters.state import SqliteStateStore
from longdoc.config import Settings
from longdoc.core.documents import chunks_key, embedding_text, load_chunks
from longdoc.core.errors import DocumentError, IngestRestart, SourceRemoved, VersionClaimed
from longdoc.ingest.embeddings import EmbeddingCache
from longdoc.ingest.pipeline import IngestDeps, IngestOptions, ingest_document
from longdoc.ingest.removal import delete_document_source
from longdoc.ingest.result import IngestResult
from longdoc.ingest.source import IngestSource
from longdoc.ingest.parse import parse_document
from longdoc.core.models import Chunk, DocumentMetadata

CONTRACT = "cuad/herimports-maintenance-agreement.pdf"


class CountingEmbedder:
    """Embeds every text as a 3-number vector; remembers the texts it saw."""

    name = "fake-embedder"
    dimension = 3

    def __init__(self) -> None:
        self.texts: list[str] = []

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        self.texts.extend(texts)
        return [[float(len(t)), 0.0, 1.0] for t in texts]


class MemoryIndex:
    """Keeps upserted chunks per (doc_id, doc_version)."""

    def __init__(self) -> None:
        self.chunks: dict[tuple[str, str], list[Chunk]] = {}

    def upsert(self, chunks, vectors) -> int:  # type: ignore[no-untyped-def]
        for chunk in chunks:
            self.chunks.setdefault((chunk.doc_id, chunk.doc_version), []).append(chunk)
        return len(chunks)

    def delete_document(self, doc_id: str, doc_version: str) -> None:
        self.chunks.pop((doc_id, doc_version), None)


@pytest.fixture
def stores(tmp_path: Path) -> dict:
    return {"blobs": LocalBlobStore(tmp_path / "bucket"), "state": SqliteStateStore(tmp_path / "state.sqlite3"),
            "embedder": CountingEmbedder(), "index": MemoryIndex()}


def ingest(stores: dict, key: str, data: bytes, options: IngestOptions | None = None, **source: object) -> IngestResult:
    """``ingest_document`` of ``data`` at ``key`` through ``stores`` (``source`` adds IngestSource fields).

    The bytes are put at ``key`` first, as the handler finds them in the bucket (an ingest
    checks its object is still there before it registers READY).
    """
    stores["blobs"].put(key, data)
    return ingest_document(IngestSource(key=key, data=data, **source), IngestDeps(**stores), options)


def test_changed_document_is_a_new_version_and_old_chunks_stay(stores, corpus_dir: Path) -> None:
    # Given a contract ingested, then a changed copy of it under the same name
    original = (corpus_dir / CONTRACT).read_bytes()
    changed = original + b"\n% amended\n"  # trailing bytes after %%EOF: same text, new bytes
    first = ingest(stores, "incoming/contract.pdf", original)
    second = ingest(stores, "incoming/contract.pdf", changed)
    # Then the second is a new doc_version of the same doc_id
    assert first.doc_id == second.doc_id == "contract"
    assert first.doc_version != second.doc_version and not second.skipped
    # And both versions' chunks remain retrievable by version, with distinct ids
    old = load_chunks(stores["blobs"], "contract", first.doc_version)
    new = load_chunks(stores["blobs"], "contract", second.doc_version)
    assert len(old) == first.chunks and len(new) == second.chunks
    assert {c.doc_version for c in old} == {first.doc_version}
    assert not {c.chunk_id for c in old} & {c.chunk_id for c in new}
    assert set(stores["index"].chunks) == {("contract", first.doc_version), ("contract", second.doc_version)}
    assert stores["state"].get_document("contract", first.doc_version).status == "READY"
    # And re-ingesting the original bytes is a no-op
    again = ingest(stores, "incoming/contract.pdf", original)
    assert again.skipped and again.doc_version == first.doc_version


def test_metadata_is_copied_onto_every_chunk(stores, corpus_dir: Path) -> None:
    # Given a sidecar (as the CLI uploads it beside the document) with S3-style metadata keys
    key = "incoming/contract.pdf"
    sidecar = json.dumps(
        {"doc_type": "maintenance agreement", "Line-Of-Business": "retail", "term": "2014-2016", "x": 1}).encode()
    # When the document is ingested with it
    result = ingest(stores, key, (corpus_dir / CONTRACT).read_bytes(), sidecar=sidecar)
    chunks = load_chunks(stores["blobs"], result.doc_id, result.doc_version)
    # Then every chunk carries doc id, version, source and the three metadata values
    assert {(c.doc_id, c.doc_version, c.source, c.doc_type, c.line_of_business, c.term) for c in chunks} == {
        ("contract", result.doc_version, "contract.pdf", "maintenance agreement", "retail", "2014-2016")}
    # And a dict from S3 object metadata works the same way
    meta = {"doc-type": "policy", "term": "2024"}
    other = ingest(stores, "incoming/c2.pdf", (corpus_dir / CONTRACT).read_bytes(), object_metadata=meta)
    assert {(c.doc_type, c.term, c.line_of_business) for c in load_chunks(stores["blobs"], "c2", other.doc_version)} == {
        ("policy", "2024", None)}
    # And no metadata at all means none on the chunks; a broken sidecar is a clear error, recorded FAILED
    plain = ingest(stores, "incoming/c3.pdf", (corpus_dir / CONTRACT).read_bytes())
    assert stores["state"].get_document("c3", plain.doc_version).metadata.model_dump() == {
        "doc_type": None, "line_of_business": None, "term": None,
        "collection": None, "effective_from": None, "effective_to": None, "endorses": None}
    with pytest.raises(DocumentError, match="must be a JSON object"):
        ingest(stores, "incoming/bad.pdf", (corpus_dir / CONTRACT).read_bytes(), sidecar=b"[1, 2]")
    assert stores["state"].get_document("bad").status == "FAILED"


def test_embedding_header_names_doc_section_path_and_page_label(stores, corpus_dir: Path) -> None:
    # Given the Goosehead agreement, whose printed page numbers ("Page 1 of 80") start on page 3
    name = "cuad/gooseheadinsurance-franchise-agreement.pdf"
    result = ingest(stores, "incoming/goosehead.pdf", (corpus_dir / name).read_bytes())
    chunks = load_chunks(stores["blobs"], result.doc_id, result.doc_version)
    # Then a chunk's embedded text starts with a one-line header giving page and printed label
    chunk = next(c for c in chunks if c.page_start == 20)
    header, body = embedding_text(chunk).split("\n", 1)
    assert header.startswith("[doc: goosehead.pdf | section: ")
    assert header.endswith(f" | page: 20 (p. {chunk.page_labels[0]})]") and chunk.page_labels[0] == "18"
    assert " > ".join(chunk.heading_path) in header
    assert body == chunk.text
    # And the stored chunk text has no running footer "Page N of 80"
    assert not any("of 80" in c.text for c in chunks)


def test_partly_scanned_pdf_reports_the_pages_that_need_ocr(corpus_dir: Path, stores) -> None:
    # Given a PDF made of a real text page, the two scanned pages of the Grumman kit, and text again
    text_pdf = pdfium.PdfDocument((corpus_dir / "scotus-transcript-p1.pdf").read_bytes())
    scan = pdfium.PdfDocument((corpus_dir / "bad/scanned-grumman-service-kit-no-text.pdf").read_bytes())
    out = pdfium.PdfDocument.new()
    out.import_pages(text_pdf)
    out.import_pages(scan)
    out.import_pages(text_pdf)
    buffer = io.BytesIO()
    out.save(buffer)
    for pdf in (out, scan, text_pdf):
        pdf.close()
    # When it is parsed and ingested
    parsed = parse_document("mixed.pdf", buffer.getvalue())
    result = ingest(stores, "incoming/mixed.pdf", buffer.getvalue())
    # Then pages 2 and 3 are named as needing OCR, on the document and in the registry
    assert parsed.pages_needing_ocr == [2, 3]
    assert stores["state"].get_document("mixed", result.doc_version).pages_needing_ocr == [2, 3]
    # And the all-scanned original still fails, naming the page count
    with pytest.raises(DocumentError, match="no text layer on any of the 2 pages"):
        parse_document("scan.pdf", (corpus_dir / "bad/scanned-grumman-service-kit-no-text.pdf").read_bytes())


def test_size_and_page_caps_come_from_settings(stores, corpus_dir: Path, monkeypatch) -> None:
    # Given a page cap of 5 set through the environment, and a 133,480-byte, 6-page contract
    monkeypatch.setenv("LONGDOC_MAX_DOCUMENT_PAGES", "5")
    settings = Settings()
    data = (corpus_dir / CONTRACT).read_bytes()
    # When it is ingested with the settings' caps
    # Then it is refused with the count and the cap, and recorded FAILED
    with pytest.raises(DocumentError) as caught:
        ingest(stores, "incoming/contract.pdf", data, IngestOptions.from_settings(settings))
    assert caught.value.reason == "too many pages: 6, over the limit of 5 pages"
    assert stores["state"].get_document("contract").status == "FAILED"
    # And a byte cap from the environment refuses it before parsing
    monkeypatch.setenv("LONGDOC_MAX_DOCUMENT_BYTES", "100000")
    with pytest.raises(DocumentError, match="file too large: 133480 bytes, over the limit of 100000 bytes"):
        ingest(stores, "incoming/contract.pdf", data, IngestOptions.from_settings(Settings()))


def test_result_counts_oversize_chunks_and_continuations_without_overlap(stores, corpus_dir: Path) -> None:
    # Given an outsourcing agreement with a 2,100-token sentence (over the 2,000-token cap) and
    # sections whose sentences around a cut are all over 20 % of the target
    name = "cuad/manufacturersservicesltd-outsourcing-agreement.pdf"
    # When it is ingested at the default sizes
    result = ingest(stores, "incoming/msl.pdf", (corpus_dir / name).read_bytes())
    chunks = load_chunks(stores["blobs"], result.doc_id, result.doc_version)
    # Then the result reports how many chunks are oversize and how many continuations lack overlap
    assert (result.oversize_chunks, result.overlap_missing_chunks) == (1, 2)
    assert result.oversize_chunks == sum(c.oversize for c in chunks)
    assert result.overlap_missing_chunks == sum(c.overlap_missing for c in chunks)
    # And re-ingesting the same bytes does nothing, so it counts nothing
    again = ingest(stores, "incoming/msl.pdf", (corpus_dir / name).read_bytes())
    assert again.skipped and (again.oversize_chunks, again.overlap_missing_chunks) == (0, 0)


def test_unicode_line_separators_in_text_and_metadata_survive_the_chunk_file(stores) -> None:
    # Given a text file whose sentences hold U+2028, U+2029 and U+0085 (which JSON leaves
    # unescaped and str.splitlines() treats as line ends), and non-ASCII metadata
    text = ("1. Delivery\n\nThe Supplier shall deliver\u2028goods on time.\u2029"
            "Late goods are refunded.\u0085Notices go to the Buyer.\n")
    result = ingest(stores, "incoming/seps.txt", text.encode("utf-8"),
                    object_metadata={"doc_type": "supply \u2013 agreement"})
    # When its chunks are loaded back from the stored JSON Lines
    chunks = load_chunks(stores["blobs"], result.doc_id, result.doc_version)
    # Then every chunk comes back, with the separators byte-identical in text and metadata
    assert len(chunks) == result.chunks >= 1
    joined = "\n".join(c.text for c in chunks)
    assert "The Supplier shall deliver\u2028goods on time.\u2029Late goods are refunded.\u0085Notices go to the Buyer." \
        in joined
    assert {c.doc_type for c in chunks} == {"supply \u2013 agreement"}
    # And metadata holding a line separator or a C1 control is refused, naming the field
    for bad in ("supply\u2028agreement", "home\x85x"):
        with pytest.raises(ValidationError, match="doc_type"):
            DocumentMetadata.from_mapping({"doc_type": bad})


# ------------------------------------------------------------ the source removed during its ingest


class RemovingEmbedder(CountingEmbedder):
    """Runs ``during()`` once, while the ingest is embedding (after the version was registered)."""

    def __init__(self, during) -> None:  # type: ignore[no-untyped-def]
        super().__init__()
        self.during = during

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        during, self.during = self.during, None
        if during is not None:
            during()
        return super().embed_documents(texts)


def remove(stores: dict, key: str) -> list[str]:
    """The object at ``key`` deleted from the bucket and its ObjectRemoved event handled."""
    stores["blobs"].delete(key)
    return delete_document_source(key=key, blobs=stores["blobs"], state=stores["state"], index=stores["index"])


def left_behind(stores: dict, doc_id: str, version: str) -> tuple[str, bool, bool, bool]:
    """The version's status, and whether its vectors, chunk list and embedding cache are stored."""
    cache = EmbeddingCache(stores["blobs"], stores["embedder"], doc_id, version)
    return (stores["state"].get_document(doc_id, version).status, (doc_id, version) in stores["index"].chunks,
            stores["blobs"].exists(chunks_key(doc_id, version)), stores["blobs"].exists(cache.key))


def test_a_file_removed_while_it_is_ingested_ends_deleted_without_vectors(stores, corpus_dir: Path) -> None:
    # Given a contract whose removal is handled while its ingest is embedding
    data = (corpus_dir / CONTRACT).read_bytes()
    version = IngestSource(key="incoming/contract.pdf", data=data).version
    stores["embedder"] = RemovingEmbedder(lambda: remove(stores, "incoming/contract.pdf"))
    # When the ingest goes on / Then it stops with SourceRemoved instead of registering READY
    with pytest.raises(SourceRemoved, match="removed while version"):
        ingest(stores, "incoming/contract.pdf", data)
    # And the version stays DELETED, with nothing this ingest wrote left behind
    assert left_behind(stores, "contract", version) == ("DELETED", False, False, False)
    assert stores["state"].get_document("contract").reason == "source object incoming/contract.pdf removed"


def test_an_object_gone_before_its_removal_event_is_marked_deleted_by_the_ingest(stores, corpus_dir: Path) -> None:
    # Given a contract deleted from the bucket while it is ingested, its removal event not handled yet
    data = (corpus_dir / CONTRACT).read_bytes()
    stores["embedder"] = RemovingEmbedder(lambda: stores["blobs"].delete("incoming/contract.pdf"))
    # When the ingest reaches its end / Then it finds the object gone and stops without READY
    with pytest.raises(SourceRemoved):
        ingest(stores, "incoming/contract.pdf", data)
    version = IngestSource(key="incoming/contract.pdf", data=data).version
    assert left_behind(stores, "contract", version) == ("DELETED", False, False, False)
    assert stores["state"].get_document("contract").reason == "source object incoming/contract.pdf removed during ingest"
    # And the late removal event finds nothing left to mark
    assert remove(stores, "incoming/contract.pdf") == []


def test_a_file_removed_and_uploaded_again_during_its_ingest_is_ingested_again(stores, corpus_dir: Path) -> None:
    # Given a contract removed (event handled) and uploaded again with the same bytes while it is ingested
    key, data = "incoming/contract.pdf", (corpus_dir / CONTRACT).read_bytes()

    def remove_and_upload() -> None:
        remove(stores, key)
        stores["blobs"].put(key, data)

    stores["embedder"] = RemovingEmbedder(remove_and_upload)
    # When the ingest goes on / Then it stops to be redelivered, leaving the DELETED mark
    with pytest.raises(IngestRestart, match="uploaded again"):
        ingest(stores, key, data)
    assert stores["state"].get_document("contract").status == "DELETED"
    # And the redelivery ingests it: READY with all its vectors
    again = ingest(stores, key, data)
    assert left_behind(stores, "contract", again.doc_version) == ("READY", True, True, True)
    assert len(stores["index"].chunks[("contract", again.doc_version)]) == again.chunks


def test_a_version_once_ready_keeps_its_chunk_list_when_removed_again_during_a_reingest(stores, corpus_dir: Path) -> None:
    # Given a contract ingested READY (its chunks may be cited), removed, then uploaded again
    key, data = "incoming/contract.pdf", (corpus_dir / CONTRACT).read_bytes()
    first = ingest(stores, key, data)
    remove(stores, key)
    # When it is removed once more while the re-upload is ingested
    stores["embedder"] = RemovingEmbedder(lambda: remove(stores, key))
    with pytest.raises(SourceRemoved):
        ingest(stores, key, data)
    # Then the version is DELETED without vectors, and its chunk list stays for past citations
    assert left_behind(stores, "contract", first.doc_version)[:3] == ("DELETED", False, True)


def test_an_attempt_whose_entry_another_worker_rewrote_stops_without_writing(stores, corpus_dir: Path) -> None:
    # Given an ingest whose version entry is registered anew by another worker while it embeds
    # (its claim taken over after the lease ended)
    key, data = "incoming/contract.pdf", (corpus_dir / CONTRACT).read_bytes()
    version = IngestSource(key=key, data=data).version

    def take_over() -> None:
        state = stores["state"]
        current = state.get_document("contract", version)
        assert state.replace_document(current.model_copy(update={"attempts": 7}), current) is not None

    stores["embedder"] = RemovingEmbedder(take_over)
    # When it goes on / Then it stops with VersionClaimed and the other worker's entry stays as written
    with pytest.raises(VersionClaimed):
        ingest(stores, key, data)
    record = stores["state"].get_document("contract", version)
    assert (record.status, record.attempts, record.stage) == ("INGESTING", 7, "embedding")
