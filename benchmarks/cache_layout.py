"""Prompt cache layout (issue 25, item 7): the share of a run's input read from the prompt cache.

    python benchmarks/cache_layout.py [--corpus ../shared/corpus] [--home DIR] [--per-session 2]

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

Every call goes through the product's Claude adapter (:class:`longdoc.adapters.claude.ClaudeModel`,
the real ``anthropic`` SDK) to the strict Messages fake on loopback
(``tests/fakes/strict_claude.py::StrictClaude``, a fresh one per run), as the contract suite
(``tests/contract/test_claude_jobs.py``) does. So the request rules, the thinking blocks (with
signatures, echoed back by the harness) and the usage are the strict fake's: input usage from its
prompt cache (``tests/fakes/claude_cache.py::StrictCache``, read through ``stats()``: a read only for
a byte-identical prefix up to a ``cache_control`` breakpoint written earlier in the same cache, not
expired, over the row's minimum cacheable prompt, 512 tokens for ``claude-sonnet-5-5``), tokens by
the fake's tokenizer (``tests/fakes/claude_wire.py``: ``ceil(characters of a block's compact JSON /
3.1)``, plus 3 per message), and output = the reply's blocks by that tokenizer plus
:data:`tests.fakes.strict_claude.DEFAULT_THINKING_TOKENS` (64) of thinking per reply.

The brain playing Claude (:class:`Brain`) is the offline extractive baseline
(:class:`longdoc.adapters.baseline.OfflineBaselineModel`, its search step on: deterministic tool
calls read from the prompt), limited to ``--per-session`` clause types per session (default 2),
then ending its turn, so a run of 8 clause types takes at least 4 sessions, each a fresh
conversation; ``max_tokens`` 4,096.

Printed per run: sessions, model calls, input tokens (read + written + uncached), the share read
from cache over the whole run and after its first call, and the input-side cost of the run at
Sonnet 5.5 prices from the capability table (:mod:`longdoc.core.cost`), for both layouts, and what
the new layout saves per run; then, for the new layout, the cost per clause type on Sonnet, Opus
and Haiku 5.5, synchronous (5-minute writes) and Message Batches (the table's batch discount,
1-hour writes), the same tokens repriced. Results: docs/benchmarks.md, "Prompt cache layout";
the cost table in docs/claude.md.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import sys
import tempfile
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from decimal import Decimal
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "layers" / "longdoc"), str(ROOT)]

from longdoc import wiring  # noqa: E402
from longdoc.adapters.baseline import OfflineBaselineModel  # noqa: E402
from longdoc.adapters.claude import ClaudeModel  # noqa: E402
from longdoc.cli import main as cli  # noqa: E402
from longdoc.core.cost import estimate_cost  # noqa: E402
from longdoc.core.messages import Message, ModelRequest, ModelResponse, Usage  # noqa: E402
from longdoc.core.models_catalogue import spec_for  # noqa: E402
from longdoc.extract import prompt, session  # noqa: E402
from longdoc.extract.context import earlier_searches, initial_scores, retrieve, session_retriever  # noqa: E402
from longdoc.extract.prompt import EXTRACT_TOOL, NOT_FOUND_TOOL  # noqa: E402
from longdoc.extract.runs import start_run  # noqa: E402
from longdoc.extract.session_types import SessionOptions  # noqa: E402
from longdoc.extract.tools import tool_definitions  # noqa: E402
from tests.fakes.anthropic_server import Reply, message_reply, text_block  # noqa: E402
from tests.fakes.claude_wire import CHARS_PER_TOKEN  # noqa: E402
from tests.fakes.strict_claude import DEFAULT_THINKING_TOKENS, StrictClaude  # noqa: E402

MODEL = "claude-sonnet-5-5"
PRICED = ["claude-sonnet-5-5", "claude-opus-5-5", "claude-haiku-5-5"]
"""The rows the per-clause-type cost is printed for (prices from ``longdoc/data/models.json``)."""
MAX_TOKENS = 4096
CONTRACT = "urscorpnew-cooperation-agreement"
WORDING = "chubb-travellershield-plus-policy-wording"
JOBS = [
    (CONTRACT, "cuad/urscorpnew-cooperation-agreement.pdf",
     ["Agreement Date", "Expiration Date", "Governing Law", "Non-Compete", "Anti-Assignment", "Audit Rights",
      "Insurance", "Source Code Escrow"], {}),
    (WORDING, "chubb-travellershield-plus-policy-wording.pdf",
     ["Pre-Existing Medical Conditions Exclusion", "Policy Cancellation", "Claims Notification Deadline",
      "Governing Law", "Cap On Liability", "Insurance", "Termination For Convenience", "Anti-Assignment"],
     {"claim_amount": "$247.83", "customer_id": "cust_4711"}),
]
"""(doc id, corpus path, clause types, pinned facts)."""
RESOLVING = (EXTRACT_TOOL, NOT_FOUND_TOOL)


def _as_request(body: dict[str, Any]) -> ModelRequest:
    """A Messages API request body as the :class:`ModelRequest` the offline baseline reads."""
    return ModelRequest(system=body.get("system") or [], tools=body.get("tools") or [], max_tokens=MAX_TOKENS,
                        messages=[Message(**m) for m in body["messages"]])


@dataclass
class Brain:
    """Plays Claude behind the strict fake: the offline baseline's tool calls for the conversation
    so far (it skips clause types already answered in it and searches before a not-found), at
    most ``per_session`` resolving calls (``extract_clause`` / ``record_not_found``) per session
    (one conversation), a ``search_chunks`` call counting with the clause type it is for; then
    a short text and ``end_turn``. Thread-safe (the fake answers on its own thread)."""

    per_session: int
    baseline: OfflineBaselineModel = field(default_factory=lambda: OfflineBaselineModel(search=True))
    lock: threading.Lock = field(default_factory=threading.Lock)

    def __call__(self, body: dict[str, Any]) -> Reply:
        """The reply to one Messages request ``body`` (the strict fake adds thinking and usage)."""
        done = sum(1 for m in body.get("messages") or [] if m.get("role") == "assistant"
                   for b in m.get("content") or [] if isinstance(b, dict) and b.get("type") == "tool_use"
                   and b.get("name") in RESOLVING)
        left = self.per_session - done
        with self.lock:
            answer = self.baseline.create(_as_request(body)) if left > 0 else None
        blocks: list[dict[str, Any]] = []
        for block in (answer.content if answer is not None else []):
            if block.type != "tool_use" or len(blocks) >= left:
                break
            blocks.append(block.model_dump())
        if not blocks:
            return message_reply([text_block("Recorded; the rest in the next session.")], "end_turn")
        return message_reply(blocks, "tool_use")


@dataclass
class Recording:
    """The product's Claude adapter, keeping each response's ``usage`` (as the adapter parsed it)."""

    inner: ClaudeModel
    usages: list[Usage] = field(default_factory=list)
    name: str = MODEL

    def create(self, request: ModelRequest) -> ModelResponse:
        """The adapter's answer; its usage recorded."""
        response = self.inner.create(request)
        self.usages.append(response.usage)
        return response

    def __getattr__(self, item: str) -> Any:
        return getattr(self.inner, item)


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


@contextlib.contextmanager
def layout(name: str) -> Iterator[None]:
    """Within the block, sessions build their first request with layout ``name`` (baseline or stable)."""
    kept = session.first_request
    if name == "baseline":
        session.first_request = legacy_first_request
    try:
        yield
    finally:
        session.first_request = kept



def measure(doc_id: str, types: list[str], facts: dict[str, str], name: str, per_session: int) -> dict[str, Any]:
    """One run of ``doc_id`` with layout ``name`` until DONE, against a fresh strict fake; its
    sessions, calls, the fake's cache totals (``StrictCache.stats()``) and the output tokens billed."""
    fake = StrictClaude(Brain(per_session))
    with fake:
        model = Recording(ClaudeModel("test-key-not-real", MODEL, base_url=fake.base_url, max_retries=0))
        deps = replace(wiring.deps(), model=model)
        run = start_run(deps.state, deps.catalogue, doc_id=doc_id, clause_types=types, model_name=MODEL,
                        max_tokens=MAX_TOKENS, top_k=5, facts=facts)
        options = SessionOptions(strict_tools=True)
        sessions = 0
        with layout(name):
            while True:
                sessions += 1
                if session.run_session(deps, run.run_id, options).status == "DONE" or sessions >= 40:
                    break
        stats = fake.cache_stats()
        refused = [f"{r.error.status} {r.error.message}" for r in fake.rejected]
    if refused:
        raise SystemExit(f"the strict fake refused {len(refused)} request(s): {refused[:3]}")
    records = stats["requests"]
    later = records[1:]
    later_total = sum(r.total for r in later)
    extracted = sorted((e.clause_type, e.status, e.instance) for e in deps.state.list_extractions(run.run_id))
    return {"sessions": sessions, "calls": len(records), "input": stats["input"], "read": stats["read"],
            "write": stats["written"], "uncached": stats["uncached"], "share": stats["read_share"],
            "share_after_first": sum(r.read for r in later) / max(1, later_total),
            "records": records, "output": sum(u.output_tokens for u in model.usages), "types": len(types),
            "extracted": extracted}


def usage_of(r: dict[str, Any], *, one_hour: bool) -> Usage:
    """A run's summed usage (``measure`` result), its writes at the 5-minute or the 1-hour TTL."""
    return Usage(input_tokens=r["uncached"], output_tokens=r["output"], cache_creation_input_tokens=r["write"],
                 cache_read_input_tokens=r["read"], cache_creation_1h_input_tokens=r["write"] if one_hour else 0)


def usd(usage: Usage, model: str, *, batch: bool = False) -> Decimal:
    """The table's price of ``usage`` on ``model`` (:func:`longdoc.core.cost.estimate_cost`), USD."""
    cost = estimate_cost(usage, model, batch=batch)
    if cost is None:
        raise SystemExit(f"{model} has no price in the model table")
    return Decimal(cost)


def input_usd(r: dict[str, Any], model: str = MODEL) -> Decimal:
    """The input side of a run (output left out), synchronous, 5-minute writes."""
    return usd(usage_of(r, one_hour=False).model_copy(update={"output_tokens": 0}), model)


def per_clause_type(r: dict[str, Any]) -> None:
    """Print the cost per clause type of run ``r`` on each :data:`PRICED` row: input side, output
    side, total, synchronous and Message Batches (writes repriced at 1 hour; the same reads)."""
    n = Decimal(r["types"])
    print(f"  cost per clause type ({r['types']} types; output {r['output']} tokens over {r['calls']} calls, of them"
          f" {r['calls'] * DEFAULT_THINKING_TOKENS} thinking: {DEFAULT_THINKING_TOKENS} per reply, adaptive thinking"
          f" being on for every extraction call on {MODEL}):")
    for model in PRICED:
        sync, batch = usage_of(r, one_hour=False), usage_of(r, one_hour=True)
        no_out = {"output_tokens": 0}
        s_in, s_all = usd(sync.model_copy(update=no_out), model) / n, usd(sync, model) / n
        b_in, b_all = usd(batch.model_copy(update=no_out), model, batch=True) / n, usd(batch, model, batch=True) / n
        print(f"    {model:18} sync input {s_in:.5f} output {s_all - s_in:.5f} total {s_all:.5f} | "
              f"batch input {b_in:.5f} output {b_all - b_in:.5f} total {b_all:.5f}")


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--corpus", type=Path, default=ROOT.parent / "shared" / "corpus")
    parser.add_argument("--home", type=Path, default=None)
    parser.add_argument("--per-session", type=int, default=2, help="clause types the brain resolves per session")
    args = parser.parse_args()
    home = args.home or Path(tempfile.mkdtemp(prefix="longdoc-cache-layout-"))
    os.environ["LONGDOC_HOME"] = str(home)
    os.environ.pop("ANTHROPIC_API_KEY", None)
    wiring.reset()
    with contextlib.redirect_stdout(io.StringIO()):
        cli(["ingest", *(str(args.corpus / path) for _, path, _, _ in JOBS)])
    spec = spec_for(MODEL)
    minimum = spec.spec.min_cacheable_tokens if spec is not None else "?"
    print(f"prompt cache layout, {MODEL} (minimum cacheable {minimum} tokens), real SDK -> StrictClaude "
          f"(tests/fakes/claude_cache.py accounting, {CHARS_PER_TOKEN} chars/token), offline baseline as the brain "
          f"({args.per_session} clause types per session), data in {home}")
    print(f"{'document':44} {'layout':8} {'sess':>4} {'calls':>5} {'input':>8} {'read':>8} {'written':>7} "
          f"{'uncached':>8} {'read %':>6} {'after 1st':>9} {'USD in':>9}")
    for doc_id, _, types, facts in JOBS:
        if doc_id == WORDING:  # the demo's policy clause types, added to the defaults
            os.environ["LONGDOC_CLAUSE_CATALOGUE"] = str(ROOT / "scripts" / "demo-policy-clause-types.yaml")
            wiring.reset()
        results = {name: measure(doc_id, types, facts, name, args.per_session) for name in ("baseline", "stable")}
        for name, r in results.items():
            print(f"{doc_id:44} {name:8} {r['sessions']:>4} {r['calls']:>5} {r['input']:>8} {r['read']:>8} "
                  f"{r['write']:>7} {r['uncached']:>8} {100 * r['share']:>5.1f}% {100 * r['share_after_first']:>8.1f}% "
                  f"{input_usd(r):>9.5f}")
        old, new = results["baseline"], results["stable"]
        same = "same extractions" if old["extracted"] == new["extracted"] else "EXTRACTIONS DIFFER"
        o, n = input_usd(old), input_usd(new)
        print(f"  saved per run (input side, {MODEL}): ${o - n:.5f} of ${o:.5f} ({100 * (o - n) / o:.0f}%); {same}")
        for model in PRICED[1:]:
            o, n = input_usd(old, model), input_usd(new, model)
            print(f"    {model}: input per run ${o:.5f} -> ${n:.5f}, saved ${o - n:.5f}")
        per_clause_type(new)
    return 0


if __name__ == "__main__":
    sys.exit(main())
