"""Turned scans, resolution and damaged PDFs through the real ingest (issue 27), with the local Tesseract.

The files are made here: page images of known sentences drawn with PIL (DejaVu Serif, which the
Debian fonts package installs), turned 90/180/270 degrees, placed in an image-only PDF by PDFium;
a text PDF drawn by PDFium, then damaged by 200 random bytes written over its middle.
"""

from __future__ import annotations

import ctypes
import io
import json
import random
from pathlib import Path

import pypdfium2 as pdfium
import pypdfium2.raw as pdfium_c
import pytest
from PIL import Image, ImageDraw, ImageFont

from longdoc.adapters.blob import LocalBlobStore
from longdoc.adapters.ocr_tesseract import TesseractOcr
from longdoc.adapters.state import SqliteStateStore
from longdoc.ingest.ocr_cache import ocr_prefix
from longdoc.ingest.parse import parse_document
from longdoc.ingest.pipeline import IngestDeps, ingest_document
from longdoc.ingest.source import IngestSource
from tests.unit.ingest.test_ingest_versions import CountingEmbedder, MemoryIndex

# Tesseract reads rendered scans (tens of CPU-seconds in all): not in the `make unit` tier.
pytestmark = pytest.mark.slow

FONT = "/usr/share/fonts/truetype/dejavu/DejaVuSerif.ttf"
SENTENCES = [
    ("The insurer shall pay the claim within thirty days.", "Notice of loss must be given in writing."),
    ("This policy is governed by the laws of Ontario.", "The deductible applies to each occurrence."),
    ("Coverage ends when the premium is not paid.", "The insured must protect the property from loss."),
    ("Any action must be brought within two years.", "Water damage from flooding is not covered."),
]
COARSE = ("The premium is payable on the first day of each month.", "Any dispute shall be settled by arbitration.")


def sentence_page(lines: tuple[str, str], *, dpi: int = 300, points: float = 12) -> Image.Image:
    """A grey page image, 5.1 x 1.6 inches at ``dpi``, with two lines of ``points``-point serif text."""
    picture = Image.new("L", (int(5.1 * dpi), int(1.6 * dpi)), 255)
    draw = ImageDraw.Draw(picture)
    font = ImageFont.truetype(FONT, max(1, round(points * dpi / 72)))
    for i, line in enumerate(lines):
        draw.text((int(0.3 * dpi), int(0.4 * dpi) + int(0.35 * dpi) * i), line, font=font, fill=0)
    return picture


def scan_pdf(pictures: list[tuple[Image.Image, int]]) -> bytes:
    """An image-only PDF: one page per ``(image, dpi)``, the image filling a page of its size at ``dpi``."""
    pdf = pdfium.PdfDocument.new()
    for picture, dpi in pictures:
        width, height = picture.width * 72 / dpi, picture.height * 72 / dpi
        page = pdf.new_page(width, height)
        image = pdfium.PdfImage.new(pdf)
        image.set_bitmap(pdfium.PdfBitmap.from_pil(picture))
        image.set_matrix(pdfium.PdfMatrix().scale(width, height))
        page.insert_obj(image)
        page.gen_content()
    out = io.BytesIO()
    pdf.save(out)
    return out.getvalue()


def text_pdf(pages: int, lines: int = 20) -> bytes:
    """A born-digital PDF drawn by PDFium: ``pages`` US Letter pages of numbered Helvetica clauses."""
    pdf = pdfium.PdfDocument.new()
    for p in range(1, pages + 1):
        page = pdf.new_page(612, 792)
        for i in range(1, lines + 1):
            obj = pdfium_c.FPDFPageObj_NewTextObj(pdf.raw, b"Helvetica", 11.0)
            text = f"Clause {p}.{i} The insurer shall pay each valid claim within thirty days.\0".encode("utf-16-le")
            pdfium_c.FPDFText_SetText(obj, ctypes.cast(ctypes.c_char_p(text), ctypes.POINTER(pdfium_c.FPDF_WCHAR)))
            pdfium_c.FPDFPageObj_Transform(obj, 1, 0, 0, 1, 60, 770 - 30 * i)
            pdfium_c.FPDFPage_InsertObject(page.raw, obj)
        page.gen_content()
    out = io.BytesIO()
    pdf.save(out)
    return out.getvalue()


def damaged(data: bytes, seed: int = 0) -> bytes:
    """``data`` with 200 random bytes (seeded) written over its middle."""
    rnd = random.Random(seed)
    middle = len(data) // 2
    return data[:middle] + bytes(rnd.randrange(256) for _ in range(200)) + data[middle + 200:]


@pytest.fixture(scope="module")
def turned_scan(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """Pages 1-4: the sentence pairs scanned upright, then turned 90, 180 and 270 degrees counter-clockwise
    (so 90, 180 and 270 clockwise make them upright); page 5: 6-point text scanned at 72 dpi. Ingested once."""
    root = tmp_path_factory.mktemp("turned")
    originals = [sentence_page(lines).rotate(turn, expand=True) for lines, turn in zip(SENTENCES, (0, 90, 180, 270), strict=True)]
    data = scan_pdf([(p, 300) for p in originals] + [(sentence_page(COARSE, dpi=72, points=6), 72)])
    stores = {"blobs": LocalBlobStore(root / "bucket"), "state": SqliteStateStore(root / "state.sqlite3"),
              "embedder": CountingEmbedder(), "index": MemoryIndex()}
    source = IngestSource(key="incoming/turned.pdf", data=data)
    stores["blobs"].put(source.key, data)
    result = ingest_document(source, IngestDeps(**stores, ocr=TesseractOcr()))
    chunks = [c for cs in stores["index"].chunks.values() for c in cs]
    return {"result": result, "chunks": chunks, "stores": stores, "source": source, "originals": originals}


def test_turned_pages_read_exactly_with_the_rotation_recorded(turned_scan: dict) -> None:
    result, chunks = turned_scan["result"], turned_scan["chunks"]
    # Then every sentence of pages 1-4 is in the indexed text, exactly, on its own page
    for page, lines in enumerate(SENTENCES, start=1):
        text = " ".join(c.text.replace("\n", " ") for c in chunks if c.page_start <= page <= c.page_end)
        for line in lines:
            assert line in text, (page, line)
    # and the clockwise turn used is recorded per page (the upright page needs none)
    assert result.ocr_rotations == {2: 90, 3: 180, 4: 270}
    record = turned_scan["stores"]["state"].get_document(result.doc_id, result.doc_version)
    assert record.page_outcomes == {"ocr": [1, 2, 3, 4], "ocr_low_confidence": [5]}
    # and the document record and the chunks carry the turns too (issue 27, finding 4)
    assert record.ocr_rotations == {2: 90, 3: 180, 4: 270}
    turned = {p: t for c in chunks for p, t in c.ocr_rotations.items()}
    assert turned == {2: 90, 3: 180, 4: 270}
    assert all(set(c.ocr_rotations) <= set(c.ocr_pages) for c in chunks)


def test_word_boxes_of_a_turned_page_lie_on_its_ink_in_the_unturned_frame(turned_scan: dict) -> None:
    # Given the words read on page 2 (scanned on its side), as the OCR progress stored them
    source, stores = turned_scan["source"], turned_scan["stores"]
    key = ocr_prefix(source.doc_id, source.version, "tesseract-eng", 300) + "00002.json"
    saved = json.loads(stores["blobs"].get(key))
    assert saved["rotation"] == 90
    original = turned_scan["originals"][1]  # the page image as it lies in the PDF (the rendered page's frame)
    width, height = original.size
    # Then each word's box, as fractions of the unturned page, covers ink there, and is taller than wide
    for text, _conf, _line, left, top, w, h in saved["words"]:
        crop = original.crop((int(left * width), int(top * height), int((left + w) * width) + 1,
                              int((top + h) * height) + 1))
        assert crop.getextrema()[0] < 100, text  # dark pixels under the box
        assert h * height > w * width or len(text) < 4, text  # text runs up the page


def test_a_72_dpi_scan_is_flagged_low_confidence_and_its_chunks_say_so(turned_scan: dict) -> None:
    result, chunks = turned_scan["result"], turned_scan["chunks"]
    # Then page 5 (6-point text at 72 dpi) is indexed but flagged, with a warning naming it
    assert result.ocr_low_confidence_pages == [5]
    assert any(w.startswith("pages 5: OCR read them with low confidence") for w in result.warnings)
    flagged = [c for c in chunks if c.ocr_low_confidence]
    assert flagged and all(c.page_end == 5 for c in flagged)
    assert all(not c.ocr_low_confidence for c in chunks if c.page_end < 5)


def test_a_low_confidence_page_is_left_out_when_the_setting_says_skip() -> None:
    # Given the coarse 72-dpi page after an upright one, parsed with LONGDOC_OCR_LOW_CONFIDENCE=skip
    from longdoc.ingest.parse import OcrOptions

    data = scan_pdf([(sentence_page(SENTENCES[0]), 300), (sentence_page(COARSE, dpi=72, points=6), 72)])
    doc = parse_document("coarse.pdf", data, ocr=OcrOptions(TesseractOcr(), low_confidence="skip", orient=False))
    # Then page 2 has no text, is not listed as needing OCR, and is named as left out
    assert doc.text[doc.pages[1].char_start:doc.pages[1].char_end] == ""
    assert doc.page_outcomes == ["ocr", "ocr_low_confidence"] and doc.pages_needing_ocr == []
    assert any("pages 2:" in w and "left out (LONGDOC_OCR_LOW_CONFIDENCE=skip)" in w for w in doc.warnings)


def test_a_scan_whose_only_page_is_skipped_for_low_confidence_says_so() -> None:
    # Given a one-page scan of 6-point text at 72 dpi, parsed with LONGDOC_OCR_LOW_CONFIDENCE=skip
    from longdoc.core.errors import DocumentError
    from longdoc.ingest.parse import OcrOptions

    data = scan_pdf([(sentence_page(COARSE, dpi=72, points=6), 72)])
    # When it is parsed, Then it fails saying the page was read but left out for low confidence,
    # with its confidence and the settings, not that it needs OCR
    with pytest.raises(DocumentError) as caught:
        parse_document("coarse.pdf", data, ocr=OcrOptions(TesseractOcr(), low_confidence="skip", orient=False))
    reason = caught.value.reason
    assert "needs OCR" not in reason
    assert reason.startswith("no text indexed from any of the 1 pages: OCR read 1 of them with low confidence "
                             "(mean word confidence page 1: 0.")
    assert "LONGDOC_OCR_MIN_CONFIDENCE=0.80" in reason and "LONGDOC_OCR_LOW_CONFIDENCE=skip left them out" in reason


def test_a_damaged_pdf_ingests_with_a_warning_naming_its_pages(tmp_path: Path) -> None:
    # Given an 18-page text PDF with 200 random bytes written over its middle (page 11 loses its content)
    data = damaged(text_pdf(18))
    # When it is parsed
    doc = parse_document("damaged.pdf", data)
    # Then the other pages are read, page 11 is damaged (its page object overwritten) and named in a warning
    assert doc.page_outcomes[10] == "damaged" and doc.page_outcomes.count("text") == 17
    assert len(doc.warnings) == 1 and doc.warnings[0].startswith("pages 11: damaged (page 11: its page object ")
    # And with another seed PDFium cannot load page 11 at all: the document still ingests, the page named
    doc = parse_document("damaged.pdf", damaged(text_pdf(18), seed=4))
    assert doc.page_outcomes[10] == "unreadable" and doc.page_outcomes.count("text") == 17
    assert doc.warnings == ["pages 11: PDFium could not load them (Failed to load page); nothing indexed from them"]


def test_garbage_text_from_a_content_stream_is_named() -> None:
    # Given a text PDF whose page 2 draws private-use code points (what a font without a Unicode map gives)
    pdf = pdfium.PdfDocument(text_pdf(3, lines=4))
    page = pdf[1]
    obj = pdfium_c.FPDFPageObj_NewTextObj(pdf.raw, b"Helvetica", 11.0)
    junk = ("".join(chr(0xE000 + i) for i in range(120)) + "\0").encode("utf-16-le")
    pdfium_c.FPDFText_SetText(obj, ctypes.cast(ctypes.c_char_p(junk), ctypes.POINTER(pdfium_c.FPDF_WCHAR)))
    pdfium_c.FPDFPageObj_Transform(obj, 1, 0, 0, 1, 60, 100)
    pdfium_c.FPDFPage_InsertObject(page.raw, obj)
    page.gen_content()
    page.close()
    out = io.BytesIO()
    pdf.save(out)
    doc = parse_document("garbage.pdf", out.getvalue())
    # Then page 2 is unreadable and named; pages 1 and 3 are text
    assert doc.page_outcomes == ["text", "unreadable", "text"]
    assert len(doc.warnings) == 1 and doc.warnings[0].startswith("pages 2: text is garbage")


def _wide_page(lines: list[str], dpi: int = 300) -> Image.Image:
    """A grey 8.5 x 3 inch page image with ``lines`` of 12-point serif text."""
    picture = Image.new("L", (int(8.5 * dpi), 3 * dpi), 255)
    draw = ImageDraw.Draw(picture)
    font = ImageFont.truetype(FONT, 50)
    for i, line in enumerate(lines):
        draw.text((150, 150 + 90 * i), line, font=font, fill=0)
    return picture


def test_a_scan_fed_in_at_a_slant_is_flagged_with_its_measured_skew() -> None:
    # Given three long lines scanned straight, and the same page fed in 4 degrees askew
    from longdoc.ingest.parse import OcrOptions

    lines = [" ".join(pair) for pair in SENTENCES[:3]]
    straight = _wide_page(lines)
    askew = straight.rotate(4, expand=True, fillcolor=255)
    # When both are read by OCR
    flat = parse_document("straight.pdf", scan_pdf([(straight, 300)]), ocr=OcrOptions(TesseractOcr()))
    tilted = parse_document("askew.pdf", scan_pdf([(askew, 300)]), ocr=OcrOptions(TesseractOcr()))
    # Then the skew is measured on the words' lines (about 0 and about 4 degrees)
    assert abs(flat.ocr_pages[0].skew_degrees or 0.0) < 0.5
    assert 3.0 < (tilted.ocr_pages[0].skew_degrees or 0.0) < 5.0
    # and only the askew page is named in a warning
    assert not [w for w in flat.warnings if "slant" in w]
    assert [w for w in tilted.warnings if w.startswith("pages 1: scanned at a slant (lines tilted up to ")]
