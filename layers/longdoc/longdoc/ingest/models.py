"""Shapes of a parsed document (ingest only): the text with its page map, furniture and heading marks."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from longdoc.core.models import PageSpan, _Frozen


class Furniture(_Frozen):
    """A running header or footer line removed from a PDF page's text (kept for reference).

    ``page`` is the 1-based physical page; ``position`` is ``"header"`` (top of the page)
    or ``"footer"`` (bottom); ``text`` is the line as extracted.
    """

    page: int
    position: Literal["header", "footer"]
    text: str


class HeadingMark(_Frozen):
    """A line whose role the format itself marks.

    ``kind``: ``heading`` (HTML ``<h1>``-``<h6>``, a DOCX heading style; always a section
    heading), ``list_item`` (an HTML ``<li>``: never a heading, whatever its number) or
    ``numbered`` (a DOCX paragraph numbered by Word's decimal list numbering: a section
    when its number fits the document's sequence, title or not). ``text[char_start:char_end]``
    is the line; ``level`` is 1 (top) to 9.
    """

    char_start: int = Field(ge=0)
    char_end: int = Field(ge=0)
    level: int = Field(ge=1, le=9)
    kind: Literal["heading", "list_item", "numbered"] = "heading"


class OcrPageInfo(_Frozen):
    """A PDF page whose text came from OCR: 1-based ``page``, the ``engine`` name, why it was read
    (``no_text_layer``: a scan; ``poor_text_layer``: an OCR layer that failed the quality check),
    how many ``words`` were read, their ``mean_confidence`` (0-1), ``low_confidence`` when that is
    under the threshold (indexed but flagged, or ``skipped``: left out of the text by the
    ``LONGDOC_OCR_LOW_CONFIDENCE=skip`` setting), the calls' ``cost_usd`` (USD; every orientation
    tried included), the clockwise ``rotation`` (degrees) the page was turned to be read upright,
    the ``dpi`` it was rendered at (0: not recorded) and the measured tilt of its lines,
    ``skew_degrees`` (:mod:`longdoc.ingest.parse.skew`; None when no line was long enough)."""

    page: int = Field(ge=1)
    engine: str
    reason: Literal["no_text_layer", "poor_text_layer"]
    words: int = Field(ge=0)
    mean_confidence: float = Field(ge=0, le=1)
    low_confidence: bool = False
    cost_usd: float = Field(0.0, ge=0)
    skipped: bool = False
    rotation: Literal[0, 90, 180, 270] = 0
    dpi: int = Field(0, ge=0)
    skew_degrees: float | None = None


class OcrFailure(_Frozen):
    """A 1-based PDF ``page`` OCR could not read, and why (a corrupt image, no words found)."""

    page: int = Field(ge=1)
    reason: str


class ParsedDocument(_Frozen):
    """A document decoded once into one text with a page map.

    Shapes: ``text`` is the whole document text (PDF pages joined by ``"\\n"``), the one
    text every later offset refers to; for PDFs it is the *cleaned* text (running headers
    and footers removed, soft line-end hyphens joined, ligatures spelt out), and the
    removed lines are kept in ``furniture``. ``pages`` lists one :class:`PageSpan` per page
    in order (one span with ``page=None`` for formats without pages). ``headings`` lists
    headings the format marks itself (HTML, DOCX); empty for PDF and text, where the
    chunker detects them. ``pages_needing_ocr`` lists 1-based pages that carry an image
    but no text (none of them read by OCR); ``ocr_pages`` the pages whose text OCR gave,
    ``ocr_failed`` the pages OCR could not read (with the reason) and ``poor_layer_pages``
    the pages whose OCR layer failed the quality check and were kept as they are (OCR off, or
    the re-read failed); ``ocr_check_cost_usd`` what re-reading the OCR layers that were kept cost (USD).
    ``page_outcomes`` has one outcome per PDF page (``text``, ``ocr``, ``ocr_low_confidence``,
    ``empty``, ``damaged``, ``unreadable``: :mod:`longdoc.ingest.parse.damage`; empty for other formats) and
    ``warnings`` one line per kind of trouble, naming the pages (damaged, garbage, low-confidence).
    ``content_sha256`` is the hex digest of the source bytes;
    ``doc_version`` is its first 16 hex characters.
    """

    source: str
    media_type: str
    content_sha256: str
    text: str
    pages: list[PageSpan]
    furniture: list[Furniture] = Field(default_factory=list)
    headings: list[HeadingMark] = Field(default_factory=list)
    pages_needing_ocr: list[int] = Field(default_factory=list)
    ocr_pages: list[OcrPageInfo] = Field(default_factory=list)
    ocr_failed: list[OcrFailure] = Field(default_factory=list)
    poor_layer_pages: list[int] = Field(default_factory=list)
    ocr_check_cost_usd: float = Field(0.0, ge=0)
    page_outcomes: list[Literal["text", "ocr", "ocr_low_confidence", "empty", "damaged", "unreadable"]] = Field(
        default_factory=list)
    warnings: list[str] = Field(default_factory=list)

    @property
    def doc_version(self) -> str:
        """First 16 hex characters of the source bytes' SHA-256."""
        return self.content_sha256[:16]

    @property
    def page_count(self) -> int:
        """Number of physical pages (0 for formats without pages)."""
        return sum(1 for p in self.pages if p.page is not None)

    @property
    def furniture_lines(self) -> dict[int, int]:
        """Lines removed as running headers and footers, per 1-based page (``furniture``, counted; a
        footer cut off the end of a body line counts as one); pages with none are left out."""
        counts: dict[int, int] = {}
        for item in self.furniture:
            counts[item.page] = counts.get(item.page, 0) + 1
        return dict(sorted(counts.items()))

    def page_at(self, offset: int) -> int | None:
        """Return the page holding character ``offset`` of :attr:`text` (``None`` without pages)."""
        for span in self.pages:
            if span.char_start <= offset < span.char_end:
                return span.page
        if self.pages and offset >= self.pages[-1].char_end:
            return self.pages[-1].page
        # Offset falls on a page separator: attribute it to the next page.
        for span in self.pages:
            if offset < span.char_start:
                return span.page
        return None

    def label_at(self, offset: int) -> str | None:
        """Return the printed page label of the page holding ``offset`` (``None`` if unlabelled)."""
        page = self.page_at(offset)
        return next((p.label for p in self.pages if p.page == page and page is not None), None)


