"""Settings read from the environment (prefix ``LONGDOC_``), one model per Lambda function.

Each function validates its own settings at handler entry (:func:`function_settings`), so a
missing or malformed variable fails the first invocation with the variable named, instead
of failing later inside domain code. The groups below are shared building blocks; the
function models combine only the groups that function uses, and :class:`Settings` (the CLI
and local mode, which run every stage in one process) combines them all.

Secrets are never settings: API keys come from Secrets Manager in AWS (by the secret
*names* below) and from ``ANTHROPIC_API_KEY`` / ``VOYAGE_API_KEY`` / ``PINECONE_API_KEY``
locally.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import ClassVar, Literal, TypeVar

from pydantic import Field, ValidationError, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from longdoc.core.errors import ConfigError
from longdoc.core.model_defaults import DEFAULT_MODELS

ENV_PREFIX = "LONGDOC_"


class _Group(BaseSettings):
    """Base of every settings group: ``LONGDOC_`` variables, unknown ones ignored."""

    model_config = SettingsConfigDict(env_prefix=ENV_PREFIX, extra="ignore")

    required_on_aws: ClassVar[tuple[str, ...]] = ()
    """Fields that must be set when ``mode == "aws"`` (the template sets them); each class lists all of its own."""

    @model_validator(mode="after")
    def _aws_fields_present(self) -> _Group:
        if getattr(self, "mode", "local") == "aws":
            missing = [name for name in type(self).required_on_aws if getattr(self, name, None) in (None, "")]
            if missing:
                names = ", ".join(ENV_PREFIX + m.upper() for m in missing)
                raise ValueError(f"{names} must be set when LONGDOC_MODE=aws")
        return self


class StoreSettings(_Group):
    """Where documents, chunks, runs and checkpoints live (S3 + DynamoDB, or a local folder + SQLite)."""

    required_on_aws: ClassVar[tuple[str, ...]] = ("bucket", "table")

    mode: Literal["local", "aws"] = "local"
    home: Path = Path(".longdoc")
    bucket: str | None = None
    table: str | None = None


class ChunkSettings(_Group):
    """Parsing caps and chunk sizes (tokens are estimates, :mod:`longdoc.core.tokens`)."""

    # Issue seeds: target 500-2000 tokens, default near 1,000; overlap 10-20 %.
    chunk_target_tokens: int = Field(1000, ge=100, le=4000)
    chunk_max_tokens: int = Field(2000, ge=200, le=8000)
    chunk_overlap: float = Field(0.15, ge=0.10, le=0.20)
    # Input caps (project limits: a Lambda's memory and run time), checked before parsing; bytes / pages.
    max_document_bytes: int = Field(200 * 1024 * 1024, ge=1)
    max_document_pages: int = Field(5000, ge=1)


class VoyageAccessSettings(_Group):
    """How Voyage is reached, by the embeddings and the reranker alike: ``voyage_secret_name``, the Secrets
    Manager secret holding the key on AWS (``VOYAGE_API_KEY`` locally), and ``voyage_base_url``, where
    requests go (only for tests and proxies; default: Voyage's API)."""

    voyage_secret_name: str | None = None
    voyage_base_url: str | None = None


class EmbeddingSettings(VoyageAccessSettings):
    """The embedding model: Voyage on AWS, the bundled MiniLM locally."""

    voyage_model: str = "voyage-3.5"
    embedding_dimension: int = 1024
    # Local mode only (issue 19): the bundled MiniLM as int8 on ONNX Runtime (default, a third of the
    # CPU-seconds) or the original sentence-transformers/PyTorch model. AWS uses Voyage either way.
    local_embedder: Literal["onnx", "torch"] = "onnx"


class RerankSettings(VoyageAccessSettings):
    """The optional reranker of retrieval's fused candidates (issue 13; docs/operations.md, "Reranking").

    ``reranker``: ``none`` (default: the fused order, nothing called) or ``voyage`` (Voyage rerank,
    :class:`longdoc.adapters.voyage_rerank.VoyageReranker`, over HTTPS with the Voyage key: the
    ``voyage_secret_name`` secret on AWS, ``VOYAGE_API_KEY`` locally). ``rerank_model``: the Voyage
    rerank model (``rerank-2.5``; ``rerank-2.5-lite`` is cheaper and faster).
    """

    reranker: Literal["none", "voyage"] = "none"
    rerank_model: str = "rerank-2.5"


class TriageSettings(_Group):
    """Triage's optional query-writing step (issue 31; :mod:`longdoc.triage.query_writer`).

    ``triage_query_writer`` (``LONGDOC_TRIAGE_QUERY_WRITER``): ``off`` (default: the offline queries
    only) or ``model``: the configured Claude model writes the wording's likely phrasing of each claim,
    one request per claim, cached in the blob store; skipped (one log line) when the offline baseline
    is configured.
    """

    triage_query_writer: Literal["off", "model"] = "off"


class IndexSettings(_Group):
    """The vector index: Pinecone on AWS, LanceDB locally."""

    pinecone_secret_name: str | None = None
    pinecone_index_host: str | None = None
    pinecone_namespace: str = "documents"


class ModelSettings(_Group):
    """Which model answers: Claude (API key from the secret or the environment) or the offline baseline.

    ``model_provider``: where Claude is called, ``"anthropic"`` (the Messages API with the key
    in ``anthropic_secret_name``) or ``"bedrock"`` (Amazon Bedrock with the
    environment's AWS credentials, no key; the template sets ``claude_model`` to its Bedrock id); ``claude_model`` is then the Anthropic model id or
    the Bedrock model / inference profile id (template parameter ``ModelProvider``).

    ``claude_model`` unset: the provider's default (:data:`longdoc.core.model_defaults.DEFAULT_MODELS`,
    ``claude-sonnet-5-5`` / ``anthropic.claude-sonnet-5-5``); set but empty (``LONGDOC_CLAUDE_MODEL=``)
    is an error naming the variable, never a silent default. ``bedrock_region``: the Region Bedrock is
    called in (default: ``AWS_REGION``, ``AWS_DEFAULT_REGION``, the AWS profile's region;
    :mod:`longdoc.adapters.bedrock_access`).
    """

    model: str = "auto"  # "auto": Claude when a key is available, else the offline baseline
    model_provider: Literal["anthropic", "bedrock"] = "anthropic"
    claude_model: str = ""  # "" after validation never: unset -> the provider's default (below)
    bedrock_region: str | None = Field(None, pattern=r"^[a-z]{2}(-[a-z]+)+-[0-9]+$")
    anthropic_secret_name: str | None = None
    strict_tools: bool = True  # strict tool schemas (Claude Sonnet/Opus/Haiku 4.5+ accept them)
    price_table: Path | None = None  # JSON price table override (default: the capability table, data/models.json)

    @model_validator(mode="before")
    @classmethod
    def _provider_default_model(cls, data: object) -> object:
        """Unset ``claude_model`` -> the provider's default model; a blank one is refused (names the variable)."""
        if isinstance(data, dict):
            value = data.get("claude_model")
            if value is None:
                provider = data.get("model_provider") or "anthropic"
                data = {**data, "claude_model": DEFAULT_MODELS.get(str(provider), DEFAULT_MODELS["anthropic"])}
            elif isinstance(value, str) and not value.strip():
                raise ValueError(f"{ENV_PREFIX}CLAUDE_MODEL is set but empty: unset it for the provider's default "
                                 f"({', '.join(f'{k}: {v}' for k, v in DEFAULT_MODELS.items())}) or name a model id")
        return data


class ExtractionSettings(_Group):
    """The extraction loop: retrieval size, output cap per call, session and iteration limits."""

    top_k: int = Field(5, ge=1, le=50)
    # Retrieved-context budget in estimated input tokens (None: top_k chunks per clause type);
    # see longdoc.extract.retrieve.assemble / budget_from_cost.
    context_budget_tokens: int | None = Field(None, ge=100)
    max_tokens: int = Field(4096, ge=64, le=64000)
    max_iterations: int = Field(40, ge=1, le=1000)
    clause_catalogue: Path | None = None
    no_progress_limit: int = Field(3, ge=1, le=50)  # sessions in a row without progress before NoProgress
    time_margin_seconds: int = Field(120, ge=0, le=890)  # stop and checkpoint this long before the Lambda timeout
    iterations_per_execution: int = Field(500, ge=1, le=3000)  # continue-as-new after this many sessions
    # search_chunks budget per session (calls; estimated tokens of returned chunks) and the initial-retrieval
    # similarity under which record_not_found needs a search first (longdoc.extract.search_calls)
    search_max_calls: int = Field(4, ge=0, le=50)
    search_max_tokens: int = Field(6000, ge=0, le=200_000)
    search_min_score: float = Field(0.45, ge=0, le=1.01)


class ReviewSettings(_Group):
    """The review loop (issue 29): the auto-accept confidence and the accuracy alert's floor."""

    # items with confidence below this go to the review queue (possible omissions always do)
    review_accept_threshold: float = Field(0.8, ge=0, le=1)
    # a stratum alerts (eval accuracy exits 1) under 90% only with at least this many labels
    review_min_stratum_labels: int = Field(5, ge=1, le=100_000)


class IngestRuntimeSettings(_Group):
    """How the ingest function paces itself against the invocation's deadline."""

    # Stop starting embed/upsert steps when fewer seconds than this remain in the invocation;
    # the record then fails with progress saved and its redelivery resumes.
    ingest_deadline_margin_seconds: float = Field(60.0, ge=0, le=600)


class OcrSettings(_Group):
    """OCR of scanned PDF pages (issue 18): which engine, and when a page is re-read or flagged.

    ``ocr``: ``auto`` (Amazon Textract in ``aws`` mode, the local Tesseract otherwise),
    ``textract``, ``tesseract`` or ``off`` (scanned pages are then only listed in
    ``pages_needing_ocr``). ``ocr_recheck_layers``: re-read pages whose existing OCR layer fails
    the quality check (else they are only flagged). ``ocr_min_confidence``: mean word confidence
    (0-1) under which an OCR page is flagged in the ingest result. ``ocr_dpi``: target render
    resolution in dots per inch (300: Tesseract's recommended minimum,
    https://tesseract-ocr.github.io/tessdoc/ImproveQuality.html; a page image finer than that is
    rendered at its own resolution, capped at 36 million pixels a page). ``ocr_orientation``: turn
    each page upright before OCR (Tesseract OSD, else the best of four turns). ``ocr_low_confidence``:
    ``index`` a page under ``ocr_min_confidence`` with ``ocr_low_confidence`` on its chunks, or
    ``skip`` it (named in the ingest's warnings either way). ``textract_region``: the Textract region (default: the function's own).
    """

    ocr: Literal["auto", "textract", "tesseract", "off"] = "auto"
    ocr_recheck_layers: bool = True
    ocr_min_confidence: float = Field(0.80, ge=0, le=1)
    ocr_dpi: int = Field(300, ge=72, le=600)
    ocr_orientation: bool = True
    ocr_low_confidence: Literal["index", "skip"] = "index"
    textract_region: str | None = None


class ExecutionSettings(_Group):
    """The state machine that runs extractions (started by the API function), and its admission cap.

    ``max_running_extractions``: a new run is refused (HTTP 429 with ``Retry-After`` =
    ``retry_after_seconds``) while this many executions are running; None admits every run.
    Issue 26, one Claude budget: ``max_running_summaries`` and ``max_running_bulk_jobs`` (default
    1) do the same for ``POST /summaries`` and ``POST /bulk-extractions`` (counted on Step
    Functions; a local starter counts nothing, so local mode admits all);
    ``max_concurrent_triage``: most ``POST /triage`` calls answered at once (slots in the state
    store, :func:`longdoc.core.admission.bounded_slot`), None unbounded.
    """

    state_machine_arn: str | None = None
    max_running_extractions: int | None = Field(None, ge=1, le=1000)
    retry_after_seconds: int = Field(60, ge=1, le=3600)
    max_running_summaries: int | None = Field(None, ge=1, le=1000)
    max_running_bulk_jobs: int | None = Field(1, ge=1, le=100)
    max_concurrent_triage: int | None = Field(None, ge=1, le=100)


class IngestFunctionSettings(StoreSettings, ChunkSettings, EmbeddingSettings, IndexSettings, IngestRuntimeSettings,
                             OcrSettings):
    """Settings of the ingest function (parse, chunk, embed, upsert)."""


class ExtractFunctionSettings(StoreSettings, EmbeddingSettings, IndexSettings, RerankSettings, ModelSettings,
                              ExtractionSettings):
    """Settings of the extract function (one model session per invocation)."""


class ApiFunctionSettings(StoreSettings, ModelSettings, ExtractionSettings, ExecutionSettings, TriageSettings,
                          RerankSettings):
    """Settings of the API function (start runs, read results, triage claims: ``POST /triage`` reranks with
    Voyage when ``reranker`` is ``voyage``, its key from ``LONGDOC_VOYAGE_SECRET_NAME`` then)."""

    required_on_aws: ClassVar[tuple[str, ...]] = ("bucket", "table", "state_machine_arn")


class SummaryApiSettings(StoreSettings, ModelSettings, ExecutionSettings):
    """What the API's summary routes read: the stores, the model choice and the summary state machine's ARN."""

    summary_state_machine_arn: str | None = None


class SummarizeSettings(StoreSettings, ModelSettings):
    """The summarize function's settings: stores, model, and the summary sizes.

    ``summary_single_call_tokens``: a document whose rendered sections fit this many tokens
    is summarised in one call, no map. ``summary_group_min_tokens``/``max``: the size of a
    map group. ``summary_reduce_input_tokens``: most input tokens of partial summaries per
    reduce or final call (more, and another reduce level runs). ``summary_map_concurrency``:
    the Map state's MaxConcurrency; ``summary_reduce_concurrency``: reduce calls at once
    inside one invocation.
    """

    summary_single_call_tokens: int = Field(32000, ge=1000, le=180000)
    summary_group_min_tokens: int = Field(1500, ge=100, le=20000)
    summary_group_max_tokens: int = Field(3000, ge=200, le=40000)
    summary_reduce_input_tokens: int = Field(12000, ge=500, le=150000)
    summary_map_concurrency: int = Field(8, ge=1, le=40)
    summary_reduce_concurrency: int = Field(4, ge=1, le=16)


class BulkApiSettings(StoreSettings, ModelSettings, ExtractionSettings, ExecutionSettings):
    """What the API's bulk routes read: the stores, model, extraction defaults and the bulk state machine's ARN."""

    bulk_state_machine_arn: str | None = None


class McpSettings(_Group):
    """What the MCP server (``longdoc mcp``, ``/mcp`` on ``longdoc serve``) reads besides the stores.

    ``mcp_root`` (``LONGDOC_MCP_ROOT``): when set, ``ingest`` reads only files under this folder
    (symlinks resolved on both sides) and resolves a relative path against it; unset, any file
    the server's user can read, a relative path against the server's working directory.
    """

    mcp_root: Path | None = None


class ReviewMonitorSettings(StoreSettings, ReviewSettings):
    """Settings of the review monitor function (and what the API's review routes read): the stores and the
    review loop's threshold and minimum labels per stratum."""


class Settings(StoreSettings, ChunkSettings, EmbeddingSettings, IndexSettings, RerankSettings, IngestRuntimeSettings,
               ModelSettings, ExtractionSettings, ExecutionSettings, OcrSettings, ReviewSettings, TriageSettings):
    """Every tunable: the CLI and local mode run all stages in one process."""

    required_on_aws: ClassVar[tuple[str, ...]] = ("bucket", "table")


S = TypeVar("S", bound=_Group)


@lru_cache(maxsize=8)
def function_settings(cls: type[S]) -> S:
    """Read and validate ``cls`` from the environment once per process (call it at handler entry).

    ``function_settings.cache_clear()`` forgets every cached model (tests, or after the
    environment changed). Raises :class:`ConfigError` naming every bad or missing ``LONGDOC_*`` variable.
    """
    try:
        return cls()
    except ValidationError as exc:
        problems = []
        for err in exc.errors():
            where = ".".join(str(p) for p in err.get("loc", ()))
            problems.append(f"{ENV_PREFIX}{where.upper()}: {err['msg']}" if where else err["msg"].removeprefix("Value error, "))
        raise ConfigError(f"invalid settings for {cls.__name__}: " + "; ".join(problems)) from None


def get_settings() -> Settings:
    """Return the process-wide settings with every group (read from the environment once).

    Raises :class:`ConfigError` naming the variable when one is invalid.
    """
    return function_settings(Settings)

