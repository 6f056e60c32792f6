"""Types and limits of an extraction session (:mod:`longdoc.extract.session`): its adapters, options,
working state and outcome."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal

from longdoc.core.messages import Usage
from longdoc.core.models import Chunk
from longdoc.core.ports import BlobStore, Embedder, Model, StateStore, TokenCounter, VectorIndex
from longdoc.core.records import CallRecord, CaseFacts, Checkpoint, Extraction, RunRecord
from longdoc.extract.catalogue import Catalogue
from longdoc.extract.retrieve import Reranker, Retriever

MAX_CALLS_PER_SESSION = 8
NO_PROGRESS_LIMIT = 3
MAX_TOKENS_CEILING = 64_000
"""Highest output cap (tokens) max_tokens escalation reaches: the settings' upper bound for
``max_tokens`` (``LONGDOC_MAX_TOKENS`` <= 64000), which is also the output limit of
Sonnet-class models (https://platform.claude.com/docs/en/about-claude/models/overview)."""
SEARCH_MAX_CALLS = 4
"""``search_chunks`` calls one session may make (see :mod:`longdoc.extract.search_calls`)."""
SEARCH_MAX_TOKENS = 6_000
"""Estimated tokens of chunks ``search_chunks`` may return in one session."""
SEARCH_MIN_SCORE = 0.45
"""Best cosine similarity of a clause type's initial chunks under which ``not_found`` needs a search."""
MIN_CALL_SECONDS = 1.0
"""A model call is not started with less than this many seconds before ``call_deadline``: the
Claude adapter's shortest attempt (:data:`longdoc.adapters.claude_budget.MIN_ATTEMPT_SECONDS`)."""


@dataclass(frozen=True)
class Deps:
    """The adapters a session needs (see :mod:`longdoc.core.ports`).

    ``reranker`` reorders retrieval's fused candidates (clause types' pages and ``search_chunks``,
    :func:`longdoc.extract.context.retriever`); None keeps the fused order (as ``NoRerank``).
    """

    state: StateStore
    blobs: BlobStore
    embedder: Embedder
    index: VectorIndex
    model: Model
    catalogue: Catalogue
    reranker: Reranker | None = None
    tokens: TokenCounter | None = None
    """Sizes the context budget: the token-counting endpoint with a key (one count per document,
    :func:`longdoc.core.tokens.document_measure`); None: the offline estimate."""


@dataclass(frozen=True)
class SessionOptions:
    """How one session is bounded; nothing here is Lambda-specific.

    ``deadline`` is a ``clock()`` value (seconds) after which no new model call starts: the
    session checkpoints and returns ``CONTINUE`` with ``stop_reason="time_limit"``.
    ``call_deadline`` (same clock) is when a model call already under way must give up
    (its budget, retries included, is what is left until then); None: no bound.
    ``execution`` is the Step Functions execution name, recorded on the run.
    ``strict_tools`` selects strict tool schemas. ``no_progress_limit``: see the module docstring.
    ``max_tokens_ceiling`` bounds max_tokens escalation (tokens). ``min_call_seconds``: with
    less time than this before ``call_deadline`` no call starts (the session checkpoints and the
    next one retries), so that a call's attempts and timeouts always fit what is left.
    ``budget_tokens`` bounds the retrieved context (estimated tokens, headers included; see
    :func:`longdoc.extract.retrieve.assemble`): ``None`` sends every retrieved page (``top_k``
    per pending clause type); with a budget, chunks go in rank order until the next would
    pass it, and a document that fits whole is sent whole, in order.
    ``search_max_calls`` / ``search_max_tokens`` are the session's ``search_chunks`` budget
    (calls, estimated tokens of returned chunks); ``search_min_score`` the initial-retrieval
    score under which ``record_not_found`` needs a search of the model's own (see
    :mod:`longdoc.extract.search_calls`).
    """

    deadline: float | None = None
    call_deadline: float | None = None
    execution: str | None = None
    strict_tools: bool = False
    no_progress_limit: int = NO_PROGRESS_LIMIT
    budget_tokens: int | None = None
    max_tokens_ceiling: int = MAX_TOKENS_CEILING
    min_call_seconds: float = MIN_CALL_SECONDS
    search_max_calls: int = SEARCH_MAX_CALLS
    search_max_tokens: int = SEARCH_MAX_TOKENS
    search_min_score: float = SEARCH_MIN_SCORE
    clock: Callable[[], float] = field(default=time.monotonic)


@dataclass
class Session:
    """One session's working state: the run, its last checkpoint and what this session changed.

    Built by :func:`longdoc.extract.session.open_session`; advanced by
    :func:`~longdoc.extract.session.start_turn` and :func:`~longdoc.extract.session.apply_response`
    (each tool call through its object in :mod:`longdoc.extract.tools`); checkpointed by
    :func:`~longdoc.extract.session.finish_session`. The synchronous loop and the batch harvest
    (:mod:`longdoc.bulk`) drive it the same way, with a different transport for the call.
    ``ranker`` is the session's retriever over ``chunks``, built once on first use
    (:func:`longdoc.extract.context.session_retriever`) and dropped when ``chunks`` are loaded.
    """

    run: RunRecord
    checkpoint: Checkpoint
    facts: CaseFacts
    last: dict[str, Extraction]
    usage: Usage
    calls: list[CallRecord]
    number: int
    stop_reason: str | None
    stalled: int
    rejected: int = 0
    model_calls: int = 0
    time_limited: bool = False
    chunks: dict[str, Chunk] = field(default_factory=dict)
    max_tokens: int = 0
    escalated: bool = False
    refused: bool = False
    cache_read: int = 0
    asked: list[str] = field(default_factory=list)
    shown: set[str] | None = None
    ranker: Retriever | None = None
    rejections: dict[str, int] = field(default_factory=dict)
    """Calls rejected per clause type in this session (citation checks and screening), for confidence."""
    cut: list[str] = field(default_factory=list)
    """The blocks cut from this session's replies by a ``max_tokens`` / ``model_context_window_exceeded``
    stop (:func:`longdoc.core.messages.block_label` of each; never run nor stored)."""
    conversation_from: int | None = None
    """The session number the model conversation this turn belongs to began in (None: this session,
    ``number``). A synchronous session is one conversation; a bulk conversation goes on across
    rounds, each counted as a session, and its ``search_chunks`` budget is the conversation's, as
    in the synchronous loop (:func:`longdoc.extract.search_calls.budget_left`)."""
    fence: int | None = None
    """The run lease generation this session's writes are fenced with (:func:`longdoc.core.run_fence.run_fence`,
    read once when the session opens); None: the run has no lease."""


@dataclass(frozen=True)
class SessionOutcome:
    """Where a run stands after one session (small: it travels between Step Functions states).

    ``rejected_citations``, ``model_calls``, ``cache_read_tokens`` (prompt-cache reads, in
    tokens) and ``cut_blocks`` (reply blocks cut by a ``max_tokens`` or context-window stop, never
    run nor stored) count this session only (for metrics); ``max_tokens`` is the output cap the
    next session starts with (tokens, after any escalation).
    """

    run_id: str
    doc_id: str
    status: Literal["CONTINUE", "DONE"]
    stop_reason: str | None
    sessions: int
    checkpoint_version: int
    extracted: int
    pending: int
    rejected_citations: int = 0
    model_calls: int = 0
    cache_read_tokens: int = 0
    max_tokens: int = 0
    search_calls: int = 0
    cut_blocks: int = 0
