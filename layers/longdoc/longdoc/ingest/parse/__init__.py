"""Turn uploaded bytes (PDF, plain text, Markdown) into one text with a page map.

:func:`parse_document` is the only entry point. It decides the format from the bytes
and the file name together, extracts text (PDF pages with PDFium through pypdfium2),
normalises it without changing its meaning, and returns a
:class:`~longdoc.ingest.models.ParsedDocument` whose :class:`~longdoc.core.models.PageSpan` list maps
character offsets back to 1-based physical pages. Every failure is a
:class:`~longdoc.core.errors.DocumentError` naming the file and saying why.

Normalisation (both formats): ``\\r\\n`` and ``\\r`` become ``\\n``; C0 control characters
other than ``\\n`` and ``\\t`` (NUL, form feed, ...) are removed; trailing whitespace is
stripped from every line; U+00AD is written as ``-`` (see below). PDF text also gets
PDFium's line-end hyphen marker turned back into ``-`` plus the line break it replaced.
Blank lines at the top and bottom of a PDF page are dropped, so the single ``"\\n"``
between pages never turns into an invented paragraph break. There is no Unicode (NFKC)
normalisation and no dehyphenation here.

Hyphen decisions, measured on the shared corpus:

* PDFium (``core/fpdftext/cpdf_textpage.cpp``) replaces a ``-`` or U+00AD that ends a line
  before a letter with U+FFFE in the page text (older builds: U+0002) and drops the line
  break. In the corpus every such marker sits at a line end, and many are real compound
  hyphens (``twenty-four``, ``non-exclusive``, ``IMMU-132``, ``1320a-7a(g)``), so deleting
  the marker would corrupt words and citations. We write ``"-\\n"``: exactly what is
  printed on the page, leaving any dehyphenation to a later, explicit step.
* U+00AD is drawn as a visible hyphen in PDFs (ISO 32000-1, Annex D: code 0o255 in
  WinAnsiEncoding is typographically the same as the hyphen), and every U+00AD in the
  corpus text files is a visible hyphen too (``Rule 13a-15(e)``, ``File No. 333-194486``),
  so it becomes ``-`` rather than being deleted.
"""

from __future__ import annotations

import hashlib
import re
from pathlib import PurePosixPath

import pypdfium2 as pdfium
import pypdfium2.raw as pdfium_c

from longdoc.ingest.parse.cleanup import HYPHEN_MARKER, LIGATURES, find_furniture, labels_from_furniture, resolve_hyphens
from longdoc.core.errors import DocumentError
from longdoc.ingest.parse.formats import docx_to_text, html_to_text
from longdoc.ingest.models import Furniture, HeadingMark, ParsedDocument
from longdoc.core.models import PageSpan

DEFAULT_MAX_BYTES = 200 * 1024 * 1024
"""Default size cap in bytes (200 MiB), a project limit that keeps a Lambda within memory."""

DEFAULT_MAX_PAGES = 5000
"""Default page cap, a project limit on how long a single parse may run."""

PDF_MEDIA_TYPE = "application/pdf"
TEXT_MEDIA_TYPES: dict[str, str] = {
    ".txt": "text/plain",
    ".text": "text/plain",
    ".md": "text/markdown",
    ".markdown": "text/markdown",
}
"""Text extensions (lower case, with the dot) and the media type each one maps to."""

HTML_MEDIA_TYPE = "text/html"
DOCX_MEDIA_TYPE = "application/vnd.openxmlformats-officedocument.wordprocessingml.document"
HTML_EXTENSIONS = (".html", ".htm")

SUPPORTED_EXTENSIONS: tuple[str, ...] = (".pdf", *TEXT_MEDIA_TYPES, *HTML_EXTENSIONS, ".docx")
_ZIP_MAGIC = b"PK\x03\x04"

_PDF_MAGIC = b"%PDF-"
# PDF Reference 1.7, Appendix H, note 13: readers accept the header anywhere in the first
# 1024 bytes, so junk before it (mail headers, whitespace) is tolerated.
_PDF_HEADER_WINDOW = 1024

_PAGE_SEPARATOR = "\n"

# C0 controls except \t (0x09) and \n (0x0A); \r is turned into \n before this runs.
_DROP_C0 = {code: None for code in range(0x20) if code not in (0x09, 0x0A)}
_TEXT_TABLE = {**_DROP_C0, 0x00AD: "-"}
_PDF_TABLE = {**_DROP_C0, **LIGATURES, 0x00AD: "-", 0x0002: HYPHEN_MARKER}
_TRAILING_SPACE = re.compile(r"[^\S\n]+$", re.MULTILINE)
_PDFIUM_ERRORS = {
    pdfium_c.FPDF_ERR_UNKNOWN: "unknown error",
    pdfium_c.FPDF_ERR_FILE: "file access error",
    pdfium_c.FPDF_ERR_FORMAT: "data format error",
    pdfium_c.FPDF_ERR_PAGE: "page not found or content error",
}


def parse_document(
    source: str,
    data: bytes,
    *,
    max_bytes: int = DEFAULT_MAX_BYTES,
    max_pages: int = DEFAULT_MAX_PAGES,
) -> ParsedDocument:
    """Parse ``data`` (the bytes of the file named ``source``) into a :class:`ParsedDocument`.

    Args:
        source: file name or object key; its extension (case-insensitive) takes part in
            format detection, and it is stored on the result and named in errors.
        data: the whole file.
        max_bytes: size cap in bytes (default 200 MiB); larger input is refused unread.
        max_pages: page cap for PDFs (default 5000).

    Returns:
        For PDFs (bytes with ``%PDF-`` in the first 1024 bytes, whatever the extension):
        ``media_type="application/pdf"``, page texts joined by a single ``"\\n"`` and one
        ``PageSpan(page=i)`` per page (1-based) with ``text[char_start:char_end]`` equal to
        that page's text, excluding the joining newline; a page without text gets an empty
        span. For ``.txt``/``.text`` (``text/plain``) and ``.md``/``.markdown``
        (``text/markdown``): one ``PageSpan(page=None)`` covering the whole text.
        ``content_sha256`` is the SHA-256 hex digest of ``data``.

    Raises:
        DocumentError: with a specific ``reason``: empty file; over ``max_bytes`` or
            ``max_pages``; unsupported extension; ``.pdf`` name on non-PDF bytes; NUL bytes
            in text; text neither UTF-8 nor cp1252; text that is only whitespace; a PDF
            that needs a password, uses an unsupported security handler, is corrupt, has
            no pages, or has no text on any page (a scan that needs OCR).

    PDFium is not thread-safe: call this from one thread at a time per process.
    """
    if not data:
        raise DocumentError(source, "empty file (0 bytes)")
    if len(data) > max_bytes:
        raise DocumentError(
            source, f"file too large: {len(data)} bytes, over the limit of {max_bytes} bytes"
        )
    media_type = _detect_media_type(source, data)
    furniture: list[Furniture] = []
    needs_ocr: list[int] = []
    headings: list[HeadingMark] = []
    if media_type == PDF_MEDIA_TYPE:
        raw_texts, pdf_labels, needs_ocr = _pdf_pages(source, data, max_pages)
        cleaned, furniture = find_furniture(raw_texts)
        page_texts = resolve_hyphens(cleaned)
        if any(pdf_labels):
            labels = pdf_labels
        else:
            labels = labels_from_furniture(len(page_texts), furniture)
        text = _PAGE_SEPARATOR.join(page_texts)
        pages = _page_spans(page_texts, labels)
    elif media_type == DOCX_MEDIA_TYPE:
        try:
            raw, headings = docx_to_text(data)
        except Exception as exc:  # docx2python raises KeyError/BadZipFile/XML errors alike
            raise DocumentError(source, f"corrupt or unreadable DOCX ({type(exc).__name__}: {exc})") from exc
        text = _normalise(raw, _TEXT_TABLE)
        if not text.strip():
            raise DocumentError(source, "no text: the DOCX has no paragraphs with text")
        pages = [PageSpan(page=None, char_start=0, char_end=len(text))]
    elif media_type == HTML_MEDIA_TYPE:
        raw, headings = html_to_text(_decode_text(source, data))
        text = _normalise(raw, _TEXT_TABLE)
        if not text.strip():
            raise DocumentError(source, "no text: the HTML has no visible text")
        pages = [PageSpan(page=None, char_start=0, char_end=len(text))]
    else:
        text = _normalise(_decode_text(source, data), _TEXT_TABLE)
        if not text.strip():
            raise DocumentError(source, "no text: the file holds only whitespace")
        pages = [PageSpan(page=None, char_start=0, char_end=len(text))]
    return ParsedDocument(
        source=source,
        media_type=media_type,
        content_sha256=hashlib.sha256(data).hexdigest(),
        text=text,
        pages=pages,
        furniture=furniture,
        headings=headings,
        pages_needing_ocr=needs_ocr,
    )


def _detect_media_type(source: str, data: bytes) -> str:
    """Return the media type of ``data``: PDF content wins, otherwise the extension decides."""
    extension = PurePosixPath(source).suffix.lower()
    if data.find(_PDF_MAGIC, 0, _PDF_HEADER_WINDOW + len(_PDF_MAGIC) - 1) != -1:
        return PDF_MEDIA_TYPE
    if data.startswith(_ZIP_MAGIC) and b"word/document.xml" in data:
        return DOCX_MEDIA_TYPE
    if extension == ".docx":
        raise DocumentError(
            source, "extension says DOCX but the content is not a Word document (no ZIP with word/document.xml)"
        )
    if extension in HTML_EXTENSIONS:
        return HTML_MEDIA_TYPE
    if extension == ".pdf":
        raise DocumentError(
            source,
            "extension says PDF but the content is not a PDF "
            f"(no '%PDF-' header in the first {_PDF_HEADER_WINDOW} bytes)",
        )
    if extension in TEXT_MEDIA_TYPES:
        return TEXT_MEDIA_TYPES[extension]
    shown = f"'{extension}'" if extension else "(no extension)"
    raise DocumentError(
        source,
        f"unsupported file type {shown} (supported: {', '.join(SUPPORTED_EXTENSIONS)})",
    )


def _decode_text(source: str, data: bytes) -> str:
    """Decode text bytes: UTF-8 (a leading BOM is dropped), else cp1252 if it round-trips."""
    if b"\x00" in data:
        utf16 = data.startswith((b"\xff\xfe", b"\xfe\xff"))
        hint = "; UTF-16 text is not supported, save it as UTF-8" if utf16 else ""
        raise DocumentError(source, f"binary content, not text (it contains NUL bytes{hint})")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as utf8_error:
        try:
            text = data.decode("cp1252")
        except UnicodeDecodeError:
            text = None
        if text is None or text.encode("cp1252") != data:
            raise DocumentError(
                source,
                f"not UTF-8 text (invalid byte at offset {utf8_error.start}) "
                "and not cp1252 either",
            ) from None
        return text


def _normalise(text: str, table: dict[int, str | None]) -> str:
    """Unify line ends, apply ``table`` (drop controls, map hyphens), strip line ends."""
    text = text.replace("\r\n", "\n").replace("\r", "\n").translate(table)
    return _TRAILING_SPACE.sub("", text)


def _pdf_pages(source: str, data: bytes, max_pages: int) -> tuple[list[str], list[str | None], list[int]]:
    """Return ``(texts, labels, pages_needing_ocr)`` for every page of a PDF, in page order.

    ``texts`` still hold the hyphen marker U+FFFE (resolved later, with the whole document's
    vocabulary); ``labels`` are the PDF's own page labels (``None`` where it defines none).
    """
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
        for index in range(page_count):
            raw, has_image = _raw_page_text(source, pdf, index)
            page_text = _normalise(raw, _PDF_TABLE).strip("\n")
            texts.append(page_text)
            if not page_text.strip() and has_image:
                needs_ocr.append(index + 1)
            try:
                labels.append(pdf.get_page_label(index) or None)
            except pdfium.PdfiumError:  # pragma: no cover - a broken label tree is not fatal
                labels.append(None)
    finally:
        pdf.close()
    if not any(t.strip() for t in texts):
        raise DocumentError(
            source,
            f"no text layer on any of the {page_count} pages (scanned image; needs OCR)",
        )
    return texts, labels, needs_ocr


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
    return pdf


def _raw_page_text(source: str, pdf: pdfium.PdfDocument, index: int) -> tuple[str, bool]:
    """Return PDFium's text for page ``index`` (0-based) and whether the page holds an image.

    The image check only runs for a page without text (a scan candidate). Closes every
    page object it opens.
    """
    try:
        page = pdf[index]
        try:
            textpage = page.get_textpage()
            try:
                text = textpage.get_text_range()
            finally:
                textpage.close()
            has_image = False
            if not text.strip():
                has_image = any(True for _ in page.get_objects(filter=[pdfium_c.FPDF_PAGEOBJ_IMAGE], max_depth=3))
            return text, has_image
        finally:
            page.close()
    except pdfium.PdfiumError as exc:
        detail = str(exc).rstrip(".")
        raise DocumentError(
            source, f"corrupt or unreadable PDF (page {index + 1}: {detail})"
        ) from exc


def _open_failure_reason(err_code: int) -> str:
    """Explain a PDFium load failure code (``FPDF_ERR_*`` in PDFium's ``fpdfview.h``)."""
    if err_code == pdfium_c.FPDF_ERR_PASSWORD:
        return "encrypted: a password is required to open it"
    if err_code == pdfium_c.FPDF_ERR_SECURITY:
        return "encrypted with an unsupported security handler"
    detail = _PDFIUM_ERRORS.get(err_code, f"error code {err_code}")
    return f"corrupt or unreadable PDF (PDFium: {detail})"


def _page_spans(page_texts: list[str], labels: list[str | None]) -> list[PageSpan]:
    """Return one span per page for texts joined by :data:`_PAGE_SEPARATOR`, with labels."""
    spans: list[PageSpan] = []
    start = 0
    for number, (page_text, label) in enumerate(zip(page_texts, labels), start=1):
        spans.append(PageSpan(page=number, char_start=start, char_end=start + len(page_text), label=label))
        start += len(page_text) + len(_PAGE_SEPARATOR)
    return spans
