"""The review page of ``longdoc serve`` in real headless Chromium: correct, accept and reject with the keyboard.

Given a local home holding an invented two-page lease (its PDF, chunks and registry entry) and one
finished run of four extractions (``tests/functional/review_support.py``), with the accept threshold at
0.92 so three items are queued (Cap On Liability 0.3, the possible omission Termination For Convenience
0.4, Audit Rights 0.9), and ``longdoc serve`` running over it: a reviewer in Chromium sees the queue and
the cited page with the quote boxed, turns to page 2 (``]``), is refused a selection that is not the
document's text, selects the right sentence with the mouse and presses ``c``, presses ``a`` on the
next item and ``r`` on the third. Then ``longdoc review export`` holds the correction and the accept
(the rejection gives no label) and ``longdoc eval accuracy`` on the export gives the expected table.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.browser.cdp import Page
from tests.functional.review_support import PAGE1, PAGE2
from tests.unit.pdf_builder import text_pdf

REPO = Path(__file__).resolve().parents[2]
RIGHT = "The landlord's liability is capped at $5,000."


def _env(home: Path) -> dict[str, str]:
    return {**os.environ, "LONGDOC_HOME": str(home), "LONGDOC_MODE": "local", "LONGDOC_REVIEW_ACCEPT_THRESHOLD": "0.92",
            "PYTHONPATH": os.pathsep.join([str(REPO / "layers" / "longdoc"), str(REPO)]), "HF_HUB_OFFLINE": "1"}


def longdoc(home: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    """Run the ``longdoc`` CLI over ``home`` (a separate process, as a person would)."""
    return subprocess.run([sys.executable, "-m", "longdoc.cli", *argv], env=_env(home), capture_output=True,
                          text=True, timeout=300)


SETUP = """
import hashlib, sys
from longdoc import wiring
from longdoc.core.documents import save_chunks
from longdoc.core.models import DocumentRecord
from longdoc.core.records import Extraction, RunRecord
from tests.functional.review_support import CHUNKS, RUN, VERSION, result
pdf = open(sys.argv[1], "rb").read()
wiring.blob_store().put("incoming/lease.pdf", pdf)
state = wiring.state_store()
state.put_document(DocumentRecord(doc_id="lease", doc_version=VERSION, source="lease.pdf", status="READY", pages=2,
                                  chunks=2, source_key="incoming/lease.pdf", content_sha256=hashlib.sha256(pdf).hexdigest()))
save_chunks(wiring.blob_store(), "lease", VERSION, CHUNKS)
state.put_run(RunRecord(run_id=RUN, doc_id="lease", doc_version=VERSION, clause_types=["x"], status="SUCCEEDED", model="m"))
for n, e in enumerate(result()["extractions"]):
    state.put_extraction(RUN, Extraction.model_validate({**e, "instance": f"i{n}" if e["status"] == "found" else ""}))
"""


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    """``(base URL, home)`` of a ``longdoc serve --port 0`` over the lease's home (stopped afterwards)."""
    home = tmp_path_factory.mktemp("review-home")
    pdf = home.parent / "lease.pdf"
    pdf.write_bytes(text_pdf([[s for s in page.replace(". ", ".\n").split("\n") if s.strip()]
                              for page in (PAGE1, PAGE2)]))
    done = subprocess.run([sys.executable, "-c", SETUP, str(pdf)], env=_env(home), capture_output=True, text=True,
                          timeout=300, cwd=REPO)
    assert done.returncode == 0, done.stderr[-2000:]
    server = subprocess.Popen([sys.executable, "-m", "longdoc.cli", "serve", "--port", "0"], env=_env(home),
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert server.stdout is not None
        line = server.stdout.readline()
        assert line.startswith("longdoc serve: http://127.0.0.1:"), line + (server.stderr.read() if server.stderr else "")
        yield line.split()[2], home
    finally:
        server.terminate()
        server.wait(timeout=30)


SPAN = """((text, fromLabel) => {
  const pre = [...document.querySelectorAll('pre.chunk')].find(p => p.textContent.includes(text));
  const walker = document.createTreeWalker(pre, NodeFilter.SHOW_TEXT);
  let node; while ((node = walker.nextNode()) && !node.data.includes(text)) {}
  const range = document.createRange(), at = node.data.indexOf(text);
  range.setStart(node, at); range.setEnd(node, at + text.length);
  const rects = [...range.getClientRects()], first = rects[0], last = rects[rects.length - 1];
  const start = fromLabel ? pre.previousElementSibling.getBoundingClientRect() : first;
  return [start.left + 1, start.top + start.height / 2, last.right - 1, last.top + last.height / 2];
})"""

STATE = """({item: document.body.dataset.item, page: document.body.dataset.page, busy: document.body.dataset.busy,
  decisions: document.body.dataset.decisions, status: document.getElementById('status').textContent,
  message: document.getElementById('message').textContent, error: document.getElementById('message').className,
  rows: [...document.querySelectorAll('#items tr')].map(r => [r.cells[1].textContent, r.dataset.status])})"""

IMAGE = """(() => { const img = document.querySelector('#figure .sheet img');
  if (!img || !img.complete || !img.naturalWidth) return null;
  const r = img.getBoundingClientRect();
  return {img: [r.left, r.top, r.width, r.height], located: document.getElementById('figure').dataset.located,
          boxes: [...document.querySelectorAll('#figure [data-quote-box]')].map(b => {
            const q = b.getBoundingClientRect(); return [q.left, q.top, q.width, q.height]; })}; })()"""


def select(page: Page, text: str, from_label: bool = False) -> str:
    """Select ``text`` in the page text with a mouse drag (from the chunk's label above it when ``from_label``);
    returns what the browser selected."""
    x0, y0, x1, y1 = page.evaluate(f"{SPAN}({json.dumps(text)}, {json.dumps(from_label)})")
    page.drag((x0, y0), (x1, y1))
    return str(page.evaluate("window.getSelection().toString()"))


def decided(page: Page, before: int) -> dict[str, Any]:
    """The page's state once the decision after ``before`` decisions has been answered."""
    page.wait_for(f"Number(document.body.dataset.decisions || 0) > {before} && document.body.dataset.busy === '0'")
    return dict(page.evaluate(STATE))


def test_accept_correct_and_reject_through_the_page_then_export_and_accuracy(served: tuple[str, Path]) -> None:
    base, home = served
    ids = {i["clause_type"]: i["item_id"] for i in json.loads(longdoc(home, "review", "list", "--all", "--json").stdout)}
    with Page(f"{base}/review") as page:
        # Given the page loaded: the queue by confidence, the first item with its cited page image
        page.wait_for("document.body.dataset.ready === '1'")
        state = page.evaluate(STATE)
        assert [r[0] for r in state["rows"]] == ["Cap On Liability", "Termination For Convenience", "Audit Rights"]
        assert state["item"] == ids["Cap On Liability"] and state["page"] == "1"
        image = page.wait_for(IMAGE)
        # And the model's (wrong) quote is boxed on its line of page 1, inside the image
        left, top, width, height = image["img"]
        assert image["located"] == "full" and image["boxes"]
        for x, y, w, h in image["boxes"]:
            assert left <= x and x + w <= left + width and top <= y and y + h <= top + 0.25 * height
        assert "Rent is due monthly" in page.evaluate("document.querySelector('pre.chunk mark').textContent")

        # When the reviewer turns to page 2 and selects text that is not the document's (the label too)
        page.press("]")
        page.wait_for("document.body.dataset.page === '2' && !!document.querySelector('#figure img')")
        assert "chunk " in select(page, RIGHT, from_label=True)
        page.press("c")
        state = decided(page, 0)
        # Then the correction is refused with the server's message and the item stays pending
        assert state["error"] == "error" and "correction refused for document lease@" in state["message"]
        assert state["item"] == ids["Cap On Liability"] and state["status"] == "pending"

        # When the reviewer selects the right sentence with the mouse and presses c
        assert select(page, RIGHT) == RIGHT
        page.press("c")
        state = decided(page, 1)
        # Then it is stored and the page moves on to the next pending item
        assert state["message"].startswith("correct stored for Cap On Liability"), state
        assert state["item"] == ids["Termination For Convenience"]
        # When the reviewer accepts that one (a) and rejects the third (r)
        page.press("a")
        state = decided(page, 2)
        assert state["item"] == ids["Audit Rights"]
        page.press("r")
        state = decided(page, 3)
        # Then the queue shows the three decisions; k goes back to the accepted item
        assert [r[1] for r in state["rows"]] == ["corrected", "accepted", "rejected"]
        page.press("k")
        page.wait_for(f"document.body.dataset.item === {json.dumps(ids['Termination For Convenience'])}")
        assert page.evaluate("document.getElementById('status').textContent") == "accepted"

    # And the decisions are in the store with the span located to page 2
    shown = json.loads(longdoc(home, "review", "show", ids["Cap On Liability"], "--json").stdout)
    assert json.dumps(shown).count(RIGHT) >= 1
    # When the reviewed items are exported as gold
    gold = home / "reviewed.jsonl"
    done = longdoc(home, "review", "export", "--out", str(gold), "--json")
    assert done.returncode == 0, done.stderr
    cases = [json.loads(line) for line in gold.read_text().splitlines()]
    # Then the export holds the correction and the accept (the reject is left out: truth unknown)
    assert sorted((c["clause_type"], c["decision"], c["expected"], c["snippets"], c["pages"]) for c in cases) == [
        ("Cap On Liability", "correct", "found", [RIGHT], [2]),
        ("Termination For Convenience", "accept", "not_found", [], [])]
    assert {c["reviewer"] for c in cases} == {"local-reviewer"}
    # And eval accuracy on it: the model missed the cap (it quoted the rent clause) and was right to stay silent
    # (50% over all labels is under 90%: exit 1, as documented, with no stratum of 5 labels to alert)
    done = longdoc(home, "eval", "accuracy", "--gold", str(gold), "--json")
    assert done.returncode == 1, done.stderr
    report = json.loads(done.stdout)
    assert [(s["doc_type"], s["clause_type"], s["section"], s["labels"], s["correct"], s["accuracy"])
            for s in report["strata"]] == [("lease", "Cap On Liability", "front", 1, 0, 0.0),
                                           ("lease", "Termination For Convenience", "absent", 1, 1, 1.0)]
    assert (report["cases"], report["accuracy"], report["silent_source_rate"], report["alerts"]) == (2, 0.5, 1.0, [])
