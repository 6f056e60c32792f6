"""Every ``longdoc`` command's ``--help`` renders (argparse %-formats help strings: a bare ``%`` crashes it)."""

from __future__ import annotations

import argparse

from longdoc.cli import build_parser


def _parsers(parser: argparse.ArgumentParser, path: str = "longdoc") -> list[tuple[str, argparse.ArgumentParser]]:
    out = [(path, parser)]
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                out += _parsers(sub, f"{path} {name}")
    return out


def test_every_help_renders() -> None:
    # Given every command and subcommand of the CLI (eval accuracy's help says "under 90%")
    parsers = _parsers(build_parser())
    assert any(path == "longdoc eval accuracy" for path, _ in parsers)
    # When each help is formatted, Then none raises (ValueError: incomplete format) and the percent shows
    helps = {path: p.format_help() for path, p in parsers}
    assert "under 90%" in helps["longdoc eval"]
