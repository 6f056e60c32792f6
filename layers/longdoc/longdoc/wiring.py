"""Builds adapters from :class:`~longdoc.config.Settings`, lazily and once per process.

``mode="aws"``: S3, DynamoDB, Voyage, Pinecone and Claude (keys from Secrets Manager; Claude
on Amazon Bedrock with ``LONGDOC_MODEL_PROVIDER=bedrock``, no key). Claude and Voyage take a
key *source* (:class:`~longdoc.adapters.secrets.SecretKey`), so a rotated key reaches a warm
function (:mod:`longdoc.adapters.secrets`).
``mode="local"``: a folder for S3, SQLite for DynamoDB, LanceDB for Pinecone, MiniLM for
Voyage (int8 on ONNX Runtime, or PyTorch with ``LONGDOC_LOCAL_EMBEDDER=torch``), and Claude when ``ANTHROPIC_API_KEY`` is set or the offline baseline otherwise.
Either mode: no reranker unless ``LONGDOC_RERANKER=voyage`` (:func:`reranker`).
Nothing is created at import time (Lambda cold start, test isolation).
"""

from __future__ import annotations

import os
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from longdoc.config import OcrSettings, Settings, StoreSettings, function_settings, get_settings
from longdoc.core.errors import ConfigError
from longdoc.bulk.ports import BulkStore
from longdoc.core.ports import BlobStore, Embedder, Model, OcrEngine, StateStore, VectorIndex

if TYPE_CHECKING:  # pragma: no cover - typing only; the session module is imported on first use
    from longdoc.config import ExtractFunctionSettings
    from longdoc.extract.retrieve import Reranker
    from longdoc.extract.session import Deps, SessionOptions


def _require(value: str | None, name: str) -> str:
    """``value``, or :class:`ConfigError` naming ``LONGDOC_<NAME>`` when it is empty or None."""
    if not value:
        raise ConfigError(f"LONGDOC_{name.upper()} must be set in aws mode")
    return value


@lru_cache(maxsize=1)
def blob_store() -> BlobStore:
    """The document/chunk blob store for the current mode."""
    s = get_settings()
    if s.mode == "aws":
        from longdoc.adapters.blob import S3BlobStore

        return S3BlobStore(_require(s.bucket, "bucket"))
    from longdoc.adapters.blob import LocalBlobStore

    return LocalBlobStore(s.home / "bucket")


@lru_cache(maxsize=1)
def state_store() -> StateStore:
    """The registry/run/checkpoint store for the current mode."""
    s = get_settings()
    if s.mode == "aws":
        from longdoc.adapters.state import DynamoStateStore

        return DynamoStateStore(_require(s.table, "table"))
    from longdoc.adapters.state import SqliteStateStore

    s.home.mkdir(parents=True, exist_ok=True)
    return SqliteStateStore(s.home / "state.sqlite3")


@lru_cache(maxsize=1)
def embedder() -> Embedder:
    """The embedding model for the current mode."""
    s = get_settings()
    if s.mode == "aws":
        from longdoc.adapters.secrets import SecretKey
        from longdoc.adapters.voyage_http import VoyageHttpEmbedder

        return VoyageHttpEmbedder(SecretKey("VOYAGE_API_KEY", s.voyage_secret_name), s.voyage_model,
                                  s.embedding_dimension, base_url=s.voyage_base_url)
    return local_embedder(s.local_embedder)


def local_embedder(variant: str | None = None) -> Embedder:
    """A new bundled-MiniLM embedder: ``"onnx"`` (int8, ONNX Runtime) or ``"torch"`` (sentence-transformers).

    ``variant`` defaults to ``LONGDOC_LOCAL_EMBEDDER``. Nothing is loaded until the first
    embedding call. Raises :class:`ConfigError` for an unknown variant.
    """
    variant = variant or get_settings().local_embedder
    if variant == "torch":
        from longdoc.adapters.embedders import MiniLMEmbedder

        return MiniLMEmbedder()
    if variant == "onnx":
        from longdoc.adapters.minilm_onnx import OnnxMiniLMEmbedder

        return OnnxMiniLMEmbedder()
    raise ConfigError(f"LONGDOC_LOCAL_EMBEDDER must be onnx or torch, not {variant!r}")


@lru_cache(maxsize=1)
def vector_index() -> VectorIndex:
    """The vector index for the current mode, sized to the embedder's dimension.

    The index is checked against the embedder once, when first built (start-up of an
    execution environment): a dimension or metric mismatch raises
    :class:`~longdoc.core.errors.ConfigError` before anything is upserted.
    """
    s = get_settings()
    index: VectorIndex
    if s.mode == "aws":
        from longdoc.adapters.secrets import api_key
        from longdoc.adapters.vector_index import PineconeIndex

        index = PineconeIndex(api_key("PINECONE_API_KEY", s.pinecone_secret_name),
                              _require(s.pinecone_index_host, "pinecone_index_host"), s.pinecone_namespace,
                              embedder().dimension)
    else:
        from longdoc.adapters.vector_index import LanceDBIndex

        index = LanceDBIndex(s.home / "lancedb", embedder().dimension)
    check = getattr(index, "check_dimension", None)
    if callable(check):
        check()
    return index


@lru_cache(maxsize=1)
def reranker() -> Reranker:
    """The reranker of retrieval's fused candidates (``LONGDOC_RERANKER``), in either mode.

    ``none`` (default): :class:`~longdoc.extract.retrieve.NoRerank`, nothing called, so a local run
    stays offline. ``voyage``: :class:`~longdoc.adapters.voyage_rerank.VoyageReranker` with
    ``LONGDOC_RERANK_MODEL``, its key read through a :class:`SecretKey` (the Voyage secret on AWS;
    ``VOYAGE_API_KEY`` locally, where it is an explicit opt-in that calls Voyage over the network).
    Raises :class:`ConfigError` locally when ``voyage`` is chosen and ``VOYAGE_API_KEY`` is unset
    (rather than failing at the first retrieval).
    """
    s = get_settings()
    if s.reranker == "none":
        from longdoc.extract.retrieve import NoRerank

        return NoRerank()
    if s.mode == "local" and not os.environ.get("VOYAGE_API_KEY", "").strip():
        raise ConfigError("LONGDOC_RERANKER=voyage needs VOYAGE_API_KEY in local mode (or LONGDOC_RERANKER=none)")
    from longdoc.adapters.secrets import SecretKey
    from longdoc.adapters.voyage_rerank import VoyageReranker

    secret = s.voyage_secret_name if s.mode == "aws" else None
    return VoyageReranker(SecretKey("VOYAGE_API_KEY", secret), s.rerank_model, base_url=s.voyage_base_url)


@lru_cache(maxsize=1)
def ocr_engine() -> OcrEngine | None:
    """The OCR engine for scanned pages (``LONGDOC_OCR``): Textract on AWS, Tesseract locally, or None (off)."""
    s = function_settings(OcrSettings)
    choice = s.ocr if s.ocr != "auto" else ("textract" if function_settings(StoreSettings).mode == "aws" else "tesseract")
    if choice == "off":
        return None
    if choice == "textract":
        from longdoc.adapters.ocr_textract import TextractOcr

        return TextractOcr(region=s.textract_region)
    from longdoc.adapters.ocr_tesseract import TesseractOcr

    return TesseractOcr()


def model_name(settings: Settings | None = None) -> str:
    """Name of the model that :func:`model` builds (``offline-extractive-baseline-v1`` or a Claude id)."""
    s = settings or get_settings()
    keyless = s.model_provider == "anthropic" and not os.environ.get("ANTHROPIC_API_KEY")
    if s.model == "baseline" or (s.model == "auto" and s.mode == "local" and keyless):
        from longdoc.adapters.baseline import BASELINE_NAME

        return BASELINE_NAME
    return s.claude_model


@lru_cache(maxsize=1)
def model() -> Model:
    """The model: Claude (``LONGDOC_MODEL=claude`` or a key present) or the offline baseline.

    Claude on the Anthropic API reads its key through a :class:`SecretKey` (the secret in AWS,
    ``ANTHROPIC_API_KEY`` locally); on Bedrock (``model_provider="bedrock"``) it signs with the
    environment's AWS credentials and ``ANTHROPIC_BEDROCK_BASE_URL`` may redirect it (tests).
    """
    s = get_settings()
    name = model_name(s)
    from longdoc.adapters.baseline import BASELINE_NAME, OfflineBaselineModel

    if name == BASELINE_NAME:
        return OfflineBaselineModel()
    from longdoc.adapters.claude import ClaudeModel
    from longdoc.adapters.secrets import SecretKey

    if s.model_provider == "bedrock":
        return ClaudeModel(None, s.claude_model, provider="bedrock")
    key = SecretKey("ANTHROPIC_API_KEY", s.anthropic_secret_name if s.mode == "aws" else None)
    return ClaudeModel(key, s.claude_model, base_url=os.environ.get("ANTHROPIC_BASE_URL"))


def deps() -> Deps:
    """All adapters a session needs, as :class:`longdoc.extract.session.Deps` (built on first call of each)."""
    from longdoc.extract.catalogue import load_catalogue
    from longdoc.extract.session import Deps

    return Deps(state=state_store(), blobs=blob_store(), embedder=embedder(), index=vector_index(),
                model=model(), catalogue=load_catalogue(get_settings().clause_catalogue), reranker=reranker())


def session_options(settings: ExtractFunctionSettings | Settings, **bounds: Any) -> SessionOptions:
    """The :class:`~longdoc.extract.session.SessionOptions` the extraction settings give, the same
    for the extract function and the bulk rounds: strict tools, progress limit, context budget
    (tokens), the ``search_chunks`` budget (calls, tokens) and the ``not_found`` evidence
    threshold; ``bounds`` adds the caller's own (deadlines, execution name)."""
    from longdoc.extract.session import SessionOptions

    return SessionOptions(strict_tools=settings.strict_tools,
                          no_progress_limit=settings.no_progress_limit, budget_tokens=settings.context_budget_tokens,
                          search_max_calls=settings.search_max_calls, search_max_tokens=settings.search_max_tokens,
                          search_min_score=settings.search_min_score, **bounds)


@lru_cache(maxsize=1)
def bulk_store() -> BulkStore:
    """The bulk job/item store: items in the stack's DynamoDB table on AWS, ``bulk.sqlite3`` under the home locally."""
    s = get_settings()
    if s.mode == "aws":
        from longdoc.adapters.bulk_store_dynamo import DynamoBulkStore

        return DynamoBulkStore(_require(s.table, "table"))
    from longdoc.adapters.bulk_store import SqliteBulkStore

    s.home.mkdir(parents=True, exist_ok=True)
    return SqliteBulkStore(s.home / "bulk.sqlite3")


def reset() -> None:
    """Forget cached settings and adapters (tests, or the CLI after changing the environment)."""
    function_settings.cache_clear()
    for fn in (blob_store, state_store, embedder, vector_index, model, ocr_engine, bulk_store, reranker):
        fn.cache_clear()
