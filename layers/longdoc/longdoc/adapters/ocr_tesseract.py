"""Local OCR with Tesseract (Debian package ``tesseract-ocr``, through ``pytesseract``).

Tesseract 5 with its English model (``tesseract-ocr-eng``, pulled in by ``tesseract-ocr``) is
installed from the Debian archive by ``make install``; nothing is fetched at run time.
``pytesseract.image_to_data`` gives one row per word with its box in pixels, its
confidence (0-100; -1 for rows that are not words) and its block, paragraph and line
numbers, which give the line order. Source: https://github.com/tesseract-ocr/tesseract
(``tesseract --help-extra``: ``--psm 3`` fully automatic page segmentation, the default).
"""

from __future__ import annotations

import io
import os
from typing import Any

from longdoc.core.errors import OcrPageError, OcrUnavailable
from longdoc.core.ports import OcrPage, OcrWord

TESSERACT_NAME = "tesseract"


class TesseractOcr:
    """The :class:`~longdoc.core.ports.OcrEngine` port over a local Tesseract (no cost, no network).

    ``lang`` is a Tesseract language code (``eng``: the model the Debian package installs).
    """

    cost_per_page_usd = 0.0

    def __init__(self, lang: str = "eng") -> None:
        self.lang = lang
        self.name = f"{TESSERACT_NAME}-{lang}"
        # One OpenMP thread per page: measured 5.3 s a page at 200 dpi on this 2-core machine
        # under load, against 30 s with Tesseract's default threads (they fight for the cores).
        os.environ.setdefault("OMP_THREAD_LIMIT", "1")

    def read_page(self, image: bytes) -> OcrPage:
        """Read one page image (PNG/JPEG bytes); words with boxes as fractions of the image.

        Raises :class:`OcrPageError` when the bytes are not an image PIL can open, and
        :class:`OcrUnavailable` when the ``tesseract`` binary is missing or fails.
        """
        import pytesseract
        from PIL import Image, UnidentifiedImageError

        try:
            picture = Image.open(io.BytesIO(image))
            picture.load()
        except (UnidentifiedImageError, OSError, ValueError) as exc:
            raise OcrPageError(f"page image unreadable: {type(exc).__name__}: {exc}") from exc
        try:
            data = pytesseract.image_to_data(picture, lang=self.lang, output_type=pytesseract.Output.DICT)
        except pytesseract.TesseractNotFoundError as exc:
            raise OcrUnavailable("tesseract is not installed: run `make install` "
                                 "(Debian package tesseract-ocr) or set LONGDOC_OCR=off") from exc
        except pytesseract.TesseractError as exc:
            raise OcrUnavailable(f"tesseract failed: {exc}") from exc
        return OcrPage(tuple(_words(data, *picture.size)), self.name, 0.0)


def _words(data: dict[str, list[Any]], width: int, height: int) -> list[OcrWord]:
    """Tesseract's word rows as :class:`OcrWord`, lines numbered in Tesseract's order."""
    lines: dict[tuple[int, int, int], int] = {}
    words: list[OcrWord] = []
    for i, text in enumerate(data["text"]):
        confidence = float(data["conf"][i])
        if confidence < 0 or not str(text).strip():
            continue
        key = (int(data["block_num"][i]), int(data["par_num"][i]), int(data["line_num"][i]))
        line = lines.setdefault(key, len(lines))
        words.append(OcrWord(str(text).strip(), confidence / 100.0, line, data["left"][i] / width,
                             data["top"][i] / height, data["width"][i] / width, data["height"][i] / height))
    return words
