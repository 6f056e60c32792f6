"""Stored shapes of the review loop: review items (one model answer to sign off) and decisions.

They live in ``core`` so the :class:`~longdoc.core.ports.DecisionStore` port and its adapters can name
them; :mod:`longdoc.review` re-exports them and holds the rules (queue, decide, reviewed result, gold).
"""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime
from collections.abc import Sequence
from typing import Literal, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field

from longdoc.core.records import Citation, Confidence

ItemKind = Literal["extraction", "not_found", "possible_omission"]
"""``extraction``: a found clause instance; ``not_found``: the model answered absent; ``possible_omission``:
a ``not_found`` whose evidence names a strong chunk the model never read (:attr:`Confidence.possible_omission`)."""
ItemStatus = Literal["pending", "accepted", "corrected", "rejected", "present", "absent"]
"""An item's state: ``pending`` until a decision, then the latest decision's outcome."""
Action = Literal["accept", "correct", "reject", "mark_present", "mark_absent"]
"""What a reviewer did. ``correct`` carries a new citation (verified verbatim); ``mark_present`` may carry one."""

STATUS_OF: dict[str, ItemStatus] = {"accept": "accepted", "correct": "corrected", "reject": "rejected",
                                    "mark_present": "present", "mark_absent": "absent"}
"""The item status each action leaves."""


def item_id_for(run_id: str, clause_type: str, index: int) -> str:
    """Deterministic review item id: ``ri-`` and 16 hex of SHA-256 over run id, clause type and index.

    ``index`` is the 0-based position of the extraction among its clause type's stored extractions
    in the run (``list_extractions`` order), so the same run always yields the same ids.
    """
    seed = f"{run_id}\n{clause_type}\n{index}"
    return "ri-" + hashlib.sha256(seed.encode("utf-8")).hexdigest()[:16]


def utc_now() -> str:
    """The current time as UTC ISO 8601 with seconds and a ``Z`` (``2026-12-01T10:00:00Z``)."""
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class ReviewItem(BaseModel):
    """One model answer to review: a snapshot of the model output, never changed once stored.

    ``value`` is the model's clause text (None for ``not_found``); ``quote``/``chunk_id``/``page``/
    ``section_id`` its first citation (the candidate chunk for a possible omission). ``confidence``
    in [0, 1] and ``reasons`` from :class:`~longdoc.core.records.Confidence`. ``status`` and
    ``version`` (decisions so far) are filled in from the decision history when read through
    :class:`longdoc.review.ReviewService`; stored items are ``pending``/0. ``doc_type`` is the document's
    metadata type, or with ``doc_type_inferred`` a kind guessed from its name (:mod:`longdoc.review.doctype`).
    """

    model_config = ConfigDict(extra="forbid")

    item_id: str
    run_id: str
    doc_id: str
    doc_version: str
    clause_type: str
    index: int = Field(0, ge=0)
    kind: ItemKind
    value: str | None = None
    quote: str | None = None
    chunk_id: str | None = None
    page: int | None = None
    page_label: str | None = None
    section_id: str | None = None
    confidence: float = Field(ge=0.0, le=1.0)
    reasons: list[str] = Field(default_factory=list)
    doc_type: str | None = None
    doc_type_inferred: bool = False
    model: str = ""
    created_at: str = ""
    status: ItemStatus = "pending"
    version: int = Field(0, ge=0)


class DecisionRequest(BaseModel):
    """What a reviewer asks for: an action, who, and for ``correct`` (or ``mark_present``) the span.

    ``quote`` is the selected text, verbatim from the document; ``chunk_id`` and/or ``page`` locate it
    (either may be None: the quote is then looked for in the chunks of that page, or of the document).
    """

    model_config = ConfigDict(extra="forbid")

    action: Action
    reviewer: str = Field(min_length=1)
    quote: str | None = None
    chunk_id: str | None = None
    page: int | None = None
    note: str | None = None


class Decision(BaseModel):
    """One stored decision, append-only: ``version`` is its 1-based place in the item's history.

    ``at`` is UTC ISO 8601; ``replaces`` the value in force before it (the model's quote, or an
    earlier correction's; None for a ``not_found``); ``citation`` the verified span of a
    correction (page, section and quote resolved as a model citation is).
    """

    model_config = ConfigDict(extra="forbid")

    item_id: str
    run_id: str
    version: int = Field(ge=1)
    action: Action
    reviewer: str
    at: str
    replaces: str | None = None
    citation: Citation | None = None
    note: str | None = None



@runtime_checkable
class DecisionStore(Protocol):
    """The review port (re-exported by :mod:`longdoc.core.ports`): review items and their append-only decisions (DynamoDB, or SQLite locally).

    Items are snapshots of the model output, written once (a second write of the same id is
    ignored). Decisions are never changed or deleted: each gets the next ``version`` of its item.
    """

    def put_items(self, items: Sequence[ReviewItem]) -> int:
        """Store the items not stored yet (by ``item_id``); returns how many were new."""
        ...

    def get_item(self, item_id: str) -> ReviewItem | None:
        """The stored item (as written: ``pending``, version 0) or None."""
        ...

    def list_items(self, run_id: str | None = None) -> list[ReviewItem]:
        """Every stored item of ``run_id`` (every run's when None), in ``(run_id, clause_type, index)`` order."""
        ...

    def append_decision(self, decision: Decision) -> Decision:
        """Store ``decision`` as version ``decision.version`` of its item: one conditional write.

        It succeeds only when no decision of that version exists (DynamoDB
        ``attribute_not_exists(pk)``; SQLite a primary key). Raises
        :class:`longdoc.core.errors.DecisionConflict` when one does (another reviewer decided first).
        """
        ...

    def decisions(self, item_id: str) -> list[Decision]:
        """The item's decisions, oldest (version 1) first; empty when none."""
        ...


__all__ = ["Action", "Confidence", "Decision", "DecisionRequest", "DecisionStore", "ItemKind", "ItemStatus", "ReviewItem",
           "STATUS_OF", "item_id_for", "utc_now"]
