"""Stored shapes of extraction runs: citations, extractions, CASE_FACTS, checkpoints and run records."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from longdoc.core.messages import Usage

CASE_FACTS_SCHEMA_VERSION = 3
"""Version of the :class:`CaseFacts` schema written into checkpoints.

History: 1 = first release; 2 adds multi-instance clause types (``open``,
``ResolvedClause.instances``) and the per-clause retrieval cursor (``retrieval_pages``);
3 adds the model's own searches (``searches``, :class:`SearchRecord`) and the initial
retrieval scores (``retrieval_scores``). Versions 1 and 2 are migrated on load by
:func:`migrate_checkpoint_data`; any other version is refused
(:class:`longdoc.core.errors.CheckpointSchemaError`).
"""


class Citation(BaseModel):
    """Where an extraction comes from: a chunk, the page of the quote, and the verbatim quote.

    After verification ``page`` (physical, 1-based), ``page_label`` (printed), ``section_id``
    and ``heading_path`` all describe the quote's first character.
    """

    model_config = ConfigDict(extra="forbid")

    chunk_id: str = Field(min_length=1)
    page: int | None = None
    section_id: str | None = None
    quote: str = Field(min_length=1)
    page_label: str | None = None
    heading_path: list[str] = Field(default_factory=list)


class NotFoundEvidence(BaseModel):
    """What backs a ``not_found``: the queries the model searched and the chunk ids it examined.

    ``queries`` are only those the harness actually ran in this run (see
    :mod:`longdoc.extract.search_calls`); ``reason`` is the model's own words.
    """

    model_config = ConfigDict(extra="forbid")

    queries: list[str] = Field(default_factory=list)
    chunk_ids: list[str] = Field(default_factory=list)
    reason: str | None = None


class SearchRecord(BaseModel):
    """One ``search_chunks`` call the harness ran: its query and what it answered.

    ``chunk_ids`` are the chunks the answer carried (new to the session), ``seen`` those
    left out because the session had already been shown them; ``tokens`` the estimated
    tokens of the answer's chunks (counted against the session's search budget);
    ``clause_type`` the pending clause type the model said it searched for (None: none named).
    """

    model_config = ConfigDict(extra="forbid")

    session: int
    query: str
    clause_type: str | None = None
    chunk_ids: list[str] = Field(default_factory=list)
    seen: list[str] = Field(default_factory=list)
    tokens: int = 0


class Confidence(BaseModel):
    """How far the evidence backs one extraction or ``not_found``: ``score`` in [0, 1] and why.

    Computed by the harness from what it checked (:mod:`longdoc.extract.confidence`), never asked
    of the model. ``reasons`` are short lines (``"quote verified exact"``, ``"cited chunk ranked 1 of
    5"``), each naming its effect on the score. ``possible_omission`` (``not_found`` only): a strong
    retrieved chunk was never read into a quote nor searched past, ``candidate`` names it
    (``{"chunk_id", "page", "score"}``, score a 0-1 similarity).
    """

    model_config = ConfigDict(extra="forbid")

    score: float = Field(ge=0.0, le=1.0)
    reasons: list[str] = Field(default_factory=list)
    possible_omission: bool = False
    candidate: dict[str, Any] | None = None


class Extraction(BaseModel):
    """One clause instance: ``found`` with at least one citation, or ``not_found`` with none.

    ``instance`` identifies one occurrence of a clause type (several termination rights are
    several instances); it is derived by the harness from the first citation (see
    :func:`longdoc.extract.harness.instance_key`) and is ``""`` for ``not_found``. ``final``
    is True when this instance closed its clause type (no further instance exists).
    Stores key extractions by :attr:`key`, so writing the same instance twice overwrites.
    ``confidence`` is the harness's evidence score (:class:`Confidence`; None on extractions
    stored before it existed).
    """

    model_config = ConfigDict(extra="forbid")

    clause_type: str
    status: Literal["found", "not_found"]
    clause_text: str | None = None
    citations: list[Citation] = Field(default_factory=list)
    model: str = ""
    session: int = 0
    instance: str = ""
    final: bool = True
    evidence: NotFoundEvidence | None = None
    confidence: Confidence | None = None

    @property
    def key(self) -> str:
        """Store key: the clause type, plus ``#instance`` for a found instance."""
        return f"{self.clause_type}#{self.instance}" if self.instance else self.clause_type

    @model_validator(mode="after")
    def _citations_match_status(self) -> "Extraction":
        if self.status == "found" and not self.citations:
            raise ValueError("a found extraction needs at least one citation")
        if self.status == "not_found" and self.citations:
            raise ValueError("a not_found extraction carries no citations")
        return self



class ResolvedClause(BaseModel):
    """CASE_FACTS summary of one clause type (pages, sections, instance ids; never the text)."""

    status: Literal["found", "not_found"]
    pages: list[int] = Field(default_factory=list)
    section_ids: list[str] = Field(default_factory=list)
    instances: list[str] = Field(default_factory=list)


class Refusal(BaseModel):
    """A model refusal (``stop_reason: "refusal"``) recorded against the clause type being worked on.

    ``category`` is the API's ``stop_details.category`` (``"cyber"``, ``"bio"``, ...; None when
    the API gave none); ``session`` the session it happened in; ``final`` is True once the
    clause type was refused while asked alone, i.e. it cannot be answered; ``explanation``
    the API's ``stop_details.explanation`` or the model's text (at most 500 characters).
    """

    category: str | None = None
    session: int = 0
    final: bool = False
    explanation: str | None = None


class CaseFacts(BaseModel):
    """The immutable-by-the-model facts pinned at the top of every session's prompt.

    Only the harness changes it (after each verified tool call). ``exact_values`` are
    verbatim strings (``"$247.83"``), copied byte for byte into every prompt.
    ``schema_version`` guards checkpoints written by other code versions. ``refusals``
    (added without a version bump: it defaults to empty, so older checkpoints read as
    before) records refusals per clause type (:class:`Refusal`); it is never shown to the model.
    ``searches`` are the model's own ``search_chunks`` calls (:class:`SearchRecord`, every
    session); ``retrieval_scores`` the best cosine similarity of each asked clause type's
    initial chunks in the current session (harness-only, never shown to the model).
    """

    schema_version: int = CASE_FACTS_SCHEMA_VERSION
    run_id: str
    doc_id: str
    doc_version: str
    clause_types: list[str]
    extracted_count: int = 0
    resolved: dict[str, ResolvedClause] = Field(default_factory=dict)
    decisions: list[str] = Field(default_factory=list)
    exact_values: dict[str, str] = Field(default_factory=dict)
    open: dict[str, ResolvedClause] = Field(default_factory=dict)
    retrieval_pages: dict[str, int] = Field(default_factory=dict)
    refusals: dict[str, Refusal] = Field(default_factory=dict)
    searches: list[SearchRecord] = Field(default_factory=list)
    retrieval_scores: dict[str, float] = Field(default_factory=dict)

    @property
    def pending(self) -> list[str]:
        """Requested clause types not yet resolved (including open multi-instance ones), in request order."""
        return [c for c in self.clause_types if c not in self.resolved]

    def progress_marker(self) -> tuple[int, int]:
        """``(resolved clause types, found instances)``: grows whenever a session makes progress."""
        instances = sum(len(r.instances) for r in self.resolved.values()) + sum(
            len(r.instances) for r in self.open.values()
        )
        return len(self.resolved), instances


def migrate_checkpoint_data(data: dict[str, Any]) -> dict[str, Any]:
    """Bring a stored checkpoint (parsed JSON) to :data:`CASE_FACTS_SCHEMA_VERSION`.

    Version 1 -> 2: the new fields (``open``, ``retrieval_pages``, ``instances``) start
    empty, which is exactly what a version-1 run had (one instance per clause type).
    Version 2 -> 3: ``searches`` and ``retrieval_scores`` start empty (no search was ever
    run; the next session computes its scores). Raises ``ValueError`` naming the version
    for anything else (missing, newer, unknown).
    """
    facts = data.get("case_facts") or {}
    stored = facts.get("schema_version")
    if stored == CASE_FACTS_SCHEMA_VERSION:
        return data
    if stored in (1, 2):
        return {**data, "case_facts": {**facts, "schema_version": CASE_FACTS_SCHEMA_VERSION,
                                       "searches": [], "retrieval_scores": {}}}
    raise ValueError(f"CASE_FACTS schema_version {stored!r} cannot be read; this code reads "
                     f"{CASE_FACTS_SCHEMA_VERSION} and migrates 1 and 2")


class CallRecord(BaseModel):
    """Usage of one model call (tokens), as recorded on the run's checkpoint; ``cut`` names the
    reply's last block when a ``max_tokens`` / ``model_context_window_exceeded`` stop cut it
    (:func:`longdoc.core.messages.block_label`: ``tool_use extract_clause``, ``text``, ...; never
    run nor stored), None otherwise."""

    session: int
    model: str
    stop_reason: str
    usage: Usage
    cut: str | None = None


CHECKPOINT_TTL_SECONDS = 30 * 24 * 60 * 60
"""A checkpoint's lifetime after its run ends, in seconds (30 days; DynamoDB TTL attribute ``expires_at``)."""

MAX_CALL_RECORDS = 300
"""Per-call usage records kept on a checkpoint (about 150 bytes each, far below DynamoDB's 400 KB item limit)."""


class Checkpoint(BaseModel):
    """Durable state between sessions; ``version`` increases by one per save (optimistic concurrency).

    ``stalled_sessions`` counts consecutive sessions without progress (see
    :func:`longdoc.extract.session.run_session`); ``rejected_citations`` counts tool calls
    refused by citation verification; ``calls`` keeps the usage of the last
    :data:`MAX_CALL_RECORDS` model calls (``usage`` is the total over all of them);
    ``expires_at`` (epoch seconds) is set only once the run has ended, and becomes the
    DynamoDB TTL attribute. ``max_tokens`` is the output cap per call (tokens) after
    escalation for a tool call cut by ``max_tokens`` (None: the run's ``max_tokens``).
    ``cut_blocks`` counts the reply blocks cut by a ``max_tokens`` or context-window stop over the
    whole run (never run nor stored; :func:`longdoc.core.messages.cut_block`).
    """

    run_id: str
    version: int = Field(ge=0)
    case_facts: CaseFacts
    sessions: int = 0
    last_stop_reason: str | None = None
    usage: Usage = Field(default_factory=Usage)
    updated_at: str = ""
    stalled_sessions: int = 0
    rejected_citations: int = 0
    calls: list[CallRecord] = Field(default_factory=list)
    expires_at: int | None = None
    max_tokens: int | None = Field(None, description="output tokens per call after max_tokens escalation; None: the run's")
    cut_blocks: int = Field(0, ge=0, description="reply blocks cut by max_tokens or the context window, never stored")


class RunRecord(BaseModel):
    """One extraction run as the API and CLI report it. ``owner``: the caller that started it
    through the API (:func:`longdoc.core.tenancy.caller_of`; None for CLI runs and runs stored
    before issue 26): ``GET`` answers 404 to any other caller."""

    run_id: str
    doc_id: str
    doc_version: str
    clause_types: list[str]
    status: Literal["PENDING", "RUNNING", "SUCCEEDED", "FAILED"] = "PENDING"
    model: str = ""
    max_tokens: int = 4096
    top_k: int = 5
    facts: dict[str, str] = Field(default_factory=dict)
    execution_arn: str | None = None
    error: str | None = None
    cause: str | None = None
    created_at: str = ""
    updated_at: str = ""
    executions: list[str] = Field(default_factory=list)
    checkpoint_version: int | None = None
    failed_state_entered: str | None = None
    request_hash: str | None = None
    owner: str | None = None


class RunLease(BaseModel):
    """Who may drive a run's executions right now: one owner until ``expires_at``.

    ``owner`` is an opaque id of one process (local engine) or invocation; ``expires_at`` is
    epoch seconds (float). A lease past ``expires_at`` is free to take: its holder stopped
    renewing it (the process died), which is how a local run is known to be ``STALE``.
    Written only by the conditional ``*_run_lease`` methods of the state store.
    """

    run_id: str
    owner: str
    expires_at: float
    renewed_at: str = ""
    generation: int = 0
    """The fencing token: 1 for the first owner, one up each time another owner takes the lease
    (a renewal or a re-acquire by the same owner keeps it). Releasing a lease ends it
    (``expires_at`` 0) and keeps the generation, so a later owner always gets a higher one.
    Every fenced checkpoint, extraction and run write is conditional on it. 0: a lease stored
    before generations existed."""

    def live(self, now: float) -> bool:
        """Whether the lease still holds at ``now`` (epoch seconds)."""
        return self.expires_at > now

    @property
    def released(self) -> bool:
        """Whether its holder gave it up (:meth:`~longdoc.core.ports.StateStore.release_run_lease`)."""
        return self.expires_at <= 0
