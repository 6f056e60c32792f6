"""The ``longdoc`` command line: the same handlers and state machines as on AWS, run on one machine.

:func:`build_parser` assembles the parser from the command modules (each adds its subcommands with
``register(sub)``); :func:`main` runs one command and turns a failure into one line on stderr and a
non-zero exit status. The reference of every command is ``docs/cli.md``, rendered from this parser by
``scripts/gen_cli_docs.py`` (a unit test fails when the two differ). Scripts rely on the ``--json`` shapes.
"""

from __future__ import annotations

import argparse
import logging
import os
import sqlite3
import sys
import textwrap
import warnings

from pydantic import ValidationError

from longdoc.cli import bulk as bulk_cli
from longdoc.cli import admin, evals, extract, ingest, mcp, review, runs, serve
from longdoc.cli import summarize as summarize_cli
from longdoc.cli import triage as triage_cli
from longdoc.cli.common import failure_line, print_table
from longdoc.cli.progress import StderrProgress
from longdoc.core.errors import CliError
from longdoc.core.progress import NoProgress, reporting
from longdoc.core.text import one_line

__all__ = ["HelpFormatter", "build_parser", "failure_line", "main", "print_table"]

COMMAND_MODULES = (ingest, extract, evals, runs, serve, triage_cli, summarize_cli, bulk_cli, mcp, review,
                   admin)  # triage_cli after evals: it adds `eval triage`
"""Each module adds its subcommands with ``register(sub)``; a new pipeline adds its own module here."""


DESCRIPTION = """\
longdoc reads long documents and extracts the clauses you ask for, each with a verified citation
(chunk, page, section and the verbatim quote). It runs the same handlers and state machines as on
AWS, on this machine: data lives under $LONGDOC_HOME (default ./.longdoc). Without ANTHROPIC_API_KEY
the offline extractive baseline answers (a floor to beat, not an LLM).

first steps:
  longdoc ingest contract.pdf                      # parse, chunk, embed, index; prints the doc_id
  longdoc chunks contract                          # its chunks: pages, section ids, headings
  longdoc extract contract --clause-types "Governing Law,Cap On Liability"
                                                   # prints `run RUN_ID ...` and a table of quotes
  longdoc report RUN_ID --html out/contract.html   # audit page: each quote boxed on its PDF page
  longdoc serve                                    # the API on http://127.0.0.1:8080 (/docs)
"""

EPILOG = """\
Run `longdoc COMMAND --help` for a command's arguments. Every command exits non-zero on failure
with a one-line reason on stderr; --json prints machine-readable output. Reference: docs/cli.md.
"""


class HelpFormatter(argparse.RawDescriptionHelpFormatter):
    """Fills a description's or epilog's prose to the help's width, paragraph by paragraph (runs of
    lines that start in the first column), and keeps indented lines (examples) as they are written."""

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        lines: list[str] = []
        prose: list[str] = []
        for line in [*text.splitlines(), ""]:
            if line and not line[0].isspace():
                prose.append(line)
                continue
            if prose:
                lines += textwrap.wrap(" ".join(prose), width, initial_indent=indent, subsequent_indent=indent)
                prose = []
            lines.append(indent + line if line.strip() else "")
        return "\n".join(lines[:-1])


def build_parser() -> argparse.ArgumentParser:
    """The argument parser for every subcommand.

    Each subcommand's ``--help`` opens with its one-line summary (the ``help=`` it was registered
    with) unless it has a description of its own; every parser keeps the line breaks of its
    description and epilog and wraps only lines wider than the help (:class:`HelpFormatter`).
    """
    parser = argparse.ArgumentParser(prog="longdoc", description=DESCRIPTION, epilog=EPILOG,
                                     formatter_class=HelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True, title="commands", metavar="COMMAND")
    for module in COMMAND_MODULES:
        module.register(sub)
    _describe(parser)
    return parser


def _describe(parser: argparse.ArgumentParser) -> None:
    """Give every subcommand under ``parser`` its summary as description and :class:`HelpFormatter`."""
    for action in parser._actions:
        if not isinstance(action, argparse._SubParsersAction):
            continue
        summaries = {choice.dest: choice.help for choice in action._choices_actions}
        for name, child in action.choices.items():
            child.formatter_class = HelpFormatter
            if not child.description and summaries.get(name):
                child.description = str(summaries[name]).replace("%%", "%")  # help is %-formatted, a description not
            _describe(child)


def _reader_gone() -> int:
    """The reader of stdout closed it early (``longdoc chunks DOC | head``): stop quietly with status 141.

    Python ignores SIGPIPE and raises :class:`BrokenPipeError` instead; stdout is pointed
    at ``os.devnull`` so the flush at interpreter exit cannot raise it again (the recipe of
    https://docs.python.org/3/library/signal.html#note-on-sigpipe). 141 = 128 + SIGPIPE,
    the status a shell reports for a writer its reader stopped.
    """
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    return 141


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``longdoc`` console script; returns the exit status."""
    os.environ.setdefault("POWERTOOLS_METRICS_DISABLED", "true")
    # The CLI reports failures itself, one line each; the handlers' JSON logs only on request.
    # LONGDOC_LOG_LEVEL, when set, wins over an inherited POWERTOOLS_LOG_LEVEL (an earlier command's default)
    if os.environ.get("LONGDOC_LOG_LEVEL"):
        os.environ["POWERTOOLS_LOG_LEVEL"] = os.environ["LONGDOC_LOG_LEVEL"]
    os.environ.setdefault("POWERTOOLS_LOG_LEVEL", "CRITICAL")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    args = build_parser().parse_args(argv)
    logging.getLogger("moto").setLevel(logging.CRITICAL)  # the local engine's own chatter
    if os.environ.get("LONGDOC_LOG_LEVEL"):
        # The handlers' logger (Powertools, named "longdoc") must exist before the CLI composes its
        # adapters, or their INFO lines (the Bedrock region and credential sources) reach no handler.
        import longdoc.observability  # noqa: F401
    warnings.filterwarnings("ignore", module=r"aws_lambda_powertools.*")
    from longdoc.core.errors import LongdocError

    try:
        with reporting(StderrProgress(sys.stderr) if getattr(args, "progress", False) else NoProgress()):
            status: int = args.func(args)
        sys.stdout.flush()  # inside the try: a reader gone before the last line is a broken pipe too
        return status
    except BrokenPipeError:
        return _reader_gone()
    except (CliError, LongdocError) as exc:
        print(f"longdoc: {one_line(str(exc))}", file=sys.stderr)
        return 1
    except OSError as exc:  # unreadable or read-only LONGDOC_HOME, full disk, ...
        where = exc.filename or os.environ.get("LONGDOC_HOME", ".longdoc")
        print(f"longdoc: {one_line(f'{exc.strerror or exc}: {where}')}", file=sys.stderr)
        return 1
    except (ValueError, ValidationError) as exc:  # e.g. a gold line that is not a case
        print(f"longdoc: {one_line(str(exc))}", file=sys.stderr)
        return 1
    except sqlite3.Error as exc:
        home = os.environ.get("LONGDOC_HOME", ".longdoc")
        print(f"longdoc: local state store under {home} is unusable: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("longdoc: interrupted; a run left unfinished shows as STALE in `longdoc runs` and continues "
              "from its checkpoint with `longdoc runs resume RUN_ID`", file=sys.stderr)
        return 130
