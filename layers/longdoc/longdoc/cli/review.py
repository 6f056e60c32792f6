"""``longdoc review list|show|accept|correct|reject|mark-present|mark-absent|export`` and ``eval accuracy``.

The terminal surface of :class:`longdoc.review.ReviewService` (the same actions as the review page).
The reviewer is ``--reviewer`` or the OS login name (``local-reviewer`` when there is none); exit
statuses: 2 refused, 3 conflict, 4 unknown id (:data:`EXIT_REFUSED`...); ``--version N`` makes a decision conditional on the item
still being at version N (the stale one is refused: :class:`~longdoc.core.errors.DecisionConflict`).
"""

from __future__ import annotations

import argparse
import getpass
import json
import sys
from pathlib import Path

from longdoc.core.errors import CliError

EXIT_REFUSED, EXIT_CONFLICT, EXIT_UNKNOWN = 2, 3, 4
"""Exit statuses of the review commands (docs/review.md): a decision refused (not verbatim, too
short, ambiguous, a version the item never had, a decision that does not fit the item), a stale version
(another decision came first: reload), an unknown item id. Other failures exit 1."""


def _exits(func):  # (Namespace -> int) -> (Namespace -> int)
    """Wrap a review command: its refusals, conflicts and unknown ids exit 2/3/4 with one line on stderr
    and, under ``--json``, ``{"error", "exit_status"}`` on stdout."""
    from longdoc.core.errors import CorrectionNotVerbatim, DecisionConflict, InvalidDecision, NotFound

    def run(args: argparse.Namespace) -> int:
        try:
            return int(func(args))
        except (CorrectionNotVerbatim, InvalidDecision, DecisionConflict, NotFound, CliError) as exc:
            status = (EXIT_CONFLICT if isinstance(exc, DecisionConflict) else EXIT_UNKNOWN
                      if isinstance(exc, NotFound) else 1 if isinstance(exc, CliError) else EXIT_REFUSED)
            message = " ".join(str(exc).split())
            if getattr(args, "json", False):
                print(json.dumps({"error": message, "exit_status": status}, ensure_ascii=False))
            print(f"longdoc: {message}", file=sys.stderr)
            return status
    run.__doc__ = func.__doc__
    return run


def _service():  # -> ReviewService
    from longdoc import wiring

    return wiring.review_service()


def _reviewer(args: argparse.Namespace) -> str:
    """``--reviewer``, else the OS login name (:func:`getpass.getuser`: $LOGNAME, $USER, $LNAME, $USERNAME,
    then the password database), else ``local-reviewer``."""
    if args.reviewer:
        return str(args.reviewer)
    try:
        return getpass.getuser() or "local-reviewer"
    except (OSError, KeyError, ImportError):  # no login name anywhere (a bare container)
        return "local-reviewer"


def queue_lines(items: list) -> list[str]:
    """The queue as text lines: confidence, kind, clause type, page, run, document, item id, value (one each)."""
    lines = [f"{'CONF':>5}  {'KIND':<17} {'CLAUSE TYPE':<28} {'PAGE':>4}  {'RUN':<14} {'DOC':<18} {'ITEM':<19} VALUE"]
    for i in items:
        value = " ".join((i.quote or i.value or "-").split())
        lines.append(f"{i.confidence:>5.2f}  {i.kind:<17} {i.clause_type[:28]:<28} {str(i.page or '-'):>4}  "
                     f"{i.run_id[:14]:<14} {i.doc_id[:18]:<18} {i.item_id:<19} "
                     f"{value[:50] + ('…' if len(value) > 50 else '')}")
    return lines


def review_page_hint() -> str:
    """Where the review page is: the running ``longdoc serve``'s URL when one is known, else how to get one."""
    from longdoc.cli.serve import serve_url
    from longdoc.config import get_settings

    url = serve_url(get_settings().home)
    return f"review page: {url}/review" if url else "review page: (run longdoc serve; the page is /review)"


@_exits
def cmd_review_list(args: argparse.Namespace) -> int:
    """The review queue (pending items under the threshold, and every possible omission), or ``--all`` items,
    lowest confidence first either way."""
    svc = _service()
    items = svc.items(args.run) if args.all else svc.queue(args.run, args.threshold)
    if args.all:
        items = sorted(items, key=lambda i: (i.confidence, i.run_id, i.item_id))
    if args.json:
        print(json.dumps([i.model_dump(mode="json") for i in items], indent=1, ensure_ascii=False))
        return 0
    print("\n".join(queue_lines(items)))
    threshold = svc.threshold if args.threshold is None else args.threshold
    print(f"{len(items)} item(s){'' if args.all else ' to review'}; threshold {threshold}; {review_page_hint()}")
    return 0


@_exits
def cmd_review_show(args: argparse.Namespace) -> int:
    """One item with its confidence reasons and its decision history."""
    svc = _service()
    item, history = svc.item(args.item_id), svc.history(args.item_id)
    if args.json:
        print(json.dumps({"item": item.model_dump(mode="json"), "history": [d.model_dump(mode="json") for d in history]},
                         indent=1, ensure_ascii=False))
        return 0
    print(f"{item.item_id}  {item.kind}  {item.clause_type}  status {item.status} (version {item.version})")
    print(f"run {item.run_id}  doc {item.doc_id}@{item.doc_version}  page {item.page or '-'}  chunk {item.chunk_id or '-'}")
    print(f"value: {item.quote or item.value or '-'}")
    print(f"confidence {item.confidence:.2f}:")
    for r in item.reasons:
        print(f"  - {r}")
    for d in history:
        cite = f" -> {d.citation.quote!r} (p. {d.citation.page}, {d.citation.chunk_id})" if d.citation else ""
        print(f"  v{d.version} {d.at} {d.reviewer}: {d.action}{cite}" + (f"  [{d.note}]" if d.note else ""))
    return 0


@_exits
def cmd_review_decide(args: argparse.Namespace) -> int:
    """Store one decision (``args.action``) and print it."""
    from longdoc.review import DecisionRequest

    request = DecisionRequest(action=args.action, reviewer=_reviewer(args), quote=getattr(args, "quote", None),
                              chunk_id=getattr(args, "chunk", None), page=getattr(args, "page", None), note=args.note)
    decision = _service().decide(args.item_id, request, expected_version=args.version)
    if args.json:
        print(json.dumps(decision.model_dump(mode="json"), indent=1, ensure_ascii=False))
    else:
        where = f" at p. {decision.citation.page} ({decision.citation.chunk_id})" if decision.citation else ""
        print(f"{decision.item_id} v{decision.version}: {decision.action} by {decision.reviewer}{where}")
    return 0


@_exits
def cmd_review_export(args: argparse.Namespace) -> int:
    """Write the reviewed items as gold JSONL (``shared/gold/README.md`` format)."""
    corpus = Path(args.corpus) if args.corpus else None
    if corpus is not None and not corpus.is_dir():
        raise CliError(f"--corpus {corpus}: not a folder")
    summary = _service().export_gold(Path(args.out), args.run or None, corpus, args.on_conflict)
    for c in summary.get("conflicts") or []:
        runs = ", ".join(f"{x['run_id']} {x['expected']} ({x['reviewed_at']})" for x in c["cases"])
        outcome = f"kept {c['kept']} (latest decision)" if c["kept"] else "left out (--on-conflict skip)"
        print(f"warning: contradictory labels for {c['doc']} x {c['clause_type']}: {runs}; {outcome}", file=sys.stderr)
    for source in summary.get("not_in_corpus") or []:
        print(f"warning: {source} is not under {corpus} (by name or content hash); written as ingested, so "
              "`longdoc eval extraction` will not find it there", file=sys.stderr)
    if args.json:
        print(json.dumps(summary, indent=1))
    else:
        left = ", ".join(f"{n} {why}" for why, n in summary["left_out"].items()) or "none"
        print(f"wrote {summary['written']} gold case(s) to {summary['path']}; left out: {left}")
    return 0


def cmd_eval_accuracy(args: argparse.Namespace) -> int:
    """Accuracy by stratum on reviewed labels; exit 1 when the accuracy over all labels is under 90% or a
    stratum with at least ``--min-labels`` labels (default 5) is (:mod:`longdoc.eval.accuracy`)."""
    from longdoc.config import get_settings
    from longdoc.eval.accuracy import accuracy_html, evaluate_accuracy, render_accuracy

    gold = Path(args.gold)
    if not gold.exists():
        raise CliError(f"gold file not found: {gold}")
    settings = get_settings()
    if args.min_labels is not None and args.min_labels < 0:
        raise CliError(f"--min-labels must be 0 or more, not {args.min_labels}")
    min_labels = settings.review_min_stratum_labels if args.min_labels is None else args.min_labels
    report = evaluate_accuracy(gold, min_labels,
                               settings.review_accept_threshold)
    print(json.dumps({k: v for k, v in report.items() if k != "rows"}, indent=1) if args.json else render_accuracy(report))
    if args.html:
        Path(args.html).parent.mkdir(parents=True, exist_ok=True)
        Path(args.html).write_text(accuracy_html(report), encoding="utf-8")
        print(f"wrote {args.html}", file=sys.stderr)
    return 1 if report["failed"] else 0


def _decision_parser(sub: argparse._SubParsersAction, name: str, action: str, help: str) -> argparse.ArgumentParser:
    p = sub.add_parser(name, help=help)
    p.add_argument("item_id", metavar="ITEM", help="a review item id, as `review list` prints it")
    p.add_argument("--reviewer", default=None, help="who decides (default: the OS login name, else local-reviewer)")
    p.add_argument("--version", type=int, default=None, metavar="N", help="refuse unless the item is still at this version")
    p.add_argument("--note", default=None, help="a free-text note kept with the decision")
    p.add_argument("--json", action="store_true",
                   help="the decision as JSON; an error as {\"error\", \"exit_status\"}")
    p.set_defaults(func=cmd_review_decide, action=action)
    return p


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``review ...`` and ``eval accuracy`` to the ``longdoc`` parser (after :mod:`longdoc.cli.evals`)."""
    p = sub.add_parser("review", help="the review queue: list, show, accept, correct, reject, mark, export")
    rs = p.add_subparsers(dest="review_command", required=True)
    p = rs.add_parser("list", help="the queue, lowest confidence first (--all: every item)")
    p.add_argument("--run", default=None, metavar="RUN", help="one run's items (default: every run's)")
    p.add_argument("--threshold", type=float, default=None, metavar="X", help="accept threshold (default: settings)")
    p.add_argument("--all", action="store_true", help="every item, any status")
    p.add_argument("--json", action="store_true", help="the items as JSON")
    p.set_defaults(func=cmd_review_list)
    p = rs.add_parser("show", help="one item: value, confidence reasons, history")
    p.add_argument("item_id", metavar="ITEM", help="a review item id, as `review list` prints it")
    p.add_argument("--json", action="store_true", help="the item as JSON")
    p.set_defaults(func=cmd_review_show)
    _decision_parser(rs, "accept", "accept", "the model's answer is right")
    _decision_parser(rs, "reject", "reject", "the model's answer is wrong (no replacement)")
    _decision_parser(rs, "mark-absent", "mark_absent", "the clause is not in the document")
    for name, action in (("correct", "correct"), ("mark-present", "mark_present")):
        p = _decision_parser(rs, name, action, "the right span, verified verbatim" if action == "correct"
                             else "the clause is in the document (optionally where)")
        p.add_argument("--quote", required=action == "correct", help="the span's text, verbatim from the document")
        p.add_argument("--page", type=int, default=None, metavar="P", help="1-based page the span is on")
        p.add_argument("--chunk", default=None, metavar="ID", help="chunk id holding the span")
    p = rs.add_parser("export", help="write reviewed items as gold JSONL")
    p.add_argument("--out", required=True, metavar="FILE", help="the gold JSON Lines file to write")
    p.add_argument("--run", action="append", metavar="RUN", help="only this run (repeatable)")
    p.add_argument("--corpus", default=None, help="the folder `eval extraction --corpus` gets: documents are written relative to it "
                   "(found there by file name or content hash)")
    p.add_argument("--on-conflict", choices=["latest", "skip"], default="latest",
                   help="one document x clause type labelled found in one run and absent in another: keep the "
                   "latest decision's label (default) or leave the pair out; listed under `conflicts` either way")
    p.add_argument("--json", action="store_true", help="the export's counts and conflicts as JSON")
    p.set_defaults(func=cmd_review_export)
    evals = next(a for a in sub.choices["eval"]._actions if isinstance(a, argparse._SubParsersAction))
    p = evals.add_parser("accuracy", help="accuracy by stratum on reviewed labels; exit 1 when accuracy is under "
                         "90%% overall or in a stratum of >= 5 labels (--min-labels)")
    p.add_argument("--gold", required=True, metavar="FILE", help="a review export (longdoc review export)")
    p.add_argument("--min-labels", type=int, default=None, metavar="N", help="labels a stratum needs to alert (default: LONGDOC_REVIEW_MIN_STRATUM_LABELS, 5; 0: every "
                   "stratum can alert); the accuracy over all labels fails under 90%% whatever N")
    p.add_argument("--html", default=None, metavar="FILE", help="also write the dashboard (inline SVG heat map)")
    p.add_argument("--json", action="store_true", help="the report as JSON instead of tables")
    p.set_defaults(func=cmd_eval_accuracy)
