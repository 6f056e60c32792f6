"""Settings read from the environment (prefix ``LONGDOC_``), validated once per process.

Secrets are never settings: API keys come from Secrets Manager in AWS (by the secret
*names* below) and from ``ANTHROPIC_API_KEY`` / ``VOYAGE_API_KEY`` / ``PINECONE_API_KEY``
locally.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Literal

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict


class Settings(BaseSettings):
    """All tunables. Token figures are estimated tokens; see :mod:`longdoc.core.tokens`."""

    model_config = SettingsConfigDict(env_prefix="LONGDOC_", extra="ignore")

    mode: Literal["local", "aws"] = "local"
    home: Path = Path(".longdoc")

    # Chunking (issue seeds: target 500-2000 tokens, default near 1,000; overlap 10-20%).
    chunk_target_tokens: int = Field(1000, ge=100, le=4000)
    chunk_max_tokens: int = Field(2000, ge=200, le=8000)
    chunk_overlap: float = Field(0.15, ge=0.10, le=0.20)

    # Input caps (project limits: a Lambda's memory and run time), checked before parsing.
    max_document_bytes: int = Field(200 * 1024 * 1024, ge=1)
    max_document_pages: int = Field(5000, ge=1)

    # Retrieval and extraction.
    top_k: int = Field(5, ge=1, le=50)
    # Retrieved-context budget in estimated input tokens (None: top_k chunks per clause type);
    # see longdoc.extract.retrieve.assemble / budget_from_cost.
    context_budget_tokens: int | None = Field(None, ge=100)
    max_tokens: int = Field(4096, ge=64, le=64000)
    max_iterations: int = Field(40, ge=1, le=1000)
    model: str = "auto"  # "auto": Claude when a key is available, else the offline baseline
    claude_model: str = "claude-sonnet-5-5"
    clause_catalogue: Path | None = None
    strict_tools: bool = True  # strict tool schemas (Claude Sonnet/Opus/Haiku 4.5+ accept them)
    no_progress_limit: int = Field(3, ge=1, le=50)  # sessions in a row without progress before NoProgress
    time_margin_seconds: int = Field(120, ge=0, le=890)  # stop and checkpoint this long before the Lambda timeout
    iterations_per_execution: int = Field(500, ge=1, le=3000)  # continue-as-new after this many sessions
    price_table: Path | None = None  # JSON price table (default: longdoc/data/prices.json)

    # AWS resources (names come from template.yaml Outputs / function environment).
    bucket: str | None = None
    table: str | None = None
    state_machine_arn: str | None = None
    extract_function: str = "longdoc-extract"
    anthropic_secret_name: str | None = None
    voyage_secret_name: str | None = None
    pinecone_secret_name: str | None = None
    voyage_model: str = "voyage-3.5"
    embedding_dimension: int = 1024
    pinecone_index_host: str | None = None
    pinecone_namespace: str = "documents"
    # Only for tests and proxies: where the Voyage SDK sends requests (default: Voyage's API).
    voyage_base_url: str | None = None

    # Ingest: stop starting embed/upsert steps when fewer seconds than this remain in the
    # invocation; the record then fails with progress saved and its redelivery resumes.
    ingest_deadline_margin_seconds: float = Field(60.0, ge=0, le=600)

    # Local embedded stand-ins.
    local_embedding_model: str = "all-MiniLM-L6-v2"


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    """Return the process-wide settings (read from the environment once)."""
    return Settings()
