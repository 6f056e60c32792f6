"""``longdoc eval retrieval`` / ``eval extraction``: measurements against gold cases."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from longdoc.cli.common import int_at_least, int_between
from longdoc.cli.progress import StderrProgress
from longdoc.core.errors import CliError
from longdoc.core.progress import reporter

CHUNK_TOKENS = int_between(100, 4000)
"""``--chunk-tokens``: the range ``LONGDOC_CHUNK_TARGET_TOKENS`` accepts (``config.ChunkSettings``)."""


def _eval_inputs(args: argparse.Namespace):
    """The gold file (CliError when missing) and a per-document line printer (stderr; none with --json)."""
    gold = Path(args.gold)
    if not gold.exists():
        raise CliError(f"gold file not found: {gold}")
    if not gold.read_text(encoding="utf-8").strip():
        raise CliError(f"no gold cases in {gold}")
    if args.json:
        return gold, None
    shown = reporter()
    if isinstance(shown, StderrProgress):  # above the documents bar on a terminal
        return gold, shown.write
    return gold, lambda line: print(line, file=sys.stderr)


def _write_html(args: argparse.Namespace, report: dict, kind: str) -> None:
    if getattr(args, "html", None):
        from longdoc.eval.html import eval_html

        Path(args.html).parent.mkdir(parents=True, exist_ok=True)
        Path(args.html).write_text(eval_html(report, kind), encoding="utf-8")
        print(f"wrote {args.html}", file=sys.stderr)


def cmd_eval_retrieval(args: argparse.Namespace) -> int:
    """Retrieval recall against a gold file, next to the naive baseline (see :mod:`longdoc.eval.retrieval`)."""
    from longdoc.eval.retrieval import evaluate, render

    gold, progress = _eval_inputs(args)
    report = evaluate(gold, Path(args.corpus) if args.corpus else None, budget_tokens=args.budget_tokens,
                      target_tokens=args.chunk_tokens, progress=progress)
    print(json.dumps(report, indent=1) if args.json else render(report))
    _write_html(args, report, "retrieval")
    return 0


def cmd_eval_extraction(args: argparse.Namespace) -> int:
    """Extraction accuracy against a gold file (see :mod:`longdoc.eval.extraction`)."""
    from longdoc.eval.extraction import evaluate_extraction, render_extraction

    gold, progress = _eval_inputs(args)
    report = evaluate_extraction(gold, Path(args.corpus) if args.corpus else None, threshold=args.threshold,
                                 budget_tokens=args.budget_tokens, target_tokens=args.chunk_tokens,
                                 search_calls=args.search_calls, compare_search=args.compare_search,
                                 progress=progress)
    print(json.dumps(report, indent=1) if args.json else render_extraction(report))
    _write_html(args, report, "extraction")
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    """Add this module's subcommands to the ``longdoc`` parser."""
    p = sub.add_parser("eval", help="measure retrieval, extraction, triage or reviewed accuracy against gold cases")
    evals = p.add_subparsers(dest="eval_command", required=True)
    p = evals.add_parser("retrieval", help="recall@K, MRR and recall within a token budget, per stratum")
    p.add_argument("--gold", required=True, metavar="FILE", help="gold cases, JSON Lines")
    p.add_argument("--corpus", default=None, metavar="DIR",
                   help="documents folder (default: ../corpus beside the gold folder)")
    p.add_argument("--budget-tokens", type=int_at_least(1), default=5000, metavar="N",
                   help="token budget for the recall-within-budget figure (default 5000)")
    p.add_argument("--chunk-tokens", type=CHUNK_TOKENS, default=None, metavar="N",
                   help="chunk target tokens, 100-4000 (default: settings)")
    p.add_argument("--json", action="store_true", help="the report as JSON instead of tables (the per-document lines are left out; progress stays on stderr)")
    p.add_argument("--html", default=None, metavar="FILE", help="also write the report as a self-contained HTML page")
    p.set_defaults(func=cmd_eval_retrieval, progress=True)
    p = evals.add_parser("extraction", help="found/not_found, quotes, exact values and silent-source rate")
    p.add_argument("--gold", required=True, metavar="FILE", help="gold cases, JSON Lines")
    p.add_argument("--corpus", default=None, metavar="DIR",
                   help="documents folder (default: ../corpus beside the gold folder)")
    p.add_argument("--threshold", type=float, default=None, metavar="X",
                   help="offline baseline's score threshold for found (default: settings; tuning only)")
    p.add_argument("--budget-tokens", type=int_at_least(1), default=None, metavar="N",
                   help="retrieved-context budget in tokens (default: top_k chunks)")
    p.add_argument("--chunk-tokens", type=CHUNK_TOKENS, default=None, metavar="N",
                   help="chunk target tokens, 100-4000 (default: settings)")
    p.add_argument("--search-calls", type=int_at_least(0), default=None, metavar="N",
                   help="search_chunks calls per session (default: settings; 0: no search step)")
    p.add_argument("--compare-search", action="store_true",
                   help="also run every document without the search step and report what changed")
    p.add_argument("--json", action="store_true", help="the report as JSON instead of tables (the per-document lines are left out; progress stays on stderr)")
    p.add_argument("--html", default=None, metavar="FILE", help="also write the report as a self-contained HTML page")
    p.set_defaults(func=cmd_eval_extraction, progress=True)
