"""Render ``docs/cli.md``, the CLI reference, from the ``longdoc`` argparse definitions.

Usage: ``.venv/bin/python scripts/gen_cli_docs.py`` (writes ``docs/cli.md``) or ``--check`` (exit 1 when
the file differs from what the parser renders now). ``tests/unit/cli/test_cli_docs.py`` runs the check,
so a changed option without a regenerated page fails the unit tests.

The page is every command's ``--help`` in command order (subcommands after their parent), each under
its own heading, formatted at a fixed width of :data:`WIDTH` columns so that the output does not
depend on the terminal it is run in.
"""

from __future__ import annotations

import argparse
import functools
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
TARGET = ROOT / "docs" / "cli.md"
WIDTH = 100
"""Columns of the rendered help (argparse otherwise reads the terminal's width from ``COLUMNS``)."""

HEADER = """\
# longdoc command line reference

Generated from the argparse definitions in `layers/longdoc/longdoc/cli/` by
`scripts/gen_cli_docs.py`; do not edit by hand. After changing a command or an option, regenerate
it:

```bash
.venv/bin/python scripts/gen_cli_docs.py
```

`tests/unit/cli/test_cli_docs.py` fails while this page and the parser differ. What each command
does in detail, and the JSON shapes `--json` prints, are in the topic pages the README lists (start
with [extraction.md](extraction.md)).
"""


def walk(parser: argparse.ArgumentParser, path: str = "longdoc") -> Iterator[tuple[str, str | None,
                                                                                  argparse.ArgumentParser]]:
    """Every command under ``parser`` (itself first) as ``(command path, one-line summary, parser)``,
    subcommands in the order they were registered."""
    yield path, None, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            summaries = {choice.dest: choice.help for choice in action._choices_actions}
            seen: set[int] = set()
            for name, child in action.choices.items():
                if id(child) in seen:  # an alias of a command already listed
                    continue
                seen.add(id(child))
                for sub_path, summary, sub in walk(child, f"{path} {name}"):
                    yield sub_path, summary if sub is not child else summaries.get(name), sub


def fixed_width_help(parser: argparse.ArgumentParser) -> str:
    """``parser.format_help()`` at :data:`WIDTH` columns, keeping the parser's raw or wrapped formatting."""
    original = parser.formatter_class
    formatter: Any = original  # a HelpFormatter subclass: it takes width=, which argparse's stub does not say
    parser.formatter_class = functools.partial(formatter, width=WIDTH)
    try:
        return parser.format_help().rstrip() + "\n"
    finally:
        parser.formatter_class = original


def render(parser: argparse.ArgumentParser | None = None) -> str:
    """The whole of ``docs/cli.md`` as text (the current ``longdoc`` parser unless one is given)."""
    if parser is None:
        from longdoc.cli import build_parser

        parser = build_parser()
    commands = list(walk(parser))
    lines = [HEADER, "## Commands\n"]
    for path, summary, _ in commands[1:]:
        anchor = path.replace(" ", "-")
        summary = (summary or "").replace("%%", "%")  # argparse %-formats a help string
        lines.append(f"- [`{path}`](#{anchor}): {summary}".rstrip())
    lines.append("")
    for path, _, sub in commands:
        lines += [f"## {path}\n", "```text", fixed_width_help(sub).rstrip(), "```\n"]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """Write ``docs/cli.md`` (or, with ``--check``, compare it); returns the exit status."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0] if __doc__ else None)
    parser.add_argument("--check", action="store_true", help="exit 1 when docs/cli.md is out of date")
    args = parser.parse_args(argv)
    text = render()
    if args.check:
        current = TARGET.read_text(encoding="utf-8") if TARGET.is_file() else ""
        if current != text:
            print(f"{TARGET.relative_to(ROOT)} is out of date: run .venv/bin/python scripts/gen_cli_docs.py",
                  file=sys.stderr)
            return 1
        return 0
    TARGET.write_text(text, encoding="utf-8")
    print(f"wrote {TARGET.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT / "layers" / "longdoc"))
    sys.exit(main())
