"""OCR speed and cost (issue 18), run on demand: ``make bench-ocr``.

    python benchmarks/ocr.py [--corpus ../shared/corpus] [--dpi 200] [--pages 100]

1. Local Tesseract: the scanned corpus pages (the Grumman bulletin, no text layer, and the
   Vicksburg book pages, re-read to check their OCR layer) are rendered by PDFium at ``--dpi``
   and read by :class:`~longdoc.adapters.ocr_tesseract.TesseractOcr`, one page at a time, on
   one core; pages per second counts render plus OCR.
2. Textract: how many ``DetectDocumentText`` calls the parser makes for ``--pages`` image-only
   pages and for the Vicksburg file (an engine stand-in counts the calls; no network), and what
   they cost at :data:`~longdoc.adapters.ocr_textract.TEXTRACT_PRICE_PER_PAGE_USD`.
   Textract's own latency is not measured here (no AWS access from this machine).
3. Orientation (issue 27): the same scanned corpus pages plus four made pages turned 0/90/180/270
   degrees, parsed with OCR at the 300-dpi target, orientation detection on and then off, in the
   same run: pages per second for each, and how many of the turned pages read right.
"""

from __future__ import annotations

import argparse
import io
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "layers" / "longdoc"))

import pypdfium2 as pdfium  # noqa: E402
from PIL import Image, ImageDraw, ImageFont  # noqa: E402

from longdoc.adapters.ocr_tesseract import TesseractOcr  # noqa: E402
from longdoc.adapters.ocr_textract import TEXTRACT_PRICE_PER_PAGE_USD  # noqa: E402
from longdoc.core.ports import OcrPage, OcrWord  # noqa: E402
from longdoc.ingest.parse import OcrOptions, parse_document  # noqa: E402
from longdoc.ingest.parse.ocr import MemoryOcrCache, page_image  # noqa: E402

SCANS = ("bad/scanned-grumman-service-kit-no-text.pdf", "bad/scanned-vicksburg-with-ocr-layer.pdf")


class CountingEngine:
    """Stands in for Textract: one sentence per page image, counts the calls, Textract's price."""

    name = "textract-count"
    cost_per_page_usd = TEXTRACT_PRICE_PER_PAGE_USD

    def __init__(self) -> None:
        self.calls = 0

    def read_page(self, image: bytes) -> OcrPage:
        self.calls += 1
        words = f"Scanned clause {self.calls} applies.".split()
        return OcrPage(tuple(OcrWord(w, 0.99, 0, 0.1, 0.1, 0.1, 0.02) for w in words), self.name,
                       self.cost_per_page_usd)


def image_only_pdf(pages: int) -> bytes:
    """``pages`` pages, each one image with a dark bar (an image-only scan, no text layer)."""
    pdf = pdfium.PdfDocument.new()
    picture = Image.new("L", (100, 100), 255)
    ImageDraw.Draw(picture).rectangle((10, 40, 90, 60), fill=0)
    for _ in range(pages):
        page = pdf.new_page(200, 200)
        image = pdfium.PdfImage.new(pdf)
        image.set_bitmap(pdfium.PdfBitmap.from_pil(picture))
        image.set_matrix(pdfium.PdfMatrix().scale(200, 200))
        page.insert_obj(image)
        page.gen_content()
    out = io.BytesIO()
    pdf.save(out)
    return out.getvalue()


TURNED = ("The insurer shall pay the claim within thirty days.", "This policy is governed by the laws of Ontario.",
          "Coverage ends when the premium is not paid.", "Any action must be brought within two years.")


def turned_pdf() -> bytes:
    """Four 300-dpi scanned pages, one sentence each, turned 0, 90, 180 and 270 degrees counter-clockwise."""
    font = ImageFont.truetype("/usr/share/fonts/truetype/dejavu/DejaVuSerif.ttf", 50)
    pdf = pdfium.PdfDocument.new()
    for sentence, turn in zip(TURNED, (0, 90, 180, 270), strict=True):
        picture = Image.new("L", (1530, 480), 255)
        ImageDraw.Draw(picture).text((90, 150), sentence, font=font, fill=0)
        picture = picture.rotate(turn, expand=True)
        page = pdf.new_page(picture.width * 72 / 300, picture.height * 72 / 300)
        image = pdfium.PdfImage.new(pdf)
        image.set_bitmap(pdfium.PdfBitmap.from_pil(picture))
        image.set_matrix(pdfium.PdfMatrix().scale(picture.width * 72 / 300, picture.height * 72 / 300))
        page.insert_obj(image)
        page.gen_content()
    out = io.BytesIO()
    pdf.save(out)
    return out.getvalue()


def orientation(corpus: Path) -> None:
    """Section 3 of the module docstring: pages per second with orientation detection on, then off."""
    files = [(name, (corpus / name).read_bytes()) for name in SCANS] + [("turned.pdf", turned_pdf())]
    for orient in (True, False):
        pages = 0
        right = 0
        started = time.perf_counter()
        for name, data in files:
            cache = MemoryOcrCache()
            doc = parse_document(name, data, ocr=OcrOptions(TesseractOcr(), orient=orient, cache=cache))
            pages += len(cache.pages)
            if name == "turned.pdf":
                right = sum(sentence in doc.text.replace("\n", " ") for sentence in TURNED)
        seconds = time.perf_counter() - started
        print(f"orientation {'on ' if orient else 'off'}: {pages} pages read at the 300-dpi target in {seconds:.1f} s "
              f"= {pages / seconds:.2f} pages/s; turned pages read exactly: {right} of {len(TURNED)}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--corpus", type=Path, default=ROOT / ".." / "shared" / "corpus")
    parser.add_argument("--dpi", type=int, default=200)
    parser.add_argument("--pages", type=int, default=100)
    args = parser.parse_args()
    try:
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})  # one core
    except (AttributeError, OSError):
        pass
    engine = TesseractOcr()
    pages = 0
    words = 0
    started = time.perf_counter()
    for name in SCANS:
        pdf = pdfium.PdfDocument((args.corpus / name).read_bytes())
        for index in range(len(pdf)):
            t0 = time.perf_counter()
            result = engine.read_page(page_image(pdf, index, args.dpi))
            pages += 1
            words += len(result.words)
            print(f"{name} page {index + 1}: {len(result.words)} words, mean confidence "
                  f"{result.mean_confidence or 0:.3f}, {time.perf_counter() - t0:.2f} s")
    seconds = time.perf_counter() - started
    print(f"\nTesseract {engine.name} at {args.dpi} dpi, one core: {pages} pages, {words} words in {seconds:.1f} s "
          f"= {pages / seconds:.2f} pages/s ({seconds / pages:.2f} s/page)")

    counting = CountingEngine()
    parse_document("scan.pdf", image_only_pdf(args.pages), ocr=OcrOptions(counting, dpi=72))
    calls = counting.calls
    print(f"Textract: {calls} DetectDocumentText calls for {args.pages} image-only pages = "
          f"USD {calls * TEXTRACT_PRICE_PER_PAGE_USD:.2f} per {args.pages} pages "
          f"(USD {TEXTRACT_PRICE_PER_PAGE_USD} a page, first million pages a month)")
    counting = CountingEngine()
    vicksburg = (args.corpus / SCANS[1]).read_bytes()
    parse_document("vicksburg.pdf", vicksburg, ocr=OcrOptions(counting, dpi=72))
    print(f"Textract, Vicksburg (6 pages with an OCR layer, recheck on): {counting.calls} calls = "
          f"USD {counting.calls * TEXTRACT_PRICE_PER_PAGE_USD:.4f}; with LONGDOC_OCR_RECHECK_LAYERS=false: 0 calls")
    orientation(args.corpus)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
