"""``longdoc bulk`` as a user runs it: local mode, the offline baseline behind local batches, the
real ``statemachine/bulk.asl.json`` in the local engine; bad input reported, good input run."""

from __future__ import annotations

import json
import shutil

import pytest

from longdoc import wiring
from longdoc.cli import main

pytestmark = pytest.mark.slow

TYPES = "Governing Law,Cap On Liability"


@pytest.fixture()
def home(tmp_path, monkeypatch):
    monkeypatch.setenv("LONGDOC_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("LONGDOC_MODEL", "baseline")
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.delenv("LONGDOC_BULK_POLL_FIRST", raising=False)
    wiring.reset()
    yield tmp_path
    wiring.reset()


def _cli(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_a_manifest_with_bad_lines_runs_the_good_ones_and_status_reports_them(home, capsys, corpus_dir):
    # Given two ingested licences and a document whose only version failed to ingest
    for name in ("Apache-2.0.txt", "MPL-2.0.txt"):
        shutil.copy(corpus_dir / name, home / name)
        assert _cli(capsys, "ingest", str(home / name))[0] == 0
    (home / "blank.txt").write_text("  \n\n ")
    assert _cli(capsys, "ingest", str(home / "blank.txt"))[0] == 1
    # And a manifest: good ids (bare and JSON), a comment, a bad JSON line, an unknown id, a
    # document that is not READY, a repeated id and an id with a space
    manifest = home / "manifest.txt"
    manifest.write_text("\n".join(["# licences", "apache-2-0--2af71558", '{"doc_id": "mpl-2-0--09962c1d"}', '{"doc_id": ', "nope-no-such-doc",
                                   "blank", "apache-2-0--2af71558", "two words", ""]))
    # When the bulk job runs
    code, out, err = _cli(capsys, "bulk", "--clause-types", TYPES, "--manifest", str(manifest), "--json")
    # Then each bad line is reported with its number and reason, and the good documents ran
    assert code == 1  # some input was rejected
    assert "skipped line 4: not valid JSON" in err
    assert "skipped line 5: document nope-no-such-doc is not ingested" in err
    assert "skipped line 6: document blank is not ingested" in err
    assert "skipped line 7: duplicate of line 2" in err
    assert "skipped line 8: not a document id" in err
    status = json.loads(out)
    assert status["status"] == "SUCCEEDED" and (status["done"], status["failed"], status["pending"]) == (2, 0, 0)
    assert sorted(d["doc_id"] for d in status["documents"]) == ["apache-2-0--2af71558", "mpl-2-0--09962c1d"]
    assert [r["where"] for r in status["rejected"]] == ["line 4", "line 5", "line 6", "line 7", "line 8"]  # in line order
    # And progress went to stderr
    assert "2 done, 0 failed, 0 pending" in err and "batches in flight" in err
    # And the results are under $LONGDOC_HOME/results/<bulk_id>/: one JSON per document, one JSONL summary
    results = home / "home" / "results" / status["bulk_id"]
    summary = [json.loads(line) for line in (results / "summary.jsonl").read_text().splitlines()]
    assert {s["doc_id"] for s in summary} == {"apache-2-0--2af71558", "mpl-2-0--09962c1d"}
    one = json.loads((results / f"{summary[0]['run_id']}.json").read_text())
    assert {"run_id", "doc_id", "status", "extractions", "usage", "cost_usd"} <= set(one)
    assert {e["clause_type"] for e in one["extractions"]} == set(TYPES.split(","))
    # And `bulk status` reports the same job
    code, out, _ = _cli(capsys, "bulk", "status", status["bulk_id"], "--json")
    again = json.loads(out)
    assert code == 0 and again["done"] == 2 and again["documents"] == status["documents"]
    # And offline, the cost reads "no model cost", not a zero amount in USD (the figures stay strings)
    assert again["cost"] == status["cost"] == "no model cost (offline baseline)"
    assert again["cost_usd"] == "0.000000" and again["sync_cost_usd"] == "0.000000"
    code, out, _ = _cli(capsys, "bulk", "status", status["bulk_id"])
    assert code == 0 and "cost: no model cost (offline baseline)" in out and "USD" not in out


def test_bad_selections_fail_with_one_line(home, capsys):
    (home / "empty.txt").write_text("\n# nothing\n\n")
    code, _, err = _cli(capsys, "bulk", "--clause-types", TYPES, "--manifest", str(home / "empty.txt"))
    assert code == 1 and "names no documents" in err and err.count("\n") == 1
    code, _, err = _cli(capsys, "bulk", "--clause-types", TYPES, "nope-1", "nope-2")
    assert code == 1 and "no document to run" in err and "nope-1" in err
    code, _, err = _cli(capsys, "bulk", "--clause-types", TYPES, "x", "--all")
    assert code == 1 and "exactly one" in err
    code, _, err = _cli(capsys, "bulk", "status", "bulk-unknown")
    assert code == 1 and "bulk-unknown not found" in err
