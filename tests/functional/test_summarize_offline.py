"""``longdoc summarize`` offline: the LexRank baseline, bad input (one clear line each) and the HTML page."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from html import unescape
from pathlib import Path

import pytest

from longdoc import wiring
from longdoc.cli import main
from longdoc.core.documents import load_chunks
from longdoc.adapters.blob import LocalBlobStore
from tests.functional.summary_support import add_document, add_policy, section_amount

pytestmark = [pytest.mark.slow, pytest.mark.filterwarnings("ignore:No application metrics to publish")]


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A fresh local LONGDOC_HOME with the offline baseline."""
    monkeypatch.setenv("LONGDOC_HOME", str(tmp_path))
    monkeypatch.setenv("LONGDOC_MODE", "local")
    monkeypatch.setenv("LONGDOC_MODEL", "baseline")
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.setenv("LONGDOC_SUMMARY_SINGLE_CALL_TOKENS", "3000")
    wiring.reset()
    yield tmp_path
    wiring.reset()


def test_the_offline_baseline_summarises_in_the_same_shape_labelled(home, capsys) -> None:
    # Given an eight-section policy and no API key
    record = add_policy(home, sections=8)
    # When it is summarised with a focus
    assert main(["summarize", "policy", "--focus", "baggage claims", "--length", "short", "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    # Then the result is the baseline's, labelled, with the same fields as Claude's
    assert result["baseline"] is True and result["model"] == "offline-lexrank-summary-baseline-v1"
    assert "not an LLM" in result["label"]
    assert {"statements", "exact_values", "usage", "cost_usd", "map_calls", "reduce_depth", "dropped"} <= set(result)
    assert result["map_calls"] == result["groups"] >= 3 and result["dropped"] == []
    # And its statements are sentences of the document, cited to their section and page, focus first
    text = " ".join(c.text for c in load_chunks(LocalBlobStore(home / "bucket"), "policy", record.doc_version))
    for statement in result["statements"]:
        assert " ".join(statement["text"].removesuffix(" …").split()) in " ".join(text.split())
    assert "baggage" in result["statements"][0]["text"]
    # And the exact values are every section's amount, verbatim, with its section and page
    amounts = {(v["value"], v["section_id"], v["page"]) for v in result["exact_values"]}
    assert {(section_amount(k), str(k), k) for k in range(1, 9)} <= amounts


@pytest.mark.parametrize("args, message", [
    (["nope"], "longdoc: document nope does not exist (ingest it first)\n"),
    (["failed-doc"], "longdoc: document failed-doc version {version} is FAILED, not READY: scanned pages only\n"),
    (["empty-doc"], "longdoc: document empty-doc version {version} has no text to summarise\n"),
    (["policy", "--focus", "x" * 301], "longdoc: --focus is 301 characters; the limit is 300 (name a topic, e.g. "
                                       "\"exclusions\")\n"),
])
def test_bad_input_is_one_clear_line(home, capsys, args: list[str], message: str) -> None:
    # Given a READY policy, a FAILED document and a READY document without any text
    add_policy(home, sections=2)
    failed = add_document(home, "failed-doc", b"Some text.", "failed-doc.txt", status="FAILED",
                          reason="scanned pages only")
    empty = add_document(home, "empty-doc", b"", "empty-doc.txt")
    version = {"failed-doc": failed.doc_version, "empty-doc": empty.doc_version}.get(args[0], "")
    # When it is asked for
    code = main(["summarize", *args])
    out, err = capsys.readouterr()
    # Then it fails with exactly that one line and starts nothing
    assert code == 1 and out == ""
    assert err == message.format(version=version)
    assert not (home / "bucket" / "summaries").exists()


def test_the_html_page_opens_each_cited_text_on_its_page(home, capsys, tmp_path) -> None:
    # Given a summarised policy
    add_policy(home, sections=8)
    page = tmp_path / "out" / "summary.html"
    assert main(["summarize", "policy", "--html", str(page), "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    html = page.read_text(encoding="utf-8")
    # Then every citation links to a source block that exists, on the cited page, holding the statement's amounts
    links = re.findall(r"<a class='cite' href='#([^']+)'>§ ([^,]+), p\. (\d+)</a>", html)
    assert len(links) == sum(len(s["citations"]) for s in result["statements"]) > 0
    for anchor, section, cited_page in links:
        block = re.search(rf"<div class='src' id='{re.escape(anchor)}'><h3>Section {re.escape(section)}, page "
                          rf"{cited_page}\b.*?</div>", html, re.DOTALL)
        assert block is not None
        assert section_amount(int(section)) in unescape(block.group(0))
        assert "<mark>" in block.group(0)
    assert "not an LLM" in html and "Exact values (verbatim)" in html


def test_the_baseline_summary_of_a_corpus_filing_cites_the_pages_its_statements_are_on(home, capsys,
                                                                                       corpus_dir) -> None:
    # Given a real 18-page filing from the corpus, ingested
    name = "dmca-1998-copyright-office-summary.pdf"
    record = add_document(home, "dmca", (corpus_dir / name).read_bytes(), name)
    # When the offline baseline summarises it
    assert main(["summarize", "dmca", "--length", "long", "--json"]) == 0
    out, err = capsys.readouterr()
    result = json.loads(out)
    # (stderr, not a terminal here: one progress line, the groups summarised)
    assert re.findall(r"^longdoc: summarise (\S+): (\d+) groups in ", err, re.M) == [(name, str(result["groups"]))]
    # Then every statement is verified, none dropped
    assert result["status"] == "SUCCEEDED" and len(result["statements"]) >= 12 and result["dropped"] == []
    # And each citation names the page(s) its statement's text is on
    page_text: dict[int, str] = {}
    for chunk in load_chunks(LocalBlobStore(home / "bucket"), "dmca", record.doc_version):
        for span in chunk.page_spans:
            a, b = span.char_start - chunk.char_start, span.char_end - chunk.char_start
            page_text[span.page] = page_text.get(span.page, "") + " " + chunk.text[max(0, a):b]
    for statement in result["statements"]:
        words = " ".join(statement["text"].removesuffix(" …").split())
        for cite in statement["citations"]:
            assert cite["pages"] and cite["page"] == cite["pages"][0] == min(cite["pages"])
            on_pages = " ".join(" ".join(page_text[p].split()) for p in cite["pages"])
            assert words[:40] in on_pages, (words, cite["pages"])
