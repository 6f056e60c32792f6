"""OCR on AWS with Amazon Textract's synchronous ``DetectDocumentText``, one call per page image.

Why one synchronous call per page and not the asynchronous document API is in
``docs/decisions.md`` (issue 18). The call takes the page image's bytes (PNG, at most 10 MB
and 10,000 pixels a side: https://docs.aws.amazon.com/textract/latest/dg/limits-document.html),
so the document never needs a second S3 object and only pages without a usable text layer
are paid for. The answer is a list of blocks (https://docs.aws.amazon.com/textract/latest/dg/how-it-works-detecting.html):
``LINE`` blocks in reading order, each with ``CHILD`` relationships to its ``WORD`` blocks;
every block has ``Confidence`` (0-100) and ``Geometry.BoundingBox`` (``Left``, ``Top``,
``Width``, ``Height`` as fractions of the page). Throttling and 5xx answers are retried by
botocore (standard mode, 5 attempts, as Textract's guide recommends:
https://docs.aws.amazon.com/textract/latest/dg/handling-errors.html).

Cost: USD 1.50 per 1,000 pages for the first million pages a month
(https://aws.amazon.com/textract/pricing/, Detect Document Text API), so
:data:`TEXTRACT_PRICE_PER_PAGE_USD` per call.
"""

from __future__ import annotations

from typing import Any

from longdoc.core.errors import OcrPageError, OcrUnavailable
from longdoc.core.ports import OcrPage, OcrWord

TEXTRACT_NAME = "textract-detect-document-text"
TEXTRACT_PRICE_PER_PAGE_USD = 0.0015
"""USD per page of DetectDocumentText, first 1,000,000 pages a month (USD 1.50 per 1,000 pages)."""
_PAGE_ERRORS = {"InvalidParameterException", "UnsupportedDocumentException", "BadDocumentException",
                "DocumentTooLargeException"}


class TextractOcr:
    """The :class:`~longdoc.core.ports.OcrEngine` port over Amazon Textract (``DetectDocumentText``).

    ``client`` is a boto3 Textract client (default: one built lazily for the Lambda's region, with
    standard retries); tests pass one pointed at a fake or moto.
    """

    name = TEXTRACT_NAME
    cost_per_page_usd = TEXTRACT_PRICE_PER_PAGE_USD

    def __init__(self, client: Any | None = None, region: str | None = None) -> None:
        self._client = client
        self._region = region

    @property
    def client(self) -> Any:
        """The boto3 Textract client, created on first use."""
        if self._client is None:
            import boto3
            from botocore.config import Config

            self._client = boto3.client("textract", region_name=self._region,
                                        config=Config(retries={"max_attempts": 5, "mode": "standard"}))
        return self._client

    def read_page(self, image: bytes) -> OcrPage:
        """Read one page image (PNG/JPEG bytes) with one ``DetectDocumentText`` call.

        Raises :class:`OcrPageError` when Textract refuses this document (bad, unsupported or too
        large), :class:`OcrUnavailable` for any other service error after botocore's retries.
        """
        from botocore.exceptions import BotoCoreError, ClientError

        try:
            answer = self.client.detect_document_text(Document={"Bytes": image})
        except ClientError as exc:
            code = exc.response.get("Error", {}).get("Code", "")
            message = exc.response.get("Error", {}).get("Message", str(exc))
            if code in _PAGE_ERRORS:
                raise OcrPageError(f"Textract refused the page image ({code}: {message})") from exc
            raise OcrUnavailable(f"Textract DetectDocumentText failed ({code}: {message})") from exc
        except BotoCoreError as exc:
            raise OcrUnavailable(f"Textract DetectDocumentText failed ({type(exc).__name__}: {exc})") from exc
        return OcrPage(tuple(words_of(answer.get("Blocks", []))), self.name, self.cost_per_page_usd)


def words_of(blocks: list[dict[str, Any]]) -> list[OcrWord]:
    """The ``WORD`` blocks of a Textract answer in line order (each ``LINE``'s ``CHILD`` words)."""
    by_id = {b.get("Id"): b for b in blocks}
    words: list[OcrWord] = []
    lines = [b for b in blocks if b.get("BlockType") == "LINE"]
    for number, line in enumerate(lines):
        children = [i for rel in line.get("Relationships", []) if rel.get("Type") == "CHILD" for i in rel.get("Ids", [])]
        for child in children:
            block = by_id.get(child)
            if block is None or block.get("BlockType") != "WORD" or not str(block.get("Text", "")).strip():
                continue
            box = block.get("Geometry", {}).get("BoundingBox", {})
            words.append(OcrWord(str(block["Text"]).strip(), float(block.get("Confidence", 0.0)) / 100.0, number,
                                 float(box.get("Left", 0.0)), float(box.get("Top", 0.0)),
                                 float(box.get("Width", 0.0)), float(box.get("Height", 0.0))))
    return words
