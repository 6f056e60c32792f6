"""``longdoc triage`` input robustness (issue 31, outside tester's findings): claim and examples files
named in every error, UTF-16 claims read, a claim not in English warned about, and the query writer's
skipped step said once per run."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest

from longdoc import wiring
from longdoc.cli import main
from longdoc.core.errors import TriageError
from longdoc.triage.claim import read_claim
from longdoc.triage.evaluate import evaluate
from longdoc.triage.language import not_english
from longdoc.triage.query_writer import SKIPPED
from longdoc.triage.service import MAX_EXAMPLES_CHARS, TriageDeps, read_examples
from tests.unit.triage_set import CLAIMS, load_policy_set, policy_set_home

SET = "dev-policy-set"
NOTE = "Sewage came up through the basement floor drain during a storm."
TEXT = f"Loss date: 2024-06-02\nLine of business: home\n{NOTE}\n"


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    yield from policy_set_home(tmp_path, monkeypatch, ("LONGDOC_TRIAGE_QUERY_WRITER",))


def _triage(claim: Path, *extra: str) -> int:
    return main(["triage", "--collection", SET, "--claim", str(claim), "--bm25", *extra])


def test_a_claim_without_descriptive_text_is_refused_naming_the_file() -> None:
    only_facts = json.dumps({"loss_date": "2024-06-02", "policy_number": "HO-1", "claim_amount": "$5"}).encode()
    with pytest.raises(TriageError, match=r"^claim file c.json: the claim has no descriptive text, only "
                                          r"policy_number, claim_amount"):
        read_claim(only_facts, "c.json")
    with pytest.raises(TriageError, match=r"^claim file c.json: the claim has no text"):
        read_claim(json.dumps({"loss_date": "2024-06-02", "adjuster_note": "   "}).encode(), "c.json")
    with pytest.raises(TriageError, match=r"^claim file c.txt: the claim has no descriptive text"):
        read_claim(b"Loss date: 2024-06-02\nLine of business: home\n\n", "c.txt")
    with pytest.raises(TriageError, match=r"^claim file c.txt is empty$"):
        read_claim(b" \n\t\n", "c.txt")


@pytest.mark.parametrize("encoding", ["utf-16", "utf-16-be", "utf-8-sig", "utf-32"])
def test_a_claim_saved_as_unicode_with_a_bom_is_read(encoding: str) -> None:
    bom = {"utf-16-be": b"\xfe\xff"}.get(encoding, b"")
    claim = read_claim(bom + TEXT.encode(encoding), "c.txt")
    assert (claim.note.splitlines()[-1], claim.loss_date, claim.line_of_business) == (NOTE, "2024-06-02", "home")
    # Without a BOM, UTF-16 bytes are still binary to us
    with pytest.raises(TriageError, match=r"claim file c.txt is binary"):
        read_claim(TEXT.encode("utf-16-le"), "c.txt")


def test_the_cli_reads_a_utf16_claim_and_names_a_directory(home: Path, tmp_path: Path,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    claim = tmp_path / "claim-utf16.txt"
    claim.write_bytes(TEXT.encode("utf-16"))
    assert _triage(claim) == 0
    assert "-> homeowners-wording-2024" in capsys.readouterr().out
    assert _triage(tmp_path) == 1
    assert capsys.readouterr().err == f"longdoc: claim file {tmp_path} is a directory, not a file\n"


def test_examples_files_empty_or_over_the_limit_are_named(home: Path, tmp_path: Path,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    empty, big = tmp_path / "empty.txt", tmp_path / "big.txt"
    empty.write_text("\n  \n")
    big.write_text("x" * (MAX_EXAMPLES_CHARS + 1))
    sewer = CLAIMS / "sewer-backup-2024.json"
    assert _triage(sewer, "--examples", str(empty)) == 1
    assert capsys.readouterr().err == (f"longdoc: examples file {empty} is empty: give worked examples, or leave "
                                       "out --examples for the built-in ones\n")
    assert _triage(sewer, "--examples", str(big)) == 1
    assert capsys.readouterr().err == (f"longdoc: examples file {big} is {MAX_EXAMPLES_CHARS + 1} characters, over "
                                       f"the {MAX_EXAMPLES_CHARS}-character limit of worked examples\n")
    assert read_examples("Example: a claim.\n".encode("utf-16"), "ex.txt") == "Example: a claim.\n"


def test_a_claim_not_in_english_is_warned_about_and_still_runs(home: Path, tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    spanish = tmp_path / "es.txt"
    spanish.write_text("Loss date: 2024-06-02\nLine of business: home\nEl sótano se inundó después de la tormenta "
                       "y el agua del alcantarillado dañó los muebles de la familia.\n")
    assert _triage(spanish) == 0
    out = capsys.readouterr()
    assert "-> homeowners-wording-2024" in out.out
    assert out.err.startswith(f"longdoc: warning: claim file {spanish} does not look like English (")
    # And an English claim says nothing
    assert _triage(CLAIMS / "sewer-backup-2024.json") == 0
    assert capsys.readouterr().err == ""


@pytest.mark.parametrize(("text", "english"), [
    ("Wasserschaden im Keller nach Starkregen, der Abfluss ist übergelaufen und die Möbel sind nass.", False),
    ("Le sous-sol a été inondé après l'orage, les meubles sont abîmés et la moquette est à jeter.", False),
    ("地下室因暴雨被水淹没，家具损坏。", False),
    ("Sewer backed up into the basement", True),
    ("Burst washing machine hose, kitchen flooded; the policyholder called a plumber at once.", True),
    ("Our van was stolen from the driveway per the police report, non-owned trailer also taken.", True)])
def test_the_english_check(text: str, english: bool) -> None:
    assert (not_english(text) is None) is english


def test_the_query_writer_on_without_a_model_says_so_once_per_run(home: Path, tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch,
                                                                  capsys: pytest.CaptureFixture[str],
                                                                  caplog: pytest.LogCaptureFixture) -> None:
    # Given LONGDOC_TRIAGE_QUERY_WRITER=model and no API key (the offline baseline)
    monkeypatch.setenv("LONGDOC_TRIAGE_QUERY_WRITER", "model")
    wiring.reset()
    # When a claim is triaged, Then one warning line says the step is skipped (a warning: the CLI shows it)
    with caplog.at_level(logging.WARNING, logger="longdoc.triage.query_writer"):
        assert _triage(CLAIMS / "sewer-backup-2024.json") == 0
    assert [(r.levelno, r.getMessage()) for r in caplog.records] == [(logging.WARNING, SKIPPED)]
    caplog.clear()
    # And eval triage --query-writer over three claims says it once, not once per claim
    blobs, state = load_policy_set(tmp_path / "set")
    claim = json.loads((CLAIMS / "sewer-backup-2024.json").read_text())
    gold = tmp_path / "gold.jsonl"
    gold.write_text("".join(json.dumps({"id": f"w{i}", "claim": claim, "gold": ["2.5"]}) + "\n" for i in range(3)))
    with caplog.at_level(logging.WARNING, logger="longdoc.triage.query_writer"):
        report = evaluate(gold, SET, TriageDeps(state, blobs, query_writer=True), query_writer=True)
    assert report["overall"]["claims"] == 3
    assert [r.getMessage() for r in caplog.records] == [SKIPPED]


def test_a_text_claims_loss_date_line_is_a_named_case_fact() -> None:
    # Given a text claim with a "Date of loss:" line and a policy number line
    claim = read_claim(b"Date of loss: 2024-05-02\nPolicy No.: HP-2231\n"
                       b"The basement flooded after heavy rain; repairs quoted at $4,200.00.\n", "c.txt")
    # Then CASE_FACTS names the loss date instead of listing it as value_1
    assert claim.case_facts == {"loss_date": "2024-05-02", "policy_no": "HP-2231", "value_1": "$4,200.00"}


def test_a_json_file_must_hold_a_json_object() -> None:
    # Given .json claim files holding a JSON string and plain text, Then each is refused naming the file
    with pytest.raises(TriageError, match=r"^claim file c.json must hold a JSON object$"):
        read_claim(b'"Water came through the ceiling after a storm"', "c.json")
    with pytest.raises(TriageError, match=r"^claim file c.json is not valid JSON"):
        read_claim(b"Water came through the ceiling after a storm", "c.json")
    # And the same text in a .txt file is a text claim
    assert read_claim(b"Water came through the ceiling after a storm", "c.txt").note.startswith("Water came")


def test_a_claim_of_only_a_name_and_a_phone_number_is_refused() -> None:
    # Given claims whose only words are who to reach (the outside tester's name-and-phone claim)
    text = b"Loss date: 2025-05-05\nLine of business: bicycle\nClaimant: Jane Doe\nPhone: 07700 900123\n"
    with pytest.raises(TriageError, match=r"^claim file c.txt: the claim has no descriptive text, only claimant, phone"):
        read_claim(text, "c.txt")
    with pytest.raises(TriageError, match=r"only claimant, policy_number"):
        read_claim(json.dumps({"claimant": "Jane Doe", "policy_number": "BK-1"}).encode(), "c.json")
    # And with a description of the loss it is read, the name a field
    claim = read_claim(text + b"My bike was stolen from the rack outside the station.\n", "c.txt")
    assert claim.fields["claimant"] == "Jane Doe" and claim.note.startswith("My bike was stolen")


def test_a_list_of_words_in_a_json_field_reads_as_words() -> None:
    claim = read_claim(json.dumps({"claim_form": {"description": ["bicycle", "stolen"]}}).encode(), "c.json")
    assert claim.fields == {"description": "bicycle, stolen"}


def test_a_loss_date_line_is_read_whole() -> None:
    # "Loss date: 2 May 2025" was read as "2"; the whole value is kept, so the date check names it
    claim = read_claim(b"Loss date: 2 May 2025\nThe kitchen flooded after a pipe burst.\n", "c.txt")
    assert claim.loss_date == "2 May 2025"


def test_a_lone_surrogate_escape_is_refused_naming_the_file_and_the_field(home: Path, tmp_path: Path,
                                                                          capsys: pytest.CaptureFixture[str]) -> None:
    # Given JSON claims whose text holds a \ud800 escape (a lone surrogate: no character, no UTF-8 form)
    raw = b'{"loss_date": "2024-06-02", "claim_form": {"description": "pipe \\ud800 burst"}}'
    # Then reading one names the file and the field, before anything is embedded or stored
    with pytest.raises(TriageError, match=r"^claim file c.json: field claim_form.description holds a lone UTF-16 "
                                          r"surrogate"):
        read_claim(raw, "c.json")
    # And the CLI says so in one line, with --json too, and exits 1 (no traceback)
    claim = tmp_path / "surrogate.json"
    claim.write_bytes(raw)
    assert _triage(claim, "--json") == 1
    assert capsys.readouterr().err.startswith(f"longdoc: claim file {claim}: field claim_form.description holds")
    # And an API request's text claim holding one is refused as the request's claim
    from longdoc.triage.service import TriageRequest, parse_claim

    with pytest.raises(TriageError, match=r"^claim in the request holds a lone UTF-16 surrogate"):
        parse_claim(TriageRequest(collection=SET, claim="Loss date: 2024-06-02\nPipe \ud800 burst"))


def test_a_claims_date_and_budget_errors_name_the_claim_file(home: Path, tmp_path: Path,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    # Given a claim file without a loss date, one with a date that is none, and a budget too small for it
    undated = tmp_path / "undated.json"
    undated.write_text(json.dumps({"adjuster_note": NOTE, "line_of_business": "home"}))
    baddate = tmp_path / "baddate.txt"
    baddate.write_text(f"Loss date: yesterday\nLine of business: home\n{NOTE}\n")
    dated = tmp_path / "dated.txt"
    dated.write_text(TEXT)
    # Then each refusal is one line that names the file it is about
    for path, extra, words in [(undated, (), "no loss date"), (baddate, (), "'yesterday' is not a date"),
                               (dated, ("--budget-tokens", "50"), "budget of 50 input tokens is smaller")]:
        assert _triage(path, *extra) == 1
        err = capsys.readouterr().err
        assert err.startswith(f"longdoc: claim file {path}: ") and words in err and err.count("\n") == 1, err
