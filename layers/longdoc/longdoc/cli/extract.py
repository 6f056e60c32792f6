"""``longdoc extract`` / ``clause-types`` / ``report``: runs through the local state machine, and their audit pages."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from longdoc.cli.common import (int_at_least, int_between, max_tokens_bounds, print_table, run_failure,
                                statemachine_path)
from longdoc.core.errors import CliError
from longdoc.local.lambda_runtime import load_handler


def _parse_facts(items: list[str]) -> dict[str, str]:
    facts: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise CliError(f"--fact expects key=value, got {item!r}")
        facts[key.strip()] = value  # the value stays byte for byte
    return facts


def cmd_extract(args: argparse.Namespace) -> int:
    """Start a run (:func:`longdoc.extract.runs.start_extraction`) and execute the real state machine locally."""
    from longdoc import wiring
    from longdoc.config import get_settings
    from longdoc.extract.catalogue import load_catalogue
    from longdoc.extract.runs import RunRequest, start_extraction, validate_run_request
    from longdoc.local.runner import LeasedEngine

    settings = get_settings()
    if args.max_iterations:
        settings = settings.model_copy(update={"max_iterations": args.max_iterations})
    request = RunRequest(doc_id=args.doc_id, doc_version=args.version, max_tokens=args.max_tokens, top_k=args.top_k,
                         clause_types=[c for c in args.clause_types.split(",") if c.strip()],
                         facts=_parse_facts(args.fact))
    # A bad request fails in seconds, before the embedding model, the index and the engine start.
    validate_run_request(wiring.state_store(), load_catalogue(settings.clause_catalogue), doc_id=request.doc_id,
                         clause_types=request.clause_types, doc_version=request.doc_version)
    deps = wiring.deps()
    handler = load_handler("extract").handler
    prices = str(settings.price_table) if settings.price_table else None
    with LeasedEngine(deps.state, settings.home, statemachine_path(), {"ExtractFunctionArn": handler},
                      prices_path=prices) as engine:  # the run's lease, heartbeat and history file
        run = start_extraction(request, state=deps.state, catalogue=deps.catalogue, settings=settings,
                               starter=engine, model_name=wiring.model_name(settings), deduplicate=False)
        result = engine.finish(run.execution_arn or "")
    if args.json:
        print(json.dumps(result, ensure_ascii=False, indent=1))
    else:
        print(f"run {result['run_id']}  doc {result['doc_id']}  {result['status']}  model {result['model']}  "
              f"sessions {result['sessions']}  checkpoints {result['checkpoints']}"
              + (f"  cut blocks {result['cut_blocks']} (cut by max_tokens or the context window, never stored)"
                 if result.get("cut_blocks") else ""))
        print_table(result)
    if result["status"] != "SUCCEEDED":
        print(f"longdoc: {run_failure(result)}", file=sys.stderr)
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


def _page_renderer(record: object, blobs: object):
    """``(page, quote) -> PageView`` over the run's source PDF, or None (not a PDF, missing, or other bytes).

    The source is ``source_key`` in the blob store; its SHA-256 must still be the record's
    ``content_sha256`` (a later upload of the same name replaces the object).
    """
    import hashlib

    import pypdfium2 as pdfium

    from longdoc.core.errors import NotFound
    from longdoc.eval.pdfpage import quote_on_page
    from longdoc.ingest.parse.pdf import PDFIUM_LOCK

    key, sha = getattr(record, "source_key", None), getattr(record, "content_sha256", None)
    if not key:
        return None
    try:
        data = blobs.get(key)  # type: ignore[attr-defined]
    except NotFound:
        return None
    if not data.startswith(b"%PDF") or (sha and hashlib.sha256(data).hexdigest() != sha):
        return None
    with PDFIUM_LOCK:
        pdf = pdfium.PdfDocument(data)

    def render(page: int, quote: str) -> object:
        with PDFIUM_LOCK:
            return quote_on_page(pdf, page, quote)
    return render


def cmd_report(args: argparse.Namespace) -> int:
    """Write a run's audit page (see :func:`longdoc.eval.html.run_html`): cited PDF pages rendered, quotes boxed."""
    from longdoc import wiring
    from longdoc.config import get_settings
    from longdoc.core.documents import load_chunks
    from longdoc.eval.html import run_html
    from longdoc.extract.runs import run_result

    settings = get_settings()
    state, blobs = wiring.state_store(), wiring.blob_store()
    result = run_result(state, args.run_id, str(settings.price_table) if settings.price_table else None)
    chunks: dict[str, object] = {c.chunk_id: c for c in load_chunks(blobs, result["doc_id"], result["doc_version"])}
    pages = _page_renderer(state.get_document(result["doc_id"], result["doc_version"]), blobs)
    Path(args.html).parent.mkdir(parents=True, exist_ok=True)
    Path(args.html).write_text(run_html(result, chunks, pages), encoding="utf-8")
    print(f"wrote {args.html}" + ("" if pages else " (text view: the source is not a PDF or is no longer stored)"))
    return 0


EXTRACT_EPILOG = """\
examples:
  longdoc extract contract --clause-types "Governing Law,Cap On Liability"
  longdoc extract policy --clause-types "Policy Cancellation" --fact claim_amount=$247.83 --json

A run that stops on max_tokens checkpoints and resumes in a fresh session with twice the room. Set
LONGDOC_CLAUSE_CATALOGUE=FILE.yaml for clause types of your own.
"""


def register(sub: argparse._SubParsersAction) -> None:
    """Add this module's subcommands to the ``longdoc`` parser."""
    p = sub.add_parser("extract", help="extract clause types with citations", epilog=EXTRACT_EPILOG)
    p.add_argument("doc_id", metavar="DOC_ID", help="an ingested document's id")
    p.add_argument("--clause-types", required=True,
                   help="comma-separated clause type names (`longdoc clause-types` lists them)")
    p.add_argument("--version", default=None, metavar="V", help="doc_version to read (default: the latest READY one)")
    p.add_argument("--max-tokens", type=int_between(*max_tokens_bounds()), default=None, metavar="N",
                   help="output tokens per model call (64-64000, the settings' bounds)")
    p.add_argument("--top-k", type=int_at_least(1), default=None, metavar="K",
                   help="chunks retrieved per clause type (default: settings, 5)")
    p.add_argument("--max-iterations", type=int_at_least(1), default=None, metavar="N",
                   help="model sessions the run may take over all its executions (default: settings, 40)")
    p.add_argument("--fact", action="append", default=[], metavar="KEY=VALUE",
                   help="an exact value pinned into CASE_FACTS (repeatable)")
    p.add_argument("--json", action="store_true",
                   help="the run's result: run_id, status, model, extractions with citations, usage, cache, execution")
    p.set_defaults(func=cmd_extract)
    p = sub.add_parser("clause-types", help="list known clause types")
    p.add_argument("--json", action="store_true", help="the catalogue as JSON: name, description, hints, alternatives, answer_kind")
    p.set_defaults(func=cmd_clause_types)
    p = sub.add_parser("report", help="write a run's audit page")
    p.add_argument("run_id", metavar="RUN_ID", help="a run id, as `extract` and `longdoc runs` print it")
    p.add_argument("--html", required=True, metavar="FILE",
                   help="output file: each cited PDF page with its quote boxed (a text view for other formats)")
    p.set_defaults(func=cmd_report)
