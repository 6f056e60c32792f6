"""The CLI as a careless user drives it: same-name files, failed re-ingests, bad options.

Given small real text documents from the corpus, when the user does the things a new user
does, then every outcome is a clear one-line message and no good document becomes unusable.
"""

from __future__ import annotations

import json
import shutil

import pytest

from longdoc import wiring
from longdoc.cli import main
from longdoc.core.errors import short_cause
from tests.e2e.cli_support import offline_home, run_cli

pytestmark = pytest.mark.slow


@pytest.fixture()
def home(tmp_path, monkeypatch):
    yield from offline_home(tmp_path, monkeypatch)


_cli = run_cli


def test_same_name_files_are_versions_and_the_last_ingested_one_is_used(home, capsys, corpus_dir):
    # Given two different files that share a name, ingested A, B, then A again
    (home / "a").mkdir()
    (home / "b").mkdir()
    shutil.copy(corpus_dir / "Apache-2.0.txt", home / "a" / "license.txt")
    shutil.copy(corpus_dir / "MPL-2.0.txt", home / "b" / "license.txt")
    _, out_a, _ = _cli(capsys, "ingest", str(home / "a" / "license.txt"), "--json")
    _, out_b, err_b = _cli(capsys, "ingest", str(home / "b" / "license.txt"), "--json")
    code, out_a2, err_a2 = _cli(capsys, "ingest", str(home / "a" / "license.txt"), "--json")
    version_a, version_b = json.loads(out_a)["doc_version"], json.loads(out_b)["doc_version"]
    # Then the user is told each time the document id moves to another version
    assert code == 0 and version_a != version_b
    assert f"now points at version {version_b}" in err_b
    assert f"now points at version {version_a}" in err_a2
    # And the chunks shown are those of the file ingested last (Apache), the other stays readable
    _, out, _ = _cli(capsys, "chunks", "license", "--json")
    assert {c["doc_version"] for c in json.loads(out)} == {version_a}
    assert "Apache License" in json.loads(out)[0]["text"]
    _, out, _ = _cli(capsys, "chunks", "license", "--version", version_b, "--json")
    assert "Mozilla Public License" in json.loads(out)[0]["text"]


def test_failed_reingest_never_hides_the_ready_version(home, capsys, corpus_dir):
    # Given a good document, then the same name with unusable content
    path = home / "contract.txt"
    shutil.copy(corpus_dir / "Apache-2.0.txt", path)
    _, out, _ = _cli(capsys, "ingest", str(path), "--json")
    good = json.loads(out)["doc_version"]
    path.write_text("   \n\n  ")
    code, _, err = _cli(capsys, "ingest", str(path))
    assert code == 1 and "contract.txt" in err and err.count("\n") == 1
    # When chunks and extract are asked for the document
    code_chunks, out, _ = _cli(capsys, "chunks", "contract", "--json")
    code_extract, out_extract, _ = _cli(capsys, "extract", "contract", "--clause-types", "Governing Law", "--json")
    # Then the READY version is used by both
    assert code_chunks == 0 and {c["doc_version"] for c in json.loads(out)} == {good}
    assert code_extract == 0 and json.loads(out_extract)["doc_version"] == good


def test_bad_paths_and_options_fail_with_one_line(home, capsys, corpus_dir):
    code, _, err = _cli(capsys, "ingest", str(home))
    assert code == 1 and "is a directory" in err and err.count("\n") == 1
    for option in ("--max-tokens", "--top-k", "--max-iterations"):
        with pytest.raises(SystemExit) as stop:
            main(["extract", "x", "--clause-types", "Governing Law", option, "0"])
        assert stop.value.code == 2
        assert ("must be at least 64" if option == "--max-tokens" else "must be at least 1") in capsys.readouterr().err
    code, _, err = _cli(capsys, "extract", "x", "--clause-types", "ROFR")
    assert code == 1 and "Rofr/Rofo/Rofn" in err
    code, _, err = _cli(capsys, "extract", "x", "--clause-types", "Termination")
    assert code == 1 and "Termination For Convenience" in err


def test_unusable_home_is_one_line_not_a_traceback(tmp_path, capsys, monkeypatch):
    # Given LONGDOC_HOME pointing at a regular file
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("x")
    monkeypatch.setenv("LONGDOC_HOME", str(blocker))
    wiring.reset()
    code, _, err = _cli(capsys, "chunks", "anything")
    assert code == 1 and err.startswith("longdoc: ") and err.count("\n") == 1
    assert "Traceback" not in err
    wiring.reset()


def test_short_cause_reads_lambda_error_payloads():
    cause = 'ModelUnavailable: {"errorType": "ModelUnavailable", "errorMessage": "Claude API unreachable", "stackTrace": ["a", "b"]}'
    assert short_cause(cause) == "ModelUnavailable: Claude API unreachable"
    wrapped = 'States.TaskFailed: {"errorType": "NotFound", "errorMessage": "run r does not exist"}'
    assert short_cause(wrapped) == "States.TaskFailed: NotFound: run r does not exist"
    assert short_cause("plain\nmulti line") == "plain multi line"
    assert short_cause(None) == ""


def test_eval_bad_gold_files_and_budgets_fail_with_one_line(home, capsys, tmp_path):
    # Given a cut-off gold line, an empty gold file and a negative budget
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"case_id": "x"\n')
    empty = tmp_path / "empty.jsonl"
    empty.write_text("\n")
    for gold in (bad, empty):
        for command in ("retrieval", "extraction"):
            code, _, err = _cli(capsys, "eval", command, "--gold", str(gold), "--json")
            # Then each fails with one line naming the file, never a traceback
            assert code == 1 and err.count("\n") == 1 and str(gold) in err, (gold, command, err)
    with pytest.raises(SystemExit) as stop:
        main(["eval", "retrieval", "--gold", str(bad), "--budget-tokens", "-5"])
    assert stop.value.code == 2 and "must be at least 1" in capsys.readouterr().err
    # And a chunk size outside the settings' 100-4000 range is refused by both evals (0 was read as
    # "the default", -1 built a cache of one-token chunks)
    for command, value, message in (("retrieval", "0", "must be at least 100, got 0"),
                                    ("extraction", "-1", "must be at least 100, got -1"),
                                    ("retrieval", "4001", "must be at most 4000, got 4001")):
        with pytest.raises(SystemExit) as stop:
            main(["eval", command, "--gold", str(bad), "--chunk-tokens", value])
        assert stop.value.code == 2 and message in capsys.readouterr().err


def test_sidecar_edits_apply_to_the_same_file_and_a_bad_value_names_the_field(home, capsys, corpus_dir):
    # Given a licence ingested with a sidecar
    doc = home / "license.txt"
    sidecar = home / "license.txt.metadata.json"
    shutil.copy(corpus_dir / "Apache-2.0.txt", doc)
    sidecar.write_text(json.dumps({"doc_type": "licence", "term": "2024"}))
    _, out, _ = _cli(capsys, "ingest", str(doc), "--json")
    version = json.loads(out)["doc_version"]

    def metadata() -> set[tuple]:
        _, shown, _ = _cli(capsys, "chunks", "license", "--json")
        return {(c["doc_version"], c["doc_type"], c["term"]) for c in json.loads(shown)}

    assert metadata() == {(version, "licence", "2024")}
    # When only the sidecar changes and the same file is ingested again
    sidecar.write_text(json.dumps({"doc_type": "licence", "term": "2025"}))
    code, _, _ = _cli(capsys, "ingest", str(doc), "--json")
    # Then the same version's chunks carry the new term
    assert code == 0 and metadata() == {(version, "licence", "2025")}
    # When the sidecar is removed and the file ingested again / Then its metadata is gone too
    sidecar.unlink()
    assert _cli(capsys, "ingest", str(doc), "--json")[0] == 0
    assert metadata() == {(version, None, None)}
    # When a new file comes with a sidecar value that is not a string
    shutil.copy(corpus_dir / "MPL-2.0.txt", home / "mpl.txt")
    (home / "mpl.txt.metadata.json").write_text(json.dumps({"term": ["2024", "2025"]}))
    code, _, err = _cli(capsys, "ingest", str(home / "mpl.txt"))
    # Then one line names the file, the field and the sidecar
    assert code != 0
    assert "metadata term (sidecar incoming/mpl.txt.metadata.json)" in err and "must be a string, not an array" in err
    assert len(err.strip().splitlines()) == 1
