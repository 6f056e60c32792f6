"""The review service: the queue, one item, decisions (append-only), history, the reviewed result, gold.

Concurrency rule (issue 29): **a conditional write refuses the stale decision**. Every decision is
written as the next version of its item with a conditional put (:meth:`DecisionStore.append_decision`);
``decide(..., expected_version=N)`` is refused with :class:`~longdoc.core.errors.DecisionConflict`
unless the item is still at version ``N``, so of two reviewers who saw version N only the first is
stored, and the second is told to reload. ``expected_version=None`` means "the item as first queued"
(version 0): it is stored only while the item has no decision; a decision without a version on an
item already decided is refused with :class:`DecisionConflict` naming who decided, at which version,
so that a second reviewer never replaces a first one silently. To supersede a decision, pass the
version you saw (``--version N``); both then stay in history, the later one in force.

Model output is never written here: items are snapshots of it, decisions are stored beside them, and
:meth:`ReviewService.reviewed_result` applies the latest decisions to a copy.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from longdoc.core.errors import CitationError, CorrectionNotVerbatim, DecisionConflict, InvalidDecision, NotFound
from longdoc.core.models import Chunk, DocumentRecord
from longdoc.core.ports import DecisionStore
from longdoc.core.records import Citation
from longdoc.core.reviews import Decision, DecisionRequest, ReviewItem, utc_now
from longdoc.extract.public import verify_citation
from longdoc.search.quotes import find_quotes
from longdoc.review.doctype import doc_type_of
from longdoc.review.items import current_value, items_of_result, reviewed_answer, with_history

DEFAULT_ACCEPT_THRESHOLD = 0.8
"""Confidence at or above which an item is auto-accepted (not queued); ``LONGDOC_REVIEW_ACCEPT_THRESHOLD``."""


@dataclass
class ReviewSources:
    """What the service reads besides its own store (each a callable, so the stores stay behind wiring).

    ``result(run_id)`` -> the run result dict (:func:`longdoc.extract.public.run_result`; raises NotFound);
    ``chunks(doc_id, doc_version)`` -> the version's chunks; ``document(doc_id, doc_version)`` -> its
    registry entry or None; ``run_ids()`` -> the runs :meth:`ReviewService.queue` looks at when given no
    run (locally every run; None: only runs already enqueued).
    """

    result: Callable[[str], dict[str, Any]]
    chunks: Callable[[str, str], list[Chunk]]
    document: Callable[[str, str], DocumentRecord | None]
    run_ids: Callable[[], list[str]] | None = None


@dataclass
class ReviewService:
    """Review over ``store`` (a :class:`~longdoc.core.ports.DecisionStore`) and ``sources``.

    ``threshold``: items with confidence below it are queued (possible omissions always are).
    ``clock`` gives decision times (UTC ISO 8601).
    """

    store: DecisionStore
    sources: ReviewSources
    threshold: float = DEFAULT_ACCEPT_THRESHOLD
    clock: Callable[[], str] = field(default=utc_now)

    # --- items ---------------------------------------------------------------------------------

    def enqueue(self, run_id: str) -> list[ReviewItem]:
        """Snapshot ``run_id``'s extractions as items (once; already stored ones are kept as they are).

        Returns the run's items with their status. Raises NotFound for an unknown run. A run that has
        not ended (``PENDING``/``RUNNING``) is not snapshotted (its answers may still change): [] then.
        """
        result = self.sources.result(run_id)
        if result.get("status") not in ("SUCCEEDED", "FAILED"):
            return []
        stored = self.store.list_items(run_id)
        if not stored and result.get("extractions"):
            chunks = self.sources.chunks(result["doc_id"], result.get("doc_version", ""))
            doc_type, inferred = doc_type_of(chunks, self.sources.document(result["doc_id"],
                                                                           result.get("doc_version", "")))
            self.store.put_items(items_of_result(result, doc_type, inferred))
            stored = self.store.list_items(run_id)
        return [self._with_history(i) for i in stored]

    def _with_history(self, item: ReviewItem) -> ReviewItem:
        return with_history(item, self.store.decisions(item.item_id))

    def items(self, run_id: str | None = None) -> list[ReviewItem]:
        """Every item (any status) of ``run_id`` or of every run (enqueueing the runs :class:`ReviewSources` lists)."""
        if run_id is not None:
            return self.enqueue(run_id)
        for rid in (self.sources.run_ids() if self.sources.run_ids else []):
            self.enqueue(rid)
        return [self._with_history(i) for i in self.store.list_items(None)]

    def queue(self, run_id: str | None = None, threshold: float | None = None) -> list[ReviewItem]:
        """Pending items needing a person: confidence below ``threshold`` (default the service's) or a
        possible omission; lowest confidence first (then possible omissions first, then item id)."""
        limit = self.threshold if threshold is None else threshold
        wanted = [i for i in self.items(run_id)
                  if i.status == "pending" and (i.kind == "possible_omission" or i.confidence < limit)]
        return sorted(wanted, key=lambda i: (i.confidence, i.kind != "possible_omission", i.item_id))

    def item(self, item_id: str) -> ReviewItem:
        """One item with its status and version. Raises NotFound naming the id."""
        stored = self.store.get_item(item_id)
        if stored is None:
            raise NotFound(f"review item {item_id!r} not found (no run has an item with that id)")
        return self._with_history(stored)

    def history(self, item_id: str) -> list[Decision]:
        """The item's decisions, oldest first. Raises NotFound for an unknown item."""
        self.item(item_id)
        return self.store.decisions(item_id)

    # --- decisions -----------------------------------------------------------------------------

    def decide(self, item_id: str, decision: DecisionRequest, expected_version: int | None = None) -> Decision:
        """Store one decision on ``item_id`` and return it (with its ``version``, time and replaced value).

        ``correct`` needs ``decision.quote``: it is verified verbatim in the document and located to
        its page as a model citation is (:func:`locate_span`); ``mark_present`` may carry one.
        ``mark_present`` is for a ``not_found``/possible-omission item only.
        Raises NotFound (unknown item), :class:`InvalidDecision` (also for an ``expected_version`` the item
        never had: negative or past its current one), :class:`CorrectionNotVerbatim` (span not in the
        document, or not on the page given; nothing stored) or :class:`DecisionConflict` (``expected_version``
        is an earlier version: another decision came first; or no ``expected_version`` on an item already
        decided, or a concurrent write of the same version: nothing stored).
        """
        item = self.item(item_id)
        if decision.action == "mark_present" and item.kind == "extraction":
            raise InvalidDecision(f"item {item_id} is a found clause: accept or correct it (mark_present is for "
                                  "a not_found or possible omission)")
        if decision.action == "correct" and not (decision.quote or "").strip():
            raise InvalidDecision(f"a correction of item {item_id} needs the quote of the right span")
        if expected_version is not None and not 0 <= expected_version <= item.version:
            raise InvalidDecision(f"item {item_id} has no version {expected_version}: its current version is "
                                  f"{item.version} (0 before any decision)")
        citation = None
        if (decision.quote or "").strip() and decision.action in ("correct", "mark_present"):
            citation = self.locate_span(item, decision.quote or "", decision.chunk_id, decision.page)
        history = self.store.decisions(item_id)
        if expected_version is None and item.version:
            last = history[-1] if history else None
            by = f" ({last.action} by {last.reviewer} at {last.at})" if last else ""
            raise DecisionConflict(f"item {item_id} is already decided at version {item.version}{by}: to "
                                   f"replace that decision, decide again with version {item.version} "
                                   f"(--version {item.version}); nothing stored")
        if expected_version is not None and item.version != expected_version:
            raise DecisionConflict(f"item {item_id} is at version {item.version}, not {expected_version}: "
                                   "another decision came first; reload it and decide again")
        stored = Decision(item_id=item_id, run_id=item.run_id, version=item.version + 1, action=decision.action,
                          reviewer=decision.reviewer, at=self.clock(), replaces=current_value(item, history),
                          citation=citation, note=decision.note)
        return self.store.append_decision(stored)

    def locate_span(self, item: ReviewItem, quote: str, chunk_id: str | None, page: int | None) -> Citation:
        """A reviewer's span as a verified citation of ``item``'s document version.

        With ``chunk_id``: that chunk must hold ``quote`` verbatim (the model citations' rule,
        :func:`longdoc.extract.public.verify_citation`). Without it: the chunks covering ``page`` (every
        chunk when ``page`` is None) are tried in order, one that puts the quote on ``page`` first.
        Raises :class:`CorrectionNotVerbatim` naming the document, chunk or page and the problem, and
        :class:`InvalidDecision` for a span too short or not pinned down (:func:`_check_span`).
        """
        chunks = {c.chunk_id: c for c in self.sources.chunks(item.doc_id, item.doc_version)}
        where = f"document {item.doc_id}@{item.doc_version}"
        _check_span(quote, chunk_id, page, chunks, where)
        if chunk_id:
            try:
                return verify_citation(Citation(chunk_id=chunk_id, page=page, quote=quote), chunks)
            except CitationError as exc:
                raise CorrectionNotVerbatim(f"correction refused for {where}: {exc}") from None
        candidates = [c for c in chunks.values() if page is None or (c.page_start or 0) <= page <= (c.page_end or 0)]
        found: list[Citation] = []
        problem = "the quote is not verbatim in any chunk"
        for chunk in candidates:
            try:
                found.append(verify_citation(Citation(chunk_id=chunk.chunk_id, page=page, quote=quote), chunks))
            except CitationError as exc:
                if "not found verbatim" not in str(exc):
                    problem = str(exc)
        if not found and page is not None:
            elsewhere = sorted({c.page or 0 for c in self._anywhere(quote, chunks)} - {0})
            if elsewhere:
                raise CorrectionNotVerbatim(f"correction refused for {where}: {quote[:80]!r} is not on page {page} "
                                            f"(found on page {', '.join(map(str, elsewhere))})")
        if not found:
            on = f" on page {page}" if page is not None else ""
            raise CorrectionNotVerbatim(f"correction refused for {where}{on}: {problem}: {quote[:80]!r}")
        return next((c for c in found if page is None or c.page == page), found[0])

    @staticmethod
    def _anywhere(quote: str, chunks: dict[str, Chunk]) -> list[Citation]:
        """The quote verified in every chunk that holds it (page resolved), in chunk order."""
        out = []
        for chunk in chunks.values():
            try:
                out.append(verify_citation(Citation(chunk_id=chunk.chunk_id, quote=quote), chunks))
            except CitationError:
                continue
        return out

    # --- results and gold ----------------------------------------------------------------------

    def reviewed_result(self, run_id: str) -> dict[str, Any]:
        """The run result (model output, unchanged under ``extractions``) plus ``reviewed_extractions``
        (the latest decisions applied, one per item: :func:`longdoc.review.items.reviewed_answer`) and
        ``review``: ``{"items", "reviewed": [item ids], "pending", "by_status", "threshold"}``.
        Raises NotFound for an unknown run."""
        result = self.sources.result(run_id)
        items = {i.item_id: i for i in self.enqueue(run_id)}
        model = _by_place(result.get("extractions") or [])
        answers = [reviewed_answer(i, model[(i.clause_type, i.index)], self.store.decisions(i.item_id))
                   for i in sorted(items.values(), key=lambda i: list(model).index((i.clause_type, i.index))
                                   if (i.clause_type, i.index) in model else len(model))
                   if (i.clause_type, i.index) in model]
        by_status: dict[str, int] = {}
        for i in items.values():
            by_status[i.status] = by_status.get(i.status, 0) + 1
        return {**result, "reviewed_extractions": answers,
                "review": {"items": len(items), "reviewed": [a["item_id"] for a in answers if a["reviewed"]],
                           "pending": by_status.get("pending", 0), "by_status": by_status, "threshold": self.threshold}}

    def export_gold(self, path: Path, run_ids: list[str] | None = None, corpus: Path | None = None,
                    on_conflict: str = "latest") -> dict[str, Any]:
        """Write the reviewed items of ``run_ids`` (every enqueued run when None) as gold JSONL at ``path``.

        Format of ``shared/gold/README.md`` (:func:`longdoc.review.gold.gold_case`), written whole through
        a temporary file (a failed export leaves any earlier file as it was). ``corpus``: document paths
        are written relative to it (found under it by name or content hash). ``on_conflict`` (``latest``/``skip``):
        contradictory labels, :func:`longdoc.review.gold.resolve_conflicts`. Returns :func:`~longdoc.review.gold.write_gold`'s
        summary (``path``, ``written``, ``left_out``, ``not_in_corpus``, ``conflicts``).
        """
        from longdoc.review.gold import write_gold

        items = [i for rid in run_ids for i in self.enqueue(rid)] if run_ids else self.items(None)
        return write_gold(path, [(i, self.store.decisions(i.item_id)) for i in items],
                          lambda i: self.sources.document(i.doc_id, i.doc_version), corpus, on_conflict)


MIN_CORRECTION_CHARS = 12
"""Shortest reviewer span (characters, whitespace collapsed) unless it is an exact value (holds a digit:
a date, amount, percentage, count): ``"the"`` says nothing about where the clause is (ours)."""


def _check_span(quote: str, chunk_id: str | None, page: int | None, chunks: dict[str, Chunk], where: str) -> None:
    """Refuse a span that is too short (under :data:`MIN_CORRECTION_CHARS`, no digit) or that occurs in more
    than one place of the document when neither a chunk nor a page pins it. Raises :class:`InvalidDecision`."""
    text = " ".join(quote.split())
    if len(text) < MIN_CORRECTION_CHARS and not re.search(r"\d", text):
        raise InvalidDecision(f"correction refused for {where}: {text!r} is {len(text)} characters; a span needs "
                              f"at least {MIN_CORRECTION_CHARS} (or an exact value: a date, amount or number)")
    if chunk_id or page is not None:
        return
    places = {c.char_start + start for c in chunks.values() for start, _ in find_quotes(c.text, quote)}
    if len(places) > 1:
        raise InvalidDecision(f"correction refused for {where}: {text[:80]!r} occurs in {len(places)} places; "
                              "give its page or chunk id, or select a longer span")


def _by_place(extractions: list[dict[str, Any]]) -> dict[tuple[str, int], dict[str, Any]]:
    """The result's extractions by ``(clause_type, n-th of that clause type)``, in result order (item places)."""
    out: dict[tuple[str, int], dict[str, Any]] = {}
    counts: dict[str, int] = {}
    for e in extractions:
        k = counts.get(e["clause_type"], 0)
        counts[e["clause_type"]] = k + 1
        out[(e["clause_type"], k)] = e
    return out
