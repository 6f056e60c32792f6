"""What the review page shows of one item: the item, its history, the text of the page it is on, the page picture.

Read-only views over :class:`~longdoc.review.ReviewService` for the API's review routes
(``functions/api/review_routes.py``) and so for the review page of ``longdoc serve``:

- :func:`item_view`: the item with its decision history, the span in force (the latest correction's,
  else the model's), and the text of every chunk on the page shown, each part exactly the chunk's own
  characters, so text selected in it is verbatim for :meth:`~longdoc.review.ReviewService.decide`;
- :func:`page_image`: that page of the source PDF rendered with the span boxed
  (:func:`longdoc.eval.pdfpage.quote_on_page`, the audit page's renderer);
- :func:`reviewer_of`: who decides, from the caller's IAM identity.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from typing import Any

from longdoc.core.errors import InvalidDecision, NotFound
from longdoc.core.models import Chunk, DocumentRecord
from longdoc.review.items import current_value
from longdoc.review.service import ReviewService

LOCAL_REVIEWER = "local-reviewer"
"""The reviewer recorded when a request carries no IAM identity and names nobody (``longdoc serve``)."""


def _in_force(service: ReviewService, item_id: str) -> tuple[Any, list[Any], dict[str, Any]]:
    """``(item, history, span)``: the span in force is ``{"quote", "chunk_id", "page", "section_id"}``."""
    item = service.item(item_id)
    history = service.store.decisions(item_id)
    cited = next((d.citation for d in reversed(history) if d.citation is not None), None)
    span = {"quote": current_value(item, history), "chunk_id": cited.chunk_id if cited else item.chunk_id,
            "page": cited.page if cited else item.page, "section_id": cited.section_id if cited else item.section_id}
    return item, history, span


def _part_on_page(chunk: Chunk, page: int | None) -> tuple[str, int]:
    """``(text, offset)``: the characters of ``chunk`` on ``page`` and where they start in ``chunk.text``
    (the whole chunk when it has no span for that page, e.g. a document without pages)."""
    for span in chunk.page_spans or []:
        if span.page == page:
            start = max(span.char_start - chunk.char_start, 0)
            return chunk.text[start:span.char_end - chunk.char_start], start
    return chunk.text, 0


def item_view(service: ReviewService, item_id: str, page: int | None = None) -> dict[str, Any]:
    """One item as the review page shows it.

    ``page``: the 1-based page to show (default the page of the span in force, else 1). Returns
    ``{"item", "history": [Decision dicts, oldest first], "span": {"quote", "chunk_id", "page",
    "section_id"}, "page", "pages" (the document's page count, 0 without pages),
    "chunks": [{"chunk_id", "page_start", "page_end", "section_id", "heading_path", "text", "offset",
    "cited"}]}``: every chunk touching ``page`` (every chunk when the document has no pages would be
    too much: then only the cited one), its ``text`` the part on that page. Raises NotFound for an
    unknown item, :class:`InvalidDecision` for a page outside the document.
    """
    item, history, span = _in_force(service, item_id)
    record = service.sources.document(item.doc_id, item.doc_version)
    pages = record.pages if record else 0
    chunks = service.sources.chunks(item.doc_id, item.doc_version)
    shown = page if page is not None else (span["page"] or (1 if pages else None))
    if shown is not None and pages and not 1 <= shown <= pages:
        raise InvalidDecision(f"page {shown} is not a page of document {item.doc_id} (1-{pages})")
    if shown is None or not any(c.page_start is not None for c in chunks):
        on_page = [c for c in chunks if c.chunk_id == span["chunk_id"]] or chunks[:1]
    else:
        on_page = [c for c in chunks if (c.page_start or 0) <= shown <= (c.page_end or 0)]
    parts = []
    for c in on_page:
        text, offset = _part_on_page(c, shown)
        parts.append({"chunk_id": c.chunk_id, "page_start": c.page_start, "page_end": c.page_end,
                      "section_id": c.section_id, "heading_path": list(c.heading_path or []), "text": text,
                      "offset": offset, "cited": c.chunk_id == span["chunk_id"]})
    return {"item": item.model_dump(mode="json"), "history": [d.model_dump(mode="json") for d in history],
            "span": span, "page": shown, "pages": pages, "chunks": parts}


def page_image(service: ReviewService, item_id: str, read_blob: Callable[[str], bytes],
               page: int | None = None) -> dict[str, Any]:
    """The shown page of the item's source PDF rendered, with the span in force boxed.

    ``read_blob(key)`` reads the source (``DocumentRecord.source_key``; S3 on AWS, the local bucket
    locally; raises NotFound when it is gone). Returns ``{"page", "image" (a JPEG data URI), "width",
    "height" (pixels), "boxes": [[left, top, width, height] as fractions of the image], "located":
    "full"|"partial"|None}`` (see :class:`longdoc.eval.pdfpage.PageView`). Raises NotFound for an unknown
    item, a document that is not a PDF, a source no longer stored (or replaced: its SHA-256 is not the
    record's) and a page outside the PDF.
    """
    import pypdfium2 as pdfium

    from longdoc.eval.pdfpage import quote_on_page
    from longdoc.ingest.parse.pdf import PDFIUM_LOCK

    item, _, span = _in_force(service, item_id)
    record: DocumentRecord | None = service.sources.document(item.doc_id, item.doc_version)
    shown = page if page is not None else (span["page"] or 1)
    key = record.source_key if record else None
    if not key:
        raise NotFound(f"document {item.doc_id}@{item.doc_version} has no stored source to render")
    data = read_blob(key)
    if not data.startswith(b"%PDF"):
        raise NotFound(f"document {item.doc_id} is not a PDF: no page image (the page text is shown)")
    if record and record.content_sha256 and hashlib.sha256(data).hexdigest() != record.content_sha256:
        raise NotFound(f"the stored source of {item.doc_id} is no longer version {item.doc_version}")
    with PDFIUM_LOCK:
        pdf = pdfium.PdfDocument(data)
        try:
            view = quote_on_page(pdf, shown, (span["quote"] or "") if shown == span["page"] else "")
        finally:
            pdf.close()
    if view is None:
        raise NotFound(f"page {shown} is not a page of document {item.doc_id}")
    return {"page": shown, "image": view.image, "width": view.width, "height": view.height,
            "boxes": [list(b) for b in view.boxes], "located": view.located}


def reviewer_of(user_arn: str | None, caller: str | None, named: str | None) -> str:
    """Who decides: the caller's IAM user or role ARN (API Gateway's SigV4 check), else its caller id.

    ``named`` (the request body's ``reviewer``) counts only when the request has no IAM identity, which
    happens only under ``longdoc serve`` (no IAM locally); then :data:`LOCAL_REVIEWER` when it is empty.
    On AWS every request is signed, so a body cannot speak for someone else.
    """
    if user_arn:
        return user_arn
    if caller:
        return caller
    return (named or "").strip()[:200] or LOCAL_REVIEWER
