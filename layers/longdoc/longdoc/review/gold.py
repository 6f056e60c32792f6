"""Reviewed items as gold cases, in the format of ``shared/gold/README.md`` (one JSON object per line).

What a decision says about the truth (the label), by item kind:

============================  ===========================================  ====================
decision                      extraction (model said found)                not_found / possible omission
============================  ===========================================  ====================
accept                        found, the model's quote is the snippet      not_found
correct                       found, the corrected quote is the snippet    found, that quote
mark_present (with a span)    -                                            found, that quote
mark_absent                   not_found (the model invented it)            not_found
reject                        left out: the truth is unknown (no span)     left out
mark_present without a span   -                                            left out (no snippet)
============================  ===========================================  ====================

Each case also carries the model's own answer (``model_status``, ``model_quote``, ``model_page``) and
the review (``item_id``, ``run_id``, ``decision``, ``reviewer``, ``reviewed_at``), extra fields that
``longdoc eval extraction`` ignores and ``longdoc eval accuracy`` scores.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable, Sequence
from pathlib import Path, PurePosixPath
from typing import Any

from longdoc.core.models import DocumentRecord
from longdoc.core.reviews import Decision, ReviewItem
from longdoc.review.doctype import doc_type_of


def label(item: ReviewItem, decisions: list[Decision]) -> tuple[str, str | None, int | None, str | None] | str:
    """``(expected, snippet, page, section_id)`` the latest decision establishes, or the reason it gives none."""
    if not decisions:
        return "pending"
    latest = decisions[-1]
    if latest.action == "reject":
        return "rejected (truth unknown: correct it or mark it absent)"
    if latest.action == "mark_absent":
        return ("not_found", None, None, None)
    if latest.citation is not None:
        return ("found", latest.citation.quote, latest.citation.page, latest.citation.section_id)
    if latest.action == "mark_present":
        return "marked present without a span"
    if item.kind == "extraction":
        return ("found", item.quote, item.page, item.section_id)
    return ("not_found", None, None, None)


class CorpusIndex:
    """Finds an ingested document's file under a gold corpus folder, to name it as gold does.

    Gold ``doc`` paths are relative to the corpus (``cuad/x.pdf``); a document ingested from elsewhere
    (another folder, a bare file name, an S3 key) is found under ``corpus`` by its file name, several
    files of that name told apart by SHA-256 of their bytes (the record's ``content_sha256``), and
    failing the name, by that hash among the corpus files of the same suffix. Files are hashed
    at most once per export.
    """

    def __init__(self, corpus: Path) -> None:
        self.root = Path(corpus).resolve()
        self._files: list[Path] | None = None
        self._hashes: dict[Path, str] = {}

    def _all(self) -> list[Path]:
        if self._files is None:
            self._files = sorted(p for p in self.root.rglob("*") if p.is_file())
        return self._files

    def _sha(self, path: Path) -> str:
        if path not in self._hashes:
            digest = hashlib.sha256()
            with path.open("rb") as fh:
                for block in iter(lambda: fh.read(1 << 20), b""):
                    digest.update(block)
            self._hashes[path] = digest.hexdigest()
        return self._hashes[path]

    def find(self, source: str, sha256: str = "") -> str | None:
        """``source``'s path relative to the corpus (POSIX separators), or None when it is not there."""
        try:
            return Path(source).resolve().relative_to(self.root).as_posix()
        except (ValueError, OSError):
            pass
        name = PurePosixPath(source.replace("\\", "/")).name
        named = [p for p in self._all() if p.name == name]
        if len(named) > 1 and sha256:
            named = [p for p in named if self._sha(p) == sha256] or named
        if not named and sha256:
            suffix = PurePosixPath(name).suffix.lower()
            named = [p for p in self._all() if p.suffix.lower() == suffix and self._sha(p) == sha256]
        return named[0].relative_to(self.root).as_posix() if named else None


def _doc_path(record: DocumentRecord | None, item: ReviewItem, corpus: CorpusIndex | None) -> tuple[str, bool]:
    """The document's path as gold names it (relative to ``corpus`` when found there, else as ingested)
    and whether it was found under the corpus."""
    source = record.source if record else item.doc_id
    if corpus is not None:
        found = corpus.find(source, record.content_sha256 if record else "")
        if found is not None:
            return found, True
    return source, False


def gold_case(item: ReviewItem, decisions: list[Decision], record: DocumentRecord | None,
              corpus: CorpusIndex | None = None) -> dict[str, Any] | str:
    """One gold case (a dict) for a reviewed item, or the reason it is left out (a str; :func:`label`)."""
    got = label(item, decisions)
    if isinstance(got, str):
        return got
    expected, snippet, page, section = got
    latest = decisions[-1]
    doc, _ = _doc_path(record, item, corpus)
    doc_type, inferred = item.doc_type, item.doc_type_inferred
    if not doc_type:  # an item stored before doc types were inferred: the record's, else the gold path's kind
        doc_type, inferred = doc_type_of([], record, doc)
    return {"case_id": f"review-{item.item_id}", "doc": doc, "doc_type": doc_type, "doc_type_inferred": inferred,
            "page_count": record.pages if record else None, "clause_type": item.clause_type, "question": "",
            "expected": expected, "snippets": [snippet] if snippet else [],
            "pages": [page] if page is not None else [], "section_ids": [section] if section else [],
            "exact_values": [], "source": f"longdoc review by {latest.reviewer} at {latest.at}",
            "item_id": item.item_id, "run_id": item.run_id, "doc_id": item.doc_id, "doc_version": item.doc_version,
            "kind": item.kind, "decision": latest.action, "reviewer": latest.reviewer, "reviewed_at": latest.at,
            "model_status": "found" if item.kind == "extraction" else "not_found", "model_quote": item.quote,
            "model_page": item.page if item.kind == "extraction" else None, "confidence": item.confidence}


ON_CONFLICT = ("latest", "skip")
"""Choices for contradictory labels: keep the latest decision's label (default), or leave the pair out."""


def resolve_conflicts(cases: list[dict[str, Any]], on_conflict: str = "latest") -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Find contradictory labels and settle them: ``(cases kept, conflicts)``.

    A conflict is one document (gold ``doc``) x clause type labelled ``found`` by one reviewed item and
    ``not_found`` by another (two runs over the same document, reviewed differently). ``latest`` keeps
    the cases that agree with the most recent decision (``reviewed_at``, then item id) and drops the
    others; ``skip`` drops every case of the pair. Each conflict is ``{"doc", "clause_type", "kept":
    expected or None, "cases": [{"item_id", "run_id", "expected", "decision", "reviewer", "reviewed_at"}]}``.
    Raises ``ValueError`` for an ``on_conflict`` outside :data:`ON_CONFLICT`.
    """
    if on_conflict not in ON_CONFLICT:
        raise ValueError(f"on_conflict must be one of {', '.join(ON_CONFLICT)}, not {on_conflict!r}")
    groups: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for case in cases:
        groups.setdefault((case["doc"], case["clause_type"]), []).append(case)
    dropped: set[str] = set()
    conflicts: list[dict[str, Any]] = []
    for (doc, clause), group in groups.items():
        if len({c["expected"] for c in group}) < 2:
            continue
        latest = max(group, key=lambda c: (c["reviewed_at"], c["item_id"]))
        kept = latest["expected"] if on_conflict == "latest" else None
        dropped |= {c["case_id"] for c in group if c["expected"] != kept}
        conflicts.append({"doc": doc, "clause_type": clause, "kept": kept, "cases": [
            {k: c[k] for k in ("item_id", "run_id", "expected", "decision", "reviewer", "reviewed_at")}
            for c in sorted(group, key=lambda c: (c["reviewed_at"], c["item_id"]))]})
    return [c for c in cases if c["case_id"] not in dropped], conflicts


def write_gold(path: Path, reviewed: Sequence[tuple[ReviewItem, list[Decision]]],
               document: Callable[[ReviewItem], DocumentRecord | None], corpus: Path | None = None,
               on_conflict: str = "latest") -> dict[str, Any]:
    """Write the gold cases of ``reviewed`` (items with their decisions) to ``path``, whole or not at all.

    ``corpus``: the folder ``longdoc eval extraction --corpus`` will be given; each document is written
    relative to it (:class:`CorpusIndex`), so the export is scored there unchanged.
    ``on_conflict``: what to do with contradictory labels (:func:`resolve_conflicts`).
    Returns ``{"path", "written", "left_out": {reason: count}, "not_in_corpus": [sources], "conflicts"}`` (pending
    items counted as ``pending``; ``not_in_corpus``: documents a ``corpus`` was given for but that are
    not found under it, written as ingested). Raises ``OSError`` when ``path``'s folder cannot be written (any earlier file is left as it was).
    """
    cases: list[dict[str, Any]] = []
    left_out: dict[str, int] = {}
    records: dict[tuple[str, str], DocumentRecord | None] = {}
    index = CorpusIndex(corpus) if corpus is not None else None
    missing: list[str] = []
    for item, decisions in reviewed:
        key = (item.doc_id, item.doc_version)
        if key not in records:
            records[key] = document(item)
            if index is not None:
                doc, found = _doc_path(records[key], item, index)
                if not found and doc not in missing:
                    missing.append(doc)
        case = gold_case(item, decisions, records[key], index)
        if isinstance(case, str):
            left_out[case] = left_out.get(case, 0) + 1
        else:
            cases.append(case)
    cases, conflicts = resolve_conflicts(cases, on_conflict)
    lines = [json.dumps(case, ensure_ascii=False) for case in cases]
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    os.replace(tmp, path)
    return {"path": str(path), "written": len(lines), "left_out": left_out, "not_in_corpus": missing,
            "conflicts": conflicts}
