"""Build small text PDFs in tests with PDFium itself (the venv has no PDF writer).

``text_pdf([["line 1", "line 2"], ["page 2 line 1"]])`` returns the bytes of a PDF with
one US-Letter page per inner list, each line drawn in 11 pt Helvetica (a PDF standard
14 font, ISO 32000-1 9.6.2.2) from the top margin down, so PDFium reads them back as
lines in that order.
"""

from __future__ import annotations

import ctypes
import io

import pypdfium2 as pdfium
import pypdfium2.raw as pdfium_c

PAGE_WIDTH, PAGE_HEIGHT = 612.0, 792.0
"""US Letter in PDF points (1/72 inch)."""


def text_pdf(pages: list[list[str]], *, font_size: float = 11.0) -> bytes:
    """The bytes of a PDF with one page per entry of ``pages`` holding its lines of text."""
    pdf = pdfium.PdfDocument.new()
    try:
        for lines in pages:
            page = pdf.new_page(PAGE_WIDTH, PAGE_HEIGHT)
            for n, line in enumerate(lines):
                obj = pdfium_c.FPDFPageObj_NewTextObj(pdf.raw, b"Helvetica", ctypes.c_float(font_size))
                encoded = (line + "\0").encode("utf-16-le")
                buffer = ctypes.create_string_buffer(encoded, len(encoded))
                pdfium_c.FPDFText_SetText(obj, ctypes.cast(buffer, pdfium_c.FPDF_WIDESTRING))
                y = PAGE_HEIGHT - 72.0 - n * font_size * 1.6
                pdfium_c.FPDFPageObj_Transform(obj, 1, 0, 0, 1, 72.0, y)
                pdfium_c.FPDFPage_InsertObject(page.raw, obj)
            page.gen_content()
            page.close()
        out = io.BytesIO()
        pdf.save(out)
        return out.getvalue()
    finally:
        pdf.close()
