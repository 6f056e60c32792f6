"""An object removed from the bucket: its versions lose their vectors and are marked ``DELETED``."""

from __future__ import annotations


from longdoc.core.clock import utc_now
from longdoc.core.ports import BlobStore, StateStore, VectorIndex
from longdoc.ingest.ids import doc_id_for_key


def delete_document_source(*, key: str, blobs: BlobStore, state: StateStore, index: VectorIndex,
                           doc_id: str | None = None) -> list[str]:
    """Handle the removal of the object at ``key``: drop its vectors, mark its versions ``DELETED``.

    Every registered version of the document whose ``source_key`` is ``key`` (or, for
    records written before ``source_key`` existed, whose ``source`` is the key's file
    name) loses its vectors in the index and is re-registered as ``DELETED``. Chunk
    lists, embedding caches and registry entries are kept, so past extraction results
    still resolve their citations. Versions are marked oldest first, so the latest
    pointer ends on the version that was latest. Repeating it is harmless. Returns the
    versions marked. ``doc_id`` defaults to :func:`doc_id_for_key` of ``key``.

    S3 event notifications may arrive late, twice or out of order (an SQS standard queue
    reorders them; https://docs.aws.amazon.com/AmazonS3/latest/userguide/notification-how-to-event-types-and-destinations.html),
    so the bucket itself decides: when an object exists at ``key`` again (re-uploaded
    after the removal this event reports), nothing is marked and ``[]`` is returned.
    """
    if blobs.exists(key):
        return []
    doc_id = doc_id or doc_id_for_key(key)
    source = key.rsplit("/", 1)[-1]
    latest = state.get_document(doc_id)
    versions = [r for r in state.list_document_versions(doc_id)
                if (r.source_key == key if r.source_key else r.source == source) and r.status != "DELETED"]
    versions.sort(key=lambda r: (latest is not None and r.doc_version == latest.doc_version, r.updated_at))
    marked: list[str] = []
    for record in versions:
        index.delete_document(doc_id, record.doc_version)
        state.put_document(record.model_copy(update={"status": "DELETED", "reason": f"source object {key} removed",
                                                     "stage": None, "upserted": 0, "updated_at": utc_now()}))
        marked.append(record.doc_version)
    return marked
