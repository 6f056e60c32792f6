"""One local ingest as AWS runs it: stage the file (and its sidecar) in the bucket, run the handler.

Shared by ``longdoc ingest`` and ``longdoc watch``. A folder has no object metadata, so
the sidecar alone is the document metadata; it is checked before anything is stored, so
a bad value fails naming its field even when the bytes are an already READY version
(which the handler would leave as it is, and acknowledge); a version not READY is then
recorded FAILED with that reason, as the handler records it on AWS. While another process holds
the version's ingest claim (:mod:`longdoc.ingest.lease`: two ``longdoc ingest`` of one
file at once), the handler acknowledges without doing anything; here we wait for that
process and ask again, so every caller ends with the version's real outcome. A claim left
by a process that is gone (a ``longdoc ingest`` killed with ``kill -9``) is taken over at
once by the local store; :attr:`LocalIngest.took_over_from` names it.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from longdoc.core.documents import INCOMING_PREFIX
from longdoc.core.errors import DocumentError
from longdoc.core.models import DocumentRecord
from longdoc.ingest.lease import claim_holder_gone
from longdoc.ingest.ids import resolve_doc_id, version_for
from longdoc.ingest.metadata import METADATA_SUFFIX, document_metadata, sidecar_key, sidecar_values
from longdoc.ingest.rejected import record_rejected
from longdoc.ingest.source import IngestSource
from longdoc.local.lambda_runtime import batch_failure_reason, load_handler, s3_event_for

CLAIM_WAIT_SECONDS = 1800.0
"""Longest wait, in seconds, for another process's ingest of the same version."""

RETRY_SECONDS = 15.0
"""Seconds between handler calls while another process holds the claim (the registry is polled in between)."""


@dataclass(frozen=True)
class LocalIngest:
    """What one local ingest did.

    ``record`` is this version's registry entry afterwards (None if never registered),
    ``before`` the same version's entry before the call (``before.status == "READY"``: a
    no-op or a metadata rewrite), ``previous`` the document's latest version before the
    call, and ``failure`` the reason when the handler reported the message for
    redelivery (a transient error), else None. ``waited`` is True when another process
    held the version's claim for a while. ``took_over_from`` is the claim owner
    (``host:pid:hex``) whose process was gone when this ingest took its live claim over
    at once (:func:`~longdoc.ingest.lease.claim_holder_gone`), else None.
    """

    doc_id: str
    doc_version: str
    record: DocumentRecord | None
    before: DocumentRecord | None
    previous: DocumentRecord | None
    failure: str | None = None
    waited: bool = False
    took_over_from: str | None = None

    @property
    def change(self) -> str:
        """What the ingest did to a version it left READY, from ``before`` and ``record``.

        ``"ingested"`` (not READY before), ``"re-chunked"`` (READY, chunked otherwise now: its
        metadata selects another chunk profile, :mod:`longdoc.ingest.profiles`), ``"metadata
        updated"`` (READY, same chunking, other metadata: its chunks rewritten in place) or
        ``"unchanged"`` (the same bytes and metadata again: a no-op). Meaningful only when
        ``record`` is READY.
        """
        before, after = self.before, self.record
        if before is None or before.status != "READY" or after is None:
            return "ingested"
        if before.chunking != after.chunking:
            return "re-chunked"
        return "metadata updated" if before.metadata != after.metadata else "unchanged"


def stage(key: str, data: bytes, sidecar: bytes | None) -> None:
    """Check the sidecar, then put it (or delete a stale one) and ``data`` into the blob store under ``key``.

    Raises :class:`~longdoc.core.errors.DocumentError` naming the field and the sidecar for
    a bad metadata value, before anything is stored.
    """
    from longdoc import wiring

    document_metadata(key, {}, sidecar)
    blobs = wiring.blob_store()
    if sidecar is not None:  # uploaded first, as on S3, so the handler finds it
        blobs.put(sidecar_key(key), sidecar)
    else:  # a sidecar removed since the last ingest no longer applies
        blobs.delete(sidecar_key(key))
    blobs.put(key, data)


def reject(key: str, data: bytes, sidecar: bytes | None, reason: str) -> DocumentRecord | None:
    """Record the version of ``data`` at ``key`` ``FAILED`` with ``reason`` (a bad sidecar, found before staging).

    As the handler records a document rejected on AWS (:func:`~longdoc.ingest.rejected.record_rejected`),
    so ``longdoc chunks`` says why; a version already ``READY`` keeps its chunks and metadata
    (nothing stored is lost). Returns the record written, or None when none was.
    """
    from longdoc import wiring

    state = wiring.state_store()
    source = IngestSource(key=key, data=data, sidecar=sidecar, doc_id=resolve_doc_id(key, state))
    return record_rejected(state, source, reason, state.get_document(source.doc_id, source.version))


def _claimed_elsewhere(response: dict[str, Any], record: DocumentRecord | None, holder: str | None) -> bool:
    """An acknowledged delivery that left the version unfinished: another process holds its claim.

    ``holder`` is the version's claim owner after the delivery (this delivery's own claim is released
    by then): a ``READY`` version with a live claim is being re-chunked elsewhere (it stays ``READY``
    while the new chunk texts embed, :mod:`longdoc.ingest.rechunk`), so this file's metadata is not
    applied yet, whatever the ``READY`` entry says.
    """
    if response.get("batchItemFailures"):
        return False
    return record is None or record.status == "INGESTING" or holder is not None


def _wait_for_change(doc_id: str, version: str, seen: DocumentRecord | None, seconds: float) -> None:
    """Poll the registry every 0.5 s for up to ``seconds`` until the version's status or progress changes."""
    from longdoc import wiring

    end = time.monotonic() + seconds
    while time.monotonic() < end:
        time.sleep(0.5)
        state = wiring.state_store()
        now = state.get_document(doc_id, version)
        if now is not None and (seen is None or now.status != seen.status):
            return
        if now is not None and now.status == "READY" and state.version_claim_owner(doc_id, version) is None:
            return  # a re-chunk elsewhere ended (it stayed READY throughout)


def read_sidecar(path: Path) -> bytes | None:
    """The bytes of the sidecar ``<path>.metadata.json`` beside a local file, or None when it has none.

    A file name within the file system's limit (255 bytes a name on ext4, APFS and NTFS) but
    too long to take the 14-byte suffix cannot have a sidecar: None, not ``ENAMETOOLONG``.
    Other read errors propagate (``OSError``).
    """
    from longdoc.core.paths import too_long_is_absent

    sidecar = path.with_name(path.name + METADATA_SUFFIX)
    return too_long_is_absent(lambda: sidecar.read_bytes() if sidecar.is_file() else None, None)


def endorsement_last(path: Path) -> bool:
    """Sort key putting endorsements after wordings: True when ``path``'s sidecar names an ``endorses``.

    ``longdoc ingest`` and ``watch`` take the files of one command or scan wordings first, so an
    endorsement whose wording comes in the same batch finds it already in the collection (no
    "endorses a missing wording" warning for ``ingest set/*``). A sidecar that cannot be read or is
    not a JSON object sorts as a wording: its error is reported when the file is ingested.
    """
    try:  # the metadata module's own reading: UTF-8 with or without a BOM, a JSON object
        meta = sidecar_values(path.name, read_sidecar(path))
    except (OSError, DocumentError):
        return False
    return any(str(k).strip().lower().replace("-", "_") == "endorses" and v for k, v in meta.items())


def ingest_file(name: str, data: bytes, sidecar: bytes | None, *, wait_seconds: float = CLAIM_WAIT_SECONDS,
                on_wait: Callable[[], None] = lambda: None) -> LocalIngest:
    """Ingest one file's ``data`` as ``incoming/{name}`` (``name`` may hold ``/``) through the real handler.

    ``sidecar`` is the bytes of ``<file>.metadata.json`` or None. ``on_wait()`` runs once
    when another process turns out to hold the version's claim; after ``wait_seconds``
    the last outcome is returned as it is (the version still ``INGESTING``). Raises
    :class:`~longdoc.core.errors.DocumentError` for a bad sidecar: nothing is staged, and the
    version is recorded ``FAILED`` with the reason unless it is already ``READY`` (:func:`reject`).
    """
    from longdoc import wiring
    from longdoc.local.engine import LocalContext

    key = INCOMING_PREFIX + name
    state = wiring.state_store()
    try:
        stage(key, data, sidecar)
    except DocumentError as exc:
        reject(key, data, sidecar, exc.reason)
        raise
    doc_id, version = resolve_doc_id(key, state), version_for(data)
    previous, before = state.get_document(doc_id), state.get_document(doc_id, version)
    holder = state.version_claim_owner(doc_id, version)
    gone = holder if holder is not None and claim_holder_gone(holder) else None
    module = load_handler("ingest")
    deadline = time.monotonic() + wait_seconds
    waited = False
    while True:
        response = module.handler(s3_event_for(key, len(data)), LocalContext(function_name="longdoc-local-ingest"))
        record = state.get_document(doc_id, version)
        if not _claimed_elsewhere(response, record, state.version_claim_owner(doc_id, version)):
            break
        gone = None  # the claim was not taken over (its lease decides: another store, or a new holder)
        if time.monotonic() >= deadline:
            break
        if not waited:
            on_wait()
            waited = True
        _wait_for_change(doc_id, version, record, min(RETRY_SECONDS, max(0.0, deadline - time.monotonic())))
    failure = batch_failure_reason(module, record) if response.get("batchItemFailures") else None
    return LocalIngest(doc_id, version, record, before, previous, failure, waited, gone)
