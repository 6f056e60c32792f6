"""Fixtures for the in-process handler tests: a moto AWS stack wired into :mod:`longdoc.wiring`.

The handlers run exactly as Lambda runs them (``module.handler(event, context)``) in AWS
mode, against moto's S3 and DynamoDB (and Step Functions, in the API tests). Voyage and Pinecone are replaced
by the local stand-ins (MiniLM and an on-disk LanceDB table) by monkeypatching the
``wiring`` factories; the model is the offline baseline. Nothing leaves the machine.

Only non-autouse fixtures live here, so the other functional tests are unaffected.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import boto3
import pytest
from moto import mock_aws

from longdoc import wiring
from longdoc.adapters.baseline import OfflineBaselineModel
from longdoc.adapters.embedders import MiniLMEmbedder
from longdoc.adapters.vector_index import LanceDBIndex
from longdoc.config import function_settings
from longdoc.local.engine import LocalContext
from longdoc.local.lambda_runtime import load_handler as _load_handler
from longdoc.core.models import DocumentRecord
from tests.fakes.anthropic_server import FakeAnthropic
from tests.fakes.voyage_server import FakeVoyage

REPO = Path(__file__).resolve().parents[2]
EVENTS = REPO / "events"
REGION = "us-east-1"
# The bucket named in events/sqs-s3-*.json, so those files are used unchanged.
BUCKET = "longdoc-dev-documents-123456789012-0a1b2c3d4e5f"
TABLE = "longdoc-dev-Table-1A2B3C4D5E6F"
_FACTORIES = ("blob_store", "state_store", "embedder", "vector_index", "model", "bulk_store")
# The real lru_cached factories, captured before any test monkeypatches them.
_ORIGINAL_FACTORIES = {name: getattr(wiring, name) for name in _FACTORIES}


def _load_event(name: str) -> dict[str, Any]:
    """Return ``events/{name}`` parsed afresh (so a test may edit it freely)."""
    return json.loads((EVENTS / name).read_text(encoding="utf-8"))


def _emf_documents(stdout: str) -> list[dict[str, Any]]:
    """Return the CloudWatch Embedded Metric Format documents printed on ``stdout``.

    EMF documents are one-line JSON objects with an ``_aws.CloudWatchMetrics`` key
    (https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/CloudWatch_Embedded_Metric_Format_Specification.html).
    """
    found = []
    for line in stdout.splitlines():
        line = line.strip()
        if not line.startswith("{"):
            continue
        try:
            doc = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(doc, dict) and "CloudWatchMetrics" in doc.get("_aws", {}):
            found.append(doc)
    return found


@pytest.fixture
def load_event() -> Callable[[str], dict[str, Any]]:
    """``load_event("sqs-s3-object-created.json")`` -> a fresh copy of that file under ``events/``."""
    return _load_event


@pytest.fixture
def emf_documents() -> Callable[[str], list[dict[str, Any]]]:
    """``emf_documents(stdout)`` -> the EMF metric documents printed on ``stdout``."""
    return _emf_documents


def _clear_wiring_caches() -> None:
    """Clear the settings and adapter caches, even while the factories are monkeypatched.

    ``wiring.reset()`` looks the factories up by name, which fails while a test has
    replaced them with plain functions; the originals captured at import are used instead.
    """
    function_settings.cache_clear()
    for name in _FACTORIES:
        _ORIGINAL_FACTORIES[name].cache_clear()


class _RememberingMiniLM(MiniLMEmbedder):
    """MiniLM that embeds each distinct text once per pytest process and answers repeats from memory.

    The model is deterministic, so a repeated text gets the vector it got the first time (the
    same to float precision: only the batch it was padded in may differ). Tests embed the same
    contract chunks and clause queries again and again; each forward pass is CPU time under
    PyTorch (most of an extract test's own time before this).
    """

    def __init__(self) -> None:
        self._seen: dict[str, list[float]] = {}
        self._seen_lock = threading.Lock()

    def _embed(self, texts: list[str]) -> list[list[float]]:
        """Vectors of ``texts`` in order; only the texts not seen before reach the model (one call)."""
        with self._seen_lock:
            missing = list(dict.fromkeys(t for t in texts if t not in self._seen))
        if missing:
            fresh = super()._embed(missing)
            with self._seen_lock:
                self._seen.update(zip(missing, fresh, strict=True))
        with self._seen_lock:
            return [list(self._seen[t]) for t in texts]


@pytest.fixture(scope="session")
def minilm() -> MiniLMEmbedder:
    """One local embedder for the whole session (loading MiniLM takes a few seconds); a text
    already embedded in this process is answered from memory (:class:`_RememberingMiniLM`)."""
    embedder = _RememberingMiniLM()
    assert len(embedder.embed_query("warm up")) == embedder.dimension
    return embedder


@pytest.fixture
def fake_aws_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """Fake credentials and region for moto; drops any profile or endpoint override."""
    for name in ("AWS_PROFILE", "AWS_DEFAULT_PROFILE", "AWS_ENDPOINT_URL", "AWS_LAMBDA_FUNCTION_NAME"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.setenv("AWS_SESSION_TOKEN", "testing")
    monkeypatch.setenv("AWS_DEFAULT_REGION", REGION)
    monkeypatch.setenv("AWS_REGION", REGION)


@dataclass
class AwsStack:
    """A moto-backed deployment as the handlers see it.

    ``index`` is the LanceDB table standing in for Pinecone; ``embedder`` is what
    ``wiring.embedder()`` returns (tests may swap it with :meth:`use_embedder`).
    """

    bucket: str
    table: str
    home: Path
    s3: Any
    dynamodb: Any
    index: LanceDBIndex
    embedder: Any
    monkeypatch: pytest.MonkeyPatch
    upserts: list[int] = field(default_factory=list)

    def use_embedder(self, embedder: Any) -> None:
        """Make ``wiring.embedder()`` return ``embedder`` from now on."""
        self.embedder = embedder
        self.monkeypatch.setattr(wiring, "embedder", lambda: self.embedder)

    def upload(self, key: str, path: Path) -> bytes:
        """Put the file at ``path`` into the bucket under ``key``; returns its bytes."""
        data = path.read_bytes()
        self.s3.put_object(Bucket=self.bucket, Key=key, Body=data)
        return data

    def keys(self, prefix: str = "") -> list[str]:
        """All object keys under ``prefix``."""
        response = self.s3.list_objects_v2(Bucket=self.bucket, Prefix=prefix)
        return sorted(o["Key"] for o in response.get("Contents", []))

    def items(self) -> list[dict[str, Any]]:
        """Every item in the table (raw DynamoDB shapes)."""
        return self.dynamodb.scan(TableName=self.table)["Items"]


class _CountingIndex(LanceDBIndex):
    """LanceDB index that records the size of every upsert call (for idempotency checks)."""

    def __init__(self, path: Path, dimension: int, calls: list[int]):
        super().__init__(path, dimension)
        self.calls = calls

    def upsert(self, chunks, vectors):  # type: ignore[no-untyped-def]
        """Record ``len(chunks)`` then upsert as usual."""
        self.calls.append(len(chunks))
        return super().upsert(chunks, vectors)


@pytest.fixture
def aws_stack(
    fake_aws_env: None, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, minilm: MiniLMEmbedder
) -> Iterator[AwsStack]:
    """moto S3 bucket + DynamoDB table (pk/sk strings, as in template.yaml), wired in AWS mode.

    Sets ``LONGDOC_MODE=aws``, ``LONGDOC_BUCKET``, ``LONGDOC_TABLE``, ``LONGDOC_HOME`` and
    ``LONGDOC_MODEL=baseline``; ``wiring.embedder``/``vector_index``/``model`` return MiniLM,
    a LanceDB table under ``tmp_path`` and the offline baseline. Caches are cleared before
    and after, so no adapter outlives the moto context.
    """
    for name in [k for k in os.environ if k.startswith("LONGDOC_")]:
        monkeypatch.delenv(name)
    monkeypatch.setenv("LONGDOC_MODE", "aws")
    monkeypatch.setenv("LONGDOC_BUCKET", BUCKET)
    monkeypatch.setenv("LONGDOC_TABLE", TABLE)
    monkeypatch.setenv("LONGDOC_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("LONGDOC_MODEL", "baseline")
    _clear_wiring_caches()
    with mock_aws():
        s3 = boto3.client("s3", region_name=REGION)
        s3.create_bucket(Bucket=BUCKET)
        dynamodb = boto3.client("dynamodb", region_name=REGION)
        dynamodb.create_table(
            TableName=TABLE,
            AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"},
                                  {"AttributeName": "sk", "AttributeType": "S"}],
            KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"},
                       {"AttributeName": "sk", "KeyType": "RANGE"}],
            BillingMode="PAY_PER_REQUEST",
        )
        upserts: list[int] = []
        index = _CountingIndex(tmp_path / "lancedb", minilm.dimension, upserts)
        baseline = OfflineBaselineModel()
        stack = AwsStack(bucket=BUCKET, table=TABLE, home=tmp_path / "home", s3=s3, dynamodb=dynamodb,
                         index=index, embedder=minilm, monkeypatch=monkeypatch, upserts=upserts)
        stack.use_embedder(minilm)
        monkeypatch.setattr(wiring, "vector_index", lambda: index)
        monkeypatch.setattr(wiring, "model", lambda: baseline)
        try:
            yield stack
        finally:
            _clear_wiring_caches()


@pytest.fixture
def ingest_handler():
    """The ingest function's ``handler`` as Lambda loads it (``functions/ingest/app.py``)."""
    from longdoc.local.lambda_runtime import load_handler

    return load_handler("ingest").handler


@pytest.fixture
def extract_handler():
    """The extract function's ``handler`` (``functions/extract/app.py``)."""
    from longdoc.local.lambda_runtime import load_handler

    return load_handler("extract").handler


@pytest.fixture
def ingest_context() -> LocalContext:
    """A Lambda context for the ingest function."""
    return LocalContext(function_name="longdoc-dev-IngestFunction")


@pytest.fixture
def extract_context() -> LocalContext:
    """A Lambda context for the extract function."""
    return LocalContext(function_name="longdoc-dev-ExtractFunction")


CONTRACT = "cuad/herimports-maintenance-agreement.pdf"
"""The document the extract and API tests work on: a real 6-page CUAD maintenance agreement."""


@dataclass
class _IngestSnapshot:
    """What one ingest of :data:`CONTRACT` left in a stack: S3 objects, DynamoDB items, the LanceDB
    folder (a copy under the session's temp dir), the upsert sizes, and the document's id/version."""

    objects: dict[str, bytes]
    items: list[dict[str, Any]]
    lancedb: Path
    upserts: list[int]
    doc_id: str
    doc_version: str


_INGEST_SNAPSHOTS: dict[tuple[Any, ...], _IngestSnapshot] = {}
"""Per pytest process (each xdist worker has its own): the contract's ingest, keyed by what shapes it."""


def _snapshot_key(stack: AwsStack, minilm: MiniLMEmbedder) -> tuple[Any, ...] | None:
    """What an ingest's result depends on besides the document: the ``LONGDOC_*`` settings other
    than the home. ``None`` (no reuse) unless the stack is as :func:`aws_stack` built it: the
    session's MiniLM, its own counting LanceDB index, the real S3 and DynamoDB adapters."""
    as_built = (wiring.embedder() is minilm and stack.embedder is minilm and wiring.vector_index() is stack.index
                and type(stack.index) is _CountingIndex
                and all(getattr(wiring, name) is _ORIGINAL_FACTORIES[name] for name in ("blob_store", "state_store")))
    if not as_built:
        return None
    settings = tuple(sorted((k, v) for k, v in os.environ.items() if k.startswith("LONGDOC_") and k != "LONGDOC_HOME"))
    return (CONTRACT, settings)


def _take_snapshot(stack: AwsStack, tmp_path_factory: pytest.TempPathFactory, doc_id: str,
                   doc_version: str) -> _IngestSnapshot | None:
    """Copy out what the ingest stored; ``None`` when anything names the test's own temp folder."""
    import shutil

    keys = stack.keys()
    objects = {key: stack.s3.get_object(Bucket=stack.bucket, Key=key)["Body"].read() for key in keys}
    items = stack.items()
    home = str(stack.home.parent)
    if len(keys) >= 1000 or any(home.encode() in body for body in objects.values()) or home in json.dumps(items):
        return None  # one listing page only; or the stored state names this test's folder
    folder = tmp_path_factory.mktemp("contract-lancedb")
    shutil.copytree(stack.index.path, folder, dirs_exist_ok=True)
    return _IngestSnapshot(objects=objects, items=items, lancedb=folder, upserts=list(stack.upserts),
                           doc_id=doc_id, doc_version=doc_version)


def _restore_snapshot(stack: AwsStack, snapshot: _IngestSnapshot) -> None:
    """Put the snapshot's objects, items and LanceDB folder into a fresh stack (nothing stored yet)."""
    import shutil

    for key, body in snapshot.objects.items():
        stack.s3.put_object(Bucket=stack.bucket, Key=key, Body=body)
    for item in snapshot.items:
        stack.dynamodb.put_item(TableName=stack.table, Item=item)
    shutil.copytree(snapshot.lancedb, stack.index.path, dirs_exist_ok=True)
    stack.upserts.extend(snapshot.upserts)


@pytest.fixture
def ingested_contract(aws_stack: AwsStack, corpus_dir: Path, minilm: MiniLMEmbedder,
                      tmp_path_factory: pytest.TempPathFactory) -> DocumentRecord:
    """Upload and ingest :data:`CONTRACT` into the moto stack; returns its READY registry entry.

    The first test of a pytest process runs the real ingest (parse, chunk, embed with MiniLM,
    upsert) and keeps a copy of what it stored; later tests with the same embedder, index type and
    ``LONGDOC_*`` settings get that copy put into their fresh stack (S3 objects, DynamoDB items,
    the LanceDB folder, the upsert sizes): the same stored state, without paying the ingest again.
    Nothing is shared between tests: each has its own moto stack and LanceDB folder.
    """
    from longdoc.core.documents import INCOMING_PREFIX
    from longdoc.ingest.pipeline import IngestDeps, ingest_document
    from longdoc.ingest.source import IngestSource

    key_of = _snapshot_key(aws_stack, minilm)
    snapshot = _INGEST_SNAPSHOTS.get(key_of) if key_of is not None and not aws_stack.keys() else None
    if snapshot is not None:
        _restore_snapshot(aws_stack, snapshot)
        doc_id, doc_version = snapshot.doc_id, snapshot.doc_version
    else:
        path = corpus_dir / CONTRACT
        key = INCOMING_PREFIX + path.name
        data = aws_stack.upload(key, path)
        result = ingest_document(IngestSource(key=key, data=data),
                                 IngestDeps(blobs=wiring.blob_store(), state=wiring.state_store(),
                                            embedder=wiring.embedder(), index=wiring.vector_index()))
        doc_id, doc_version = result.doc_id, result.doc_version
        if key_of is not None:
            taken = _take_snapshot(aws_stack, tmp_path_factory, doc_id, doc_version)
            if taken is not None:
                _INGEST_SNAPSHOTS[key_of] = taken
    record = wiring.state_store().get_document(doc_id, doc_version)
    assert record is not None and record.status == "READY"
    return record


@pytest.fixture
def contract_gold(gold_dir: Path, tmp_path: Path) -> tuple[Path, list[str]]:
    """A gold file holding only :data:`CONTRACT`'s cuad-dev cases (3 found, 36 not_found):
    ``(path, its lines)``."""
    lines = [line for line in (gold_dir / "cuad-dev.jsonl").read_text().splitlines() if CONTRACT in line]
    gold = tmp_path / "gold.jsonl"
    gold.write_text("\n".join(lines) + "\n")
    return gold, lines


@pytest.fixture
def voyage() -> Iterator[FakeVoyage]:
    """The loopback fake Voyage server (embeddings and rerank), stopped after the test."""
    with FakeVoyage() as fake:
        yield fake


CLAUDE_MODEL_ID = "claude-sonnet-5-5"
"""The model id the scripted Claude tests ask the Messages fake for."""


@pytest.fixture
def fake() -> Iterator[FakeAnthropic]:
    """The loopback Messages API fake (``tests/fakes/anthropic_server.py``), stopped after the test.
    A module that needs another set-up (a prompt cache, say) defines its own ``fake``."""
    with FakeAnthropic() as server:
        yield server


@pytest.fixture
def claude(aws_stack: AwsStack, fake: FakeAnthropic, monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """``wiring.model()`` is Claude (the real SDK) talking to ``fake``, strict tools on, two quick retries.

    ``LONGDOC_SEARCH_MIN_SCORE=0``: the scripted model never searches (the not_found evidence rule
    is test_claude_search's subject, which defines its own ``claude``). Settings caches are cleared
    before and after. Yields the :class:`~longdoc.adapters.claude.ClaudeModel`.
    """
    from longdoc.adapters.claude import ClaudeModel

    model = ClaudeModel("test-key-not-real", CLAUDE_MODEL_ID, base_url=fake.base_url, max_retries=2)
    monkeypatch.setattr(wiring, "model", lambda: model)
    monkeypatch.setenv("LONGDOC_STRICT_TOOLS", "true")
    monkeypatch.setenv("LONGDOC_SEARCH_MIN_SCORE", "0")
    function_settings.cache_clear()
    yield model
    function_settings.cache_clear()


@pytest.fixture
def bulk_app(aws_stack, monkeypatch):
    """The bulk handler module with fresh adapters; polls without waiting (first wait 0 s)."""
    monkeypatch.setenv("LONGDOC_BULK_POLL_FIRST", "0")
    monkeypatch.setenv("LONGDOC_BULK_POLL_CAP", "0")
    app = _load_handler("bulk")
    wiring.bulk_deps.cache_clear()
    yield app
    wiring.bulk_deps.cache_clear()
