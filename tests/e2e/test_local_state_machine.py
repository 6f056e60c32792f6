"""End to end, locally: the real CLI, the real handlers and the real ASL file on a corpus PDF.

Given a 14-page CUAD contract ingested through the ingest handler, when extraction runs
through statemachine/extract.asl.json in the local engine, then results are cited,
verifiable, and the same whether the run needed one session or several.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from longdoc import wiring
from longdoc.cli import main

pytestmark = pytest.mark.slow

DOC = "cuad/urscorpnew-cooperation-agreement.pdf"
DOC_ID = "urscorpnew-cooperation-agreement"
CLAUSES = "Governing Law,Agreement Date,Expiration Date,Non-Compete,Source Code Escrow,Audit Rights,Insurance"


def _cli(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture(scope="module")
def home(tmp_path_factory, corpus_dir: Path):
    """An isolated LONGDOC_HOME with the contract ingested once for the module."""
    path = tmp_path_factory.mktemp("longdoc-home")
    mp = pytest.MonkeyPatch()
    mp.setenv("LONGDOC_HOME", str(path))
    mp.setenv("LONGDOC_MODEL", "baseline")
    mp.delenv("ANTHROPIC_API_KEY", raising=False)
    wiring.reset()
    code = main(["ingest", str(corpus_dir / DOC), "--json"])
    assert code == 0
    yield path
    mp.undo()
    wiring.reset()


def _extract(capsys, *extra: str) -> tuple[int, dict, str]:
    code, out, err = _cli(capsys, "extract", DOC_ID, "--clause-types", CLAUSES, "--json", *extra)
    return code, json.loads(out), err


def _norm(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


def test_ingest_reports_pages_and_chunks(home, capsys, corpus_dir):
    # Given the module's ingested contract; When it is ingested again; Then it is a no-op with the same figures
    code, out, _ = _cli(capsys, "ingest", str(corpus_dir / DOC), "--json")
    row = json.loads(out)
    assert code == 0
    assert row["doc_id"] == DOC_ID and row["source"] == Path(DOC).name
    assert row["pages"] == 14 and row["chunks"] >= 5
    assert row["skipped"] is True  # the same bytes were ingested by the fixture


def test_small_budget_needs_several_sessions_and_matches_one_session_run(home, capsys):
    # Given the same request; When run with a tiny output budget and with the default one
    code_small, small, _ = _extract(capsys, "--max-tokens", "350")
    code_big, big, _ = _extract(capsys)
    # Then both succeed; the small one checkpointed and resumed in fresh sessions
    assert code_small == 0 and small["status"] == "SUCCEEDED"
    assert code_big == 0 and big["status"] == "SUCCEEDED"
    assert small["sessions"] >= 2 and small["checkpoints"] >= 2
    assert big["sessions"] == 1
    assert small["model"] == "offline-extractive-baseline-v1"
    # And the extractions are identical, clause by clause, citation by citation
    def view(result):
        return [(e["clause_type"], e["status"], [(c["chunk_id"], c["page"], c["quote"]) for c in e["citations"]])
                for e in result["extractions"]]
    assert view(small) == view(big)
    assert [e["clause_type"] for e in big["extractions"]] == CLAUSES.split(",")
    statuses = {e["clause_type"]: e["status"] for e in big["extractions"]}
    assert statuses["Governing Law"] == "found"
    assert statuses["Source Code Escrow"] == "not_found"
    assert big["case_facts"]["extracted_count"] == sum(s == "found" for s in statuses.values())
    assert big["usage"]["output_tokens"] > 0 and big["usage"]["input_tokens"] > 0


def test_every_citation_is_verbatim_in_its_chunk_and_on_its_pages(home, capsys):
    # Given a finished run and the document's chunks
    _, result, _ = _extract(capsys)
    _, out, _ = _cli(capsys, "chunks", DOC_ID, "--json")
    chunks = {c["chunk_id"]: c for c in json.loads(out)}
    citations = [c for e in result["extractions"] for c in e["citations"]]
    assert citations
    for cite in citations:
        chunk = chunks[cite["chunk_id"]]
        # Then the quote occurs verbatim (whitespace aside) and its page lies within the chunk's pages
        assert _norm(cite["quote"]) in _norm(chunk["text"])
        assert chunk["page_start"] <= cite["page"] <= chunk["page_end"]


def test_state_payloads_carry_ids_and_counters_only(home, capsys):
    # Given a multi-session run; When its saved execution history is read
    _, result, _ = _extract(capsys, "--max-tokens", "350")
    history = json.loads(Path(result["execution"]["history"]).read_text())
    names = [e["type"] for e in history]
    # Then the Extract task ran once per session and every state input/output is tiny
    assert names.count("TaskStateEntered") == result["sessions"]
    assert names[-1] == "ExecutionSucceeded"
    for event in history:
        for key in ("stateEnteredEventDetails", "stateExitedEventDetails"):
            if key in event:
                payload = event[key].get("input") or event[key].get("output") or "{}"
                assert len(payload) < 1024
                assert "text" not in json.loads(payload)
    exits = [json.loads(e["stateExitedEventDetails"]["output"]) for e in history
             if e.get("stateExitedEventDetails", {}).get("name") == "Extract"]
    assert [x["status"] for x in exits][-1] == "DONE"
    assert [x["iteration"] for x in exits] == list(range(1, len(exits) + 1))


def test_iteration_cap_fails_with_named_error_and_keeps_checkpoint(home, capsys):
    # Given a budget too small to finish in one session; When the cap is one iteration
    code, result, err = _extract(capsys, "--max-tokens", "350", "--max-iterations", "1")
    # Then the run fails with IterationCapReached, recorded on the run, checkpoint intact
    assert code == 1
    assert result["status"] == "FAILED"
    assert result["execution"]["error"] == "IterationCapReached"
    assert result["error"] == "IterationCapReached"
    # (checkpoint 1 from the session, 2 = the same content saved with its expiry when the run ended)
    assert result["checkpoints"] == 2 and result["sessions"] == 1
    assert result["case_facts"]["extracted_count"] >= 1
    assert "IterationCapReached" in err


def test_unknown_clause_type_names_closest(home, capsys):
    code, _, err = _cli(capsys, "extract", DOC_ID, "--clause-types", "Governing Laws")
    assert code == 1
    assert "Governing Law" in err and err.count("\n") == 1


def test_bad_file_fails_clearly_and_good_file_still_ingests(home, capsys, corpus_dir):
    # Given a password-protected PDF next to a good text file
    code, out, err = _cli(capsys, "ingest", str(corpus_dir / "bad/password-example.pdf"),
                          str(corpus_dir / "Apache-2.0.txt"), "--json")
    # Then the run exits non-zero naming the bad file and its reason, and the good one is ingested
    assert code == 1
    assert "password-example.pdf" in err and "password" in err
    failed, ingested = [json.loads(line) for line in out.splitlines()]
    assert failed["change"] == "failed" and "password" in failed["error"]
    assert failed["source"].endswith("bad/password-example.pdf")
    assert ingested["doc_id"] == "apache-2-0--2af71558"  # Apache-2.0: capital and dot, so a name hash


def test_report_shows_each_not_found_with_the_searches_behind_it(home, capsys, tmp_path):
    # Given a finished run of the offline baseline: below its threshold it searches with the catalogue's
    # alternatives before it records not_found, four searches per session (the default budget); past the
    # budget a not_found needs no search of its own
    from longdoc.extract.catalogue import load_catalogue

    _, result, _ = _extract(capsys)
    absent = [e for e in result["extractions"] if e["status"] == "not_found"]
    searched = [e for e in absent if e["evidence"]["queries"]]
    assert len(searched) == 4 and all(e["evidence"]["chunk_ids"] for e in absent)
    # When its audit page is written
    page = tmp_path / "audit.html"
    code, _, _ = _cli(capsys, "report", result["run_id"], "--html", str(page))
    html = page.read_text(encoding="utf-8")
    # Then every not_found clause type shows its evidence: the query it searched (its catalogue
    # alternatives) or none, and the chunks it examined
    assert code == 0 and html.count("data-evidence") == len(absent) and "data-no-evidence" not in html
    for e in absent:
        table = html[html.index(f"{e['clause_type']}: not_found"):]
        table = table[:table.index("</table>")]
        query = "; ".join(load_catalogue().resolve(e["clause_type"]).alternatives) if e in searched else "none"
        assert f"queries searched</th><td>{query}<" in table
        assert f"chunk ids examined</th><td>{e['evidence']['chunk_ids'][0]}" in table
