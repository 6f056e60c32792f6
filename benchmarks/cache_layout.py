"""Prompt cache layout (issue 25, item 7): the share of a run's input read from the prompt cache.

    python benchmarks/cache_layout.py [--corpus ../shared/corpus] [--home DIR]

Runs multi-session extractions of the demo contract (``cuad/urscorpnew-cooperation-agreement.pdf``,
the demo's 8 clause types) and of the 44-page insurance wording
(``chubb-travellershield-plus-policy-wording.pdf``, the demo's 4 clause types plus 4 more, with the
demo's two pinned facts) through the real session harness (:func:`longdoc.extract.session.run_session`,
retrieval, CASE_FACTS, tools, checkpoints), twice each, in this process:

* ``baseline``: the layout before issue 25 (one CASE_FACTS block with every counter ahead of the
  chunks, the chunk context retrieved for the pending clause types only), rebuilt here from the
  same helpers and swapped in for :func:`longdoc.extract.session.first_request`;
* ``stable``: the layout of :func:`longdoc.extract.prompt.build_request` (the run's stable
  CASE_FACTS and chunk context ahead of the breakpoint, the progress counters and the session's
  further chunks after it).

The model is the offline extractive baseline playing Claude (deterministic tool calls, read from the
prompt as Claude would), with a small output cap that never grows (``max_tokens`` = the escalation
ceiling), so each run takes several sessions. Usage is computed by :class:`CacheAccounting` from
each request exactly as the Claude adapter sends it: a read is the longest prefix up to a
``cache_control`` breakpoint that is byte-identical to one written earlier, a write needs at least
the model's minimum cacheable prompt (512 tokens for ``claude-sonnet-5-5``,
:mod:`longdoc.core.models_catalogue`), tokens are estimated at 4 characters each (the same
accounting as ``tests/fakes/anthropic_server.py::PromptCache``; no TTL: a run takes seconds).

Printed per run: sessions, model calls, input tokens (uncached + written + read), the share read
from cache over the whole run and after its first call, and the input-side cost at Sonnet 5.5
prices (input $2/MTok, 5-minute write $2.50, read $0.10), for both layouts, and what the new layout
saves per run. Results: docs/benchmarks.md, "Prompt cache layout (issue 25)".
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import io
import json
import math
import os
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from decimal import Decimal
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "layers" / "longdoc"), str(ROOT)]

from longdoc import wiring  # noqa: E402
from longdoc.cli import main as cli  # noqa: E402
from longdoc.core.messages import ModelRequest, ModelResponse, Usage  # noqa: E402
from longdoc.core.models_catalogue import spec_for  # noqa: E402
from longdoc.extract import prompt, session  # noqa: E402
from longdoc.extract.context import earlier_searches, initial_scores, retrieve, session_retriever  # noqa: E402
from longdoc.extract.runs import start_run  # noqa: E402
from longdoc.extract.session_types import SessionOptions  # noqa: E402
from longdoc.extract.tools import tool_definitions  # noqa: E402

MODEL = "claude-sonnet-5-5"
PRICES = {"input": Decimal("2"), "write": Decimal("2.50"), "read": Decimal("0.10")}
"""USD per million tokens, Sonnet 5.5 (https://platform.claude.com/docs/en/models/sonnet-5-5/overview, Pricing;
cache read $0.10 from the migration guide's newer text, see /work/notes facts sheet)."""
CONTRACT = "urscorpnew-cooperation-agreement"
WORDING = "chubb-travellershield-plus-policy-wording"
JOBS = [
    (CONTRACT, "cuad/urscorpnew-cooperation-agreement.pdf",
     ["Agreement Date", "Expiration Date", "Governing Law", "Non-Compete", "Anti-Assignment", "Audit Rights",
      "Insurance", "Source Code Escrow"], {}, 300),
    (WORDING, "chubb-travellershield-plus-policy-wording.pdf",
     ["Pre-Existing Medical Conditions Exclusion", "Policy Cancellation", "Claims Notification Deadline",
      "Governing Law", "Cap On Liability", "Insurance", "Termination For Convenience", "Anti-Assignment"],
     {"claim_amount": "$247.83", "customer_id": "cust_4711"}, 450),
]
"""(doc id, corpus path, clause types, pinned facts, max_tokens)."""


class CacheAccounting:
    """Prompt-cache usage of each request, from its ``cache_control`` breakpoints (one cache per process).

    The prompt is the tools, then the system blocks, then each message's content blocks (a string
    content is one text block). A breakpoint prefix runs from the start through a block carrying
    ``cache_control``. ``cache_read`` = tokens of the longest breakpoint prefix written earlier (same
    bytes); ``cache_write`` = tokens from there to the last breakpoint when that prefix is new and has
    at least ``min_tokens``; the rest is uncached input. Every breakpoint prefix of at least
    ``min_tokens`` is then held. Tokens: ceil(characters of the block's JSON / 4).
    """

    def __init__(self, min_tokens: int) -> None:
        self.min_tokens = min_tokens
        self.held: set[str] = set()

    def usage(self, request: ModelRequest) -> tuple[int, int, int]:
        """``(uncached input, cache write, cache read)`` tokens of ``request``; updates the cache."""
        blocks: list[dict[str, Any]] = [*request.tools, *request.system]
        for message in request.messages:
            content = message.content
            blocks.extend([{"type": "text", "text": content}] if isinstance(content, str) else content)
        digest, total, marks = hashlib.sha256(), 0, []
        for block in blocks:
            text = json.dumps({k: v for k, v in block.items() if k != "cache_control"}, sort_keys=True,
                              ensure_ascii=False)
            digest.update(text.encode())
            total += math.ceil(len(text) / 4)
            if "cache_control" in block:
                marks.append((digest.copy().hexdigest(), total))
        read = max((tokens for key, tokens in marks if key in self.held), default=0)
        last_key, last_tokens = marks[-1] if marks else ("", 0)
        write = last_tokens - read if last_tokens >= self.min_tokens and last_key not in self.held else 0
        self.held.update(key for key, tokens in marks if tokens >= self.min_tokens)
        return total - read - write, write, read


@dataclass
class CachedModel:
    """The offline baseline's answers with usage from :class:`CacheAccounting` (a stand-in for Claude)."""

    inner: Any
    cache: CacheAccounting
    calls: list[tuple[int, int, int]] = field(default_factory=list)
    name: str = MODEL

    def create(self, request: ModelRequest) -> ModelResponse:
        """Answer as the baseline does; usage as the prompt cache would bill it."""
        answer = self.inner.create(request)
        uncached, write, read = self.cache.usage(request)
        self.calls.append((uncached, write, read))
        usage = Usage(input_tokens=uncached, output_tokens=answer.usage.output_tokens,
                      cache_creation_input_tokens=write, cache_read_input_tokens=read)
        return answer.model_copy(update={"usage": usage})


def legacy_first_request(deps: Any, s: Any, options: SessionOptions) -> ModelRequest:
    """The session's first request as built before issue 25 (the benchmark's baseline layout).

    Context: each asked clause type's current retrieval page plus earlier sessions' search results,
    in document order; one user text block of CASE_FACTS (every field, counters included) then the
    chunks, carrying the third breakpoint; then the task.
    """
    similarity: dict[str, dict[str, float]] = {}
    context = retrieve(deps, s.run, s.facts, s.asked, s.chunks, options.budget_tokens, similarity,
                       session_retriever(deps, s))
    ids = {c.chunk_id for c in context}
    context += [c for c in earlier_searches(s.facts, s.number, s.chunks) if c.chunk_id not in ids]
    context.sort(key=lambda c: c.ordinal)
    s.shown = {c.chunk_id for c in context}
    s.facts.retrieval_scores = initial_scores(similarity, s.shown)
    pending = deps.catalogue.resolve_many(s.asked)
    definitions = json.dumps([{"name": c.name, "description": c.description, "hints": c.hints,
                               "answer_kind": c.answer_kind} | ({"alternatives": c.alternatives} if c.alternatives
                                                                else {}) for c in pending],
                             indent=1, ensure_ascii=False)
    facts_json = prompt._facts_json(s.facts, [c.name for c in pending])
    code = prompt.fence_code(facts_json, definitions, *prompt._chunk_parts(context))
    text = f"<CASE_FACTS-{code}>\n{facts_json}\n</CASE_FACTS-{code}>\n\n{prompt._chunk_block(context, code)}"
    task = (f"\n\n<task-{code}>\nPending clause types (handle each, in this order):\n{definitions}\n"
            "Call extract_clause or record_not_found for each. Quote verbatim; cite the chunk id"
            " and the page the quote is on. When the chunks do not hold a clause type, call search_chunks"
            f" with your own wording before recording not_found.\n</task-{code}>")
    request = ModelRequest(
        system=[{"type": "text", "text": prompt.SYSTEM_PROMPT, "cache_control": dict(prompt.CACHE_BREAKPOINT)}],
        tools=tool_definitions(options.strict_tools),
        messages=[session.Message(role="user", content=[
            {"type": "text", "text": text, "cache_control": dict(prompt.CACHE_BREAKPOINT)},
            {"type": "text", "text": task}])],
        max_tokens=s.max_tokens)
    return session.turn_request(s, request, list(request.messages))


def min_cacheable() -> int:
    """The minimum cacheable prompt of :data:`MODEL` (tokens), from the capability table."""
    spec = spec_for(MODEL)
    if spec is None:
        raise SystemExit(f"{MODEL} is not in the model table")
    return spec.spec.min_cacheable_tokens


@contextlib.contextmanager
def layout(name: str) -> Iterator[None]:
    """Within the block, sessions build their first request with layout ``name`` (baseline or stable)."""
    kept = session.first_request
    if name == "baseline":
        session.first_request = legacy_first_request  # type: ignore[assignment]
    try:
        yield
    finally:
        session.first_request = kept  # type: ignore[assignment]


def measure(doc_id: str, types: list[str], facts: dict[str, str], max_tokens: int, name: str) -> dict[str, Any]:
    """One run of ``doc_id`` with layout ``name`` until DONE; its sessions, calls and cache figures."""
    model = CachedModel(wiring.baseline_model(), CacheAccounting(min_cacheable()))
    deps = replace(wiring.deps(), model=model)
    run = start_run(deps.state, deps.catalogue, doc_id=doc_id, clause_types=types, model_name=MODEL,
                    max_tokens=max_tokens, top_k=5, facts=facts)
    options = SessionOptions(max_tokens_ceiling=max_tokens)
    sessions = 0
    with layout(name):
        while True:
            sessions += 1
            if session.run_session(deps, run.run_id, options).status == "DONE" or sessions >= 40:
                break
    calls = model.calls
    total = [sum(c) for c in calls]
    reads = [c[2] for c in calls]
    cost = sum(PRICES["input"] * c[0] + PRICES["write"] * c[1] + PRICES["read"] * c[2] for c in calls) / 10**6
    extracted = sorted((e.clause_type, e.status, e.instance) for e in deps.state.list_extractions(run.run_id))
    return {"sessions": sessions, "calls": len(calls), "input": sum(total), "read": sum(reads),
            "write": sum(c[1] for c in calls), "share": sum(reads) / max(1, sum(total)),
            "share_after_first": sum(reads[1:]) / max(1, sum(total[1:])), "usd": cost,
            "usd_uncached": PRICES["input"] * sum(total) / 10**6, "extracted": extracted}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--corpus", type=Path, default=ROOT.parent / "shared" / "corpus")
    parser.add_argument("--home", type=Path, default=None)
    args = parser.parse_args()
    home = args.home or Path(tempfile.mkdtemp(prefix="longdoc-cache-layout-"))
    os.environ["LONGDOC_HOME"] = str(home)
    os.environ.pop("ANTHROPIC_API_KEY", None)
    wiring.reset()
    with contextlib.redirect_stdout(io.StringIO()):
        cli(["ingest", *(str(args.corpus / path) for _, path, _, _, _ in JOBS)])
    print(f"prompt cache layout, {MODEL} (minimum cacheable {min_cacheable()} tokens), "
          f"offline baseline playing Claude, data in {home}")
    print(f"{'document':44} {'layout':8} {'sess':>4} {'calls':>5} {'input':>8} {'read':>8} {'write':>7} "
          f"{'read %':>6} {'after 1st':>9} {'USD in':>9} {'USD no cache':>12}")
    for doc_id, _, types, facts, max_tokens in JOBS:
        if doc_id == WORDING:  # the demo's policy clause types, added to the defaults
            os.environ["LONGDOC_CLAUSE_CATALOGUE"] = str(ROOT / "scripts" / "demo-policy-clause-types.yaml")
            wiring.reset()
        results = {name: measure(doc_id, types, facts, max_tokens, name) for name in ("baseline", "stable")}
        for name, r in results.items():
            print(f"{doc_id:44} {name:8} {r['sessions']:>4} {r['calls']:>5} {r['input']:>8} {r['read']:>8} "
                  f"{r['write']:>7} {100 * r['share']:>5.1f}% {100 * r['share_after_first']:>8.1f}% "
                  f"{r['usd']:>9.5f} {r['usd_uncached']:>12.5f}")
        old, new = results["baseline"], results["stable"]
        same = "same extractions" if old["extracted"] == new["extracted"] else "EXTRACTIONS DIFFER"
        print(f"  saved per run: ${old['usd'] - new['usd']:.5f} of ${old['usd']:.5f} "
              f"({100 * (old['usd'] - new['usd']) / old['usd']:.0f}% of the input-side cost); {same}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
