"""Build small multi-column PDFs and scans in tests (issue 27), with PDFium and PIL only.

* :func:`columns_pdf`: pages of N columns of numbered clauses drawn *row by row* (line n of
  every column, then line n + 1: the content order that welds columns in PDFium's text),
  with an optional folio ``-n-`` set in a gutter, alternating between the gutters from page to
  page and drawn mid-row (between the columns' text objects of that row).
* :func:`scan_pdf`: one image-only page of two columns drawn with PIL's own font, so that a
  real OCR engine reads it.
"""

from __future__ import annotations

import ctypes
import io
import random
import textwrap

import pypdfium2 as pdfium
import pypdfium2.raw as pdfium_c
from PIL import Image, ImageDraw, ImageFont

PAGE_WIDTH, PAGE_HEIGHT = 612.0, 792.0
"""US Letter in PDF points."""
SENTENCE = ("the insured must give notice of any claim within thirty days and send every document "
            "the insurer asks for while the cover stays in force for the whole period named in the "
            "schedule unless the premium is not paid on time")
WORDS = SENTENCE.split(" ")


TITLES = ("Notice", "Cover", "Premium", "Claims", "Documents", "Period", "Schedule", "Renewal")


def clause(number: int, words: int = 36) -> str:
    """Clause ``number``: ``"N. Title. sentence one. sentence two."`` of about ``words`` words."""
    pick = random.Random(number)
    body = [pick.choice(WORDS) for _ in range(words)]
    half = words // 2
    first = " ".join(body[:half])
    second = " ".join(body[half:])
    title = TITLES[number % len(TITLES)]
    return f"{number}. {title}. {first[0].upper()}{first[1:]}. {second[0].upper()}{second[1:]}."


def _draw(pdf: pdfium.PdfDocument, page: pdfium.PdfPage, text: str, x: float, y: float, size: float) -> None:
    obj = pdfium_c.FPDFPageObj_NewTextObj(pdf.raw, b"Helvetica", ctypes.c_float(size))
    encoded = (text + "\0").encode("utf-16-le")
    buffer = ctypes.create_string_buffer(encoded, len(encoded))
    pdfium_c.FPDFText_SetText(obj, ctypes.cast(buffer, pdfium_c.FPDF_WIDESTRING))
    pdfium_c.FPDFPageObj_Transform(obj, 1, 0, 0, 1, x, y)
    pdfium_c.FPDFPage_InsertObject(page.raw, obj)


def column_lines(clauses: list[str], width_chars: int) -> list[str]:
    """The clauses wrapped to ``width_chars`` characters a line, one clause after another."""
    return [line for text in clauses for line in textwrap.wrap(text, width_chars)]


def columns_pdf(pages: list[list[list[str]]], *, size: float = 8.0, gutter: float = 24.0,
                folios: bool = False, margin: float = 54.0) -> bytes:
    """A PDF with one page per entry of ``pages``, each a list of columns, each a list of lines.

    Columns share the text width between ``margin`` points left and right, with ``gutter``
    points between them; lines are ``1.4 * size`` apart from 72 points below the top. With
    ``folios``, page n carries ``-n-`` centred in gutter ``(n - 1) % gutters`` on row
    ``(3 * n) % rows``, drawn after that row's first column and before the next one.
    """
    pdf = pdfium.PdfDocument.new()
    for number, columns in enumerate(pages, start=1):
        page = pdf.new_page(PAGE_WIDTH, PAGE_HEIGHT)
        count = len(columns)
        width = (PAGE_WIDTH - 2 * margin - (count - 1) * gutter) / count
        rows = max(len(c) for c in columns)
        folio_gutter = (number - 1) % max(1, count - 1)
        folio_row = (3 * number) % rows
        for row in range(rows):
            y = PAGE_HEIGHT - 72.0 - row * 1.4 * size
            for k, lines in enumerate(columns):
                if row < len(lines):
                    _draw(pdf, page, lines[row], margin + k * (width + gutter), y, size)
                if folios and row == folio_row and k == folio_gutter:
                    middle = margin + (k + 1) * width + k * gutter + gutter / 2
                    _draw(pdf, page, f"-{number}-", middle - 0.28 * size * len(str(number)) - 0.33 * size, y, size)
        page.gen_content()
        page.close()
    return _saved(pdf)


def scan_pdf(left: list[str], right: list[str], *, size_px: int = 30, gap_em: float = 0.6) -> tuple[bytes, bytes]:
    """``(pdf, png)``: one page image of two columns of lines (PIL's default font at ``size_px``
    pixels, drawn as at 200 dpi) with ``gap_em`` font sizes of white between the left column's
    longest line and the right column, wrapped as an image-only PDF page of the same size."""
    font = ImageFont.load_default(size=size_px)
    longest = max(font.getlength(line) for line in left)
    x_right = int(60 + longest + gap_em * size_px)
    width = x_right + int(max(font.getlength(line) for line in right)) + 60
    height = size_px * (3 + int(1.45 * max(len(left), len(right))))
    picture = Image.new("L", (width, height), 255)
    draw = ImageDraw.Draw(picture)
    for n in range(max(len(left), len(right))):
        y = size_px * 2 + n * int(size_px * 1.45)
        if n < len(left):
            draw.text((60, y), left[n], font=font, fill=0)
        if n < len(right):
            draw.text((x_right, y), right[n], font=font, fill=0)
    png = io.BytesIO()
    picture.save(png, format="PNG")
    pdf = pdfium.PdfDocument.new()
    page = pdf.new_page(width * 72 / 200, height * 72 / 200)
    image = pdfium.PdfImage.new(pdf)
    image.set_bitmap(pdfium.PdfBitmap.from_pil(picture))
    image.set_matrix(pdfium.PdfMatrix().scale(width * 72 / 200, height * 72 / 200))
    page.insert_obj(image)
    page.gen_content()
    out = io.BytesIO()
    pdf.save(out)
    return out.getvalue(), png.getvalue()


def aside_page_pdf(columns: list[list[str]], *, aside: tuple[int, int, int], label: str,
                   folio: str, footer: str, size: float = 9.0, gutter: float = 24.0, margin: float = 54.0) -> bytes:
    """One page of columns drawn column after column, with a boxed aside and a running footer, as IRS instructions set them:

    * lines ``aside[1]`` to ``aside[2]`` (exclusive) of column ``aside[0]`` are indented 30 points (the
      aside's text), and ``label`` (``TIP``) is drawn left of the aside's middle line *after* every
      column, as an icon's text is drawn after the text it sits beside;
    * ``folio`` and ``footer`` are set on one line 36 points from the page's foot, ``folio`` centred on
      the page and ``footer`` 60 points right of it (two tab stops), drawn first.
    """
    pdf = pdfium.PdfDocument.new()
    page = pdf.new_page(PAGE_WIDTH, PAGE_HEIGHT)
    count = len(columns)
    width = (PAGE_WIDTH - 2 * margin - (count - 1) * gutter) / count
    _draw(pdf, page, folio, PAGE_WIDTH / 2 - 10, 36.0, size)
    _draw(pdf, page, footer, PAGE_WIDTH / 2 + 60, 36.0, size)
    at = aside[0]
    for k, lines in enumerate(columns):
        for row, line in enumerate(lines):
            indent = 30.0 if k == at and aside[1] <= row < aside[2] else 0.0
            _draw(pdf, page, line, margin + k * (width + gutter) + indent, PAGE_HEIGHT - 72.0 - row * 1.4 * size, size)
    middle = (aside[1] + aside[2] - 1) / 2
    _draw(pdf, page, label, margin + at * (width + gutter) + 2, PAGE_HEIGHT - 72.0 - middle * 1.4 * size, size)
    page.gen_content()
    page.close()
    return _saved(pdf)


def _saved(pdf: pdfium.PdfDocument) -> bytes:
    """The document's bytes; the document is closed."""
    out = io.BytesIO()
    pdf.save(out)
    pdf.close()
    return out.getvalue()
