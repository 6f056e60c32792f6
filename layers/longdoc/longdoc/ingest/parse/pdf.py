"""PDF pages through PDFium (pypdfium2): page texts, page labels, scans that need OCR.

PDFium replaces a ``-`` or U+00AD that ends a line before a letter with U+FFFE in the
page text (older builds: U+0002) and drops the line break; that marker is kept here and
resolved later with the whole document's vocabulary
(:func:`~longdoc.ingest.parse.hyphens.resolve_hyphens`). Ligatures are spelt out.
PDFium is not thread-safe, not even across different documents (pypdfium2's docs: "PDFium is
not thread-safe ... it is not allowed to call pdfium functions simultaneously across different
threads"); every PDFium call in the product holds :data:`PDFIUM_LOCK`.
"""

from __future__ import annotations

import threading
from dataclasses import replace

import pypdfium2 as pdfium
import pypdfium2.raw as pdfium_c

from longdoc.core.errors import DocumentError
from longdoc.core.models import PageSpan
from longdoc.core.progress import reporter
from longdoc.ingest.models import Furniture
from longdoc.ingest.parse.cleanup import LIGATURES, find_furniture
from longdoc.ingest.parse.hyphens import HYPHEN_MARKER, resolve_hyphens
from longdoc.ingest.parse.page_labels import labels_from_furniture
from longdoc.ingest.parse.copies import copy_groups
from longdoc.ingest.parse.damage import Damage, furniture_warnings, page_outcomes, strip_operator_garbage
from longdoc.ingest.parse.reading import reading_order
from longdoc.ingest.parse.running import running_headers
from longdoc.ingest.parse.ocr import LAYER_MIN_QUALITY, OcrOptions, OcrOutcome, is_ocr_layer, layer_quality, run_ocr
from longdoc.ingest.parse.forms import FormField, has_forms, merge_form_fields, read_form_fields
from longdoc.ingest.parse.text import DROP_C0, normalise

PDFIUM_LOCK = threading.RLock()
"""Held around every use of PDFium in this process: two ingests in two threads (a local server's
workers, the concurrent-delivery tests) otherwise crash the interpreter (a segmentation fault)."""

PAGE_SEPARATOR = "\n"
"""What joins page texts into the document text: one newline, never a paragraph break."""

_PDF_TABLE: dict[int, str | None] = {**DROP_C0, **LIGATURES, 0x00AD: "-", 0x0002: HYPHEN_MARKER}
_PDFIUM_ERRORS = {
    pdfium_c.FPDF_ERR_UNKNOWN: "unknown error",
    pdfium_c.FPDF_ERR_FILE: "file access error",
    pdfium_c.FPDF_ERR_FORMAT: "data format error",
    pdfium_c.FPDF_ERR_PAGE: "page not found or content error",
}


def read_pdf(source: str, data: bytes, max_pages: int,
             ocr: OcrOptions | None = None) -> tuple[str, list[PageSpan], list[Furniture], OcrOutcome, list[int]]:
    """Read a PDF into ``(text, pages, furniture, ocr_outcome, pages_needing_ocr)``.

    ``text`` is the cleaned page texts (running headers and footers removed, a section's
    running header too (:mod:`~longdoc.ingest.parse.running`), line-end
    hyphens resolved) joined by :data:`PAGE_SEPARATOR`; ``pages`` has one 1-based
    :class:`PageSpan` per page whose ``text[char_start:char_end]`` is that page's text,
    labelled with the PDF's own page labels, else the numbers printed in its furniture;
    ``furniture`` the removed lines; ``ocr_outcome`` what OCR read, failed and flagged
    (:mod:`~longdoc.ingest.parse.ocr`; nothing read when ``ocr`` is None), its warnings naming also
    the pages that lost most of their text to furniture removal and a document made of copies
    (:func:`~longdoc.ingest.parse.damage.furniture_warnings`);
    ``pages_needing_ocr`` the 1-based pages with an image but no text that OCR did not read.
    Raises :class:`DocumentError` as :func:`pdf_pages` does.
    """
    raw_texts, pdf_labels, needs_ocr, outcome = pdf_pages(source, data, max_pages, ocr)
    cleaned, furniture = find_furniture(raw_texts)
    cleaned, running = running_headers(cleaned)  # a section's own running header ("Part A ... continued")
    page_texts = resolve_hyphens(cleaned)
    labels = pdf_labels if any(pdf_labels) else labels_from_furniture(len(page_texts), furniture)
    furniture = sorted(furniture + running, key=lambda f: f.page)
    outcome.warnings = outcome.warnings + furniture_warnings(raw_texts, furniture, copy_groups(raw_texts))
    return PAGE_SEPARATOR.join(page_texts), page_spans(page_texts, labels), furniture, outcome, needs_ocr


def pdf_pages(source: str, data: bytes, max_pages: int,
              ocr: OcrOptions | None = None) -> tuple[list[str], list[str | None], list[int], OcrOutcome]:
    """Return ``(texts, labels, pages_needing_ocr, ocr_outcome)`` for every page of a PDF, in page order.

    With ``ocr``, scanned pages (and poor OCR layers, when ``ocr.recheck_layers``) are read
    by its engine and their texts replaced (:func:`_apply_ocr`).

    ``texts`` still hold the hyphen marker U+FFFE (resolved later, with the whole document's
    vocabulary) and the values of filled form fields after their labels
    (:mod:`~longdoc.ingest.parse.forms`); ``labels`` are the PDF's own page labels (``None`` where it defines none).
    Raises :class:`DocumentError` naming ``source`` when the PDF needs a password, uses an
    unsupported security handler, is corrupt (or no page of it loads), has no pages or more than
    ``max_pages``, or has no text on any page (a scan that needs OCR). A page PDFium cannot load
    is empty, named in ``ocr_outcome.unreadable`` and in a warning (:mod:`~longdoc.ingest.parse.damage`),
    and the other pages go on; so is a page whose compressed content stream is damaged
    (:mod:`~longdoc.ingest.parse.streams`, through pikepdf), and content-stream operators leaked into a page's text
    are removed from it (:func:`~longdoc.ingest.parse.damage.strip_operator_garbage`).
    """
    with PDFIUM_LOCK:
        texts, labels, needs_ocr, outcome, page_count = _read_pages(source, data, max_pages, ocr)
    from longdoc.ingest.parse.streams import find_stream_damage  # pikepdf: the ingest's only, not the API's PDFIUM_LOCK import

    streams = find_stream_damage(data, page_count)
    damage = Damage(unreadable=outcome.unreadable, other=streams.other,
                    streams={p: r for p, r in streams.pages.items() if p not in outcome.unreadable})
    for index, text in enumerate(texts):
        texts[index], removed = strip_operator_garbage(text)
        if removed:
            damage.stripped[index + 1] = removed
    outcomes, warnings = page_outcomes(texts, outcome.pages, outcome.failed, damage,
                                       ocr.min_confidence if ocr is not None else 0.80)
    outcome.page_outcomes, outcome.warnings = list(outcomes), warnings
    if outcome.unreadable and len(outcome.unreadable) == page_count:
        raise DocumentError(source, f"corrupt or unreadable PDF (page 1: {outcome.unreadable[1]})")
    if not any(t.strip() for t in texts):
        raise DocumentError(source, _no_text_reason(page_count, outcome, ocr))
    return texts, labels, needs_ocr, outcome


def _no_text_reason(page_count: int, outcome: OcrOutcome, ocr: OcrOptions | None) -> str:
    """Why a PDF has no text on any page: no text layer (a scan that needs OCR), OCR failures, or
    pages OCR read under the confidence threshold and left out (``LONGDOC_OCR_LOW_CONFIDENCE=skip``)."""
    skipped = [p for p in outcome.pages if p.skipped]
    failed = "; ".join(f"page {f.page}: {f.reason}" for f in outcome.failed)
    if skipped and ocr is not None:
        pages = ", ".join(f"page {p.page}: {p.mean_confidence:.2f}" for p in skipped)
        reason = (f"no text indexed from any of the {page_count} pages: OCR read {len(skipped)} of them with low "
                  f"confidence (mean word confidence {pages}; under LONGDOC_OCR_MIN_CONFIDENCE="
                  f"{ocr.min_confidence:.2f}) and LONGDOC_OCR_LOW_CONFIDENCE=skip left them out; set "
                  "LONGDOC_OCR_LOW_CONFIDENCE=index to index them flagged ocr_low_confidence")
    else:
        reason = f"no text layer on any of the {page_count} pages (scanned image; needs OCR)"
    return reason + (f"; OCR failed: {failed}" if failed else "")


def _read_pages(source: str, data: bytes, max_pages: int,
                ocr: OcrOptions | None) -> tuple[list[str], list[str | None], list[int], OcrOutcome, int]:
    """:func:`pdf_pages` without the no-text check, plus the page count; the caller holds :data:`PDFIUM_LOCK`."""
    pdf = _open_pdf(source, data)
    try:
        page_count = len(pdf)
        if page_count > max_pages:
            raise DocumentError(
                source, f"too many pages: {page_count}, over the limit of {max_pages} pages"
            )
        texts: list[str] = []
        labels: list[str | None] = []
        needs_ocr: list[int] = []
        unreadable: dict[int, str] = {}
        progress, stage = reporter(), f"parse {source}"  # the ingest's parse stage, when one is open
        progress.resize(stage, page_count, "pages")
        layer_pages: list[int] = []  # 1-based pages whose text is an OCR layer (is_ocr_layer)
        for index in range(page_count):
            try:
                raw, has_image, fields, layer = _raw_page_text(pdf, index)
            except pdfium.PdfiumError as exc:  # a damaged page: named in a warning, the others go on
                raw, has_image, fields, layer = "", False, [], False
                unreadable[index + 1] = str(exc).rstrip(".")
            page_text = normalise(raw, _PDF_TABLE).strip("\n")
            if fields:
                page_text = merge_form_fields(page_text, [_normalised(f) for f in fields])
            texts.append(page_text)
            progress.advance(stage)
            if layer and page_text.strip():
                layer_pages.append(index + 1)
            if not page_text.strip() and has_image:
                needs_ocr.append(index + 1)
            try:
                labels.append(pdf.get_page_label(index) or None)
            except pdfium.PdfiumError:  # pragma: no cover - a broken label tree is not fatal
                labels.append(None)
        needs_ocr, outcome = _apply_ocr(pdf, texts, needs_ocr, layer_pages, ocr)
        outcome.unreadable = unreadable
    finally:
        pdf.close()
    return texts, labels, needs_ocr, outcome, page_count


def _apply_ocr(pdf: pdfium.PdfDocument, texts: list[str], needs_ocr: list[int], layer_pages: list[int],
               ocr: OcrOptions | None) -> tuple[list[int], OcrOutcome]:
    """Read scans (and re-read OCR layers: ``layer_pages``, 1-based, found while the text was read) with
    ``ocr``, replacing their entries of ``texts`` in place.

    Returns the pages still needing OCR and the outcome; without ``ocr`` (or with the recheck
    off) OCR layers full of garbage tokens are only flagged (:mod:`~longdoc.ingest.parse.ocr`).
    """
    layers = {p: texts[p - 1] for p in layer_pages}
    flagged = [p for p, text in layers.items() if layer_quality(text) < LAYER_MIN_QUALITY]
    if ocr is None:
        return needs_ocr, OcrOutcome(poor_layers=flagged)
    outcome = run_ocr(pdf, needs_ocr, layers if ocr.recheck_layers else {}, ocr)
    for number, text in outcome.texts.items():
        texts[number - 1] = normalise(text, _PDF_TABLE).strip("\n")
    if not ocr.recheck_layers:
        outcome.poor_layers = flagged
    read = outcome.texts.keys() | {p.page for p in outcome.pages}  # a skipped low-confidence page was read
    return [p for p in needs_ocr if p not in read], outcome


def _open_pdf(source: str, data: bytes) -> pdfium.PdfDocument:
    """Open a PDF without a password (an empty user password works); ``data`` must outlive it.

    Loads through the raw API because pypdfium2's constructor also rejects a document that
    loaded but has 0 pages, and then reports PDFium's last error, which is stale in that
    case (it can say "Incorrect password" left over from an earlier file).
    """
    handle = pdfium_c.FPDF_LoadMemDocument64(data, len(data), None)
    if not handle:
        raise DocumentError(source, _open_failure_reason(pdfium_c.FPDF_GetLastError()))
    pdf = pdfium.PdfDocument(handle)
    if len(pdf) == 0:
        pdf.close()
        raise DocumentError(source, "PDF has no pages")
    if has_forms(pdf):
        pdf.init_forms()  # before any page is loaded, so widget values can be read
    return pdf


def _normalised(field: FormField) -> FormField:
    """A form field with its label and value normalised like page text."""
    return replace(field, value=normalise(field.value, _PDF_TABLE), label=normalise(field.label, _PDF_TABLE))


def _raw_page_text(pdf: pdfium.PdfDocument, index: int) -> tuple[str, bool, list[FormField], bool]:
    """Return PDFium's text for page ``index`` (0-based), whether the page holds an image,
    its filled form fields, and whether its text is an OCR layer (:func:`~longdoc.ingest.parse.ocr.is_ocr_layer`,
    asked here so each page is loaded once: loading a page is most of PDFium's cost).

    The image check only runs for a page without text (a scan candidate). Closes every
    page object it opens. Raises :class:`pypdfium2.PdfiumError` when PDFium cannot load the page
    (the caller names it unreadable and goes on).
    """
    page = pdf[index]
    try:
        textpage = page.get_textpage()
        try:
            text = reading_order(textpage)
            fields = read_form_fields(pdf, page, textpage)
        finally:
            textpage.close()
        has_image = False
        if not text.strip() and not fields:
            has_image = any(True for _ in page.get_objects(filter=[pdfium_c.FPDF_PAGEOBJ_IMAGE], max_depth=3))
        return text, has_image, fields, is_ocr_layer(page)
    finally:
        page.close()


def _open_failure_reason(err_code: int) -> str:
    """Explain a PDFium load failure code (``FPDF_ERR_*`` in PDFium's ``fpdfview.h``)."""
    if err_code == pdfium_c.FPDF_ERR_PASSWORD:
        return "encrypted: a password is required to open it"
    if err_code == pdfium_c.FPDF_ERR_SECURITY:
        return "encrypted with an unsupported security handler"
    detail = _PDFIUM_ERRORS.get(err_code, f"error code {err_code}")
    return f"corrupt or unreadable PDF (PDFium: {detail})"


def page_spans(page_texts: list[str], labels: list[str | None]) -> list[PageSpan]:
    """Return one span per page (1-based) for texts joined by :data:`PAGE_SEPARATOR`, with labels.

    ``labels`` has one entry per page; ValueError when the lengths differ.
    """
    spans: list[PageSpan] = []
    start = 0
    for number, (page_text, label) in enumerate(zip(page_texts, labels, strict=True), start=1):
        spans.append(PageSpan(page=number, char_start=start, char_end=start + len(page_text), label=label))
        start += len(page_text) + len(PAGE_SEPARATOR)
    return spans
