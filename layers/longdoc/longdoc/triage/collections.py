"""Policy sets: documents grouped by their ``collection`` metadata, wordings and their endorsements.

A document belongs to a collection through its metadata (sidecar or S3 object metadata,
:class:`~longdoc.core.models.DocumentMetadata`): ``collection``, ``line_of_business``,
``term``, ``effective_from`` / ``effective_to`` (ISO dates, both ends in force) and, for an
endorsement, ``endorses`` (the doc_id of the wording it amends). Membership is read from the
collection index the state store writes with each document entry at ingest
(:meth:`~longdoc.core.ports.StateStore.collection_members`: one Query, never a Scan of the
table), then each member's latest ``READY`` version (a failed re-ingest never hides a good
one; a member since re-ingested into another collection is left out). Documents ingested
before the index existed are indexed by :func:`reindex` (``longdoc admin reindex-collections``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from longdoc.core.documents import ready_document
from longdoc.core.errors import ConfigError, UnknownCollection
from longdoc.core.models import DocumentRecord
from longdoc.core.ports import StateStore


@runtime_checkable
class DocumentLister(Protocol):
    """A registry that can list its document ids (SQLite and DynamoDB state stores; the backfill only)."""

    def list_document_ids(self) -> list[str]:
        """Every registered doc_id, sorted."""
        ...


@dataclass(frozen=True)
class Member:
    """One READY document of a collection, with the metadata triage reads.

    ``effective_from`` / ``effective_to`` are ISO dates (``None``: open at that end);
    ``endorses`` is the wording's doc_id for an endorsement, ``None`` for a wording.
    """

    doc_id: str
    doc_version: str
    source: str
    line_of_business: str | None
    term: str | None
    effective_from: str | None
    effective_to: str | None
    endorses: str | None
    chunks: int

    @property
    def is_endorsement(self) -> bool:
        """True when the document amends another (``endorses`` set)."""
        return self.endorses is not None

    def period(self) -> str:
        """``2023-01-01..2023-12-31`` (``..`` with an open end)."""
        return f"{self.effective_from or ''}..{self.effective_to or ''}"

    @classmethod
    def from_record(cls, record: DocumentRecord) -> "Member":
        """The member for a registry record (its metadata as ingested)."""
        meta = record.metadata
        return cls(record.doc_id, record.doc_version, record.source, meta.line_of_business, meta.term,
                   meta.effective_from, meta.effective_to, meta.endorses, record.chunks)


def _members(state: StateStore, name: str) -> list[DocumentRecord]:
    """The latest READY record of each indexed member of ``name`` still in that collection."""
    records = (ready_document(state, doc_id) for doc_id in state.collection_members(name))
    return [r for r in records if r is not None and r.status == "READY" and (r.metadata.collection or "") == name]


def collection_names(state: StateStore) -> dict[str, int]:
    """Every collection name with its number of READY documents, sorted by name (empty ones left out)."""
    counts = {name: len(_members(state, name)) for name in state.collection_names()}
    return {name: n for name, n in sorted(counts.items()) if n}


def reindex(state: StateStore) -> dict[str, int]:
    """Index every registered document's collection (its latest READY version's metadata): the
    one-off backfill for documents ingested before the index existed. Lists the registry
    (:class:`DocumentLister`: a Scan on DynamoDB, run with operator credentials, not by the API).
    Returns ``{"documents", "indexed"}``. Raises :class:`ConfigError` for a store that cannot list."""
    if not isinstance(state, DocumentLister):
        raise ConfigError(f"{type(state).__name__} cannot list documents (no list_document_ids)")
    ids = state.list_document_ids()
    indexed = 0
    for doc_id in ids:
        record = ready_document(state, doc_id)
        if record is not None and record.metadata.collection:
            state.index_collection_member(record.metadata.collection, doc_id)
            indexed += 1
    return {"documents": len(ids), "indexed": indexed}


def load_collection(state: StateStore, name: str) -> list[Member]:
    """The READY members of collection ``name`` (sorted by line of business, start date, doc_id).

    Collection names compare exactly after stripping spaces. Raises :class:`UnknownCollection`
    (listing the known names) when no READY document carries it.
    """
    members = [Member.from_record(r) for r in _members(state, name.strip())]
    if not members:
        raise UnknownCollection(name, sorted(collection_names(state)))
    return sorted(members, key=lambda m: (m.line_of_business or "", m.effective_from or "", m.doc_id))


def describe(name: str, members: list[Member]) -> dict[str, Any]:
    """The collection as JSON: wordings by line of business and term, endorsements under their wording.

    ``{"collection", "lines_of_business": {lob: [{"doc_id", "term", "effective_from",
    "effective_to", "chunks", "endorsements": [...]}]}, "orphans": [...]}``; ``orphans`` are
    endorsements whose wording is not in the collection (they are never ranked).
    """
    wordings = [m for m in members if not m.is_endorsement]
    ids = {m.doc_id for m in wordings}
    lines: dict[str, list[dict[str, Any]]] = {}
    for wording in wordings:
        row = _member_json(wording)
        row["endorsements"] = [_member_json(e) for e in members if e.endorses == wording.doc_id]
        lines.setdefault(wording.line_of_business or "-", []).append(row)
    orphans = [_member_json(m) for m in members if m.is_endorsement and m.endorses not in ids]
    return {"collection": name, "lines_of_business": lines, "orphans": orphans}


def _member_json(member: Member) -> dict[str, Any]:
    return {"doc_id": member.doc_id, "doc_version": member.doc_version, "term": member.term,
            "effective_from": member.effective_from, "effective_to": member.effective_to,
            "endorses": member.endorses, "chunks": member.chunks, "source": member.source}
