"""Local OCR with Tesseract (Debian package ``tesseract-ocr``, through ``pytesseract``).

Tesseract 5 with its English model (``tesseract-ocr-eng``, pulled in by ``tesseract-ocr``) is
installed from the Debian archive by ``make install``; nothing is fetched at run time.
``pytesseract.image_to_data`` gives one row per word with its box in pixels, its
confidence (0-100; -1 for rows that are not words) and its block, paragraph and line
numbers, which give the line order. Source: https://github.com/tesseract-ocr/tesseract
(``tesseract --help-extra``: ``--psm 3`` fully automatic page segmentation, the default).
Orientation (issue 27): ``pytesseract.image_to_osd`` runs ``--psm 0`` (orientation and script
detection only) with the model ``osd.traineddata`` (Debian package ``tesseract-ocr-osd``, a
dependency of ``tesseract-ocr``; ``tesseract --list-langs`` lists ``osd``). Its ``Rotate`` is the
clockwise turn that makes the text upright (measured: an image turned 90 degrees counter-clockwise
answers ``Rotate: 90``); a page with too few characters makes Tesseract fail, read as "cannot tell".
"""

from __future__ import annotations

import io
import os
from typing import Any

from longdoc.core.errors import OcrPageError, OcrUnavailable
from longdoc.core.ports import OcrPage, OcrWord, OrientationGuess

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

    def detect_orientation(self, image: bytes) -> OrientationGuess | None:
        """Tesseract OSD on one page image (PNG/JPEG bytes): the clockwise turn that makes it upright
        and OSD's orientation confidence, or None when OSD cannot tell (too few characters, an image
        PIL cannot open). Raises :class:`OcrUnavailable` when the ``tesseract`` binary is missing."""
        import pytesseract
        from PIL import Image, UnidentifiedImageError

        try:
            picture = Image.open(io.BytesIO(image))
            picture.load()
        except (UnidentifiedImageError, OSError, ValueError):
            return None
        try:
            osd = pytesseract.image_to_osd(picture, output_type=pytesseract.Output.DICT)
        except pytesseract.TesseractNotFoundError as exc:
            raise OcrUnavailable("tesseract is not installed: run `make install` "
                                 "(Debian package tesseract-ocr) or set LONGDOC_OCR=off") from exc
        except pytesseract.TesseractError:
            return None  # "Too few characters", no osd.traineddata: the trial by confidence decides
        rotation = int(osd.get("rotate", 0)) % 360
        if rotation not in (0, 90, 180, 270):
            return None
        return OrientationGuess(rotation, float(osd.get("orientation_conf", 0.0)))


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
