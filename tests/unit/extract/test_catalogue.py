"""Unit tests for the clause-type catalogue (longdoc.extract.catalogue)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from longdoc.extract.catalogue import Catalogue, ClauseType, load_catalogue, normalise_name
from longdoc.core.errors import ConfigError, UnknownClauseType

GOLD_FILE = Path(__file__).resolve().parents[3] / ".." / "shared" / "gold" / "cuad-dev.jsonl"


@pytest.fixture(scope="module")
def gold_questions() -> dict[str, str]:
    """Map each CUAD clause type in the gold file to its CUAD question text."""
    questions: dict[str, str] = {}
    with GOLD_FILE.open(encoding="utf-8") as handle:
        for line in handle:
            if line.strip():
                case = json.loads(line)
                questions[case["clause_type"]] = case["question"]
    return questions


@pytest.fixture(scope="module")
def catalogue() -> Catalogue:
    return load_catalogue()


def test_every_gold_clause_type_resolves_to_itself(
    catalogue: Catalogue, gold_questions: dict[str, str]
) -> None:
    # Given the 39 clause types named in the CUAD gold file
    assert len(gold_questions) == 39
    # When each is resolved by its exact gold name
    resolved = [catalogue.resolve(name).name for name in gold_questions]
    # Then every one is found under exactly that name
    assert resolved == list(gold_questions)


def test_defaults_are_the_41_cuad_categories(
    catalogue: Catalogue, gold_questions: dict[str, str]
) -> None:
    # Given the packaged catalogue
    # When its names are listed
    names = catalogue.names()
    # Then there are 41: the 39 gold types plus Document Name and Parties, no repeats
    assert len(names) == 41 == len(catalogue)
    assert set(names) == set(gold_questions) | {"Document Name", "Parties"}


def test_span_and_clause_kinds(catalogue: Catalogue) -> None:
    # Given the defaults
    # When answer kinds are read
    spans = {c.name for c in catalogue if c.answer_kind == "span"}
    # Then the short-value categories are spans and everything else is a clause
    assert spans == {
        "Document Name",
        "Parties",
        "Agreement Date",
        "Effective Date",
        "Expiration Date",
        "Renewal Term",
        "Notice Period To Terminate Renewal",
        "Governing Law",
    }


@pytest.mark.parametrize(
    ("asked", "expected"),
    [
        ("governing law", "Governing Law"),
        ("GOVERNING_LAW", "Governing Law"),
        ("  Governing   Law ", "Governing Law"),
        ("Rofr/Rofo/Rofn", "Rofr/Rofo/Rofn"),
        ("rofr / rofo / rofn", "Rofr/Rofo/Rofn"),
        ("non compete", "Non-Compete"),
        ("no_solicit_of_employees", "No-Solicit Of Employees"),
        ("unlimited / all you can eat license", "Unlimited/All-You-Can-Eat-License"),
        ("revenue / profit sharing", "Revenue/Profit Sharing"),
        ("IP ownership assignment", "Ip Ownership Assignment"),
    ],
)
def test_name_variants_resolve(catalogue: Catalogue, asked: str, expected: str) -> None:
    # Given a name differing only in case, spacing, hyphens/underscores or "/" spacing
    # When it is resolved
    found = catalogue.resolve(asked)
    # Then the canonical entry comes back
    assert found.name == expected
    assert asked in catalogue


def test_normalise_name_rules() -> None:
    # Given differently written names
    # When normalised
    # Then case, separators and slash spacing are folded away
    assert normalise_name("Affiliate License-Licensor") == "affiliate license licensor"
    assert normalise_name(" Rofr / ROFO/  rofn ") == "rofr/rofo/rofn"


def test_unknown_name_suggests_close_names(catalogue: Catalogue) -> None:
    # Given a near-miss name
    # When it is resolved
    with pytest.raises(UnknownClauseType) as caught:
        catalogue.resolve("Governing Laws")
    # Then the error names it and lists the closest known names first, at most three
    assert caught.value.name == "Governing Laws"
    assert caught.value.suggestions[0] == "Governing Law"
    assert len(caught.value.suggestions) <= 3
    assert "Governing Law" in str(caught.value)


def test_unrelated_name_has_no_suggestions(catalogue: Catalogue) -> None:
    # Given a name like nothing in the catalogue
    # When it is resolved
    with pytest.raises(UnknownClauseType) as caught:
        catalogue.resolve("zzzz qqqq")
    # Then no suggestions are offered
    assert caught.value.suggestions == []


def test_resolve_many_dedupes_in_order_and_fails_on_first_unknown(catalogue: Catalogue) -> None:
    # Given names with repeats written differently
    names = ["Parties", "governing law", "PARTIES", "Governing_Law", "Audit Rights"]
    # When they are resolved together
    resolved = catalogue.resolve_many(names)
    # Then each type appears once, in first-seen order
    assert [c.name for c in resolved] == ["Parties", "Governing Law", "Audit Rights"]
    # And the first unknown name is the one reported
    with pytest.raises(UnknownClauseType) as caught:
        catalogue.resolve_many(["Parties", "Indemnity Clause", "Warranty Durations"])
    assert caught.value.name == "Indemnity Clause"


def test_every_entry_has_description_and_enough_hints(catalogue: Catalogue) -> None:
    # Given the defaults
    for clause_type in catalogue:
        # Then each has a real description and 4-12 distinct, non-empty hints
        assert len(clause_type.description) >= 40, clause_type.name
        assert 4 <= len(clause_type.hints) <= 12, clause_type.name
        assert all(hint.strip() for hint in clause_type.hints), clause_type.name
        assert len(set(clause_type.hints)) == len(clause_type.hints), clause_type.name


def test_governing_law_hints_cover_the_usual_wording(catalogue: Catalogue) -> None:
    # Given the Governing Law entry
    hints = catalogue.resolve("Governing Law").hints
    # Then it carries the phrases contracts actually use
    assert "governed by the laws of" in hints
    assert "construed in accordance with" in hints


def test_descriptions_are_our_own_words(
    catalogue: Catalogue, gold_questions: dict[str, str]
) -> None:
    # Given CUAD's question text for each gold category
    for name, question in gold_questions.items():
        # When compared with our description (whitespace and case folded)
        ours = " ".join(catalogue.resolve(name).description.split()).casefold()
        theirs = " ".join(question.split()).casefold()
        # Then they differ and ours does not contain theirs
        assert ours != theirs, name
        assert theirs not in ours, name


def test_query_text_joins_name_description_and_hints(catalogue: Catalogue) -> None:
    # Given the Governing Law entry
    clause_type = catalogue.resolve("Governing Law")
    # When its retrieval text is built
    text = clause_type.query_text()
    # Then it starts with the name and holds the description and every hint
    assert text.startswith("Governing Law. ")
    assert clause_type.description in text
    assert all(hint in text for hint in clause_type.hints)


def test_user_yaml_overrides_and_adds(tmp_path: Path) -> None:
    # Given a user YAML file that redefines Governing Law and adds Indemnification
    path = tmp_path / "clauses.yaml"
    path.write_text(
        "clause_types:\n"
        "  - name: governing_law\n"
        "    description: Which law applies.\n"
        "    hints: [laws of, governed by]\n"
        "    answer_kind: span\n"
        "  - name: Indemnification\n"
        "    description: One party covers the other's losses from third-party claims.\n"
        "    hints: [indemnify, hold harmless, defend]\n",
        encoding="utf-8",
    )
    # When the catalogue is loaded with it
    catalogue = load_catalogue(path)
    # Then the default is replaced in place and the new type is appended
    assert len(catalogue) == 42
    names = catalogue.names()
    assert names[-1] == "Indemnification"
    assert names.index("governing_law") == load_catalogue().names().index("Governing Law")
    assert catalogue.resolve("Governing Law").hints == ["laws of", "governed by"]
    assert catalogue.resolve("indemnification").answer_kind == "clause"


def test_user_json_list_overrides_and_adds(tmp_path: Path) -> None:
    # Given a user JSON file holding a bare list
    path = tmp_path / "clauses.json"
    path.write_text(
        json.dumps(
            [
                {"name": "Parties", "description": "Who signs.", "hints": ["between"]},
                {"name": "Force Majeure", "description": "Excused delay.", "hints": ["act of God"]},
            ]
        ),
        encoding="utf-8",
    )
    # When the catalogue is loaded with it
    catalogue = load_catalogue(path)
    # Then Parties is overridden and Force Majeure is added
    assert catalogue.resolve("parties").description == "Who signs."
    assert catalogue.resolve("force-majeure").hints == ["act of God"]
    assert len(catalogue) == 42


def test_defaults_unchanged_after_user_override(tmp_path: Path) -> None:
    # Given a user file overriding Parties was loaded
    path = tmp_path / "c.yml"
    path.write_text("- {name: Parties, description: Who signs., hints: [between]}\n", "utf-8")
    load_catalogue(path)
    # When the defaults are loaded again
    # Then the cached defaults are untouched
    assert load_catalogue().resolve("Parties").description != "Who signs."


@pytest.mark.parametrize(
    ("file_name", "content", "problem"),
    [
        ("bad.yaml", "clause_types: [\n  - name: x", "invalid YAML"),
        ("bad.json", '[{"name": "X",', "invalid JSON"),
        ("bad.yaml", "clause_types:\n  - name: X\n    hints: [a]\n", "description"),
        ("bad.yaml", "- name: X\n  description: d\n  hints: []\n", "hints"),
        ("bad.yaml", "- {name: X, description: d, hints: [a], answer_kind: text}\n", "answer_kind"),
        ("bad.yaml", "- name: X\n  description: d\n  hint: [a]\n", "hint"),
        ("bad.yaml", "other: 1\n", "clause_types"),
        ("bad.yaml", "", "empty"),
        (
            "bad.yaml",
            "- {name: A b, description: d, hints: [x]}\n"
            "- {name: a-B, description: d, hints: [y]}\n",
            "duplicate",
        ),
        ("bad.txt", "anything", "unsupported"),
    ],
)
def test_malformed_user_file_raises_config_error(
    tmp_path: Path, file_name: str, content: str, problem: str
) -> None:
    # Given a broken user catalogue file
    path = tmp_path / file_name
    path.write_text(content, encoding="utf-8")
    # When it is loaded
    with pytest.raises(ConfigError) as caught:
        load_catalogue(path)
    # Then the error names the file and the problem
    message = str(caught.value)
    assert str(path) in message
    assert problem in message


def test_invalid_entry_error_names_the_entry(tmp_path: Path) -> None:
    # Given a file whose second entry lacks hints
    path = tmp_path / "c.yaml"
    path.write_text(
        "- {name: Alpha, description: d, hints: [a]}\n- {name: Beta, description: d}\n", "utf-8"
    )
    # When it is loaded
    with pytest.raises(ConfigError) as caught:
        load_catalogue(path)
    # Then the message points at entry 2, its name and the missing field
    assert "entry 2 ('Beta')" in str(caught.value)
    assert "hints" in str(caught.value)


def test_missing_user_file_raises_config_error(tmp_path: Path) -> None:
    # Given a path that does not exist
    path = tmp_path / "nope.yaml"
    # When it is loaded
    with pytest.raises(ConfigError) as caught:
        load_catalogue(path)
    # Then the error names the file
    assert str(path) in str(caught.value)
    assert "not found" in str(caught.value)


def test_catalogue_rejects_duplicate_names() -> None:
    # Given two entries whose names normalise alike
    first = ClauseType(name="Audit Rights", description="d", hints=["a"])
    second = ClauseType(name="audit_rights", description="e", hints=["b"])
    # When a catalogue is built from both
    # Then it refuses
    with pytest.raises(ValueError, match="duplicate"):
        Catalogue([first, second])
