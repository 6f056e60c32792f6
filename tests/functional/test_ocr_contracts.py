"""One contract for every OCR engine (issue 18): the local Tesseract and Amazon Textract.

Textract is reached with the real boto3 client over the wire, against a loopback fake of
``DetectDocumentText`` (tests/fakes/textract_server.py) that answers in Textract's block
format. moto (5.2) also serves ``DetectDocumentText``, but only with a canned, empty
answer, so it cannot tell whether the adapter reads words; it is used for the wire check alone.
"""

from __future__ import annotations

import io
from collections.abc import Iterator

import boto3
import pypdfium2 as pdfium
import pytest
from moto import mock_aws

from longdoc.adapters.ocr_tesseract import TesseractOcr
from longdoc.adapters.ocr_textract import TEXTRACT_PRICE_PER_PAGE_USD, TextractOcr
from longdoc.core.errors import OcrPageError
from longdoc.core.ports import OcrEngine
from tests.fakes.textract_server import FakeTextract
from tests.unit.pdf_builder import text_pdf

LINES = ["Section 4.2 Escape of water", "The insurer pays for sudden damage caused by water.",
         "Exclusion: gradual seepage over fourteen days."]


def page_png(lines: list[str], dpi: int = 200) -> bytes:
    """A page with ``lines`` (12 pt Helvetica), rendered by PDFium as a grey PNG."""
    pdf = pdfium.PdfDocument(text_pdf([lines], font_size=12.0))
    out = io.BytesIO()
    pdf[0].render(scale=dpi / 72, grayscale=True).to_pil().save(out, format="PNG")
    return out.getvalue()


@pytest.fixture(scope="module")
def fake_textract() -> Iterator[FakeTextract]:
    with FakeTextract() as fake:
        yield fake


@pytest.fixture(params=["tesseract", "textract"])
def engine(request: pytest.FixtureRequest, fake_textract: FakeTextract) -> OcrEngine:
    if request.param == "tesseract":
        return TesseractOcr()
    client = boto3.client("textract", region_name="us-east-1", endpoint_url=fake_textract.url,
                          aws_access_key_id="testing", aws_secret_access_key="testing")
    return TextractOcr(client=client)


def test_reads_the_words_of_a_page_in_line_order(engine: OcrEngine) -> None:
    # Given a rendered page of three lines
    image = page_png(LINES)
    # When the engine reads it
    page = engine.read_page(image)
    # Then the text holds the lines in order, one per line
    assert page.text.split("\n") == LINES
    assert page.engine == engine.name
    # and every word has a confidence in (0, 1] and a box inside the page, top to bottom by line
    assert all(0 < w.confidence <= 1 for w in page.words)
    assert all(0 <= w.left < 1 and 0 <= w.top < 1 and 0 < w.width <= 1 and 0 < w.height <= 1 for w in page.words)
    tops = [min(w.top for w in page.words if w.line == n) for n in range(3)]
    assert tops == sorted(tops)
    assert page.mean_confidence is not None and page.mean_confidence > 0.8


def test_cost_per_page(engine: OcrEngine) -> None:
    page = engine.read_page(page_png(LINES[:1]))
    assert page.cost_usd == engine.cost_per_page_usd
    assert engine.cost_per_page_usd == (0.0 if isinstance(engine, TesseractOcr) else TEXTRACT_PRICE_PER_PAGE_USD)


def test_a_corrupt_image_is_a_page_error(engine: OcrEngine) -> None:
    # Given bytes that start like a PNG but are cut off
    broken = page_png(LINES)[:200]
    # Then the engine names it as an unreadable page, not a crash or an outage
    with pytest.raises(OcrPageError):
        engine.read_page(broken)


def test_a_blank_page_reads_no_words(engine: OcrEngine) -> None:
    page = engine.read_page(page_png([]))
    assert page.words == () and page.text == "" and page.mean_confidence is None


def test_textract_adapter_speaks_the_wire_format_moto_serves() -> None:
    # Given moto's Textract (canned answer: no blocks)
    with mock_aws():
        client = boto3.client("textract", region_name="us-east-1", aws_access_key_id="testing",
                              aws_secret_access_key="testing")
        # When the adapter sends a page
        page = TextractOcr(client=client).read_page(page_png(LINES))
    # Then the call is accepted and an empty answer is no words, with the price of one page
    assert page.words == () and page.cost_usd == TEXTRACT_PRICE_PER_PAGE_USD
