"""``longdoc`` command line: the same handlers and state machine as AWS, on one machine.

Commands (scripts rely on their JSON shapes):
  longdoc ingest PATH... [--json]
  longdoc watch DIR [--once] [--json]
  longdoc chunks DOC_ID [--version V] [--json]
  longdoc extract DOC_ID --clause-types a,b,c [--max-tokens N] [--top-k K] [--fact k=v]... [--json]
  longdoc clause-types [--json]
  longdoc eval retrieval --gold FILE [--corpus DIR] [--budget-tokens N] [--chunk-tokens N] [--json]
  longdoc eval extraction --gold FILE [--corpus DIR] [--threshold X] [--budget-tokens N] [--search-calls N]
                          [--compare-search] [--json]
  longdoc eval ... --html FILE        (also writes a self-contained HTML page with a heat map)
  longdoc report RUN_ID --html FILE   (audit page: each cited PDF page with the quote highlighted)
  longdoc summarize DOC_ID [--focus TEXT] [--length short|medium|long] [--stream] [--json] [--html FILE]
  longdoc bulk --clause-types a,b (DOC_ID... | --all | --manifest FILE) [--max-tokens N] [--json]
  longdoc bulk status BULK_ID [--json]
  longdoc serve [--host 127.0.0.1] [--port 8080]   (the API function's handler over HTTP)
  longdoc runs [--status RUNNING|FAILED|SUCCEEDED|STALE] [--json]; runs show RUN_ID; runs resume RUN_ID
  longdoc mcp                          (the tools as a Model Context Protocol server on stdio; also /mcp on serve)

Local data lives under ``$LONGDOC_HOME`` (default ``./.longdoc``). Exit status is non-zero on
failure, with a one-line reason on stderr.
"""

from __future__ import annotations

import argparse
import logging
import os
import sqlite3
import sys
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

__all__ = ["build_parser", "failure_line", "main", "print_table"]

COMMAND_MODULES = (ingest, extract, evals, runs, serve, triage_cli, summarize_cli, bulk_cli, mcp, review,
                   admin)  # triage_cli after evals: it adds `eval triage`
"""Each module adds its subcommands with ``register(sub)``; a new pipeline adds its own module here."""


def build_parser() -> argparse.ArgumentParser:
    """The argument parser for every subcommand."""
    parser = argparse.ArgumentParser(prog="longdoc", description=(__doc__ or "longdoc").split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    for module in COMMAND_MODULES:
        module.register(sub)
    return parser


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
    os.environ.setdefault("POWERTOOLS_LOG_LEVEL", os.environ.get("LONGDOC_LOG_LEVEL", "CRITICAL"))
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    args = build_parser().parse_args(argv)
    logging.getLogger("moto").setLevel(logging.CRITICAL)  # the local engine's own chatter
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
