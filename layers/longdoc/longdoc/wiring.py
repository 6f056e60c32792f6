"""Builds adapters from :class:`~longdoc.config.Settings`, lazily and once per process.

``mode="aws"``: S3, DynamoDB, Voyage, Pinecone and Claude (keys from Secrets Manager; Claude
on Amazon Bedrock with ``LONGDOC_MODEL_PROVIDER=bedrock``, no key). Claude and Voyage take a
key *source* (:class:`~longdoc.adapters.secrets.SecretKey`), so a rotated key reaches a warm
function (:mod:`longdoc.adapters.secrets`).
``mode="local"``: a folder for S3, SQLite for DynamoDB, LanceDB for Pinecone, MiniLM for
Voyage (int8 on ONNX Runtime, or PyTorch with ``LONGDOC_LOCAL_EMBEDDER=torch``), and Claude when ``ANTHROPIC_API_KEY`` is set or the offline baseline otherwise.
Either mode: no reranker unless ``LONGDOC_RERANKER=voyage`` (:func:`reranker`).
Nothing is created at import time (Lambda cold start, test isolation).

This is the one composition root: handlers, the CLI, eval and local code ask here for every
adapter (stores, models, the batch client, one execution starter per state machine) and never
import :mod:`longdoc.adapters`. ``longdoc serve`` composes local mode on top with
:func:`overrides` (local workers for the starters), never by assigning handler attributes.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import replace
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, NamedTuple

from longdoc.config import ApiFunctionSettings, BulkApiSettings, ExtractFunctionSettings, OcrSettings, Settings
from longdoc.config import StoreSettings, SummaryApiSettings, function_settings, get_settings
from longdoc.core.errors import ConfigError
from longdoc.bulk.ports import BatchClient, BulkStore
from longdoc.core.ports import BlobStore, DecisionStore, Embedder, ExecutionStarter, Model, OcrEngine, StateStore
from longdoc.core.ports import StreamingModel, TokenCounter, VectorIndex

if TYPE_CHECKING:  # pragma: no cover - typing only; the stage modules are imported on first use
    from longdoc.adapters.secrets import SecretKey
    from longdoc.bulk.steps import BulkDeps
    from longdoc.extract.retrieve import Reranker
    from longdoc.extract.session import Deps, SessionOptions
    from longdoc.review import ReviewService
    from longdoc.summarize.steps import SummaryDeps
    from longdoc.triage.service import TriageDeps

Machine = Literal["extract", "summarize", "bulk"]
"""A state machine the product starts executions of (``statemachine/<machine>.asl.json``)."""


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
    return _local_blobs(s.home)


@lru_cache(maxsize=1)
def state_store() -> StateStore:
    """The registry/run/checkpoint store for the current mode."""
    s = get_settings()
    if s.mode == "aws":
        from longdoc.adapters.state import DynamoStateStore
        return DynamoStateStore(_require(s.table, "table"))
    s.home.mkdir(parents=True, exist_ok=True)
    return _local_state(s.home)


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

    Pinecone (AWS) is checked against the embedder once, when first built (start-up of an
    execution environment): a dimension or metric mismatch raises
    :class:`~longdoc.core.errors.ConfigError` before anything is upserted. The local LanceDB
    table is checked when it is first opened, by its first query, upsert or delete (still before
    anything is written): importing ``lancedb`` costs about 2.5 CPU-seconds (docs/benchmarks.md,
    "Local ingest"), which a command that never touches the index (an unchanged file, BM25-only
    triage, ``longdoc chunks``) does not pay.
    """
    s = get_settings()
    if s.mode != "aws":
        return _local_index(s.home, embedder().dimension)
    from longdoc.adapters.secrets import api_key
    from longdoc.adapters.vector_index import PineconeIndex
    index = PineconeIndex(api_key("PINECONE_API_KEY", s.pinecone_secret_name),
                          _require(s.pinecone_index_host, "pinecone_index_host"), s.pinecone_namespace,
                          embedder().dimension)
    index.check_dimension()
    return index


@lru_cache(maxsize=2)
def reranker(interactive: bool = False) -> Reranker:
    """The reranker of retrieval's fused candidates (``LONGDOC_RERANKER``), in either mode.

    ``none`` (default): :class:`~longdoc.extract.retrieve.NoRerank`, nothing called, so a local run
    stays offline. ``voyage``: :class:`~longdoc.adapters.voyage_rerank.VoyageReranker` with
    ``LONGDOC_RERANK_MODEL``, its key read through a :class:`SecretKey` (the Voyage secret on AWS;
    ``VOYAGE_API_KEY`` locally, where it is an explicit opt-in that calls Voyage over the network).
    Raises :class:`ConfigError` locally when ``voyage`` is chosen and ``VOYAGE_API_KEY`` is unset
    (rather than failing at the first retrieval). ``interactive`` (``POST /triage``): bounded by ``INTERACTIVE_BOUNDS``
    and not called for ``INTERACTIVE_COOLDOWN`` s after an outage (:mod:`longdoc.adapters.rerank_cooldown`).
    """
    s = get_settings()
    if s.reranker == "none":
        from longdoc.extract.retrieve import NoRerank
        return NoRerank()
    if s.mode == "local" and not os.environ.get("VOYAGE_API_KEY", "").strip():
        raise ConfigError("LONGDOC_RERANKER=voyage needs VOYAGE_API_KEY in local mode (or LONGDOC_RERANKER=none)")
    from longdoc.adapters.secrets import SecretKey
    from longdoc.adapters.rerank_cooldown import CooldownReranker
    from longdoc.adapters.voyage_rerank import INTERACTIVE_BOUNDS, INTERACTIVE_COOLDOWN, NO_BOUNDS, VoyageReranker
    secret, bounds = s.voyage_secret_name if s.mode == "aws" else None, INTERACTIVE_BOUNDS if interactive else NO_BOUNDS
    voyage = VoyageReranker(SecretKey("VOYAGE_API_KEY", secret), s.rerank_model, base_url=s.voyage_base_url, **bounds)
    return CooldownReranker(voyage, INTERACTIVE_COOLDOWN) if interactive else voyage


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


def _local_blobs(root: Path) -> BlobStore:
    from longdoc.adapters.blob import LocalBlobStore
    return LocalBlobStore(root / "bucket")


def _local_state(root: Path) -> StateStore:
    from longdoc.adapters.state import SqliteStateStore
    return SqliteStateStore(root / "state.sqlite3")


def _local_index(root: Path, dimension: int) -> VectorIndex:
    from longdoc.adapters.vector_index import LanceDBIndex
    return LanceDBIndex(root / "lancedb", dimension)


@lru_cache(maxsize=1)
def decision_store() -> DecisionStore:
    """Review items and decisions: the stack's DynamoDB table on AWS, ``review.sqlite3`` under the home locally."""
    s = get_settings()
    if s.mode == "aws":
        from longdoc.adapters.review_store_dynamo import DynamoDecisionStore
        return DynamoDecisionStore(_require(s.table, "table"))
    from longdoc.adapters.review_store import SqliteDecisionStore
    return SqliteDecisionStore(s.home / "review.sqlite3")


def review_service() -> ReviewService:
    """The :class:`~longdoc.review.ReviewService` over :func:`decision_store`, run results and chunks of the
    state and blob stores, with ``LONGDOC_REVIEW_ACCEPT_THRESHOLD``; runs listed only where the store can."""
    from longdoc.core.documents import load_chunks
    from longdoc.extract.public import run_result
    from longdoc.review import ReviewService, ReviewSources

    state, lister = state_store(), getattr(state_store(), "list_runs", None)
    sources = ReviewSources(lambda r: run_result(state, r), lambda d, v: load_chunks(blob_store(), d, v),
                            state.get_document, (lambda: [r.run_id for r in lister()]) if lister else None)
    return ReviewService(decision_store(), sources, get_settings().review_accept_threshold)


class LocalStores(NamedTuple):
    """The three local stores of one home folder (:func:`local_stores`)."""

    blobs: BlobStore
    state: StateStore
    vector_index: VectorIndex


def local_stores(root: Path, dimension: int) -> LocalStores:
    """New local stores under ``root`` (created), laid out as local mode's home: ``bucket/``,
    ``state.sqlite3`` and ``lancedb/`` sized to ``dimension`` (the eval cache, a home of its own)."""
    root.mkdir(parents=True, exist_ok=True)
    return LocalStores(_local_blobs(root), _local_state(root), _local_index(root, dimension))


def model_name(settings: Settings | None = None) -> str:
    """Name of the model that :func:`model` builds (``offline-extractive-baseline-v1`` or a Claude id)."""
    s = settings or get_settings()
    keyless = s.model_provider == "anthropic" and not os.environ.get("ANTHROPIC_API_KEY")
    if s.model == "baseline" or (s.model == "auto" and s.mode == "local" and keyless):
        from longdoc.adapters.baseline import BASELINE_NAME
        return BASELINE_NAME
    return s.claude_model


def uses_baseline() -> bool:
    """Whether :func:`model` is the offline extractive baseline (no Claude call is made)."""
    from longdoc.adapters.baseline import BASELINE_NAME
    return model_name() == BASELINE_NAME


def baseline_model(threshold: float | None = None, search: bool = True) -> Model:
    """A new offline baseline with evidence ``threshold`` (default: its own) and its search step on or off (eval)."""
    from longdoc.adapters.baseline import DEFAULT_THRESHOLD, OfflineBaselineModel
    return OfflineBaselineModel(threshold=DEFAULT_THRESHOLD if threshold is None else threshold, search=search)


@lru_cache(maxsize=1)
def model() -> Model:
    """The model: Claude (``LONGDOC_MODEL=claude`` or a key present) or the offline baseline.

    Claude on the Anthropic API reads its key through a :class:`SecretKey` (the secret in AWS,
    ``ANTHROPIC_API_KEY`` locally); on Bedrock (``model_provider="bedrock"``) with the region and AWS
    credentials resolved here, once (:func:`longdoc.adapters.bedrock_access.resolve_bedrock_access`:
    ``LONGDOC_BEDROCK_REGION``, the profile, logged; the local engine builds it before its moto sandbox);
    ``ANTHROPIC_BEDROCK_MANTLE_BASE_URL`` (5.x rows) or ``ANTHROPIC_BEDROCK_BASE_URL`` (InvokeModel rows)
    may redirect it (tests). Raises ConfigError for a Bedrock region, credential or model-id problem.
    """
    s = get_settings()
    if uses_baseline():
        from longdoc.adapters.baseline import OfflineBaselineModel
        return OfflineBaselineModel()
    from longdoc.adapters.claude import ClaudeModel

    if s.model_provider == "bedrock":
        from longdoc.adapters.bedrock_access import resolve_bedrock_access
        access = resolve_bedrock_access(s.claude_model, s.bedrock_region)
        return ClaudeModel(None, s.claude_model, provider="bedrock", aws_access=access)
    return ClaudeModel(_anthropic_key(s), s.claude_model, base_url=os.environ.get("ANTHROPIC_BASE_URL"))


@lru_cache(maxsize=1)
def token_counter() -> TokenCounter:
    """The :class:`~longdoc.core.ports.TokenCounter` budgets are sized with: Claude's
    token-counting endpoint (cached by text hash) when :func:`model` is Claude, else the offline
    estimate :func:`longdoc.core.tokens.estimate_tokens` unchanged (the offline demo's figures)."""
    from longdoc.core.tokens import EstimatedTokens

    if uses_baseline():
        return EstimatedTokens()
    from longdoc.adapters.claude import ClaudeModel
    from longdoc.adapters.claude_count import ClaudeTokenCounter

    claude = model()
    return ClaudeTokenCounter(claude) if isinstance(claude, ClaudeModel) else EstimatedTokens()


def _budget_counter() -> TokenCounter | None:
    """The counter token budgets are sized with: :func:`token_counter` when Claude answers, None
    offline (budgets then use :func:`longdoc.core.tokens.estimate_tokens` itself, unchanged)."""
    return None if uses_baseline() else token_counter()


def _anthropic_key(s: Settings) -> SecretKey:
    """The Anthropic API key's source, for Messages and Message Batches alike: the Secrets Manager
    secret on AWS (``LONGDOC_ANTHROPIC_SECRET_NAME``), ``ANTHROPIC_API_KEY`` locally."""
    from longdoc.adapters.secrets import SecretKey
    return SecretKey("ANTHROPIC_API_KEY", s.anthropic_secret_name if s.mode == "aws" else None)


def deps() -> Deps:
    """All adapters a session needs, as :class:`longdoc.extract.session.Deps` (built on first call of each)."""
    from longdoc.extract.catalogue import load_catalogue
    from longdoc.extract.session import Deps
    return Deps(state=state_store(), blobs=blob_store(), embedder=embedder(), index=vector_index(),
                model=model(), catalogue=load_catalogue(get_settings().clause_catalogue), reranker=reranker(),
                tokens=_budget_counter())


def session_options(settings: ExtractFunctionSettings | Settings, **bounds: Any) -> SessionOptions:
    """The :class:`~longdoc.extract.session.SessionOptions` the extraction settings give, the same for the
    extract function and the bulk rounds: strict tools (where the model's row allows them), progress limit,
    context budget (tokens), the ``search_chunks`` budget (calls, tokens) and the ``not_found`` evidence threshold; ``bounds`` adds the caller's own (deadlines, execution name)."""
    from longdoc.core.models_catalogue import strict_tools_allowed as allowed
    from longdoc.extract.session import SessionOptions
    return SessionOptions(strict_tools=settings.strict_tools and allowed(settings.claude_model, settings.model_provider),
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


_STARTER_ARNS: dict[str, tuple[type[StoreSettings], str, str]] = {  # settings naming the ARN, field, purpose
    "extract": (ApiFunctionSettings, "state_machine_arn", "start extraction runs"),
    "summarize": (SummaryApiSettings, "summary_state_machine_arn", "start summaries"),
    "bulk": (BulkApiSettings, "bulk_state_machine_arn", "start bulk extractions"),
}
_LOCAL_STARTERS: dict[Machine, ExecutionStarter] = {}  # local mode's, while overrides() is in force


@contextmanager
def overrides(*, starters: Mapping[Machine, ExecutionStarter]) -> Iterator[None]:
    """Local mode's composition: inside the block :func:`execution_starter` answers ``starters``
    (``longdoc serve``: workers on this machine) instead of Step Functions; the previous
    composition is back on exit, even on an error. The handlers, which ask wiring for their
    starter on every request, need no change; :func:`reset` leaves an override in force."""
    previous = dict(_LOCAL_STARTERS)
    _LOCAL_STARTERS.update(starters)
    try:
        yield
    finally:
        _LOCAL_STARTERS.clear()
        _LOCAL_STARTERS.update(previous)


def execution_starter(machine: Machine) -> ExecutionStarter:
    """The starter of ``machine``'s executions: an :func:`overrides` one, else Step Functions with the
    ARN of the function's validated settings (built on first use, kept by warm invocations).
    Raises :class:`ConfigError` naming ``LONGDOC_<...>_STATE_MACHINE_ARN`` when it is unset."""
    local = _LOCAL_STARTERS.get(machine)
    return local if local is not None else step_functions_starter(machine)


@lru_cache(maxsize=None)
def step_functions_starter(machine: Machine) -> ExecutionStarter:
    """The Step Functions starter of ``machine``, whatever :func:`overrides` says (one client per state machine
    and process; ``step_functions_starter.cache_clear()`` forgets them, as :func:`reset` does)."""
    from longdoc.adapters.executions import StepFunctionsStarter
    cls, field, purpose = _STARTER_ARNS[machine]
    arn = getattr(function_settings(cls), field)
    if not arn:
        raise ConfigError(f"LONGDOC_{field.upper()} must be set to {purpose}")
    return StepFunctionsStarter(arn)


def batch_client(model: Model) -> BatchClient:
    """The Message Batches client: the Anthropic API for Claude (the key's source, re-read on a 401), or
    local batches answered by ``model`` under ``$LONGDOC_HOME/batches`` for the offline baseline.
    Raises :class:`ConfigError` on Bedrock, which has no batches API."""
    settings = get_settings()
    if uses_baseline():
        from longdoc.adapters.batches import LocalBatches, local_batch_hold
        return LocalBatches(model, settings.home / "batches", hold_seconds=local_batch_hold())
    if settings.model_provider == "bedrock":
        raise ConfigError("bulk extraction uses the Anthropic Message Batches API; ModelProvider=bedrock has none "
                          "(deploy with ModelProvider=anthropic, or run extractions one by one)")
    from longdoc.adapters.batches import AnthropicBatches
    return AnthropicBatches(_anthropic_key(settings), base_url=os.environ.get("ANTHROPIC_BASE_URL"))


def results_store() -> BlobStore:
    """Where bulk result files go: the bucket on AWS (``results/`` prefix), ``$LONGDOC_HOME`` locally."""
    settings = get_settings()
    if settings.mode == "aws":
        return blob_store()
    from longdoc.adapters.blob import LocalBlobStore
    return LocalBlobStore(settings.home)


@lru_cache(maxsize=1)
def bulk_deps() -> BulkDeps:
    """The bulk adapters (once per process); every round's sessions take the extract function's options.

    With local batches (the offline baseline) a batch has ended when created and is listed as soon
    as it exists, so the first poll and the list settle wait are 0 unless ``LONGDOC_BULK_POLL_FIRST``
    / ``LONGDOC_BULK_LIST_SETTLE`` set them.
    """
    from longdoc.bulk.plan import BulkLimits
    from longdoc.bulk.steps import BulkDeps
    from longdoc.extract.query_memo import memoised

    settings = function_settings(ExtractFunctionSettings)  # the extract function's settings, validated (required on AWS)
    extract, local = deps(), uses_baseline()  # local: batch_client answers LocalBatches
    batches, limits = batch_client(extract.model), BulkLimits.from_env()
    if local and not os.environ.get("LONGDOC_BULK_POLL_FIRST"):
        limits = replace(limits, poll_first=0)
    if local and not os.environ.get("LONGDOC_BULK_LIST_SETTLE"):
        limits = replace(limits, list_settle_seconds=0)
    extract = replace(extract, embedder=memoised(extract.embedder))  # a round's queries embedded once (issue 26)
    return BulkDeps(extract=extract, batches=batches, store=bulk_store(), limits=limits,
                    options=session_options(settings))


def summary_deps() -> SummaryDeps:
    """What the summary steps need, with the summarize function's validated settings and a new model each
    call: :func:`model`, or the summaries' own baseline where the extraction baseline is configured.
    Raises :class:`ConfigError` for a model that cannot stream."""
    from longdoc.config import SummarizeSettings
    from longdoc.summarize.steps import SummaryDeps

    settings = function_settings(SummarizeSettings)
    chosen: Model
    if uses_baseline():
        from longdoc.summarize.baseline import SummaryBaselineModel

        chosen = SummaryBaselineModel()
    else:
        chosen = model()
    if not isinstance(chosen, StreamingModel):
        raise ConfigError(f"model {chosen.name} cannot stream; summaries need a streaming model")
    return SummaryDeps(blobs=blob_store(), model=chosen, settings=settings, tokens=_budget_counter())


def triage_deps(offline_ranking: bool = False, interactive: bool = False) -> TriageDeps:
    """The triage stores and models; ``offline_ranking``: no embedder or index (BM25 only, as the API
    function, which has no embedding settings); ``interactive``: the reranker bounded (:func:`reranker`). The model
    is None when the offline baseline is configured; ``query_writer`` is ``LONGDOC_TRIAGE_QUERY_WRITER=model``."""
    from longdoc.triage.service import TriageDeps

    chosen, settings = None if uses_baseline() else model(), get_settings()
    rerank, writer = None if settings.reranker == "none" else reranker(interactive), settings.triage_query_writer == "model"
    emb, index = (None, None) if offline_ranking else (embedder(), vector_index())
    return TriageDeps(state_store(), blob_store(), emb, index, chosen, _budget_counter(), rerank, writer)


def reset() -> None:
    """Forget cached settings and adapters (tests, or the CLI after changing the environment);
    an :func:`overrides` block stays in force."""
    function_settings.cache_clear()
    for fn in (blob_store, state_store, embedder, vector_index, model, ocr_engine, bulk_store, reranker, token_counter,
               step_functions_starter, bulk_deps, decision_store):
        fn.cache_clear()
