"""OCR in the ingest (issue 18): scanned pages read, poor OCR layers re-read or flagged, chunks marked,
citations verified on OCR text, bad pages named, and a long image-only PDF finished by resuming."""

from __future__ import annotations

import io
from pathlib import Path

import pypdfium2 as pdfium
import pytest
from PIL import Image, ImageDraw

from longdoc.adapters.blob import LocalBlobStore
from longdoc.adapters.ocr_tesseract import TesseractOcr
from longdoc.adapters.state import SqliteStateStore
from longdoc.core.errors import DocumentError, IngestDeadline
from longdoc.core.models import Chunk
from longdoc.core.ports import OcrPage, OcrWord
from longdoc.core.records import Citation
from longdoc.extract.citations import verify_citation
from longdoc.ingest.ocr_cache import ocr_prefix
from longdoc.ingest.parse import OcrOptions, parse_document
from longdoc.ingest.parse.ocr import LAYER_MIN_QUALITY, layer_quality
from longdoc.ingest.pipeline import IngestDeps, IngestOptions, ingest_document
from longdoc.ingest.source import IngestSource
from tests.unit.ingest.test_ingest_versions import CountingEmbedder, MemoryIndex

# Tesseract reads scanned pages (tens of CPU-seconds in all): not in the `make unit` tier.
pytestmark = pytest.mark.slow

GRUMMAN = "bad/scanned-grumman-service-kit-no-text.pdf"
VICKSBURG = "bad/scanned-vicksburg-with-ocr-layer.pdf"


@pytest.fixture
def stores(tmp_path: Path) -> dict:
    return {"blobs": LocalBlobStore(tmp_path / "bucket"), "state": SqliteStateStore(tmp_path / "state.sqlite3"),
            "embedder": CountingEmbedder(), "index": MemoryIndex()}


@pytest.fixture(scope="module")
def grumman(corpus_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple:
    """The scanned Grumman bulletin ingested once with Tesseract: (result, chunks, stores)."""
    root = tmp_path_factory.mktemp("grumman")
    stores = {"blobs": LocalBlobStore(root / "bucket"), "state": SqliteStateStore(root / "state.sqlite3"),
              "embedder": CountingEmbedder(), "index": MemoryIndex()}
    data = (corpus_dir / GRUMMAN).read_bytes()
    stores["blobs"].put("incoming/grumman.pdf", data)  # in the bucket, as the handler finds it
    result = ingest_document(IngestSource(key="incoming/grumman.pdf", data=data),
                             IngestDeps(**stores, ocr=TesseractOcr()))
    chunks = [c for cs in stores["index"].chunks.values() for c in cs]
    return result, chunks, stores


def test_scanned_grumman_bulletin_ingests_with_ocr(grumman: tuple) -> None:
    result, chunks, _ = grumman
    # Then both pages were read by Tesseract, at no cost, none flagged or failed
    assert result.ocr_pages == [1, 2] and result.ocr_engine == "tesseract-eng"
    assert result.ocr_cost_usd == 0.0 and result.ocr_failed_pages == {} and result.pages_needing_ocr == []
    # and every chunk carries its pages and says it is OCR text, with a mean word confidence
    assert chunks and all(c.ocr and c.page_start in (1, 2) and c.page_end in (1, 2) for c in chunks)
    assert all(c.ocr_confidence is not None and 0.5 < c.ocr_confidence <= 1 for c in chunks)
    assert {c.page_start for c in chunks} | {c.page_end for c in chunks} == {1, 2}


def test_a_quote_from_the_scanned_bulletin_verifies_against_the_ocr_text(grumman: tuple) -> None:
    _, chunks, _ = grumman
    by_id = {c.chunk_id: c for c in chunks}
    chunk = next(c for c in chunks if "Oversize Tire Accessory Kit" in c.text)
    cited = verify_citation(Citation(chunk_id=chunk.chunk_id, quote="Oversize Tire Accessory Kit"), by_id)
    assert cited.page == 1 and cited.quote == "Oversize Tire Accessory Kit"


def test_chunk_json_without_ocr_is_unchanged() -> None:
    # Given a chunk of a born-digital page: the OCR fields are not written, so stored chunk JSON stays as it was
    chunk = Chunk(chunk_id="d:1:0000", doc_id="d", doc_version="1", ordinal=0, source="d.txt", page_start=None,
                  page_end=None, section_id=None, text="x", char_start=0, char_end=1, token_count=1, content_hash="h")
    assert "ocr" not in chunk.model_dump_json() and Chunk.model_validate_json(chunk.model_dump_json()) == chunk
    read = chunk.model_copy(update={"ocr": True, "ocr_confidence": 0.9})
    assert '"ocr":true,"ocr_confidence":0.9' in read.model_dump_json()
    assert Chunk.model_validate_json(read.model_dump_json()) == read


def test_vicksburg_poor_ocr_layer_is_flagged_without_ocr_and_re_read_with_it(parse_corpus, corpus_dir: Path) -> None:
    # Given the scanned book pages with an OCR layer of mixed quality
    data = (corpus_dir / VICKSBURG).read_bytes()
    # When parsed without OCR, the cheap token check finds no garbage layer (it cannot see real-word errors)
    plain = parse_corpus(VICKSBURG)
    assert plain.poor_layer_pages == [] and plain.ocr_pages == []
    assert all(layer_quality(plain.text[p.char_start:p.char_end]) > LAYER_MIN_QUALITY for p in plain.pages)
    # When parsed with OCR, every layer is checked against a fresh reading: page 3's layer (read out of
    # order round an illustration) disagrees and is replaced; the others agree and are kept
    read = parse_document("vicksburg.pdf", data, ocr=OcrOptions(TesseractOcr()))
    assert [(p.page, p.reason) for p in read.ocr_pages] == [(3, "poor_text_layer")]
    assert read.poor_layer_pages == []
    page3 = " ".join(read.text[read.pages[2].char_start:read.pages[2].char_end].split())
    assert "I have a great curiosity to see the court house at Vicksburg" in page3
    assert "I have a great curiosity to see" not in " ".join(plain.text.split())
    assert read.text[read.pages[0].char_start:read.pages[0].char_end] == plain.text[
        plain.pages[0].char_start:plain.pages[0].char_end]


def test_born_digital_pages_are_never_re_read(parse_corpus) -> None:
    # The Federal Register's URLs and symbols score low, but its text is not an OCR layer
    assert parse_corpus("federal-register-2020-17221.pdf").poor_layer_pages == []


# -- image-only PDFs and a stand-in engine -------------------------------------------------------------


def image_pdf(pages: int, *, corrupt: frozenset[int] = frozenset()) -> bytes:
    """An image-only PDF: page n (1-based) shows a JPEG with n dark bars (at most 9); the JPEG data of the
    pages in ``corrupt`` is zeroed in the saved file, past its header (PDFium then draws nothing)."""
    pdf = pdfium.PdfDocument.new()
    jpegs: dict[int, bytes] = {}
    for n in range(1, pages + 1):
        page = pdf.new_page(200, 200)
        picture = Image.new("L", (100, 100), 255)
        draw = ImageDraw.Draw(picture)
        for bar in range(min(n, 9)):
            draw.rectangle((5 + 10 * bar, 20, 10 + 10 * bar, 80), fill=0)
        if n in corrupt:
            draw.text((5, 85), f"page {n}", fill=0)  # a JPEG no other page shares
        buffer = io.BytesIO()
        picture.save(buffer, format="JPEG")
        jpegs[n] = buffer.getvalue()
        image = pdfium.PdfImage.new(pdf)
        image.load_jpeg(io.BytesIO(jpegs[n]), inline=False)
        image.set_matrix(pdfium.PdfMatrix().scale(200, 200))
        page.insert_obj(image)
        page.gen_content()
    out = io.BytesIO()
    pdf.save(out)
    data = out.getvalue()
    for n in corrupt:
        at = data.index(jpegs[n])
        data = data[: at + 20] + bytes(len(jpegs[n]) - 40) + data[at + len(jpegs[n]) - 20:]
    return data


class BarEngine:
    """Reads nothing from a blank image and one numbered sentence from any other; counts its calls."""

    name = "bar-engine"
    cost_per_page_usd = 0.0015

    def __init__(self) -> None:
        self.calls = 0

    def read_page(self, image: bytes) -> OcrPage:
        self.calls += 1
        picture = Image.open(io.BytesIO(image))
        if picture.getextrema()[0] > 200:  # no dark pixel: nothing to read
            return OcrPage((), self.name, self.cost_per_page_usd)
        words = f"Clause {self.calls} of the scanned schedule applies here.".split()
        return OcrPage(tuple(OcrWord(w, 0.95, 0, 0.1 * i, 0.1, 0.08, 0.05) for i, w in enumerate(words)),
                       self.name, self.cost_per_page_usd)


def test_a_corrupt_page_image_is_named_and_the_other_pages_ingest(stores: dict) -> None:
    # Given a 3-page scan whose page 2 holds a corrupt JPEG
    data = image_pdf(3, corrupt=frozenset({2}))
    engine = BarEngine()
    # When it is ingested with OCR (from the bucket, as the handler finds it)
    stores["blobs"].put("incoming/scan.pdf", data)
    result = ingest_document(IngestSource(key="incoming/scan.pdf", data=data), IngestDeps(**stores, ocr=engine))
    # Then page 2 is named with the reason, pages 1 and 3 are read and indexed, each at Textract's price
    assert result.ocr_failed_pages == {2: "OCR read no words (blank or unreadable image)"}
    assert result.ocr_pages == [1, 3] and result.pages_needing_ocr == [2]
    assert result.ocr_cost_usd == pytest.approx(0.003)
    assert result.chunks >= 1


def test_a_scan_ocr_cannot_read_at_all_fails_with_the_pages_named() -> None:
    with pytest.raises(DocumentError, match=r"no text layer on any of the 2 pages .*OCR failed: page 1: .*page 2"):
        parse_document("blank.pdf", image_pdf(2, corrupt=frozenset({1, 2})), ocr=OcrOptions(BarEngine()))


def test_a_500_page_image_only_pdf_finishes_by_resuming_without_reading_a_page_twice(stores: dict) -> None:
    # Given a 500-page image-only PDF and an invocation clock: 900 s, each page taking 2.5 s
    data = image_pdf(500)
    engine = BarEngine()
    clock = {"left": 900.0}

    def time_left() -> float:
        clock["left"] -= 2.5 if engine.calls else 0.0
        return clock["left"]

    source = IngestSource(key="incoming/long-scan.pdf", data=data)
    stores["blobs"].put(source.key, data)  # in the bucket, as the handler finds it
    deps = IngestDeps(**stores, ocr=engine)
    # When the first invocation runs out of time, it stops with the OCR progress saved
    with pytest.raises(IngestDeadline, match="pages read"):
        ingest_document(source, deps, IngestOptions(deadline_margin=60.0, ocr_dpi=72), time_left=time_left)
    first = engine.calls
    assert 300 < first < 500
    prefix = ocr_prefix(source.doc_id, source.version, engine.name, 72)
    assert all(stores["blobs"].exists(f"{prefix}{page:05d}.json") for page in (1, first))
    assert not stores["blobs"].exists(f"{prefix}{first + 1:05d}.json")
    # And the redelivery (a fresh invocation) reads only the pages still missing, then finishes
    clock["left"] = 900.0
    result = ingest_document(source, deps, IngestOptions(deadline_margin=60.0, ocr_dpi=72), time_left=time_left)
    assert engine.calls == 500
    assert result.ocr_pages == list(range(1, 501)) and result.ocr_cost_usd == pytest.approx(0.75)
