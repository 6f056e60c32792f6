"""``longdoc`` command line: the same handlers and state machine as AWS, on one machine.

Commands (scripts rely on their JSON shapes):
  longdoc ingest PATH... [--json]
  longdoc watch DIR [--once] [--json]
  longdoc chunks DOC_ID [--version V] [--json]
  longdoc extract DOC_ID --clause-types a,b,c [--max-tokens N] [--top-k K] [--fact k=v]... [--json]
  longdoc clause-types [--json]
  longdoc eval retrieval --gold FILE [--corpus DIR] [--budget-tokens N] [--chunk-tokens N] [--json]
  longdoc eval extraction --gold FILE [--corpus DIR] [--threshold X] [--budget-tokens N] [--json]
  longdoc eval ... --html FILE        (also writes a self-contained HTML page with a heat map)
  longdoc report RUN_ID --html FILE   (audit page: quotes highlighted in their pages' text)

Local data lives under ``$LONGDOC_HOME`` (default ``./.longdoc``). Exit status is non-zero on
failure, with a one-line reason on stderr.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import logging
import os
import re
import sqlite3
import warnings
import sys
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from longdoc.core.errors import short_cause as short_cause  # re-exported for callers of the CLI module
from longdoc.local.lambda_runtime import batch_failure_reason as _batch_failure
from longdoc.local.lambda_runtime import load_handler, s3_event_for

REPO_ROOT = Path(__file__).resolve().parents[3]


class CliError(Exception):
    """A failure reported as one line on stderr with exit status 1."""


def _one_line(text: str, limit: int = 400) -> str:
    """Collapse a message to one line of at most ``limit`` characters."""
    flat = " ".join(str(text).split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


_ERROR_FIELD = r'"{}"\s*:\s*"((?:[^"\\]|\\.)*)(?:"|\\?$)'
_KIND_PREFIX = re.compile(r"^([A-Z][A-Za-z0-9]*(?:\.[A-Z][A-Za-z0-9]*)?): ")
_WRAPPERS = frozenset({"ExtractionFailed", "States.TaskFailed"})
"""Error names that only wrap another (the failure-recording state re-raises the caught error inside one)."""


def _json_string(text: str, field: str) -> str | None:
    """The first ``"field": "..."`` string of JSON ``text`` (cut-off text: up to its end), decoded; None if absent."""
    match = re.search(_ERROR_FIELD.format(field), text)
    if match is None:
        return None
    try:
        return json.loads(f'"{match.group(1)}"')
    except ValueError:
        return match.group(1)


def failure_line(error: str | None, cause: str | None) -> str:
    """``"ErrorType: message"`` of the innermost error in a Step Functions error and cause, one line.

    A cause may nest Lambda error payloads (``{"errorType", "errorMessage", "stackTrace"}``,
    https://docs.aws.amazon.com/lambda/latest/dg/python-exceptions.html) at any depth, each
    possibly behind ``"Name: "`` prefixes and cut short (the failure state keeps 2,000
    characters): every level is peeled, stack traces dropped, and wrapper names
    (:data:`_WRAPPERS`) give way to the error they carry. Never raises.
    """
    kind, text = error or "", cause or ""
    for _ in range(20):
        while (prefix := _KIND_PREFIX.match(text)) is not None:
            kind, text = prefix.group(1), text[prefix.end():]
        message = _json_string(text, "errorMessage")
        if message is None:
            break
        kind, text = _json_string(text, "errorType") or kind, message
    if kind in _WRAPPERS and not text:
        return kind
    return _one_line(f"{kind}: {text}" if kind and text else kind or text)


def _statemachine_path() -> Path:
    return Path(os.environ.get("LONGDOC_STATEMACHINE", REPO_ROOT / "statemachine" / "extract.asl.json"))


def cmd_ingest(args: argparse.Namespace) -> int:
    """Copy each file into the local bucket's ``incoming/`` and run the ingest handler on it."""
    from longdoc import wiring
    from longdoc.core.documents import INCOMING_PREFIX
    from longdoc.ingest.ids import doc_id_for_key
    from longdoc.ingest.metadata import METADATA_SUFFIX
    from longdoc.local.engine import LocalContext

    module = load_handler("ingest")
    handler = module.handler
    failures = 0
    for raw in args.paths:
        path = Path(raw)
        try:
            if path.is_dir():
                raise CliError(f"{path}: is a directory, not a file")
            if not path.is_file():
                raise CliError(f"{path}: no such file")
            data = path.read_bytes()
            key = INCOMING_PREFIX + path.name
            sidecar = path.with_name(path.name + METADATA_SUFFIX)
            if sidecar.is_file():  # optional doc_type / line_of_business / term for every chunk
                wiring.blob_store().put(key + METADATA_SUFFIX, sidecar.read_bytes())
            else:  # a sidecar removed since the last ingest no longer applies
                wiring.blob_store().delete(key + METADATA_SUFFIX)
            wiring.blob_store().put(key, data)
            previous = wiring.state_store().get_document(doc_id_for_key(key))
            before = wiring.state_store().get_document(doc_id_for_key(key), hashlib.sha256(data).hexdigest()[:16])
            response = handler(s3_event_for(key, len(data)), LocalContext(function_name="longdoc-local-ingest"))
            doc_id = doc_id_for_key(key)
            record = wiring.state_store().get_document(doc_id, hashlib.sha256(data).hexdigest()[:16])
            if response.get("batchItemFailures") or record is None:
                raise CliError(f"{path}: ingest failed, retry later: {_batch_failure(module, record)}")
            if record.status != "READY":
                raise CliError(f"{path}: {record.reason or record.status}")
        except Exception as exc:  # one bad file never stops the others
            failures += 1
            reason = str(exc) if isinstance(exc, CliError) else f"{path}: {type(exc).__name__}: {exc}"
            print(f"longdoc: {reason}", file=sys.stderr)
            continue
        if previous is not None and previous.doc_version != record.doc_version and previous.status == "READY":
            print(f"longdoc: {path}: {record.doc_id} now points at version {record.doc_version} "
                  f"(was {previous.doc_version} from {previous.source}); older versions stay readable "
                  f"with --version", file=sys.stderr)
        row = {"doc_id": record.doc_id, "doc_version": record.doc_version, "source": record.source,
               "pages": record.pages, "chunks": record.chunks, "reused": record.reused,
               "skipped": before is not None and before.status == "READY"}
        if record.pages_needing_ocr:
            row["pages_needing_ocr"] = record.pages_needing_ocr
            print(f"longdoc: {path}: pages without a text layer (need OCR, not indexed): "
                  f"{', '.join(map(str, record.pages_needing_ocr))}", file=sys.stderr)
        if args.json:
            print(json.dumps(row))
        else:
            print(f"{row['doc_id']}  v{row['doc_version']}  {row['pages']} pages  {row['chunks']} chunks  "
                  f"{row['reused']} embeddings reused  ({path})")
    return 1 if failures else 0


def cmd_watch(args: argparse.Namespace) -> int:
    """Treat DIR as the bucket's ``incoming/``: ingest what is there and (without --once) what arrives.

    Prints one line per file (``--json``: the :class:`longdoc.local.watch.Outcome` dict).
    With ``--once`` the exit status is 1 when any file failed or must be retried.
    """
    import threading

    from longdoc.local.watch import Outcome, Watcher

    root = Path(args.dir)
    if not root.is_dir():
        raise CliError(f"{root}: no such directory")

    def report(outcome: Outcome) -> None:
        if args.json:
            print(json.dumps(outcome.as_dict()), flush=True)
        elif outcome.status == "READY":
            print(f"{outcome.doc_id}  v{outcome.doc_version}  {outcome.pages} pages  {outcome.chunks} chunks  "
                  f"{outcome.reused} embeddings reused  ({outcome.path})", flush=True)
        elif outcome.status == "DUPLICATE":
            print(f"unchanged, ignored: {outcome.path}", flush=True)
        else:
            where = "moved to failed/" if outcome.status == "FAILED" else "will retry"
            print(f"longdoc: {outcome.path}: {outcome.reason} ({where})", file=sys.stderr, flush=True)

    watcher = Watcher(root, report)
    if args.once:
        outcomes = watcher.run_once()
        return 1 if any(o.status in ("FAILED", "RETRY") for o in outcomes) else 0
    stop = threading.Event()
    try:
        watcher.serve(stop)
    except KeyboardInterrupt:
        stop.set()
    return 0


def cmd_chunks(args: argparse.Namespace) -> int:
    """Print a document version's chunks (all fields with --json)."""
    from longdoc import wiring
    from longdoc.core.documents import load_chunks, ready_document

    record = ready_document(wiring.state_store(), args.doc_id, args.version)
    what = f"{args.doc_id} version {args.version}" if args.version else args.doc_id
    if record is None:
        raise CliError(f"document {what} is not ingested")
    if record.status != "READY":
        raise CliError(f"document {what} is {record.status}: {record.reason or 'no reason recorded'}")
    chunks = load_chunks(wiring.blob_store(), record.doc_id, record.doc_version)
    if args.json:
        print(json.dumps([c.model_dump(mode="json", exclude={"page_spans", "section_spans"}) | {"section_ids": c.section_ids}
                          for c in chunks], ensure_ascii=False, indent=1))
        return 0
    for c in chunks:
        pages = "-" if c.page_start is None else f"{c.page_start}-{c.page_end}"
        labels = [label for label in c.page_labels if label]
        printed = f"(p. {labels[0]}-{labels[-1]})" if labels and labels[0] != labels[-1] else (
            f"(p. {labels[0]})" if labels else "")
        sections = ",".join(c.section_ids[:3]) + ("…" if len(c.section_ids) > 3 else "")
        print(f"{c.chunk_id}  p.{pages:<8} {printed:<14} §{(sections or '-'):<24} {c.token_count:>5} tok  "
              f"{' > '.join(c.heading_path)[:50]}")
    return 0


def _parse_facts(items: list[str]) -> dict[str, str]:
    facts: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise CliError(f"--fact expects key=value, got {item!r}")
        facts[key.strip()] = value  # the value stays byte for byte
    return facts


def _page_cell(page: Any, label: Any) -> str:
    """``"12 (p. 10)"``: the physical page, then the printed label when it differs."""
    if page is None:
        return "-"
    return f"{page} (p. {label})" if label and str(label) != str(page) else str(page)


def print_table(result: dict[str, Any], out=sys.stdout) -> None:
    """Print extractions as a table: clause type, status, page (label), section, heading path, quote."""
    rows = [("CLAUSE TYPE", "STATUS", "PAGE", "SECTION", "HEADING PATH", "QUOTE")]
    for e in result["extractions"]:
        cite = e["citations"][0] if e["citations"] else {}
        quote = " ".join((cite.get("quote") or "").split())
        path = " > ".join(cite.get("heading_path") or []) or "-"
        rows.append((e["clause_type"], e["status"], _page_cell(cite.get("page"), cite.get("page_label")),
                     cite.get("section_id") or "-", (path[:29] + "…") if len(path) > 30 else path,
                     (quote[:60] + "…") if len(quote) > 60 else quote))
    widths = [min(max(len(r[i]) for r in rows), 44 if i == 0 else 34) for i in range(5)]
    for r in rows:
        print("  ".join(r[i][: widths[i]].ljust(widths[i]) for i in range(5)) + "  " + r[5], file=out)


def cmd_extract(args: argparse.Namespace) -> int:
    """Start a run (:func:`longdoc.extract.runs.start_extraction`) and execute the real state machine locally."""
    from longdoc import wiring
    from longdoc.config import get_settings
    from longdoc.extract.runs import RunRequest, run_result, start_extraction
    from longdoc.local.engine import LocalStepFunctions

    settings = get_settings()
    if args.max_iterations:
        settings = settings.model_copy(update={"max_iterations": args.max_iterations})
    deps = wiring.deps()
    request = RunRequest(doc_id=args.doc_id, doc_version=args.version, max_tokens=args.max_tokens, top_k=args.top_k,
                         clause_types=[c for c in args.clause_types.split(",") if c.strip()],
                         facts=_parse_facts(args.fact))
    handler = load_handler("extract").handler
    with LocalStepFunctions(_statemachine_path(), {"ExtractFunctionArn": handler}) as machine:
        run = start_extraction(request, state=deps.state, catalogue=deps.catalogue, settings=settings,
                               starter=machine, model_name=wiring.model_name(settings), deduplicate=False)
        execution = machine.wait(run.execution_arn or "")
    run_dir = settings.home / "runs" / run.run_id
    run_dir.mkdir(parents=True, exist_ok=True)
    (run_dir / "history.json").write_text(json.dumps(execution.history, indent=1))
    result = run_result(deps.state, run.run_id, str(settings.price_table) if settings.price_table else None)
    result["status"] = execution.status if execution.status in ("SUCCEEDED", "FAILED") else "FAILED"
    result["execution"] = {"arn": execution.execution_arn, "history": str(run_dir / "history.json"),
                           "events": len(execution.history), "error": execution.error, "cause": execution.cause,
                           "executions": execution.executions}
    (run_dir / "result.json").write_text(json.dumps(result, indent=1, ensure_ascii=False))
    if args.json:
        print(json.dumps(result, ensure_ascii=False, indent=1))
    else:
        print(f"run {result['run_id']}  doc {result['doc_id']}  {result['status']}  model {result['model']}  "
              f"sessions {result['sessions']}  checkpoints {result['checkpoints']}")
        print_table(result)
    if result["status"] != "SUCCEEDED":
        print(f"longdoc: run {run.run_id} failed: {failure_line(execution.error, execution.cause)}", file=sys.stderr)
        return 1
    return 0


def cmd_clause_types(args: argparse.Namespace) -> int:
    """List the clause-type catalogue (defaults plus ``LONGDOC_CLAUSE_CATALOGUE``)."""
    from longdoc.config import get_settings
    from longdoc.extract.catalogue import load_catalogue

    catalogue = load_catalogue(get_settings().clause_catalogue)
    if args.json:
        print(json.dumps([c.model_dump() for c in catalogue], indent=1))
    else:
        for c in catalogue:
            print(f"{c.name:<40} {c.description[:90]}")
    return 0


def _int_at_least(low: int):
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
        if value < low:
            raise argparse.ArgumentTypeError(f"must be at least {low}, got {value}")
        return value

    return parse


def _int_between(low: int, high: int):
    """An argparse type: a whole number from ``low`` to ``high``."""
    at_least = _int_at_least(low)

    def parse(text: str) -> int:
        value = at_least(text)
        if value > high:
            raise argparse.ArgumentTypeError(f"must be at most {high}, got {value}")
        return value

    return parse


def _max_tokens_bounds() -> tuple[int, int]:
    """``--max-tokens`` bounds: the settings' (:data:`longdoc.extract.runs.MAX_TOKENS_BOUNDS`)."""
    from longdoc.extract.runs import MAX_TOKENS_BOUNDS

    return MAX_TOKENS_BOUNDS


def _eval_inputs(args: argparse.Namespace):
    """The gold file (CliError when missing) and a progress printer (stderr; none with --json)."""
    gold = Path(args.gold)
    if not gold.exists():
        raise CliError(f"gold file not found: {gold}")
    if not gold.read_text(encoding="utf-8").strip():
        raise CliError(f"no gold cases in {gold}")
    return gold, (None if args.json else (lambda line: print(line, file=sys.stderr)))


def cmd_eval_retrieval(args: argparse.Namespace) -> int:
    """Retrieval recall against a gold file, next to the naive baseline (see :mod:`longdoc.eval.retrieval`)."""
    from longdoc.eval.retrieval import evaluate, render

    gold, progress = _eval_inputs(args)
    report = evaluate(gold, Path(args.corpus) if args.corpus else None, budget_tokens=args.budget_tokens,
                      target_tokens=args.chunk_tokens, progress=progress)
    print(json.dumps(report, indent=1) if args.json else render(report))
    _write_html(args, report, "retrieval")
    return 0


def _write_html(args: argparse.Namespace, report: dict, kind: str) -> None:
    if getattr(args, "html", None):
        from longdoc.eval.html import eval_html

        Path(args.html).parent.mkdir(parents=True, exist_ok=True)
        Path(args.html).write_text(eval_html(report, kind), encoding="utf-8")
        print(f"wrote {args.html}", file=sys.stderr)


def cmd_report(args: argparse.Namespace) -> int:
    """Write a run's audit page (see :func:`longdoc.eval.html.run_html`)."""
    from longdoc import wiring
    from longdoc.config import get_settings
    from longdoc.core.documents import load_chunks
    from longdoc.eval.html import run_html
    from longdoc.extract.runs import run_result

    settings = get_settings()
    result = run_result(wiring.state_store(), args.run_id,
                        str(settings.price_table) if settings.price_table else None)
    chunks: dict[str, object] = {c.chunk_id: c for c in load_chunks(wiring.blob_store(), result["doc_id"],
                                                                     result["doc_version"])}
    Path(args.html).parent.mkdir(parents=True, exist_ok=True)
    Path(args.html).write_text(run_html(result, chunks), encoding="utf-8")
    print(f"wrote {args.html}")
    return 0


def cmd_eval_extraction(args: argparse.Namespace) -> int:
    """Extraction accuracy against a gold file (see :mod:`longdoc.eval.extraction`)."""
    from longdoc.eval.extraction import evaluate_extraction, render_extraction

    gold, progress = _eval_inputs(args)
    report = evaluate_extraction(gold, Path(args.corpus) if args.corpus else None, threshold=args.threshold,
                                 budget_tokens=args.budget_tokens, target_tokens=args.chunk_tokens,
                                 progress=progress)
    print(json.dumps(report, indent=1) if args.json else render_extraction(report))
    _write_html(args, report, "extraction")
    return 0


def build_parser() -> argparse.ArgumentParser:
    """The argument parser for every subcommand."""
    parser = argparse.ArgumentParser(prog="longdoc", description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("ingest", help="parse, chunk, embed and index documents")
    p.add_argument("paths", nargs="+")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_ingest)
    p = sub.add_parser("watch", help="ingest files dropped into a folder (the bucket's incoming/)")
    p.add_argument("dir")
    p.add_argument("--once", action="store_true", help="process what is there now, then exit")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_watch)
    p = sub.add_parser("chunks", help="list a document's chunks")
    p.add_argument("doc_id")
    p.add_argument("--version", default=None)
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_chunks)
    p = sub.add_parser("extract", help="extract clause types with citations")
    p.add_argument("doc_id")
    p.add_argument("--clause-types", required=True, help="comma-separated clause type names")
    p.add_argument("--version", default=None)
    p.add_argument("--max-tokens", type=_int_between(*_max_tokens_bounds()), default=None,
                   help="output tokens per model call (64-64000, the settings' bounds)")
    p.add_argument("--top-k", type=_int_at_least(1), default=None)
    p.add_argument("--max-iterations", type=_int_at_least(1), default=None)
    p.add_argument("--fact", action="append", default=[], metavar="KEY=VALUE",
                   help="an exact value pinned into CASE_FACTS (repeatable)")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_extract)
    p = sub.add_parser("clause-types", help="list known clause types")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_clause_types)
    p = sub.add_parser("eval", help="evaluate retrieval or extraction against gold cases")
    evals = p.add_subparsers(dest="eval_command", required=True)
    p = evals.add_parser("retrieval", help="recall@K, MRR and recall within a token budget, per stratum")
    p.add_argument("--gold", required=True, help="gold cases, JSON Lines")
    p.add_argument("--corpus", default=None, help="documents folder (default: ../corpus beside the gold folder)")
    p.add_argument("--budget-tokens", type=_int_at_least(1), default=5000)
    p.add_argument("--chunk-tokens", type=int, default=None, help="chunk target tokens (default: settings)")
    p.add_argument("--json", action="store_true")
    p.add_argument("--html", default=None, help="also write the report as a self-contained HTML page")
    p.set_defaults(func=cmd_eval_retrieval)
    p = evals.add_parser("extraction", help="found/not_found, quotes, exact values and silent-source rate")
    p.add_argument("--gold", required=True, help="gold cases, JSON Lines")
    p.add_argument("--corpus", default=None, help="documents folder (default: ../corpus beside the gold folder)")
    p.add_argument("--threshold", type=float, default=None, help="offline baseline threshold (tuning)")
    p.add_argument("--budget-tokens", type=_int_at_least(1), default=None, help="context budget (default: top_k chunks)")
    p.add_argument("--chunk-tokens", type=int, default=None, help="chunk target tokens (default: settings)")
    p.add_argument("--json", action="store_true")
    p.add_argument("--html", default=None, help="also write the report as a self-contained HTML page")
    p.set_defaults(func=cmd_eval_extraction)
    p = sub.add_parser("report", help="write a run's audit page")
    p.add_argument("run_id")
    p.add_argument("--html", required=True, help="output file")
    p.set_defaults(func=cmd_report)
    return parser


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
        return args.func(args)
    except (CliError, LongdocError) as exc:
        print(f"longdoc: {_one_line(str(exc))}", file=sys.stderr)
        return 1
    except OSError as exc:  # unreadable or read-only LONGDOC_HOME, full disk, ...
        where = exc.filename or os.environ.get("LONGDOC_HOME", ".longdoc")
        print(f"longdoc: {_one_line(f'{exc.strerror or exc}: {where}')}", file=sys.stderr)
        return 1
    except (ValueError, ValidationError) as exc:  # e.g. a gold line that is not a case
        print(f"longdoc: {_one_line(str(exc))}", file=sys.stderr)
        return 1
    except sqlite3.Error as exc:
        home = os.environ.get("LONGDOC_HOME", ".longdoc")
        print(f"longdoc: local state store under {home} is unusable: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("longdoc: interrupted; a run left RUNNING resumes from its checkpoint when started again "
              "with the same run id, or start a new one", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
