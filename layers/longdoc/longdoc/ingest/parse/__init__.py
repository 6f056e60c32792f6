"""Turn uploaded bytes (PDF, plain text, Markdown, HTML, DOCX) into one text with a page map.

:func:`parse_document` is the only entry point. It decides the format from the bytes
and the file name together, extracts text (PDF pages with PDFium through pypdfium2),
normalises it without changing its meaning, and returns a
:class:`~longdoc.ingest.models.ParsedDocument` whose :class:`~longdoc.core.models.PageSpan` list maps
character offsets back to 1-based physical pages. Every failure is a
:class:`~longdoc.core.errors.DocumentError` naming the file and saying why.

Normalisation (every format, :mod:`.text`): ``\\r\\n`` and ``\\r`` become ``\\n``; C0 control characters
other than ``\\n`` and ``\\t`` (NUL, form feed, ...) are removed; trailing whitespace is
stripped from every line; U+00AD is written as ``-`` (removed in Markdown; see below). PDF text also gets
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
  corpus text files is a visible hyphen too (``Rule 13a-15(e)``, ``File No. 333-194486``,
  ``book-running``), so it becomes ``-`` rather than being deleted. Markdown is the exception:
  it is read as it renders, where U+00AD is invisible, so there it is removed
  (``obliga\u00adtions`` -> ``obligations``; :data:`~longdoc.ingest.parse.text.MARKDOWN_TABLE`).

The work is split by step: :mod:`.detect` decides the format, :mod:`.pdf` reads PDF pages
(with :mod:`.cleanup` for furniture, hyphens and page labels), :mod:`.formats` renders
HTML and DOCX (with :mod:`.wordnum` for Word's automatic numbers), :mod:`.text` decodes
and normalises text.
"""

from __future__ import annotations

import hashlib

from longdoc.core.errors import DocumentError
from longdoc.core.models import PageSpan
from longdoc.core.progress import reporter
from longdoc.ingest.models import Furniture, HeadingMark, ParsedDocument
from longdoc.ingest.parse.detect import (
    DOCX_MEDIA_TYPE,
    HTML_EXTENSIONS,
    HTML_MEDIA_TYPE,
    PDF_MEDIA_TYPE,
    SUPPORTED_EXTENSIONS,
    TEXT_MEDIA_TYPES,
    detect_media_type,
)
from longdoc.ingest.parse.formats import docx_to_text, html_to_text
from longdoc.ingest.parse.ocr import OcrOptions, OcrOutcome
from longdoc.ingest.parse.pdf import read_pdf
from longdoc.ingest.parse.text import MARKDOWN_TABLE, TEXT_TABLE, decode_text, markdown_as_rendered, normalise

__all__ = [
    "DEFAULT_MAX_BYTES",
    "DEFAULT_MAX_PAGES",
    "OcrOptions",
    "DOCX_MEDIA_TYPE",
    "HTML_EXTENSIONS",
    "HTML_MEDIA_TYPE",
    "PDF_MEDIA_TYPE",
    "SUPPORTED_EXTENSIONS",
    "TEXT_MEDIA_TYPES",
    "parse_document",
]

DEFAULT_MAX_BYTES = 200 * 1024 * 1024
"""Default size cap in bytes (200 MiB), a project limit that keeps a Lambda within memory."""

DEFAULT_MAX_PAGES = 5000
"""Default page cap, a project limit on how long a single parse may run."""


def parse_document(
    source: str,
    data: bytes,
    *,
    max_bytes: int = DEFAULT_MAX_BYTES,
    max_pages: int = DEFAULT_MAX_PAGES,
    ocr: OcrOptions | None = None,
) -> ParsedDocument:
    """Parse ``data`` (the bytes of the file named ``source``) into a :class:`ParsedDocument`.

    Args:
        source: file name or object key; its extension (case-insensitive) takes part in
            format detection, and it is stored on the result and named in errors.
        data: the whole file.
        max_bytes: size cap in bytes (default 200 MiB); larger input is refused unread.
        max_pages: page cap for PDFs (default 5000).
        ocr: how scanned PDF pages are read (:class:`~longdoc.ingest.parse.ocr.OcrOptions`);
            None (the default) reads none: such pages are listed in ``pages_needing_ocr``.

    Returns:
        For PDFs (bytes with ``%PDF-`` in the first 1024 bytes, whatever the extension):
        ``media_type="application/pdf"``, page texts joined by a single ``"\\n"`` and one
        ``PageSpan(page=i)`` per page (1-based) with ``text[char_start:char_end]`` equal to
        that page's text, excluding the joining newline; a page without text gets an empty
        span; the removed running headers and footers in ``furniture``. For
        ``.txt``/``.text`` (``text/plain``), ``.md``/``.markdown`` (``text/markdown``),
        ``.html``/``.htm`` (``text/html``) and DOCX (a ZIP with ``word/document.xml``): one
        ``PageSpan(page=None)`` covering the whole text, and for HTML and DOCX the
        ``headings`` the format marks. ``content_sha256`` is the SHA-256 hex digest of ``data``.

    Raises:
        DocumentError: with a specific ``reason``: empty file; over ``max_bytes`` or
            ``max_pages``; unsupported extension; ``.pdf`` or ``.docx`` name on other bytes;
            NUL bytes in text; text neither UTF-8 nor cp1252; text, HTML or DOCX without
            any text; an unreadable DOCX; a PDF
            that needs a password, uses an unsupported security handler, is corrupt, has
            no pages, or has no text on any page (a scan, and OCR off or unable to read it).
        OcrUnavailable: the OCR engine cannot run (not installed, service down).
        IngestDeadline: raised by ``ocr.before_page`` (pages read so far are in ``ocr.cache``).

    PDFium is not thread-safe: call this from one thread at a time per process.
    """
    if not data:
        raise DocumentError(source, "empty file (0 bytes)")
    if len(data) > max_bytes:
        raise DocumentError(
            source, f"file too large: {len(data)} bytes, over the limit of {max_bytes} bytes"
        )
    media_type = detect_media_type(source, data)
    furniture: list[Furniture] = []
    needs_ocr: list[int] = []
    headings: list[HeadingMark] = []
    outcome = OcrOutcome()
    if media_type == PDF_MEDIA_TYPE:
        text, pages, furniture, outcome, needs_ocr = read_pdf(source, data, max_pages, ocr)
    else:
        progress, stage = reporter(), f"parse {source}"  # the ingest's parse stage, when one is open
        progress.resize(stage, 1, "files")
        text, headings = _read_unpaged(source, data, media_type)
        progress.advance(stage)
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
        ocr_pages=outcome.pages,
        ocr_failed=outcome.failed,
        poor_layer_pages=outcome.poor_layers,
        ocr_check_cost_usd=round(outcome.check_cost_usd, 6),
        page_outcomes=outcome.page_outcomes,
        warnings=outcome.warnings,
    )


def _docx_problem(exc: Exception) -> str:
    """A reader's words for why a DOCX package could not be read (no exception names or keys)."""
    import zipfile
    from xml.etree.ElementTree import ParseError

    if type(exc) is ValueError:  # our own Word-numbering errors: they name the part and the place
        return str(exc)
    if isinstance(exc, zipfile.BadZipFile):
        return "not a valid ZIP package (truncated or not a Word file)"
    if isinstance(exc, KeyError):
        return "a part or relationship the document refers to is missing from the package"
    if isinstance(exc, ParseError) or "XML" in type(exc).__name__ or "xml" in type(exc).__module__:
        return "a part of the package is not well-formed XML"
    return "the package could not be read (Word itself may report it as damaged)"


def _read_unpaged(source: str, data: bytes, media_type: str) -> tuple[str, list[HeadingMark]]:
    """Text and heading marks of a DOCX, HTML or text file, normalised; refuses one without text."""
    headings: list[HeadingMark] = []
    if media_type == DOCX_MEDIA_TYPE:
        try:
            raw, headings = docx_to_text(data)
        except Exception as exc:  # docx2python raises KeyError/BadZipFile/XML errors alike
            raise DocumentError(source, f"corrupt or unreadable DOCX: {_docx_problem(exc)}") from exc
        empty = "no text: the DOCX has no paragraphs with text"
    elif media_type == HTML_MEDIA_TYPE:
        raw, headings = html_to_text(decode_text(source, data))
        empty = "no text: the HTML has no visible text"
    else:
        raw = decode_text(source, data)
        empty = "no text: the file holds only whitespace"
    text = normalise(raw, MARKDOWN_TABLE if media_type == "text/markdown" else TEXT_TABLE)
    if media_type == "text/markdown":
        text = markdown_as_rendered(text)
    if not text.strip():
        raise DocumentError(source, empty)
    return text, headings
