"""Orientation and resolution before OCR, and page outcomes (issue 27): the pure parts, no Tesseract."""

from __future__ import annotations

import io

import pytest
from PIL import Image, ImageDraw

from longdoc.core.ports import OcrPage, OcrWord
from longdoc.ingest.models import OcrFailure, OcrPageInfo
from longdoc.ingest.parse.damage import Damage, by_outcome, garbage_share, page_outcomes
from longdoc.ingest.parse.orient import (
    box_to_original,
    box_to_upright,
    read_upright,
    render_dpi,
    turned,
    upright,
)


def test_a_box_on_a_page_turned_90_degrees_maps_back_exactly() -> None:
    # Given a box on an image turned 90 degrees clockwise (left 0.25, top 0.5, 0.5 wide, 0.125 high)
    # When it is mapped back onto the unturned page
    # Then its left is the turned top, its top is 1 - (left + width), and width/height swap
    assert box_to_original((0.25, 0.5, 0.5, 0.125), 90) == (0.5, 0.25, 0.125, 0.5)
    assert box_to_original((0.25, 0.5, 0.5, 0.125), 180) == (0.25, 0.375, 0.5, 0.125)
    assert box_to_original((0.25, 0.5, 0.5, 0.125), 270) == (0.375, 0.25, 0.125, 0.5)
    with pytest.raises(ValueError, match="rotation must be one of"):
        box_to_original((0, 0, 1, 1), 45)


@pytest.mark.parametrize("rotation", [0, 90, 180, 270])
def test_box_mapping_matches_the_pixels_of_a_turned_image(rotation: int) -> None:
    # Given a 400 x 200 image with one black rectangle (pixels 40-119 across, 20-59 down)
    original = Image.new("L", (400, 200), 255)
    ImageDraw.Draw(original).rectangle((40, 20, 119, 59), fill=0)
    # When the image is turned and the rectangle found on the turned image
    image = turned(original, rotation)
    left, top, right, bottom = Image.eval(image, lambda v: 255 - v).getbbox()
    found = (left / image.width, top / image.height, (right - left) / image.width, (bottom - top) / image.height)
    # Then mapping it back gives the rectangle on the original, exactly; and the inverse gives it again
    assert box_to_original(found, rotation) == pytest.approx((0.1, 0.1, 0.2, 0.2), abs=1e-12)
    assert box_to_upright(box_to_original(found, rotation), rotation) == pytest.approx(found, abs=1e-12)


def test_render_resolution_is_the_target_or_the_image_s_own_capped_for_memory() -> None:
    # US Letter, 612 x 792 pt: 300 dpi by default, also for a coarse 72-dpi scan (Tesseract's minimum)
    assert render_dpi(612, 792, None) == 300
    assert render_dpi(612, 792, 72.0) == 300
    # a finer scan is rendered at its own resolution
    assert render_dpi(612, 792, 600.0) == 600
    # a 1200-dpi scan is capped at 36 million pixels: 620 dpi (8.5 x 11 in x 620^2 = 35.9 MP)
    dpi = render_dpi(612, 792, 1200.0)
    assert dpi == 620 and (8.5 * dpi) * (11 * dpi) <= 36_000_000
    # a long strip (2 x 60 in) is capped by Textract's 10,000 pixels a side: 166 dpi
    assert render_dpi(144, 4320, None) == 166
    with pytest.raises(ValueError, match="no area"):
        render_dpi(0, 792, None)


class MarkEngine:
    """Reads one word, confidently only when the image's dark mark is in its top-left quarter (upright);
    its box is the mark's box on the image it was given. Counts calls; USD 0.0015 a call."""

    name = "mark-engine"
    cost_per_page_usd = 0.0015

    def __init__(self) -> None:
        self.calls = 0

    def read_page(self, image: bytes) -> OcrPage:
        self.calls += 1
        picture = Image.open(io.BytesIO(image))
        left, top, right, bottom = Image.eval(picture, lambda v: 255 - v).getbbox()
        box = (left / picture.width, top / picture.height, (right - left) / picture.width,
               (bottom - top) / picture.height)
        upright_mark = right <= picture.width / 2 and bottom <= picture.height / 2
        return OcrPage((OcrWord("Clause", 0.96 if upright_mark else 0.3, 0, *box),), self.name, self.cost_per_page_usd)


def test_without_a_detector_the_best_of_the_turns_is_kept_and_boxes_land_on_the_original() -> None:
    # Given a page scanned upside down: its mark sits in the bottom-right corner (pixels 300-359, 150-179)
    page = Image.new("L", (400, 200), 255)
    ImageDraw.Draw(page).rectangle((300, 150, 359, 179), fill=0)
    engine = MarkEngine()
    # When it is read upright with no orientation detector (Textract's path)
    result = read_upright(page, engine, None, 0.80)
    # Then the upright reading (0) was poor, the 180 one good: two calls, both paid, rotation 180 kept
    assert engine.calls == 2 and result.rotation == 180 and result.cost_usd == pytest.approx(0.003)
    # and the word's box is on the mark of the unturned page
    word = result.words[0]
    assert (word.left, word.top, word.width, word.height) == pytest.approx((0.75, 0.75, 0.15, 0.15))
    # and in the upright frame (what column analysis reads) it is in the top-left quarter again
    up = upright(result).words[0]
    assert (up.left, up.top) == pytest.approx((0.1, 0.1))


def test_a_sure_detector_guess_is_read_once() -> None:
    # Given a page on its side (mark at bottom-left) and a detector sure it needs 90 degrees clockwise
    page = Image.new("L", (200, 400), 255)
    ImageDraw.Draw(page).rectangle((10, 300, 49, 379), fill=0)

    class Sure:
        def detect_orientation(self, image: bytes):  # noqa: ANN202 - the port's shape
            from longdoc.core.ports import OrientationGuess

            return OrientationGuess(90, 9.0)

    engine = MarkEngine()
    result = read_upright(page, engine, Sure(), 0.80)
    # Then one reading, at 90, confident, its box on the mark of the unturned page
    assert engine.calls == 1 and result.rotation == 90 and result.mean_confidence == pytest.approx(0.96)
    word = result.words[0]
    assert (word.left, word.top, word.width, word.height) == pytest.approx((0.05, 0.75, 0.2, 0.2))


def test_garbage_share_counts_non_text_characters_not_leaders() -> None:
    assert garbage_share("The insurer shall pay within thirty days.") == 0.0
    assert garbage_share("Contents ........................ 4") == 0.0
    assert garbage_share("\ue000\ue001\ue002 ab\ufffd") == pytest.approx(4 / 6)
    assert garbage_share("x !#$%&*+<>?@ y") > 0.5


def test_page_outcomes_name_damaged_garbage_empty_and_low_confidence_pages() -> None:
    # Given five pages: text, garbage, empty, a low-confidence OCR page, one PDFium could not load, one OCR failed
    texts = ["Clause 1 applies.", "\ue000\ue001\ue002\ue003 x", "", "Clause 4 read.", "", ""]
    read = [OcrPageInfo(page=4, engine="e", reason="no_text_layer", words=3, mean_confidence=0.41,
                        low_confidence=True)]
    outcomes, warnings = page_outcomes(texts, read, [OcrFailure(page=6, reason="bad JPEG")],
                                       Damage(unreadable={5: "Failed to load page"}), 0.80)
    # Then each page has its outcome, and one warning line per kind of trouble names the pages
    assert outcomes == ["text", "unreadable", "empty", "ocr_low_confidence", "unreadable", "unreadable"]
    assert by_outcome(outcomes) == {"text": [1], "ocr_low_confidence": [4], "empty": [3], "unreadable": [2, 5, 6]}
    assert warnings == [
        "pages 5: PDFium could not load them (Failed to load page); nothing indexed from them",
        "pages 6: OCR could not read them (page 6: bad JPEG)",
        "pages 2: text is garbage (up to 80% non-text characters: a damaged content stream, or a font "
        "without a Unicode map); indexed as it is",
        "pages 4: OCR read them with low confidence (mean word confidence down to 0.41, under 0.80); "
        "indexed with ocr_low_confidence on their chunks",
        "pages 3: no text (blank, a scan left unread, or a damaged page)",
    ]
    # and a clean document gets none
    assert page_outcomes(["a b c", "d e f"], [], [], Damage(), 0.8) == (["text", "text"], [])


def test_a_chunk_over_a_native_page_and_two_ocr_pages_names_its_ocr_pages() -> None:
    # Given a 3-page document: page 1 from its text layer, pages 2-3 read by OCR (page 3 turned 90 degrees)
    from longdoc.core.models import PageSpan
    from longdoc.ingest.chunk import chunk_document
    from longdoc.ingest.models import ParsedDocument

    texts = ["1. Cover. The insurer pays for loss.", "2. Claims. Notice is given in writing.",
             "3. Term. The policy runs one year."]
    spans, start = [], 0
    for n, t in enumerate(texts, start=1):
        spans.append(PageSpan(page=n, char_start=start, char_end=start + len(t)))
        start += len(t) + 1
    read = [OcrPageInfo(page=2, engine="e", reason="no_text_layer", words=7, mean_confidence=0.95),
            OcrPageInfo(page=3, engine="e", reason="no_text_layer", words=7, mean_confidence=0.91, rotation=90)]
    doc = ParsedDocument(source="mixed.pdf", media_type="application/pdf", content_sha256="0" * 64,
                         text="\n".join(texts), pages=spans, ocr_pages=read)
    # When it is chunked into one chunk
    chunks = chunk_document(doc, "mixed", target_tokens=400, max_tokens=600)
    # Then the chunk says which of its pages OCR read, and the turn of page 3; the JSON carries both
    assert [(c.page_start, c.page_end, c.ocr, c.ocr_pages, c.ocr_rotations) for c in chunks] == [
        (1, 3, True, [2, 3], {3: 90})]
    dumped = chunks[0].model_dump(mode="json")
    assert dumped["ocr_pages"] == [2, 3] and dumped["ocr_rotations"] == {"3": 90}


def test_skew_is_the_median_slope_of_the_ocr_lines() -> None:
    # Given two lines of four words each climbing 3 degrees to the right (on a square page), and a
    # two-word line going the other way (too short to count)
    import math

    from longdoc.core.ports import OcrWord
    from longdoc.ingest.parse.skew import skew_degrees

    rise = math.tan(math.radians(3))
    words = [OcrWord(f"w{line}{k}", 0.9, line, 0.1 + 0.2 * k, 0.3 + 0.2 * line - rise * 0.2 * k, 0.1, 0.02)
             for line in range(2) for k in range(4)]
    words += [OcrWord("x", 0.9, 5, 0.1, 0.8, 0.1, 0.02), OcrWord("y", 0.9, 5, 0.5, 0.9, 0.1, 0.02)]
    # Then the page's skew is 3 degrees; with no line long enough there is none
    assert skew_degrees(words, 1.0) == 3.0
    assert skew_degrees(words[-2:], 1.0) is None
