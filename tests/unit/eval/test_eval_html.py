"""Self-contained HTML: eval heat maps and the run audit page."""

from __future__ import annotations

from longdoc.eval.html import eval_html, run_html
from longdoc.core.models import Chunk, PageSpan


def test_extraction_eval_html_colours_strata_and_escapes_names():
    stratum = {"clause_type": "<Cap> & Liability", "doc_type": "x", "position": "front", "cases": 2,
               "accuracy": 0.5, "flagged": True}
    report = {"cases": 2, "model": "m", "accuracy": 0.5, "found_accuracy": 1.0, "silent_source_rate": 0.0,
              "exact_value_rate": None, "strata": [stratum],
              "by": {"clause_type": [stratum], "doc_type": [stratum], "position": [stratum]}}
    html = eval_html(report, "extraction")
    assert "&lt;Cap&gt; &amp; Liability" in html and "<Cap>" not in html
    assert "hsl(60,70%,80%)" in html  # 50% is yellow
    assert "under 90%" in html and "<script" not in html


def test_run_html_highlights_the_quote_inside_its_page_text():
    text = "Page one text.\fThis Agreement is governed by the laws of\nNew York. End."
    chunk = Chunk(chunk_id="d:v:0000", doc_id="d", doc_version="v", ordinal=0, source="d.pdf", page_start=1,
                  page_end=2, section_id="12", text=text, char_start=0, char_end=len(text), token_count=10,
                  content_hash="h", page_spans=[PageSpan(page=1, char_start=0, char_end=15),
                                                PageSpan(page=2, char_start=15, char_end=len(text))])
    result = {"run_id": "r1", "doc_id": "d", "doc_version": "v", "status": "SUCCEEDED", "model": "m",
              "sessions": 1, "checkpoints": 2, "cost_usd": "0.01", "usage": {"input_tokens": 5},
              "calls": [{"session": 1, "model": "m", "stop_reason": "end_turn", "usage": {}}],
              "extractions": [{"clause_type": "Governing Law", "status": "found", "citations": [
                  {"chunk_id": "d:v:0000", "page": 2, "section_id": "12", "page_label": None,
                   "quote": "governed by the laws of New York"}]}]}
    html = run_html(result, {chunk.chunk_id: chunk})
    assert "<mark>governed by the laws of\nNew York</mark>" in html
    assert "Page one text" not in html  # only the quote's page is shown
    assert "page 2" in html and "section 12" in html and "end_turn" in html


def test_run_html_shows_each_extractions_confidence_and_reasons():
    # Given a run with a scored not_found flagged as a possible omission, and one stored before scores existed
    result = {"run_id": "r1", "doc_id": "d", "doc_version": "v", "status": "SUCCEEDED", "model": "m",
              "sessions": 1, "checkpoints": 1, "cost_usd": None, "usage": {}, "calls": [],
              "extractions": [{"clause_type": "Audit Rights", "status": "not_found", "citations": [],
                               "confidence": {"score": 0.35, "possible_omission": True,
                                              "reasons": ["-0.20 unquoted chunk d:v:0003 holds the hint <audit>"]}},
                              {"clause_type": "Old", "status": "not_found", "citations": []}]}
    # When the audit page is written
    html = run_html(result, {})
    # Then the score, the flag and the escaped reasons are on it, and the old one says it has none
    assert "data-confidence='0.350'" in html and "confidence <b>0.35</b>" in html
    assert "possible omission" in html and "holds the hint &lt;audit&gt;" in html
    assert "confidence: not recorded" in html


def test_report_command_names_an_unknown_run(tmp_path, monkeypatch, capsys):
    from longdoc import cli, wiring

    monkeypatch.setenv("LONGDOC_HOME", str(tmp_path))
    monkeypatch.setenv("LONGDOC_MODE", "local")
    wiring.reset()
    assert cli.main(["report", "no-such-run", "--html", str(tmp_path / "r.html")]) == 1
    assert "no-such-run" in capsys.readouterr().err
    assert not (tmp_path / "r.html").exists()
    wiring.reset()
