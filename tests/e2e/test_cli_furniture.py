"""``longdoc ingest``: copies of a page are indexed each, running headers and footers are counted per page."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from longdoc import wiring

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "unit"))
from pdf_builder import text_pdf  # noqa: E402
from tests.e2e.cli_support import run_cli  # noqa: E402

pytestmark = pytest.mark.slow
CASE = Path(__file__).resolve().parents[1] / "data" / "cases" / "renewal-notice-three-copies.pdf"




def _cli(capsys, *argv: str) -> tuple[int, str, str]:
    return run_cli(capsys, *argv)  # stderr without the progress lines


def test_the_three_copy_notice_is_indexed_and_citable_on_every_page(home, capsys) -> None:
    # Given the renewal notice issued as the insured's, the insurer's and the broker's copy
    code, out, err = _cli(capsys, "ingest", str(CASE), "--json")
    row = json.loads(out)
    # Then every page is text with no line removed, and the warning names the three pages as copies
    assert code == 0 and row["pages"] == 3
    assert row["page_outcomes"] == {"text": [1, 2, 3], "furniture_lines": {"1": 0, "2": 0, "3": 0}}
    assert row["warnings"][0].startswith("pages 1-3 repeat one page, a few lines changed: the document is copies")
    assert "WARNING: pages 1-3 repeat one page" in err
    # And the chunks hold the renewal date, the premium and the excess three times: once per copy
    code, out, _ = _cli(capsys, "chunks", row["doc_id"], "--json")
    text = "".join(c["text"] for c in json.loads(out))
    for value in ("1 July 2025", "EUR 1,240.00", "EUR 500.00"):
        assert text.count(value) == 3, value
    for who in ("INSURED", "INSURER", "BROKER"):
        assert f"NOTICE OF RENEWAL - {who} COPY" in text


def test_identical_copies_are_separate_chunks_sharing_one_embedding(home, capsys) -> None:
    # Given a wording whose two schedules are the same words under the same heading, each too long to share a chunk
    sentence = "The insurer will pay for loss of or damage to the insured property caused by {}. "
    schedule = "".join(sentence.format(cause) for cause in ("fire", "flood", "storm", "theft", "impact") * 12)
    (home / "wording.md").write_text(f"## Schedule\n\n{schedule}\n\n## Schedule\n\n{schedule}\n")
    code, out, _ = _cli(capsys, "ingest", str(home / "wording.md"), "--json")
    assert code == 0
    code, out, _ = _cli(capsys, "chunks", "wording", "--json")
    chunks = [c for c in json.loads(out) if schedule.strip() in c["text"]]
    # Then both copies are chunks of their own: same text and content hash, distinct ids
    assert len(chunks) == 2 and chunks[0]["content_hash"] == chunks[1]["content_hash"]
    assert chunks[0]["chunk_id"] != chunks[1]["chunk_id"]
    # And both are in the vector index (the vector was embedded once and stored for each)
    record = wiring.state_store().get_document("wording")
    assert record is not None and record.upserted == record.chunks
    vector = wiring.embedder().embed_query(schedule)
    found = {chunk_id for chunk_id, _ in wiring.vector_index().query(vector, "wording", record.doc_version, 10)}
    assert {c["chunk_id"] for c in chunks} <= found


def test_running_headers_and_footers_are_counted_per_page_in_json_and_text(home, capsys) -> None:
    # Given a 5-page policy with a running header and a page-numbered footer on every page
    body = ["The {} clause covers damage to the insured property.", "Claims are paid within {} days of agreement."]
    words = ["harbour", "meadow", "lantern", "orchard", "granite"]
    pages = [["Example Insurance plc  Household Policy Wording", *(line.format(w) for line in body), f"Page {n} of 5"]
             for n, w in enumerate(words, start=1)]
    (home / "policy.pdf").write_bytes(text_pdf(pages))
    # When it is ingested with --json, then (another file, same pages) without
    code, out, err = _cli(capsys, "ingest", str(home / "policy.pdf"), "--json")
    row = json.loads(out)
    # Then the JSON counts the header and the footer on each page, and no warning is given
    assert code == 0 and row["page_outcomes"]["furniture_lines"] == {str(n): 2 for n in range(1, 6)}
    assert row["warnings"] == [] and err == ""
    (home / "policy-2.pdf").write_bytes(text_pdf(pages))
    code, out, err = _cli(capsys, "ingest", str(home / "policy-2.pdf"))
    assert code == 0
    assert err == (f"longdoc: {home / 'policy-2.pdf'}: 10 lines removed as running headers and footers "
                   "(not indexed): pages 1-5, 2 a page\n")
