"""OCR of PDF pages without a usable text layer, through the :class:`~longdoc.core.ports.OcrEngine` port.

Which pages are read:

* a page with an image and no text (a scan): always, when an engine is given;
* a page whose text is an *OCR layer* (all its text drawn invisible, render mode 3, over a
  page image: what scanners and ``ocrmypdf`` write), when ``recheck_layers`` is on: the page
  is read again and the layer is kept when it agrees with the new reading
  (:func:`agreement` at least :data:`LAYER_MIN_AGREEMENT`); otherwise the new reading replaces
  it, unless its own confidence is under ``min_confidence`` (then the layer stays, flagged in
  ``poor_layer_pages``). Measured on the Vicksburg scan with Tesseract at 200 dpi: pages 1-2
  and 4-6 agree at 0.979-0.989, page 3 (text wrapped round an illustration, read out of order
  in the layer, ``mw-``, ``2*``) at 0.866; at 300 dpi (issue 27) pages 1-2 and 4-6 agree at
  0.968-0.988 and page 3 at 0.950, so the threshold is 0.96 and page 3 alone is re-read at both.
* without an engine, or with the recheck off, the layers are only checked for garbage tokens
  (:func:`layer_quality` under :data:`LAYER_MIN_QUALITY`, flagged in ``poor_layer_pages``).
  That check is cheap but blind to real-word errors (``tie earth``): every Vicksburg page scores
  0.994-0.998. A born-digital page is never checked: URLs, section signs and tables make the
  token check meaningless there (the Federal Register scores 0.81), and its text is the truth.

Each page is rendered with PDFium in grey at :func:`~longdoc.ingest.parse.orient.render_dpi`
(the target ``dpi``, 300 by default, or the page image's own resolution when finer, capped for
memory), turned upright and read by the engine (:func:`~longdoc.ingest.parse.orient.read_upright`,
when ``orient`` is on); the words, their boxes mapped back onto the unturned page, become the page
text, one OCR line per text line. A page whose mean word confidence is under ``min_confidence`` is
flagged ``low_confidence`` in :attr:`~longdoc.ingest.models.ParsedDocument.ocr_pages` and, by
``low_confidence``, indexed (``index``: its chunks carry ``ocr_low_confidence``) or left out
(``skip``); a page the engine cannot read, or where it reads no word, is named in ``ocr_failed``
and the other pages go on.

Progress: every page read is handed to ``cache`` (:class:`OcrCache`, a blob per page in the
pipeline), and a page found there is not read again, so an ingest cut short by its deadline
(``before_page`` raises :class:`~longdoc.core.errors.IngestDeadline`) resumes where it stopped.
"""

from __future__ import annotations

import io
import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal, Protocol

import pypdfium2 as pdfium
import pypdfium2.raw as pdfium_c

from longdoc.core.errors import OcrPageError
from longdoc.core.ports import OcrEngine, OcrPage, OrientationDetector
from longdoc.ingest.models import OcrFailure, OcrPageInfo
from longdoc.ingest.parse.layout import page_text_from_words
from longdoc.ingest.parse.skew import skew_degrees
from longdoc.ingest.parse.orient import MAX_RENDER_PIXELS, TARGET_DPI, png, read_upright, render_dpi, upright

if TYPE_CHECKING:
    from PIL.Image import Image

LAYER_MIN_QUALITY = 0.97
"""Share of plausible tokens an OCR layer needs when it cannot be re-read (Vicksburg pages: 0.994-0.998)."""
LAYER_MIN_AGREEMENT = 0.96
"""Word agreement (Dice, 0-1) an OCR layer needs with a fresh OCR reading to be kept (Vicksburg at
300 dpi: good layers 0.968-0.988, the out-of-order one 0.950)."""
INVISIBLE = 3
"""PDF text render mode 3: neither fill nor stroke (ISO 32000-1, 9.3.6), the mode of OCR layers."""
_TOKEN = re.compile(r"[^\s—–]+")
_ALNUM = re.compile(r"[^\W_]")
HYPHEN_MARKER = "\ufffe"
_PLAIN = re.compile(r"^[\"'‘’“”(\[]*([A-Za-z]+(?:[-'’][A-Za-z]+)*|[0-9][0-9,.:/-]*[0-9%]?|[A-Za-z]?[0-9]+[a-z]{0,2})"
                    r"[\"'‘’“”)\].,;:!?*]*$")
_WORD = re.compile(r"[^\W_]+")
_VOWEL = re.compile(r"[aeiouyAEIOUY]")
_CAMEL = re.compile(r"[a-z][A-Z]")


class OcrCache(Protocol):
    """Per-page OCR results kept across attempts of one document version (1-based pages)."""

    def get(self, page: int) -> OcrPage | None:
        """The result saved for ``page``, or None."""
        ...

    def put(self, page: int, result: OcrPage) -> None:
        """Save the result of ``page`` (durably, before the next page is read)."""
        ...


class MemoryOcrCache:
    """An :class:`OcrCache` in memory (one parse; tests)."""

    def __init__(self) -> None:
        self.pages: dict[int, OcrPage] = {}

    def get(self, page: int) -> OcrPage | None:
        """The result saved for ``page``, or None."""
        return self.pages.get(page)

    def put(self, page: int, result: OcrPage) -> None:
        """Keep the result of ``page``."""
        self.pages[page] = result


@dataclass(frozen=True)
class OcrOptions:
    """How OCR runs in a parse: the ``engine``; whether poor OCR layers are re-read (``recheck_layers``);
    the mean word confidence (0-1) under which a page is flagged; the target render resolution in
    dots per inch (``dpi``; a finer page image raises it, ``max_pixels`` caps the rendered page);
    the progress ``cache``; ``before_page``, called before each page is read (it raises
    :class:`~longdoc.core.errors.IngestDeadline` when the invocation is short of time); whether each
    page is turned upright before it is read (``orient``) and by which ``detector`` (None: the
    engine itself when it is one, else only the trial by confidence); and what becomes of a
    low-confidence page (``low_confidence``: ``index`` it flagged, or ``skip`` it)."""

    engine: OcrEngine
    recheck_layers: bool = True
    min_confidence: float = 0.80
    dpi: int = TARGET_DPI
    cache: OcrCache = field(default_factory=MemoryOcrCache)
    before_page: Callable[[], None] | None = None
    orient: bool = True
    detector: OrientationDetector | None = None
    low_confidence: Literal["index", "skip"] = "index"
    max_pixels: int = MAX_RENDER_PIXELS


@dataclass
class OcrOutcome:
    """What OCR did to a PDF: new page texts by 1-based page, the pages read, failed and flagged,
    and the cost (USD) of the readings that checked an OCR layer and kept it; then, filled by the
    PDF reader (:mod:`~longdoc.ingest.parse.damage`), the pages PDFium could not load
    (``unreadable``, with the reason), one outcome per page and the warnings naming pages."""

    texts: dict[int, str] = field(default_factory=dict)
    pages: list[OcrPageInfo] = field(default_factory=list)
    failed: list[OcrFailure] = field(default_factory=list)
    poor_layers: list[int] = field(default_factory=list)
    check_cost_usd: float = 0.0
    unreadable: dict[int, str] = field(default_factory=dict)
    page_outcomes: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


def _words(text: str) -> Counter[str]:
    """The lower-case words of a text, line-end hyphens (and PDFium's marker) joined."""
    return Counter(w.lower() for w in _WORD.findall(text.replace(HYPHEN_MARKER, "").replace("-\n", "")))


def agreement(layer: str, reading: str) -> float:
    """Word agreement of two texts of one page (Dice over word multisets, 0-1; 1.0 when both are empty)."""
    a, b = _words(layer), _words(reading)
    total = sum(a.values()) + sum(b.values())
    return 2 * sum((a & b).values()) / total if total else 1.0


def layer_quality(text: str) -> float:
    """The share (0-1) of plausible tokens in a page text (1.0 when it has none).

    Tokens are split at white space and dashes (``—``, ``–``); PDFium's hyphen marker counts as a
    hyphen; tokens without a letter or digit (quotes, bullets) are not counted. A token is plausible
    when it is a word of letters (with inner hyphens or apostrophes), a number or a short code, in
    optional quotes or brackets with trailing punctuation, and neither a word of four or more small
    letters without a vowel nor one with a capital after a small letter (``SibieyTent``).
    """
    tokens = [t for t in _TOKEN.findall(text.replace(HYPHEN_MARKER, "-")) if _ALNUM.search(t)]
    if not tokens:
        return 1.0
    bad = 0
    for token in tokens:
        m = _PLAIN.match(token)
        word = m.group(1) if m else ""
        bad += (not m or (word.isalpha() and len(word) >= 4 and not word.isupper() and not _VOWEL.search(word))
                or bool(_CAMEL.search(word)))
    return 1 - bad / len(tokens)


def is_ocr_layer(page: pdfium.PdfPage) -> bool:
    """Whether the page's text is an OCR layer: it has an image and all its text objects are invisible
    (stops at the first visible one, so a born-digital page costs one object)."""
    seen = False
    for obj in page.get_objects(filter=[pdfium_c.FPDF_PAGEOBJ_TEXT], max_depth=3):
        if pdfium_c.FPDFTextObj_GetTextRenderMode(obj.raw) != INVISIBLE:
            return False
        seen = True
    return seen and any(True for _ in page.get_objects(filter=[pdfium_c.FPDF_PAGEOBJ_IMAGE], max_depth=3))


def page_image(pdf: pdfium.PdfDocument, index: int, dpi: int) -> bytes:
    """Page ``index`` (0-based) rendered by PDFium at ``dpi``, in grey, as PNG bytes."""
    page = pdf[index]
    try:
        bitmap = page.render(scale=dpi / 72, grayscale=True)
        out = io.BytesIO()
        bitmap.to_pil().save(out, format="PNG")
        return out.getvalue()
    finally:
        page.close()


def image_dpi(page: pdfium.PdfPage) -> float | None:
    """The finest resolution (dots per inch, as drawn on the page) of the page's images, or None without one."""
    best: float | None = None
    for obj in page.get_objects(filter=[pdfium_c.FPDF_PAGEOBJ_IMAGE], max_depth=3):
        try:
            meta = obj.get_metadata()
        except pdfium.PdfiumError:
            continue
        dpi = max(float(meta.horizontal_dpi), float(meta.vertical_dpi))
        best = dpi if best is None or dpi > best else best
    return best


def page_render(pdf: pdfium.PdfDocument, index: int, options: OcrOptions) -> tuple[int, Image]:
    """Page ``index`` (0-based) rendered in grey for OCR: ``(dpi, PIL image)`` at :func:`render_dpi`."""
    page = pdf[index]
    try:
        width, height = page.get_size()
        dpi = render_dpi(width, height, image_dpi(page), target=options.dpi, max_pixels=options.max_pixels)
        return dpi, page.render(scale=dpi / 72, grayscale=True).to_pil()
    finally:
        page.close()


def page_dpi(pdf: pdfium.PdfDocument, number: int, options: OcrOptions) -> int:
    """The resolution 1-based page ``number`` is (or was) rendered at for OCR (:func:`render_dpi`)."""
    page = pdf[number - 1]
    try:
        width, height = page.get_size()
        return render_dpi(width, height, image_dpi(page), target=options.dpi, max_pixels=options.max_pixels)
    finally:
        page.close()


def _read(pdf: pdfium.PdfDocument, number: int, options: OcrOptions) -> OcrPage:
    """The OCR result of 1-based page ``number``: from the cache, else read (and cached)."""
    cached = options.cache.get(number)
    if cached is not None:
        return cached
    if options.before_page is not None:
        options.before_page()
    _, picture = page_render(pdf, number - 1, options)
    if options.orient:
        detector = options.detector
        if detector is None and isinstance(options.engine, OrientationDetector):
            detector = options.engine
        result = read_upright(picture, options.engine, detector, options.min_confidence)
    else:
        result = options.engine.read_page(png(picture))
    options.cache.put(number, result)
    return result


def _recheck(number: int, layer: str, result: OcrPage, options: OcrOptions, outcome: OcrOutcome) -> bool:
    """Whether a fresh reading of OCR-layer page ``number`` replaces the layer; records the check."""
    confidence = result.mean_confidence
    if agreement(layer, result.text) >= LAYER_MIN_AGREEMENT:
        outcome.check_cost_usd += result.cost_usd
        return False
    if confidence is None or confidence < options.min_confidence:
        outcome.check_cost_usd += result.cost_usd
        outcome.poor_layers.append(number)
        return False
    return True


def _upright_aspect(pdf: pdfium.PdfDocument, number: int, rotation: int) -> float:
    """Height / width of 1-based page ``number`` once turned ``rotation`` degrees (for :mod:`.skew`)."""
    page = pdf[number - 1]
    try:
        width, height = page.get_size()
    finally:
        page.close()
    return width / height if rotation in (90, 270) else height / width


def run_ocr(pdf: pdfium.PdfDocument, scans: list[int], layers: dict[int, str], options: OcrOptions) -> OcrOutcome:
    """Read ``scans`` (1-based pages without text) and re-read ``layers`` (OCR-layer page -> its text).

    Raises only what ``before_page`` raises and :class:`~longdoc.core.errors.OcrUnavailable` (the
    engine cannot run); an unreadable scan is recorded in ``failed``, an unreadable layer page keeps its layer.
    """
    outcome = OcrOutcome()
    for number in sorted({*scans, *layers}):
        try:
            result = _read(pdf, number, options)
        except OcrPageError as exc:
            if number not in layers:
                outcome.failed.append(OcrFailure(page=number, reason=str(exc)))
            continue
        confidence = result.mean_confidence
        if number in layers:
            if not _recheck(number, layers[number], result, options, outcome):
                continue
        elif confidence is None or not result.text.strip():
            outcome.failed.append(OcrFailure(page=number, reason="OCR read no words (blank or unreadable image)"))
            continue
        assert confidence is not None
        low = confidence < options.min_confidence
        skip = low and options.low_confidence == "skip"
        words = upright(result).words
        text = page_text_from_words(words)
        aspect = _upright_aspect(pdf, number, result.rotation)
        if not skip:
            outcome.texts[number] = text
        outcome.pages.append(OcrPageInfo(page=number, engine=result.engine, words=len(result.words),
                                         reason="no_text_layer" if number not in layers else "poor_text_layer",
                                         mean_confidence=round(confidence, 4), cost_usd=result.cost_usd,
                                         low_confidence=low, skipped=skip, rotation=result.rotation,
                                         dpi=page_dpi(pdf, number, options),
                                         skew_degrees=skew_degrees(words, aspect)))
    return outcome
