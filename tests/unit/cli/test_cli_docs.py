"""``docs/cli.md`` is what the parser renders now, and every command's ``--help`` describes what it takes."""

from __future__ import annotations

import argparse
import importlib.util
from pathlib import Path

import pytest

from longdoc.cli import HelpFormatter, build_parser

REPO = Path(__file__).resolve().parents[3]
_spec = importlib.util.spec_from_file_location("gen_cli_docs", REPO / "scripts" / "gen_cli_docs.py")
assert _spec and _spec.loader
gen_cli_docs = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(gen_cli_docs)

COMMANDS = [(path, parser) for path, _, parser in gen_cli_docs.walk(build_parser())]


def test_the_committed_cli_reference_is_what_the_parser_renders() -> None:
    # Given the parser as the code defines it now, rendered in memory
    rendered = gen_cli_docs.render()
    # Then docs/cli.md holds exactly that text
    committed = (REPO / "docs" / "cli.md").read_text(encoding="utf-8")
    assert committed == rendered, (
        "docs/cli.md is out of date with the argparse definitions: regenerate it with "
        "`.venv/bin/python scripts/gen_cli_docs.py` and commit the result")


def test_the_reference_does_not_depend_on_the_terminal_width(monkeypatch: pytest.MonkeyPatch) -> None:
    # Given a narrow and a wide terminal
    monkeypatch.setenv("COLUMNS", "40")
    narrow = gen_cli_docs.render()
    monkeypatch.setenv("COLUMNS", "250")
    # Then the page is the same in both, lines wrapped at the fixed width
    assert gen_cli_docs.render() == narrow
    inside_blocks = [line for block in narrow.split("```text")[1:] for line in block.split("```")[0].splitlines()]
    assert max(map(len, inside_blocks)) <= gen_cli_docs.WIDTH


def test_the_reference_lists_every_command_under_its_own_heading() -> None:
    # Given the rendered page
    page = gen_cli_docs.render()
    # Then each command path has a heading and an entry in the list of commands, in registration order
    paths = [path for path, _ in COMMANDS]
    assert {"longdoc ingest", "longdoc eval accuracy", "longdoc review mark-present", "longdoc runs resume"} <= set(paths)
    positions = [page.index(f"\n## {path}\n") for path in paths]
    assert positions == sorted(positions)
    for path in paths[1:]:
        assert f"[`{path}`](#{path.replace(' ', '-')})" in page
    assert "90%%" not in page and "under 90%" in page  # help strings are %-formatted once, not shown raw


@pytest.mark.parametrize(("path", "parser"), COMMANDS, ids=[path for path, _ in COMMANDS])
def test_every_argument_of_every_command_is_described(path: str, parser: argparse.ArgumentParser) -> None:
    # Given one command's parser
    # Then the command says what it does, and every argument and option has a help text
    assert parser.description and parser.description.strip(), path
    undescribed = [action.option_strings[0] if action.option_strings else action.dest
                   for action in parser._actions
                   if not isinstance(action, argparse._SubParsersAction) and not (action.help or "").strip()]
    assert undescribed == [], f"{path}: arguments without help: {undescribed}"


def test_help_fills_prose_to_the_width_and_keeps_example_lines_as_written() -> None:
    # Given a description of two prose lines, a blank line and an indented example wider than the width
    text = "first half of a sentence\nsecond half.\n\n  longdoc ingest a-rather-long-file-name.pdf   # comment"
    formatter = HelpFormatter("longdoc", width=30)
    # When it is filled at 30 columns
    filled = formatter._fill_text(text, 30, "")
    # Then the prose is one paragraph wrapped at the width, and the example line is unchanged
    assert filled.split("\n") == ["first half of a sentence", "second half.", "",
                                   "  longdoc ingest a-rather-long-file-name.pdf   # comment"]
    assert formatter._fill_text("one two three four five six seven eight", 20, "") == "one two three four\nfive six seven eight"


def test_the_top_level_help_starts_a_newcomer_with_the_first_steps() -> None:
    # Given `longdoc --help`
    text = build_parser().format_help()
    # Then it shows the first steps in order, not the module docstring
    steps = ["longdoc ingest ", "longdoc chunks ", "longdoc extract ", "longdoc report ", "longdoc serve "]
    positions = [text.index(step) for step in steps]
    assert positions == sorted(positions)
    assert "first steps:" in text and "``" not in text
    # And the first-steps lines keep their line breaks (the raw description formatter)
    assert "\n  longdoc chunks contract " in text
