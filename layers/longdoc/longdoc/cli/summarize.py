"""``longdoc summarize``: a whole-document summary through the local summary state machine, streamed as it is written."""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any, TextIO

from longdoc.cli.common import REPO_ROOT, failure_line, page_cell
from longdoc.core.failures import with_next_step
from longdoc.core.errors import CliError
from longdoc.core.text import one_line
from longdoc.local.lambda_runtime import load_handler


def statemachine() -> Path:
    """``statemachine/summarize.asl.json`` (override: ``LONGDOC_SUMMARIZE_STATEMACHINE``)."""
    return Path(os.environ.get("LONGDOC_SUMMARIZE_STATEMACHINE", REPO_ROOT / "statemachine" / "summarize.asl.json"))


class _Writer:
    """The CLI's stream sink: writes each delta as it arrives; a discard (an attempt that failed
    inside its stream, retried) ends that text with one line saying it is void, so the retried
    answer that follows is never read as its continuation (:class:`longdoc.core.ports.TextSink`)."""

    def __init__(self, out: TextIO) -> None:
        self.out = out

    def __call__(self, text: str) -> None:
        self.out.write(text)
        self.out.flush()

    def discard(self, reason: str) -> None:
        """End the void text with ``[... discarded: <reason>; retrying]`` on a line of its own."""
        self.out.write(f"\n[the text above is discarded: {one_line(reason, 200)}; retrying]\n")
        self.out.flush()


def _writer(out: TextIO) -> _Writer:
    return _Writer(out)


def next_step(reason: str) -> str:
    """What to do after a failed summary whose one-line ``reason`` this is.

    A ``ReduceNotConverging`` replays the same way on a rerun (the same partials, the same
    budget): the step is a larger reduce budget (reduce levels are keyed by it, so a rerun with
    another ``LONGDOC_SUMMARY_REDUCE_INPUT_TOKENS`` recomputes them; the map partials are kept) or
    a stronger model (another summary id: a fresh summary). Any other failure resumes from its
    stored partials with the same command.
    """
    if "ReduceNotConverging" in reason:
        from longdoc.config import SummarizeSettings

        field = SummarizeSettings.model_fields["summary_reduce_input_tokens"]
        now = os.environ.get("LONGDOC_SUMMARY_REDUCE_INPUT_TOKENS") or str(field.default)
        return (f"rerun with a larger reduce budget, e.g. LONGDOC_SUMMARY_REDUCE_INPUT_TOKENS={int(now) * 2} "
                f"(now {now}; the map partials are kept, the reduce levels are redone), or with a stronger model "
                "(LONGDOC_CLAUDE_MODEL; a fresh summary)")
    return "run the same command again to resume (finished groups are kept)"


def _run(args: argparse.Namespace, stream_to: TextIO | None) -> dict[str, Any]:
    from longdoc import wiring
    from longdoc.local.engine import LocalStepFunctions
    from longdoc.summarize.baseline import summary_model_name
    from longdoc.summarize.models import SummaryRequest
    from longdoc.summarize.runs import start_summary, streaming_to, summary_view

    blobs, state = wiring.blob_store(), wiring.state_store()
    request = SummaryRequest.model_construct(doc_id=args.doc_id, doc_version=args.version, focus=args.focus,
                                             length=args.length)
    handler = load_handler("summarize").handler
    sink = _writer(stream_to) if stream_to is not None else (lambda _text: None)
    with LocalStepFunctions(statemachine(), {"SummarizeFunctionArn": handler}) as machine, streaming_to(sink):
        record = start_summary(request, state=state, blobs=blobs, starter=machine,
                               model_name=summary_model_name(wiring.model_name()), resume_running=True)
        if record.status != "SUCCEEDED":
            execution = machine.wait(record.execution_arn or "")
            if execution.status != "SUCCEEDED":
                view = summary_view(blobs, record.summary_id)
                for d in view.get("dropped") or []:  # a summary that kept no statement: what the checks dropped
                    print(f"dropped: {one_line(d['text'], 120)} ({one_line(d['reason'], 160)})", file=sys.stderr)
                reason = failure_line(view.get("error") or execution.error, view.get("cause") or execution.cause)
                raise CliError(with_next_step(f"summary {record.summary_id} failed: {reason}", next_step(reason)))
        elif stream_to is not None:
            stream_to.write(summary_view(blobs, record.summary_id).get("text", "") + "\n")
    return summary_view(blobs, record.summary_id)


def print_summary(result: dict[str, Any], out: TextIO | None = None, limit: int | None = None) -> None:
    """Numbered statements, each with its citations (``§ 3.2 p. 14``; ``§ 3.2 p. 14, 15`` across a page break), then the counters line (to ``out``, default stdout)."""
    out = out or sys.stdout
    label = " [BASELINE: offline extractive, not an LLM]" if result.get("baseline") else ""
    print(f"summary {result['summary_id']}  doc {result['doc_id']}  model {result['model']}{label}", file=out)
    statements = result["statements"][:limit] if limit else result["statements"]
    for i, s in enumerate(statements, 1):
        cites = "; ".join(f"§ {c['section_id']} p. {page_cell(c.get('page'), c.get('page_label'))}"
                          + "".join(f", {p}" for p in (c.get("pages") or [])[1:]) for c in s["citations"])
        print(f"{i:>3}. {s['text']}  [{cites}]", file=out)
    print_counters(result, out)


def print_counters(result: dict[str, Any], out: TextIO | None = None) -> None:
    """One line: statements, dropped, groups, map calls, reduce depth, cut reply blocks (when any), tokens, cost
    (to ``out``, default stdout)."""
    out = out or sys.stdout
    usage = result["usage"]
    print(f"{len(result['statements'])} verified statements, {len(result['dropped'])} dropped, "
          f"{len(result['exact_values'])} exact values; mode {result['mode']}, {result['groups']} groups, "
          f"{result['map_calls']} map calls, {result['reduce_calls']} reduce calls, reduce depth "
          f"{result['reduce_depth']}, {result['model_calls']} model calls"
          + (f", {result['cut_blocks']} reply block(s) cut by an output or context limit (never read)"
             if result.get("cut_blocks") else "")
          + f"; {usage['input_tokens']} input / "
          f"{usage['output_tokens']} output tokens; cost {result['cost_usd'] or 'n/a'} USD", file=out)


def cmd_summarize(args: argparse.Namespace) -> int:
    """Summarise a document (see :mod:`longdoc.summarize`); print it, as JSON, and/or write its HTML page."""
    started = time.monotonic()
    stream_to = (sys.stderr if args.json else sys.stdout) if args.stream else None
    result = _run(args, stream_to)
    result["wall_seconds"] = round(time.monotonic() - started, 3)
    if result.get("partial"):
        from longdoc.summarize.result import coverage_line

        print(f"longdoc: partial summary: {coverage_line(result['coverage'])} (see coverage in the result)",
              file=sys.stderr)
    if args.html:
        from longdoc import wiring
        from longdoc.core.documents import load_chunks
        from longdoc.summarize.html import summary_html

        chunks = {c.chunk_id: c for c in load_chunks(wiring.blob_store(), result["doc_id"], result["doc_version"])}
        Path(args.html).parent.mkdir(parents=True, exist_ok=True)
        Path(args.html).write_text(summary_html(result, chunks), encoding="utf-8")
    if args.json:
        print(json.dumps(result, ensure_ascii=False, indent=1))
    elif args.stream:
        print("", flush=True)
        for d in result["dropped"]:
            print(f"dropped: {one_line(d['text'], 120)} ({one_line(d['reason'], 160)})")
        print_counters(result)
    else:
        print_summary(result)
    if args.html:
        print(f"wrote {args.html}", file=sys.stderr if args.json else sys.stdout)
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``summarize`` to the ``longdoc`` parser."""
    p = sub.add_parser("summarize", help="summarise a whole document, every statement cited")
    p.add_argument("doc_id", metavar="DOC_ID", help="an ingested document's id")
    p.add_argument("--version", default=None, metavar="V", help="doc_version to read (default: the latest READY one)")
    p.add_argument("--focus", default=None, help="a topic to stick to, e.g. \"exclusions\" (at most 300 characters)")
    p.add_argument("--length", choices=("short", "medium", "long"), default="medium",
                   help="how long the summary is (default: medium)")
    p.add_argument("--stream", action="store_true", help="print the final synthesis as it is written")
    p.add_argument("--json", action="store_true",
                   help="the summary as JSON: statements with citations, exact values, dropped, usage, cost")
    p.add_argument("--html", default=None, metavar="FILE", help="also write a page where each citation opens its page")
    p.set_defaults(func=cmd_summarize, progress=True)
