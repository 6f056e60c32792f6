"""Whether a file dropped into a watched folder is whole yet, per format (issue 27).

:func:`wholeness` reads the file and says ``whole``, ``incomplete`` (a writer may still be at it:
wait) or ``never`` (it can never become whole: hand it over at once, to fail with its reason):

* **PDF** (``%PDF-`` in the first 1,024 bytes, or a ``.pdf`` name): whole when its last
  :data:`TRAILER_WINDOW` bytes hold ``%%EOF`` (where ISO 32000-1 7.5.5 puts the end-of-file marker)
  and PDFium opens it (a password-locked PDF is whole, only locked); ``never`` when a ``.pdf``-named
  file has 1,024 bytes or more and no ``%PDF-`` header in them, or fewer that cannot be the start of one;
* **ZIP packages** (``PK\\x03\\x04`` first, or a name of :data:`ZIP_SUFFIXES`: DOCX, XLSX, PPTX, ODF,
  EPUB): whole when the end-of-central-directory record (``PK\\x05\\x06``, APPNOTE.TXT 4.3.16: the
  last record of a ZIP file, followed by a comment of at most 65,535 bytes) is in the last
  :data:`EOCD_WINDOW` bytes and :mod:`zipfile` opens the package; a writer that reopens the file to
  append leaves the central directory for last, so a half-written package is never taken;
  ``never`` when a file so named has 4 bytes or more and does not start with a ZIP signature;
* **anything else**: whole; the watcher's size-and-mtime settle window is its only check.

A zero-byte file is ``incomplete`` whatever its name (a writer has created it, nothing more yet).
"""

from __future__ import annotations

import io
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

TRAILER_WINDOW = 1024
"""Bytes at a PDF's end searched for ``%%EOF`` (the window PDF readers search; ISO 32000-1 7.5.5)."""
EOCD_WINDOW = 22 + 65535
"""Bytes at a ZIP's end searched for the end-of-central-directory record: the record's fixed 22
bytes plus the longest comment (APPNOTE.TXT 4.3.16)."""
ZIP_SUFFIXES = frozenset({".docx", ".docm", ".xlsx", ".xlsm", ".pptx", ".pptm", ".odt", ".ods", ".odp",
                          ".epub", ".zip"})
"""File names whose content is a ZIP package (Office Open XML, OpenDocument, EPUB, ZIP)."""
_PDF_HEADER = b"%PDF-"
_ZIP_SIGNATURES = (b"PK\x03\x04", b"PK\x05\x06")  # a local file header, or an empty archive's EOCD


@dataclass(frozen=True)
class Wholeness:
    """What :func:`wholeness` found: ``state`` and, unless ``whole``, why (a reader's words)."""

    state: Literal["whole", "incomplete", "never"]
    reason: str = ""


def _pdf(data: bytes) -> Wholeness:
    """The wholeness of PDF bytes (module docstring)."""
    head = data[:1024]
    if _PDF_HEADER not in head:
        partial = any(head.endswith(_PDF_HEADER[:k]) for k in range(1, len(_PDF_HEADER)))
        if len(data) >= 1024 or not partial:
            return Wholeness("never", "no %PDF- header in its first 1024 bytes: not a PDF")
        return Wholeness("incomplete", "no %PDF- header yet")
    if b"%%EOF" not in data[-TRAILER_WINDOW:]:
        return Wholeness("incomplete", "no %%EOF trailer at its end yet")
    import pypdfium2.raw as pdfium_c

    from longdoc.ingest.parse.pdf import PDFIUM_LOCK

    with PDFIUM_LOCK:
        handle = pdfium_c.FPDF_LoadMemDocument64(data, len(data), None)
        if not handle:
            if pdfium_c.FPDF_GetLastError() == pdfium_c.FPDF_ERR_PASSWORD:
                return Wholeness("whole")  # whole, only locked
            return Wholeness("incomplete", "PDFium cannot open it yet")
        pdfium_c.FPDF_CloseDocument(handle)
    return Wholeness("whole")


def _zip(data: bytes) -> Wholeness:
    """The wholeness of ZIP package bytes (module docstring)."""
    if len(data) >= 4 and not data.startswith(_ZIP_SIGNATURES):
        return Wholeness("never", "does not start with a ZIP signature: not a ZIP package (DOCX, XLSX, ...)")
    if b"PK\x05\x06" not in data[-EOCD_WINDOW:]:
        return Wholeness("incomplete", "no ZIP end-of-central-directory record yet")
    try:
        with zipfile.ZipFile(io.BytesIO(data)):
            pass
    except (zipfile.BadZipFile, OSError, ValueError, EOFError):
        return Wholeness("incomplete", "its ZIP central directory does not open yet")
    return Wholeness("whole")


def wholeness(path: Path) -> Wholeness:
    """Whether the file at ``path`` is whole (module docstring); ``incomplete`` when it cannot be read."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        return Wholeness("incomplete", f"cannot be read yet ({exc.strerror or exc})")
    if not data:
        return Wholeness("incomplete", "empty so far")
    suffix = path.suffix.lower()
    if _PDF_HEADER in data[:1024] or suffix == ".pdf":
        return _pdf(data)
    if data.startswith(_ZIP_SIGNATURES) or suffix in ZIP_SUFFIXES:
        return _zip(data)
    return Wholeness("whole")


def is_whole(path: Path) -> bool:
    """Whether the file at ``path`` can be taken now: :func:`wholeness` is ``whole``."""
    return wholeness(path).state == "whole"
