"""OCR progress of one document version in the blob store: one object per page read.

``ocr/{doc_id}/{doc_version}/{engine}-{dpi}dpi/{page:05d}.json`` holds what the engine read
on that page (its words with confidences and boxes, the engine name, the call's cost and the
clockwise turn the page was read at, ``rotation``: absent in objects written before issue 27, read as 0),
written as soon as the page is read. A redelivered ingest of the same bytes finds those
objects and reads only the pages still missing, so an image-only document longer than one
invocation can OCR is finished by its redeliveries without paying twice for a page.
One object per page keeps every write small (a page is tens of KB) and the total writes
linear in the page count.
"""

from __future__ import annotations

import json

from longdoc.core.errors import NotFound
from longdoc.core.ports import BlobStore, OcrPage, OcrWord


def ocr_prefix(doc_id: str, doc_version: str, engine: str, dpi: int) -> str:
    """The key prefix of one version's OCR pages for one engine and resolution."""
    return f"ocr/{doc_id}/{doc_version}/{engine}-{dpi}dpi/"


class BlobOcrCache:
    """An :class:`~longdoc.ingest.parse.ocr.OcrCache` over a :class:`BlobStore` (S3, or a local folder).

    ``reused`` counts pages found already read; ``stored`` pages written by this attempt.
    """

    def __init__(self, blobs: BlobStore, doc_id: str, doc_version: str, engine: str, dpi: int) -> None:
        self.blobs = blobs
        self.prefix = ocr_prefix(doc_id, doc_version, engine, dpi)
        self.reused = 0
        self.stored = 0

    def _key(self, page: int) -> str:
        return f"{self.prefix}{page:05d}.json"

    def get(self, page: int) -> OcrPage | None:
        """The page read by an earlier attempt, or None."""
        try:
            data = json.loads(self.blobs.get(self._key(page)))
        except NotFound:
            return None
        self.reused += 1
        words = tuple(OcrWord(w[0], w[1], w[2], w[3], w[4], w[5], w[6]) for w in data["words"])
        return OcrPage(words, data["engine"], data["cost_usd"], int(data.get("rotation", 0)))

    def put(self, page: int, result: OcrPage) -> None:
        """Write the page's words (one atomic put)."""
        words = [[w.text, round(w.confidence, 4), w.line, round(w.left, 5), round(w.top, 5), round(w.width, 5),
                  round(w.height, 5)] for w in result.words]
        self.blobs.put(self._key(page), json.dumps({"engine": result.engine, "cost_usd": result.cost_usd,
                                                     "rotation": result.rotation, "words": words}).encode("utf-8"))
        self.stored += 1
