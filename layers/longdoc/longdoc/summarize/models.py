"""Stored shapes of summaries: statements with their citations, exact values, partial summaries, records.

All token counts are tokens (the API's ``usage`` where a model answered, estimates of
:func:`longdoc.core.tokens.estimate_tokens` for sizing); costs are USD decimal strings;
pages are 1-based physical page indexes (``None`` for formats without pages). Exact values
are strings copied verbatim from the document, never numbers.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from longdoc.core.messages import Usage

Length = Literal["short", "medium", "long"]
ValueKind = Literal["amount", "date", "percentage", "number", "defined_term", "party", "other"]
SummaryStatus = Literal["PENDING", "RUNNING", "SUCCEEDED", "FAILED"]

FOCUS_MAX_CHARS = 300
"""Longest accepted ``--focus`` in characters: a focus names a topic, it is not a prompt."""


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class SectionCitation(_Model):
    """Where a statement comes from: a section id as the document numbers it, and the page(s) it is on.

    ``pages`` are every page the statement's supporting text in the section is on, ascending (two
    for a statement assembled across a page break; empty for a format without pages and for
    summaries stored before pages were kept), ``page`` the first of them; the supporting text is
    located by :func:`longdoc.summarize.checks.check_statement`. ``chunk_id`` is the chunk
    holding the start of that text, so a reader can open it; ``page_label`` and ``heading_path``
    its printed page label and the headings above it.
    """

    section_id: str
    page: int | None = None
    pages: list[int] = Field(default_factory=list)
    page_label: str | None = None
    chunk_id: str | None = None
    heading_path: list[str] = Field(default_factory=list)


class Statement(_Model):
    """One verified statement of a summary and the sections that support it (at least one)."""

    text: str
    citations: list[SectionCitation] = Field(min_length=1)


class ExactValue(_Model):
    """An amount, date, percentage, defined term or party copied verbatim from a cited section."""

    value: str
    kind: ValueKind = "other"
    section_id: str
    page: int | None = None


class Dropped(_Model):
    """A statement that failed the checks even after a correction: reported, never stored as verified."""

    text: str
    sections: list[str] = Field(default_factory=list)
    reason: str
    stage: str = ""


class Partial(_Model):
    """The result of one map call (one group) or one reduce call (one batch of partials).

    ``calls`` counts model requests (the first call plus corrections); ``usage`` sums them.
    ``rank`` orders partials for the next level (focus relevance first, else document order).
    Coverage: ``groups`` are the map groups (indexes) whose content this partial carries;
    ``lost`` the groups consumed into it whose content did not come through (a group that
    failed, a reduce that answered no statement); ``failed`` says why, when this call itself
    produced nothing (a refusal, no answer, a persistent 5xx). ``cut_blocks`` counts reply blocks
    cut by a ``max_tokens`` or context-window stop (never read, :mod:`longdoc.summarize.calls`).
    """

    key: str
    rank: int
    groups: list[int] = Field(default_factory=list)
    lost: list[int] = Field(default_factory=list)
    failed: str | None = None
    why: dict[int, str] = Field(default_factory=dict)
    """Why each ``lost`` group was lost (the failing call's ``failed``), kept through the levels."""
    statements: list[Statement] = Field(default_factory=list)
    exact_values: list[ExactValue] = Field(default_factory=list)
    dropped: list[Dropped] = Field(default_factory=list)
    usage: Usage = Field(default_factory=Usage)
    calls: int = 0
    corrections: int = 0
    cut_blocks: int = 0
    model: str = ""


class Group(_Model):
    """A map unit: whole sections of consecutive chunks, about 1,500-3,000 tokens.

    ``index`` is the document-order position, ``rank`` the processing order (focus
    relevance first), ``tokens`` the estimated tokens of its rendered text.
    """

    index: int
    rank: int
    chunk_ids: list[str]
    section_ids: list[str]
    page_start: int | None = None
    page_end: int | None = None
    tokens: int = 0
    focus_score: float = 0.0


class Plan(_Model):
    """How a summary is computed: one call (``single``) or map over ``groups`` then reduce."""

    mode: Literal["single", "map"]
    doc_tokens: int
    groups: list[Group] = Field(default_factory=list)


class SummaryRequest(_Model):
    """What to summarise: a document (latest READY version unless given), an optional focus, a length."""

    doc_id: str = Field(min_length=1, max_length=128, description="the document id (`list_documents`)")
    doc_version: str | None = Field(None, min_length=1, max_length=64,
                                    description="a version of the document; default: its latest READY one")
    focus: str | None = Field(None, max_length=FOCUS_MAX_CHARS,
                              description="a topic to weight the summary towards, e.g. \"exclusions\" "
                                          "(a topic, not a prompt)")
    length: Length = Field("medium", description="short: at most 6 statements; medium: 12; long: 25")


class SummaryRecord(_Model):
    """A summary's stored state: its request, status, model, counters and (when failed) the error.

    ``map_calls`` counts map model requests (first calls), ``reduce_calls`` reduce requests,
    ``model_calls`` every request (corrections included), ``reduce_depth`` the reduce levels
    run; ``usage``/``cost_usd`` cover every call, map calls included.
    """

    summary_id: str
    doc_id: str
    doc_version: str
    source: str = ""
    request: SummaryRequest
    status: SummaryStatus = "PENDING"
    model: str = ""
    baseline: bool = False
    attempts: int = 0
    execution_arn: str | None = None
    error: str | None = None
    cause: str | None = None
    created_at: str = ""
    updated_at: str = ""
