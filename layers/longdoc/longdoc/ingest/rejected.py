"""A document rejected before anything was stored for it: its version recorded ``FAILED`` with the reason.

Shared by the pipeline (a bad file or bad metadata found while parsing, :mod:`longdoc.ingest.pipeline`)
and the local runner (a bad sidecar found before the file is staged, :mod:`longdoc.local.ingest_runner`),
so ``longdoc chunks`` and the registry say why whichever found it (docs/extraction.md, "The CLI": a rejected file's
version is recorded ``FAILED`` with the reason).
"""

from __future__ import annotations

from longdoc.core.clock import utc_now
from longdoc.core.models import DocumentRecord
from longdoc.core.ports import StateStore
from longdoc.ingest.source import IngestSource


def record_rejected(state: StateStore, source: IngestSource, reason: str,
                    existing: DocumentRecord | None) -> DocumentRecord | None:
    """Record ``source``'s version ``FAILED`` with ``reason`` (one line naming the file or sidecar and the problem).

    ``existing`` is the version's entry as read before (None: not registered); the write is
    conditional on it, so another write since (a removal's ``DELETED`` mark) is left as it is.
    A version already ``READY`` is never overwritten (nothing already stored is lost: its chunks,
    vectors and metadata stay, and a failed re-ingest never hides a good version). Returns the
    record written, or None when nothing was written.
    """
    if existing is not None and existing.status == "READY":
        return None
    record = DocumentRecord(doc_id=source.doc_id, doc_version=source.version, source=source.name, status="FAILED",
                            reason=reason, content_sha256=source.sha256, source_key=source.key, updated_at=utc_now())
    return state.replace_document(record, existing)
