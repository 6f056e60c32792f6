"""A loopback fake of Amazon Textract's ``DetectDocumentText`` for tests, spoken to by the real boto3 client.

Wire format (AWS JSON 1.1, as botocore sends it): ``POST /`` with header
``X-Amz-Target: Textract.DetectDocumentText`` and body ``{"Document": {"Bytes": <base64>}}``.
The answer is ``{"DocumentMetadata": {"Pages": 1}, "Blocks": [...], "DetectDocumentTextModelVersion"}``:
one ``PAGE`` block, then per line a ``LINE`` block whose ``CHILD`` relationship lists its
``WORD`` blocks, each with ``Text``, ``Confidence`` (0-100) and ``Geometry.BoundingBox``
(fractions of the page), as https://docs.aws.amazon.com/textract/latest/dg/how-it-works-detecting.html
describes. An error is HTTP 400 with ``{"__type": "<Code>", "message": ...}``, which botocore
turns into ``ClientError`` with that code.

To answer with real words, the fake reads the image with the local Tesseract (the engine
the contract suite also runs directly): the same page gives the same words through both
adapters. Bytes that are not an image get ``UnsupportedDocumentException`` like Textract.
"""

from __future__ import annotations

import base64
import binascii
from typing import Any

from tests.fakes.loopback import LoopbackFake


class FakeTextract(LoopbackFake):
    """``DetectDocumentText`` on 127.0.0.1; ``calls`` counts the documents read."""

    name = "fake-textract"

    def __init__(self) -> None:
        self.pages_read = 0
        super().__init__()

    def route(self, method: str, path: str, query: dict[str, list[str]], body: Any) -> tuple[int, Any]:
        """Answer ``DetectDocumentText``; anything else is a 400 ``UnknownOperationException``."""
        if method != "POST" or not isinstance(body, dict) or "Document" not in body:
            return 400, {"__type": "UnknownOperationException", "message": "fake serves DetectDocumentText only"}
        try:
            image = base64.b64decode(body["Document"].get("Bytes", ""), validate=True)
        except (binascii.Error, AttributeError):
            return 400, {"__type": "InvalidParameterException", "message": "Document.Bytes is not base64"}
        from longdoc.adapters.ocr_tesseract import TesseractOcr
        from longdoc.core.errors import OcrPageError

        try:
            page = TesseractOcr().read_page(image)
        except OcrPageError:
            return 400, {"__type": "UnsupportedDocumentException", "message": "Request has unsupported document format"}
        self.pages_read += 1
        return 200, {"DocumentMetadata": {"Pages": 1}, "DetectDocumentTextModelVersion": "1.0",
                     "Blocks": _blocks(page.words)}


def _blocks(words: Any) -> list[dict[str, Any]]:
    """Textract blocks for words grouped by their ``line`` (PAGE, then LINE + its WORD children)."""
    blocks: list[dict[str, Any]] = [{"BlockType": "PAGE", "Id": "page-1", "Relationships": [{"Type": "CHILD", "Ids": []}]}]
    lines: dict[int, list[Any]] = {}
    for word in words:
        lines.setdefault(word.line, []).append(word)
    for number, line in sorted(lines.items()):
        ids = [f"w-{number}-{i}" for i in range(len(line))]
        blocks[0]["Relationships"][0]["Ids"].append(f"l-{number}")
        blocks.append({"BlockType": "LINE", "Id": f"l-{number}", "Text": " ".join(w.text for w in line),
                       "Confidence": 100 * sum(w.confidence for w in line) / len(line),
                       "Relationships": [{"Type": "CHILD", "Ids": ids}]})
        for word_id, w in zip(ids, line, strict=True):
            blocks.append({"BlockType": "WORD", "Id": word_id, "Text": w.text, "TextType": "PRINTED",
                           "Confidence": 100 * w.confidence,
                           "Geometry": {"BoundingBox": {"Left": w.left, "Top": w.top, "Width": w.width,
                                                        "Height": w.height}}})
    return blocks
