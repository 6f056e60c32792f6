"""``longdoc ingest --json`` and ``longdoc chunks``: page outcomes, warnings and the low-confidence flag (issue 27)."""

from __future__ import annotations

import json

import pytest

from longdoc import wiring
from longdoc.cli import main
from tests.unit.ingest.test_ocr_orientation import COARSE, SENTENCES, damaged, scan_pdf, sentence_page, text_pdf

pytestmark = pytest.mark.slow


def test_flags_reach_the_ingest_json_and_the_chunk_listing(tmp_path, monkeypatch, capsys) -> None:
    # Given a damaged 18-page PDF and a scan whose second page is 6-point text at 72 dpi, ingested locally
    monkeypatch.setenv("LONGDOC_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("LONGDOC_MODEL", "baseline")
    monkeypatch.setenv("LONGDOC_OCR", "tesseract")
    wiring.reset()
    (tmp_path / "damaged.pdf").write_bytes(damaged(text_pdf(18)))
    (tmp_path / "coarse.pdf").write_bytes(scan_pdf([(sentence_page(SENTENCES[0]), 300),
                                                    (sentence_page(COARSE, dpi=72, points=6), 72)]))
    (tmp_path / "turned.pdf").write_bytes(scan_pdf([(sentence_page(SENTENCES[1]), 300),
                                                    (sentence_page(SENTENCES[2]).rotate(90, expand=True), 300)]))
    try:
        assert main(["ingest", "--json", str(tmp_path / "damaged.pdf"), str(tmp_path / "coarse.pdf"),
                     str(tmp_path / "turned.pdf")]) == 0
        out, err = capsys.readouterr()
        rows = [json.loads(line) for line in out.splitlines()]
        # Then the JSON rows carry the pages by outcome and the warnings naming the pages
        # (the random bytes overwrite page 11's page object: the stream check names it damaged, issue 27)
        # (and the lines removed as running headers and footers, page by page: furniture_lines)
        assert rows[0]["page_outcomes"] == {"text": [p for p in range(1, 19) if p != 11], "damaged": [11],
                                            "furniture_lines": {str(p): 0 for p in range(1, 19)}}
        assert len(rows[0]["warnings"]) == 1
        assert rows[0]["warnings"][0].startswith("pages 11: damaged (page 11: its page object ")
        assert rows[1]["page_outcomes"] == {"ocr": [1], "ocr_low_confidence": [2], "furniture_lines": {"1": 0, "2": 0}}
        assert rows[1]["warnings"][0].startswith("pages 2: OCR read them with low confidence")
        # and stderr says WARNING, naming the file and the pages
        assert f"longdoc: {tmp_path / 'damaged.pdf'}: WARNING: pages 11: damaged" in err
        # When the scan's chunks are listed
        assert main(["chunks", "--json", "coarse"]) == 0
        out, err = capsys.readouterr()
        chunks = json.loads(out)
        # Then the chunk of page 2 carries ocr_low_confidence, the document's warning is repeated on stderr
        assert [c.get("ocr_low_confidence", False) for c in chunks if c["page_end"] == 2] == [True]
        assert "WARNING: pages 2: OCR read them with low confidence" in err
        assert main(["chunks", "coarse"]) == 0
        assert "[ocr_low_confidence]" in capsys.readouterr().out
        # And the turned scan's row, its record and its chunks say page 2 was read turned 90 degrees
        assert rows[2]["ocr_rotations"] == {"2": 90} and "ocr_rotations" not in rows[1]
        assert wiring.state_store().get_document(rows[2]["doc_id"]).ocr_rotations == {2: 90}
        assert main(["chunks", "--json", "turned"]) == 0
        out, err = capsys.readouterr()
        chunks = json.loads(out)
        assert {p: t for c in chunks for p, t in c.get("ocr_rotations", {}).items()} == {"2": 90}
        assert sorted({p for c in chunks for p in c["ocr_pages"]}) == [1, 2]
        assert "pages read turned upright by OCR (page 2: 90 degrees)" in err
    finally:
        wiring.reset()
