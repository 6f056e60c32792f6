"""Format detection: which parser reads a file, from its bytes and its name together.

PDF content wins whatever the name says (readers accept the ``%PDF-`` header anywhere in
the first 1024 bytes); a ZIP holding ``word/document.xml`` is DOCX; otherwise the
extension decides. Every refusal is a :class:`~longdoc.core.errors.DocumentError`.
"""

from __future__ import annotations

from pathlib import PurePosixPath

from longdoc.core.errors import DocumentError

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
"""Every extension :func:`detect_media_type` accepts (lower case, with the dot)."""
_ZIP_MAGIC = b"PK\x03\x04"

_PDF_MAGIC = b"%PDF-"
# PDF Reference 1.7, Appendix H, note 13: readers accept the header anywhere in the first
# 1024 bytes, so junk before it (mail headers, whitespace) is tolerated.
_PDF_HEADER_WINDOW = 1024


def detect_media_type(source: str, data: bytes) -> str:
    """Return the media type of ``data`` (the bytes of the file named ``source``).

    One of :data:`PDF_MEDIA_TYPE`, :data:`DOCX_MEDIA_TYPE`, :data:`HTML_MEDIA_TYPE` or a
    value of :data:`TEXT_MEDIA_TYPES`. PDF content wins, otherwise the extension
    (case-insensitive) decides. Raises :class:`DocumentError` for a ``.pdf`` or ``.docx``
    name on other content, and for an unsupported (or missing) extension.
    """
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
