"""Wordings of one line of business whose effective periods overlap: found at ingest, shown by ``collections show``.

The design is one wording per line of business per date (:mod:`longdoc.triage.terms`;
docs/triage.md: a reissue is a new document with a new term). Two wordings of
the same collection and line in force on one date make triage of a claim with that loss date fail
("two overlapping", naming both). Ingest does not refuse the second wording (which of the two is
wrong, and the fix may be the other's dates, is the operator's call, and refusing would make the
order of uploads decide), but says so at once, naming both documents and the dates they share, and
``longdoc collections show SET`` lists every overlap. Endorsements are never counted (they are in
force beside their wording by design), nor versions of one document (a collection holds each
document's latest ``READY`` version only).
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import combinations

from longdoc.core.errors import UnknownCollection
from longdoc.core.ports import StateStore
from longdoc.triage.collections import Member, load_collection
from longdoc.triage.terms import period


@dataclass(frozen=True)
class Overlap:
    """Two wordings of ``line_of_business`` both in force from ``start`` to ``end`` (ISO dates, both ends
    included; None: open at that end, as the wordings' own periods are)."""

    collection: str
    line_of_business: str
    first: Member
    second: Member
    start: str | None
    end: str | None

    @property
    def doc_ids(self) -> tuple[str, str]:
        """The two wordings' doc_ids, sorted."""
        return self.first.doc_id, self.second.doc_id

    def dates(self) -> str:
        """``2024-06-01..2024-12-31`` (``..`` with an open end)."""
        return f"{self.start or ''}..{self.end or ''}"

    def message(self) -> str:
        """One line naming both wordings, their periods and the shared dates, and what it breaks."""
        def label(m: Member) -> str:
            start, end = period(m)
            return f"{m.doc_id} ({start or ''}..{end or ''})"

        return (f"{self.line_of_business} wordings {label(self.first)} and {label(self.second)} of collection "
                f"{self.collection!r} are both in force {self.dates()}: triage of a {self.line_of_business} claim "
                f"with a loss date in that range fails until their effective dates are fixed (one wording per "
                f"line of business per date; a reissue's old term ends the day before the new one starts)")

    def as_json(self) -> dict[str, object]:
        """``{"line_of_business", "doc_ids": [a, b], "from", "to"}`` (``from``/``to`` None: open)."""
        return {"line_of_business": self.line_of_business, "doc_ids": list(self.doc_ids),
                "from": self.start, "to": self.end}


def _shared(a: Member, b: Member) -> tuple[bool, str | None, str | None]:
    """Whether the periods of ``a`` and ``b`` share a date, and the shared range (None: open)."""
    (a_start, a_end), (b_start, b_end) = period(a), period(b)
    if not any((a_start, a_end)) or not any((b_start, b_end)):
        return False, None, None  # an undated wording is never in force (terms.in_force)
    starts = [d for d in (a_start, b_start) if d is not None]
    ends = [d for d in (a_end, b_end) if d is not None]
    start, end = (max(starts) if starts else None), (min(ends) if ends else None)
    return (start is None or end is None or start <= end), start, end


def find_overlaps(collection: str, members: list[Member]) -> list[Overlap]:
    """Every pair of wordings (not endorsements) of one line of business (compared case-insensitively,
    surrounding space ignored, as triage compares them; named lower-case when the two spell it differently)
    whose periods share a date, sorted by line and doc_ids.

    ``members`` as :func:`~longdoc.triage.collections.load_collection` returns them. Periods come from
    :func:`~longdoc.triage.terms.period` (effective dates, else an ISO-interval ``term``).
    """
    wordings = sorted((m for m in members if not m.is_endorsement and m.line_of_business),
                      key=lambda m: m.doc_id)
    found = []
    for a, b in combinations(wordings, 2):
        if a.doc_id == b.doc_id or (a.line_of_business or "").strip().lower() != (b.line_of_business or "").strip().lower():
            continue
        shared, start, end = _shared(a, b)
        if shared:
            line_a, line_b = (a.line_of_business or "").strip(), (b.line_of_business or "").strip()
            found.append(Overlap(collection, line_a if line_a == line_b else line_a.lower(), a, b, start, end))
    return sorted(found, key=lambda o: (o.line_of_business.lower(), o.doc_ids))


def overlaps_of(state: StateStore, collection: str | None, doc_id: str) -> list[Overlap]:
    """The overlaps in ``collection`` that involve ``doc_id`` (just ingested): what ingest warns about.

    Empty when ``collection`` is None or holds no READY document (nothing to compare). Reads the
    collection as triage does (:func:`~longdoc.triage.collections.load_collection`).
    """
    if not collection:
        return []
    try:
        members = load_collection(state, collection)
    except UnknownCollection:
        return []
    return [o for o in find_overlaps(collection.strip(), members) if doc_id in o.doc_ids]


def missing_wording(state: StateStore, collection: str | None, endorses: str | None) -> str | None:
    """The warning for an endorsement whose wording is not in its collection, or None.

    ``endorses`` is the endorsement's ``endorses`` doc_id, ``collection`` its collection. Such an
    endorsement is ingested (its wording may arrive next) but never ranked until a wording with that
    doc_id is ``READY`` in the same collection (``collections show`` lists it as an orphan meanwhile).
    """
    if not collection or not endorses:
        return None
    try:
        members = load_collection(state, collection)
    except UnknownCollection:
        members = []
    if any(m.doc_id == endorses and not m.is_endorsement for m in members):
        return None
    return (f"endorses '{endorses}', which is not a wording of collection '{collection.strip()}' (not ingested yet, "
            "misspelt, or in another collection): triage leaves this endorsement out until that wording is ingested "
            "into the collection")
