"""Which way up a scanned page is read, and at what resolution (issue 27).

Orientation: a page scanned on its side or upside down is read as garbage (measured on a turned
scan: mean word confidence 0.29 at 90 degrees, 0.39 at 180). Before OCR the rendered page goes to
an :class:`~longdoc.core.ports.OrientationDetector` (Tesseract's orientation and script detection,
``--psm 0``, model ``osd.traineddata`` from the Debian package ``tesseract-ocr-osd``, a dependency
of ``tesseract-ocr``; source:
https://tesseract-ocr.github.io/tessdoc/ImproveQuality.html#rotation--deskewing and
``tesseract --help-psm``) and is turned upright when the guess is sure
(:data:`OSD_MIN_CONFIDENCE`). When there is no detector (Textract), the detector is unsure, or the
upright reading is under the confidence threshold, the page is read turned 0, 180, 90 and 270
degrees in that order, stopping at the first reading at or over the threshold, and the reading with
the best mean word confidence is kept when it beats the first reading by :data:`TURN_MARGIN`
(:func:`read_upright`). A sure guess is read once, even when
its reading is poor (a bad scan: trying the other turns would only multiply the cost, four Textract
calls instead of one).

Boxes: the engine gives boxes as fractions of the image it was given (the turned one); they are
mapped back to fractions of the unturned rendered page (:func:`box_to_original`), the
:class:`~longdoc.core.ports.OcrWord` convention, so a highlight drawn on the PDF page lands on the
word. :func:`upright` gives the words in the upright frame again (for column analysis).

Resolution: :func:`render_dpi` - Tesseract's documentation recommends at least 300 dpi
(https://tesseract-ocr.github.io/tessdoc/ImproveQuality.html: "Tesseract works best on images
which have a DPI of at least 300 dpi"); a page whose embedded image is finer is rendered at the
image's own resolution, both capped at :data:`MAX_RENDER_PIXELS` and :data:`MAX_SIDE_PIXELS`.
"""

from __future__ import annotations

import io
import math
from dataclasses import replace
from typing import TYPE_CHECKING

from longdoc.core.ports import OcrEngine, OcrPage, OcrWord, OrientationDetector

if TYPE_CHECKING:
    from PIL.Image import Image

ROTATIONS = (0, 90, 180, 270)
"""Clockwise turns tried, in degrees."""
TRIAL_ORDER = (0, 180, 90, 270)
"""Order of the turns read when the detector is unsure: upright first, then upside down (the
commonest mis-feed), then on either side."""
OSD_MIN_CONFIDENCE = 3.0
"""Tesseract OSD ``Orientation confidence`` at or over which its guess is used without a trial
(measured 8.8-9.3 on three printed lines at every turn; a page too short for OSD raises instead)."""
TURN_MARGIN = 0.15
"""How much higher (0-1, absolute) the mean word confidence of a turned reading must be to replace
the first reading (upright, or the detector's guess). Both readings of an unreadable page are
garbage, one a little better by chance (measured: 6-point text scanned at 72 dpi, upright 0.27 mean,
turned 90 degrees 0.34: Tesseract's layout analysis reads some lines standing on their side), and
the page must not be recorded as turned for that; a turned page gains far more (0.42 -> 0.96)."""
TARGET_DPI = 300
"""Render resolution in dots per inch (Tesseract's recommended minimum, ImproveQuality doc)."""
MAX_RENDER_PIXELS = 36_000_000
"""Most pixels a rendered page may have (36 MP: a US Letter page at 600 dpi is 33.7 MP, A4 at 600 dpi
34.8 MP); one grey byte a pixel, so 36 MB for the bitmap, several copies of which PIL and Tesseract
hold while reading: well inside the ingest function's memory."""
MAX_SIDE_PIXELS = 10_000
"""Longest side of a rendered page in pixels: Textract's limit for a synchronous image
(https://docs.aws.amazon.com/textract/latest/dg/limits-document.html)."""

Box = tuple[float, float, float, float]
"""``(left, top, width, height)`` as fractions (0-1) of an image, origin top left."""


def _check(rotation: int) -> None:
    """Raise ValueError unless ``rotation`` is one of :data:`ROTATIONS`."""
    if rotation not in ROTATIONS:
        raise ValueError(f"rotation must be one of {ROTATIONS} degrees, not {rotation!r}")


def box_to_original(box: Box, rotation: int) -> Box:
    """Map a box on the image turned ``rotation`` degrees clockwise back onto the unturned image.

    Both boxes are ``(left, top, width, height)`` fractions of their own image. Turning an image of
    ``W x H`` pixels 90 degrees clockwise sends the point ``(x, y)`` to ``(H - y, x)``, so in
    fractions ``(u, v) -> (1 - v, u)``; 180 degrees: ``(1 - u, 1 - v)``; 270: ``(v, 1 - u)``.
    Exact (no rounding). Raises ValueError for any other ``rotation``.
    """
    _check(rotation)
    left, top, width, height = box
    if rotation == 90:
        return (top, 1 - left - width, height, width)
    if rotation == 180:
        return (1 - left - width, 1 - top - height, width, height)
    if rotation == 270:
        return (1 - top - height, left, height, width)
    return box


def box_to_upright(box: Box, rotation: int) -> Box:
    """The inverse of :func:`box_to_original`: a box on the unturned image, on the image turned
    ``rotation`` degrees clockwise (turning by ``r`` is undone by turning by ``360 - r``)."""
    _check(rotation)
    return box_to_original(box, (360 - rotation) % 360)


def _mapped(page: OcrPage, rotation: int, to_original: bool) -> OcrPage:
    """``page`` with each word's box mapped one way or the other."""
    move = box_to_original if to_original else box_to_upright
    words = []
    for w in page.words:
        left, top, width, height = move((w.left, w.top, w.width, w.height), rotation)
        words.append(OcrWord(w.text, w.confidence, w.line, left, top, width, height))
    return replace(page, words=tuple(words))


def in_original_frame(page: OcrPage, rotation: int) -> OcrPage:
    """A reading of the page turned ``rotation`` degrees clockwise, with its boxes on the unturned page
    and ``rotation`` recorded."""
    return replace(_mapped(page, rotation, True), rotation=rotation)


def upright(page: OcrPage) -> OcrPage:
    """``page`` with its word boxes in the upright frame (the image the engine read: the unturned page
    turned ``page.rotation`` degrees clockwise), where lines run left to right and columns stand side
    by side. Words, lines and order are unchanged; ``page`` itself is not modified."""
    return _mapped(page, page.rotation, False) if page.rotation else page


def render_dpi(width_pt: float, height_pt: float, image_dpi: float | None, *, target: int = TARGET_DPI,
               max_pixels: int = MAX_RENDER_PIXELS, max_side: int = MAX_SIDE_PIXELS) -> int:
    """The resolution (dots per inch) to render a page of ``width_pt x height_pt`` points (1/72 inch).

    ``target`` (default 300), or the embedded image's own ``image_dpi`` when it is higher, then
    lowered so the page has at most ``max_pixels`` pixels and ``max_side`` pixels a side; at least
    1. Example: a US Letter page (612 x 792 pt) with a 600-dpi scan gives 600; with a 1200-dpi
    scan 620 (35.9 MP). Raises ValueError for a page without area.
    """
    if width_pt <= 0 or height_pt <= 0:
        raise ValueError(f"page has no area: {width_pt} x {height_pt} pt")
    dpi = float(max(target, image_dpi or 0))
    area_in = (width_pt / 72) * (height_pt / 72)
    dpi = min(dpi, math.sqrt(max_pixels / area_in), max_side / (max(width_pt, height_pt) / 72))
    return max(1, math.floor(dpi))


def turned(picture: Image, rotation: int) -> Image:
    """``picture`` turned ``rotation`` degrees clockwise (exact pixel transposes, no resampling)."""
    from PIL import Image as PilImage

    _check(rotation)
    if rotation == 0:
        return picture
    # PIL's ROTATE_n turns counter-clockwise, so a clockwise turn r is ROTATE_(360 - r).
    transpose = {90: PilImage.Transpose.ROTATE_270, 180: PilImage.Transpose.ROTATE_180,
                 270: PilImage.Transpose.ROTATE_90}[rotation]
    return picture.transpose(transpose)


def png(picture: Image) -> bytes:
    """``picture`` as PNG bytes."""
    out = io.BytesIO()
    picture.save(out, format="PNG")
    return out.getvalue()


def _mean(page: OcrPage) -> float:
    """A reading's mean word confidence (0-1), 0.0 without words."""
    return page.mean_confidence or 0.0


def read_upright(picture: Image, engine: OcrEngine, detector: OrientationDetector | None,
                 min_confidence: float) -> OcrPage:
    """Read a rendered page the right way up (module docstring); boxes in the unturned page's frame.

    Reads once when the detector is sure, or when the upright reading is at or over
    ``min_confidence`` (0-1); otherwise up to four times. The result's ``cost_usd`` is the
    sum of every reading made (USD) and ``rotation`` the turn of the reading kept. Raises what the
    engine and the detector raise (:class:`~longdoc.core.errors.OcrPageError`,
    :class:`~longdoc.core.errors.OcrUnavailable`).
    """
    readings: dict[int, OcrPage] = {}

    def read(rotation: int) -> bool:
        readings[rotation] = in_original_frame(engine.read_page(png(turned(picture, rotation))), rotation)
        confidence = readings[rotation].mean_confidence
        return confidence is not None and confidence >= min_confidence

    guess = detector.detect_orientation(png(picture)) if detector is not None else None
    sure = guess is not None and guess.confidence >= OSD_MIN_CONFIDENCE and guess.rotation in ROTATIONS
    if not read(guess.rotation if sure and guess is not None else 0) and not sure:
        for rotation in TRIAL_ORDER:
            if rotation not in readings and read(rotation):
                break
    first = next(iter(readings.values()))
    best = max(readings.values(), key=_mean)
    if _mean(best) < _mean(first) + TURN_MARGIN:  # not clearly better: no turn on a page unreadable either way
        best = first
    return replace(best, cost_usd=sum(r.cost_usd for r in readings.values()))
