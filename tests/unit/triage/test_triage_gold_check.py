"""``eval triage --gold``: the whole gold file is checked before anything is ranked, every bad line
named with its claim id, exit 2 (issue 31, outside tester's findings)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from longdoc import wiring
from longdoc.cli import main
from longdoc.core.errors import GoldFileInvalid
from longdoc.triage import evaluate as evaluate_module
from longdoc.triage.evaluate import evaluate
from longdoc.triage.service import TriageDeps
from tests.unit.triage_set import load_policy_set

SET = "dev-policy-set"
H23 = "homeowners-wording-2023"
CLAIM = {"claim_id": "g1", "loss_date": "2023-04-03", "line_of_business": "home",
         "claim_form": {"description": "Rotted vanity cabinet from long-term drip"},
         "adjuster_note": "The plumber found a slow drip from the trap that had been leaking for months."}
GOOD = {"id": "g1", "kind": "excluded", "claim": CLAIM, "gold_doc": H23, "gold": ["5.8"]}


@pytest.fixture(scope="module")
def deps(tmp_path_factory: pytest.TempPathFactory) -> TriageDeps:
    blobs, state = load_policy_set(tmp_path_factory.mktemp("set"))
    return TriageDeps(state, blobs)


def _gold(tmp_path: Path, *rows: object) -> Path:
    path = tmp_path / "gold.jsonl"
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows))
    return path


def test_every_bad_line_is_named_with_its_claim_id_before_anything_is_ranked(
        deps: TriageDeps, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Given a gold file with one good line and one of each fault
    gold = _gold(tmp_path, GOOD,
                 {**GOOD},                                                    # 2: id again
                 {**GOOD, "id": "g3", "gold": ["9.99"]},                      # 3: no such clause
                 "{not json",                                                 # 4
                 {"id": "g5", "claim": "text", "gold": ["5.8"]},              # 5: claim not an object
                 {**GOOD, "id": "g6", "gold_dco": H23},                       # 6: misspelt field
                 {**GOOD, "id": "g7", "gold_doc": "motor-wording"},           # 7: not in the collection
                 {**GOOD, "id": "g8", "gold": None,                           # 8: quote not in the wording
                  "gold_quotes": ["the moon is made of green cheese and nothing else at all"]},
                 {**GOOD, "id": "g9", "gold_doc": "homeowners-wording-2024"},  # 9: not in force on the loss date
                 {**GOOD, "id": "g10", "claim": {**CLAIM, "loss_date": "1999-01-01"}})  # 10: no wording in force
    ranked: list[object] = []
    monkeypatch.setattr(evaluate_module, "_score", lambda *a, **k: ranked.append(a))
    # When eval triage reads it
    with pytest.raises(GoldFileInvalid) as caught:
        evaluate(gold, SET, deps)
    # Then nothing was ranked and there is one problem per fault, in line order, each naming line and claim
    assert ranked == []
    problems = caught.value.problems
    assert [p.split(": ", 1)[0] for p in problems] == [f"{gold}:{n}" for n in (2, 3, 4, 5, 6, 7, 8, 9, 10)]
    assert problems[0] == f"{gold}:2: duplicate id 'g1' (first on line 1) (claim g1)"
    assert problems[1] == f"{gold}:3: gold clause '9.99' is not a clause of {H23} (claim g3)"
    assert problems[2].startswith(f"{gold}:4: not JSON (")
    assert problems[3] == f"{gold}:5: field 'claim': Input should be a valid dictionary (claim g5)"
    assert problems[4].startswith(f"{gold}:6: unknown field 'gold_dco' (fields: id, kind,") and "(claim g6)" in problems[4]
    assert problems[5].startswith(f"{gold}:7: gold_doc 'motor-wording' is not a document of collection "
                                  f"'{SET}'") and problems[5].endswith("(claim g7)")
    assert problems[6].startswith(f"{gold}:8: gold quote 'the moon is made of green cheese") and "(claim g8)" in problems[6]
    assert problems[7].startswith(f"{gold}:9: gold_doc 'homeowners-wording-2024' is not in force for this claim "
                                  f"(home, loss date 2023-04-03: {H23} is)")
    assert problems[8].startswith(f"{gold}:10: claim: no home wording of collection '{SET}' is in force on 1999-01-01")


def test_the_quote_check_uses_the_scorers_rule_over_the_whole_document(deps: TriageDeps, tmp_path: Path) -> None:
    # Given a gold quote of clause 5.8 with its last word changed (12 of 13 words in order: the 80 % rule holds),
    # When eval runs, Then it is accepted; and a quote whose words are only scattered over the document is not
    near = {**GOOD, "gold": None, "gold_quotes": ["caused directly or indirectly by continuous or repeated seepage "
                                                  "or leakage of rain"]}
    report = evaluate(_gold(tmp_path, near), SET, deps)
    assert report["overall"]["claims"] == 1
    far = {**GOOD, "id": "g2", "gold": None, "gold_quotes": ["sewer theft glass earthquake vermin mould"]}
    with pytest.raises(GoldFileInvalid, match=r"gold.jsonl:1: gold quote 'sewer theft glass"):
        evaluate(_gold(tmp_path, far), SET, deps)


def test_the_cli_prints_each_problem_and_exits_2(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    for name in ("ANTHROPIC_API_KEY", "LONGDOC_MODE", "LONGDOC_MODEL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("LONGDOC_HOME", str(tmp_path))
    load_policy_set(tmp_path)
    wiring.reset()
    try:
        gold = _gold(tmp_path, GOOD, GOOD, {**GOOD, "id": "g3", "gold": ["9.99"]})
        assert main(["eval", "triage", "--gold", str(gold), "--collection", SET, "--bm25", "--json"]) == 2
        out = capsys.readouterr()
        assert out.out == ""
        assert out.err.splitlines() == [f"longdoc: {gold}:2: duplicate id 'g1' (first on line 1) (claim g1)",
                                        f"longdoc: {gold}:3: gold clause '9.99' is not a clause of {H23} (claim g3)",
                                        f"longdoc: {gold}: 2 problem(s); nothing was ranked"]
        # And a directory given as the gold file is named as one
        assert main(["eval", "triage", "--gold", str(tmp_path), "--collection", SET, "--bm25"]) == 1
        assert capsys.readouterr().err == f"longdoc: gold file {tmp_path} is a directory, not a file\n"
    finally:
        wiring.reset()


def test_a_split_label_of_ones_own_is_kept_and_a_bad_one_named(deps: TriageDeps, tmp_path: Path) -> None:
    # Given a second held-out set labelled test2, and a line whose split is not a label
    good = _gold(tmp_path, {**GOOD, "split": "test2"})
    report = evaluate(good, SET, deps)
    # Then the run has a row for that split
    assert "split=test2" in report["strata"]
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps({**GOOD, "split": "two words"}) + "\n")
    with pytest.raises(GoldFileInvalid) as caught:
        evaluate(bad, SET, deps)
    assert caught.value.problems == [f"{bad}:1: bad split 'two words' (a label of letters, digits, _ or -, "
                                     "such as dev or test) (claim g1)"]


def test_a_part_id_the_band_prints_is_a_valid_gold_id_and_counts_only_for_that_part(
        deps: TriageDeps, tmp_path: Path) -> None:
    # Given the wording's clause 5.8 cut into two parts, as the band cites a long clause (5.8#1, 5.8#2)
    from dataclasses import replace

    from longdoc.triage.collections import load_collection
    from longdoc.triage.evaluate import _hits, _Pools
    from longdoc.triage.gold import check_against, read_gold_lines

    members = load_collection(deps.state, SET)
    pools = _Pools(deps, members)

    def split_units(doc_ids: object) -> list:
        out = []
        for u in pools.of(doc_ids):  # type: ignore[arg-type]
            out += ([replace(u, clause_id="5.8#1", key=u.key + "#1"), replace(u, clause_id="5.8#2", key=u.key + "#2")]
                    if u.clause_id == "5.8" else [u])
        return out

    gold = _gold(tmp_path, {**GOOD, "gold": ["5.8#2"]}, {**GOOD, "id": "g2", "gold": ["5.8"]},
                 {**GOOD, "id": "g3", "gold": ["5.8#3"]})
    lines, problems = read_gold_lines(gold)
    assert problems == []
    # When the gold file is checked, Then the part ids the band printed and the base id are accepted,
    # and a part that does not exist is named
    assert check_against(gold, lines, SET, members, split_units) == [
        f"{gold}:3: gold clause '5.8#3' is not a clause of {H23} (claim g3)"]
    # And a part id is a hit only by that part, while the base id matches either part
    part1, part2 = [u for u in split_units([H23]) if u.clause_id.startswith("5.8#")]
    assert _hits([part1], {"gold_doc": H23, "gold": ["5.8#2"]}, 1) == 0.0
    assert _hits([part2], {"gold_doc": H23, "gold": ["5.8#2"]}, 1) == 1.0
    assert _hits([part1], {"gold_doc": H23, "gold": ["5.8"]}, 1) == 1.0


def test_a_gold_file_saved_as_utf16_with_a_bom_is_read(deps: TriageDeps, tmp_path: Path) -> None:
    # Given the good gold line saved by a Windows editor as "Unicode" (UTF-16 with a BOM)
    path = tmp_path / "gold-utf16.jsonl"
    path.write_bytes((json.dumps(GOOD) + "\n").encode("utf-16"))
    # When eval triage reads it, Then it is scored like the UTF-8 file
    report = evaluate(path, SET, deps)
    assert report["overall"]["claims"] == 1
    # And bytes that are not text are refused naming the file
    bad = tmp_path / "gold-bin.jsonl"
    bad.write_bytes(b"\xff\xfe\x00\xd8")  # a UTF-16 BOM then a lone surrogate
    with pytest.raises(GoldFileInvalid) as caught:
        evaluate(bad, SET, deps)
    assert caught.value.problems == [f"gold file {bad} is binary or not UTF-8 text "
                                     "(nor UTF-16 / UTF-32 with a byte-order mark)"]


def test_gold_clause_ids_match_whatever_their_case(deps: TriageDeps, tmp_path: Path) -> None:
    # Given the good line with its clause id written in another case (the gold check and the score alike)
    from longdoc.triage.clauses import gold_keys

    assert gold_keys("GENERAL CONDITIONS > 1#2") == {"general conditions > 1#2", "general conditions > 1"}
    upper = {**GOOD, "gold": ["PREAMBLE"]}  # the unit is "preamble"
    report = evaluate(_gold(tmp_path, upper), SET, deps)  # accepted by the check (GoldFileInvalid otherwise)
    lower = evaluate(_gold(tmp_path, {**GOOD, "gold": ["preamble"]}), SET, deps)
    assert report["claims"][0]["recall@3"] == lower["claims"][0]["recall@3"]
    assert report["claims"][0]["band_recall"] == lower["claims"][0]["band_recall"]
