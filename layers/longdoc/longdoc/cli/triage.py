"""``longdoc collections`` / ``triage`` / ``eval triage``: claims against the wording in force of a policy set."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from longdoc.cli.common import int_at_least
from longdoc.core.errors import CliError, GoldFileInvalid, TriageError
from longdoc.core.text import one_line


def _deps(offline_ranking: bool = False) -> Any:
    """The triage deps from wiring (:func:`longdoc.wiring.triage_deps`); the model is None for the offline baseline."""
    from longdoc import wiring

    return wiring.triage_deps(offline_ranking)


def _show_collection(state: Any, name: str, as_json: bool) -> int:
    """``collections show NAME``: wordings by line and term, endorsements under them, orphans, and
    wordings of one line in force on the same dates (``OVERLAP:`` lines; JSON ``overlaps``,
    :mod:`longdoc.triage.overlaps`). Raises :class:`~longdoc.core.errors.UnknownCollection`."""
    from longdoc.triage.collections import describe, load_collection
    from longdoc.triage.overlaps import find_overlaps

    members = load_collection(state, name)
    view = describe(name, members)
    overlaps = find_overlaps(name.strip(), members)
    view["overlaps"] = [o.as_json() for o in overlaps]
    if as_json:
        print(json.dumps(view, indent=1))
        return 0
    print(f"collection {name}")
    for lob, wordings in view["lines_of_business"].items():
        for w in wordings:
            print(f"  {lob:<10} term {w['term'] or '-':<8} {w['effective_from'] or ''}..{w['effective_to'] or ''}"
                  f"  {w['doc_id']} ({w['chunks']} chunks)")
            for e in w["endorsements"]:
                print(f"  {'':<10} endorsement {e['effective_from'] or ''}..{e['effective_to'] or ''}  {e['doc_id']}")
    for o in view["orphans"]:
        print(f"  endorsement of a wording not in the set ({o['endorses']}): {o['doc_id']}")
    for overlap in overlaps:
        print(f"  OVERLAP: {overlap.message()}")
    return 0


def cmd_collections(args: argparse.Namespace) -> int:
    """List collections, or show one (:func:`_show_collection`): wordings by line of business and term,
    endorsements under them, and overlapping wordings."""
    from longdoc import wiring
    from longdoc.triage.collections import collection_names

    state = wiring.state_store()
    if getattr(args, "name", None):
        return _show_collection(state, args.name, args.json)
    names = collection_names(state)
    if args.json:
        print(json.dumps([{"collection": k, "documents": v} for k, v in names.items()], indent=1))
    elif not names:
        print("no collections: set `collection` in a document's metadata (sidecar or S3 object metadata)")
    for name, count in ([] if args.json else names.items()):
        print(f"{name:<40} {count} document(s)")
    return 0


def _existing(path_text: str, what: str) -> Path:
    """``path_text`` as a Path; CliError naming it when it is a directory or not there."""
    path = Path(path_text)
    if path.is_dir():
        raise CliError(f"{what} {path} is a directory, not a file")
    if not path.is_file():
        raise CliError(f"{what} not found: {path}")
    return path


def _read(path_text: str, what: str) -> bytes:
    return _existing(path_text, what).read_bytes()


_CLAIM_FIELDS = ("claim", "loss_date", "line_of_business", "budget")
"""The :class:`TriageError` fields that are the claim's inputs (its text, its loss date and line of
business, the budget its band is sized in): their errors name the claim file."""


def cmd_triage(args: argparse.Namespace) -> int:
    """Triage one claim file (see :func:`longdoc.triage.service.run_triage`); a claim that does not look
    English gets a warning line on stderr (:func:`longdoc.triage.language.english_warning`) and still runs."""
    from longdoc.triage.claim import read_claim
    from longdoc.triage.language import english_warning
    from longdoc.triage.render import render
    from longdoc.triage.service import read_examples, request_from_file, run_triage

    examples = read_examples(_read(args.examples, "examples file"), args.examples) if args.examples else None
    data = _read(args.claim, "claim file")
    warning = english_warning(read_claim(data, args.claim), f"file {args.claim}")
    if warning:
        print(f"longdoc: {warning}", file=sys.stderr)
    request = request_from_file(data, args.claim, collection=args.collection,
                                loss_date=args.loss_date, line_of_business=args.line_of_business,
                                budget_tokens=args.budget_tokens, cost_line=args.cost_line, examples=examples)
    try:
        result = run_triage(request, _deps(args.bm25))
    except TriageError as exc:  # the claim's own inputs: the line names the file they came from
        if exc.field not in _CLAIM_FIELDS or str(exc).startswith("claim file "):
            raise
        raise TriageError(f"claim file {args.claim}: {exc}", exc.field) from None
    print(json.dumps(result, indent=1, ensure_ascii=False) if args.json else render(result, args.explain))
    return 0


def cmd_eval_triage(args: argparse.Namespace) -> int:
    """Recall@1/@3 of gold clauses against the naive baseline (see :mod:`longdoc.triage.evaluate`)."""
    from longdoc.triage.evaluate import evaluate, render, render_html

    gold = _existing(args.gold, "gold file")
    if args.html and Path(args.html).is_dir():  # said before the run, not after it
        raise CliError(f"{args.html}: is a directory; --html takes a file name (e.g. {Path(args.html) / 'triage.html'})")
    progress = None if args.json else (lambda line: print(line, file=sys.stderr))
    try:
        report = evaluate(gold, args.collection, _deps(args.bm25), progress=progress, query_writer=args.query_writer)
    except GoldFileInvalid as exc:
        for problem in exc.problems:
            print(f"longdoc: {one_line(problem)}", file=sys.stderr)
        print(f"longdoc: {gold}: {len(exc.problems)} problem(s); nothing was ranked", file=sys.stderr)
        return 2
    print(json.dumps(report, indent=1) if args.json else render(report))
    if args.html:
        Path(args.html).parent.mkdir(parents=True, exist_ok=True)
        Path(args.html).write_text(render_html(report), encoding="utf-8")
        print(f"wrote {args.html}", file=sys.stderr)
    return 0


def _eval_subparsers(sub: argparse._SubParsersAction) -> argparse._SubParsersAction:
    """The subcommands of the existing ``eval`` parser (registered by :mod:`longdoc.cli.evals`)."""
    parser = sub.choices["eval"]
    return next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))


TRIAGE_EPILOG = """\
examples:
  longdoc ingest policy-set/*               # wordings and endorsements, each with its sidecar
  longdoc collections show dev-policy-set
  longdoc triage --collection dev-policy-set --claim claim.json --explain
"""


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``collections``, ``triage`` and ``eval triage`` (after :mod:`longdoc.cli.evals` registered ``eval``)."""
    p = sub.add_parser("collections", help="list policy sets, or show one (wordings, terms, endorsements)")
    p.add_argument("--json", action="store_true", help="the policy sets as JSON")
    p.set_defaults(func=cmd_collections, name=None)
    show = p.add_subparsers(dest="collections_command").add_parser("show", help="wordings by line of business and term")
    show.add_argument("name", metavar="SET", help="a policy set's name (the sidecars' \"collection\")")
    show.add_argument("--json", action="store_true", help="the set's wordings and endorsements as JSON")
    show.set_defaults(func=cmd_collections)
    p = sub.add_parser("triage", help="triage a claim against the wording in force of a policy set",
                       epilog=TRIAGE_EPILOG)
    p.add_argument("--collection", required=True, metavar="SET", help="the policy set (`longdoc collections` lists them)")
    p.add_argument("--claim", required=True, metavar="FILE", help="claim file: text, or JSON (form fields + adjuster_note)")
    p.add_argument("--loss-date", default=None, metavar="YYYY-MM-DD",
                   help="date of loss, which picks the wording in force (default: the claim's loss_date)")
    p.add_argument("--line-of-business", default=None, metavar="LOB",
                   help="the wording's line of business (default: the claim's, else the set's only one)")
    budget = p.add_mutually_exclusive_group()
    budget.add_argument("--budget-tokens", type=int_at_least(1), default=None, metavar="N",
                        help="input budget in tokens; the clauses get what instructions, examples, claim and task leave")
    budget.add_argument("--cost-line", default=None, metavar="COST,INPUT,OUTPUT,RESERVE",
                        help="cost per claim, input and output price per million tokens, reserved output tokens")
    p.add_argument("--examples", default=None, metavar="FILE", help="worked examples replacing the built-in ones")
    p.add_argument("--explain", action="store_true", help="print each band's tokens against the budget")
    p.add_argument("--bm25", action="store_true", help="rank with BM25 only (no embedding model)")
    p.add_argument("--json", action="store_true", help="the triage result as JSON: wording in force, endorsements, the answer, queries, band, budget, warnings")
    p.set_defaults(func=cmd_triage)
    p = _eval_subparsers(sub).add_parser("triage", help="recall@1/@3 of gold clauses by line of business and term")
    p.add_argument("--gold", required=True, metavar="FILE", help="gold claims, JSON Lines")
    p.add_argument("--collection", required=True, metavar="SET", help="the policy set the claims are triaged against")
    p.add_argument("--bm25", action="store_true", help="rank with BM25 only (no embedding model)")
    p.add_argument("--json", action="store_true", help="the report as JSON instead of tables")
    p.add_argument("--html", default=None, metavar="FILE", help="also write the report as a self-contained HTML page")
    p.add_argument("--query-writer", action="store_true",
                   help="also rank with the model-written queries (one cached model request per claim): WRITER R@1/R@3")
    p.set_defaults(func=cmd_eval_triage)
