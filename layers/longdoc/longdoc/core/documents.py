"""Where documents live in the stores, shared by ingest and extract: keys, chunk lists, the READY lookup.

Ingest writes what these name (:func:`save_chunks` is the one writer of a chunk list);
extraction, retrieval and the entry points read it back.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from longdoc.core.models import Chunk, DocumentRecord
from longdoc.core.ports import BlobStore, StateStore


INCOMING_PREFIX = "incoming/"


def not_ready_reason(record: DocumentRecord) -> str:
    """Why a version is not ``READY`` and, when nothing says why, what to do: one line, no status word.

    An ``INGESTING`` version was interrupted (a killed ``longdoc ingest``, a Lambda timeout
    before the redelivery) or is still running: ingesting the file again finishes it, reusing
    the chunks and vectors already stored. A ``FAILED`` version without a reason gets the same
    advice. Any other version gives its recorded reason.
    """
    again = "ingest the file again (`longdoc ingest FILE` locally, or upload it to incoming/ again on AWS)"
    if record.status == "INGESTING":
        return f"its ingest was interrupted or is still running; {again} to finish it (progress is kept)"
    if not record.reason:
        return f"no reason recorded; {again}"
    return record.reason


def chunks_key(doc_id: str, doc_version: str) -> str:
    """Blob key of a document version's chunks (JSON Lines, one :class:`Chunk` per line)."""
    return f"chunks/{doc_id}/{doc_version}.jsonl"


def embedding_text(chunk: Chunk) -> str:
    """The text embedded for a chunk: a one-line locator header, then the chunk's own words.

    ``[doc: contract_v2.pdf | section: 3.2 | path: 3 Terms > 3.2 Fees | page: 14 (p. 12)]``:
    the page is the physical page of the chunk's first character, with its printed label
    in brackets when it has one; ``path`` is left out when there is no heading path.
    """
    page = "n/a" if chunk.page_start is None else str(chunk.page_start)
    label = chunk.page_labels[0] if chunk.page_labels else None
    if label and label != page:
        page += f" (p. {label})"
    path = f" | path: {' > '.join(chunk.heading_path)}" if chunk.heading_path else ""
    return f"[doc: {chunk.source} | section: {chunk.section_id or '-'}{path} | page: {page}]\n{chunk.text}"


def save_chunks(blobs: BlobStore, doc_id: str, doc_version: str, chunks: Iterable[Chunk]) -> None:
    """Write a document version's chunks to the blob store, one JSON object per line (what :func:`load_chunks` reads).

    Each line ends with a line feed; an earlier list of the same version is replaced.
    """
    blobs.put(chunks_key(doc_id, doc_version), "".join(c.model_dump_json() + "\n" for c in chunks).encode("utf-8"))


def load_chunks(blobs: BlobStore, doc_id: str, doc_version: str) -> list[Chunk]:
    """Read a document version's chunks from the blob store (the chunk text's source of truth).

    Lines are split on line feeds only: JSON leaves U+2028, U+2029 and U+0085 unescaped inside
    strings, and ``str.splitlines()`` would cut a chunk at them. Raises :class:`NotFound`
    when the version was never ingested.
    """
    data = blobs.get(chunks_key(doc_id, doc_version))
    return [Chunk.model_validate_json(line) for line in data.decode("utf-8").split("\n") if line.strip()]


def ready_document(state: StateStore, doc_id: str, doc_version: str | None = None) -> DocumentRecord | None:
    """The version to read: ``doc_version`` if given, else the latest version that is ``READY``.

    A failed or in-progress newer version never hides an older ``READY`` one. Returns the
    latest record of any status when none is ``READY`` (so callers can say why), or None.
    """
    if doc_version is not None:
        return state.get_document(doc_id, doc_version)
    latest = state.get_document(doc_id)
    if latest is None or latest.status == "READY":
        return latest
    ready = [r for r in state.list_document_versions(doc_id) if r.status == "READY"]
    return ready[-1] if ready else latest


def page_text(chunks: Sequence[Chunk], page: int) -> str | None:
    """The indexed text of physical page ``page`` (1-based), rebuilt from the chunks that cover it.

    Each chunk's ``page_spans`` (absolute character offsets) say which of its characters lie on
    which page; the pieces on ``page`` are joined in document order, overlapping chunks counted
    once, and a gap no chunk covers is one line feed. It is the text quotes are verified against
    (running headers and footers removed, OCR text for scanned pages). Returns None when no chunk
    has text on that page (a page past the end, a document without pages, a scanned page left
    without OCR).
    """
    pieces: list[tuple[int, int, str]] = []
    for chunk in chunks:
        for span in chunk.page_spans:
            lo, hi = max(span.char_start, chunk.char_start), min(span.char_end, chunk.char_end)
            if span.page == page and lo < hi:
                pieces.append((lo, hi, chunk.text[lo - chunk.char_start:hi - chunk.char_start]))
    if not pieces:
        return None
    out: list[str] = []
    cursor = -1
    for lo, hi, text in sorted(pieces):
        if hi <= cursor:
            continue
        if out and lo > cursor:
            out.append("\n")
        out.append(text[max(cursor - lo, 0):])
        cursor = hi
    return "".join(out)
