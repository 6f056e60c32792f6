"""Whole-document summaries of the 261-page GDPR Council PDF: offline baseline and Claude-shaped (run on demand).

    make bench-summarize
    python benchmarks/summarize.py [--corpus ../shared/corpus] [--doc gdpr-council-position-5419-16.pdf]

The PDF is parsed and chunked once (no embeddings: summaries read the stored chunks) into a
fresh LONGDOC_HOME under /tmp, then summarised through the real CLI path (local engine,
``statemachine/summarize.asl.json``, the summarize handler) twice:

1. offline: the LexRank baseline (``LONGDOC_MODEL=baseline``);
2. Claude-shaped: the real ``anthropic`` SDK against the loopback Messages fake, the final
   call streamed as SSE; the fake answers with the baseline's choice and reports
   ``input_tokens`` = request bytes / 4 (the usage a real call would report is of that order).

Each run prints wall time, groups, map calls, reduce calls and depth, tokens in/out and the
estimated cost at Claude Sonnet 5.5 prices (``longdoc/data/prices.json``). When sumy is
installed, our LexRank's picks per group are compared with sumy's ``LexRankSummarizer``.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "layers" / "longdoc"), str(ROOT)]

from longdoc import wiring  # noqa: E402
from longdoc.cli import main  # noqa: E402
from longdoc.core.messages import Usage  # noqa: E402
from longdoc.core.cost import estimate_cost, load_prices  # noqa: E402

PRICED_AS = "claude-sonnet-5-5"


def ingest_chunks(home: Path, pdf: Path) -> str:
    """Parse and chunk ``pdf`` into ``home``'s stores as a READY version; returns its doc_id."""
    from tests.functional.summary_support import add_document

    doc_id = pdf.stem
    add_document(home, doc_id, pdf.read_bytes(), pdf.name)
    return doc_id


def run(doc_id: str, env: dict[str, str]) -> dict[str, Any]:
    """One ``longdoc summarize DOC --json`` in this process with ``env`` set; the result plus wall seconds."""
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    wiring.reset()
    out = io.StringIO()
    try:
        started = time.perf_counter()
        with contextlib.redirect_stdout(out):
            code = main(["summarize", doc_id, "--json"])
        seconds = time.perf_counter() - started
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        wiring.reset()
    if code != 0:
        raise SystemExit(f"summarize failed with status {code}")
    return {**json.loads(out.getvalue()), "bench_seconds": seconds}


def report(name: str, result: dict[str, Any]) -> dict[str, Any]:
    usage = Usage(**result["usage"])
    row = {"run": name, "model": result["model"], "wall_s": round(result["bench_seconds"], 2),
           "groups": result["groups"], "map_calls": result["map_calls"], "reduce_calls": result["reduce_calls"],
           "reduce_depth": result["reduce_depth"], "model_calls": result["model_calls"],
           "input_tokens": usage.input_tokens, "output_tokens": usage.output_tokens,
           "est_cost_usd": estimate_cost(usage, PRICED_AS, load_prices()),
           "statements": len(result["statements"]), "dropped": len(result["dropped"]),
           "exact_values": len(result["exact_values"]),
           "input_by_stage": {k: v["input_tokens"] for k, v in result["usage_by_stage"].items()}}
    print(" | ".join(f"{k} {v}" for k, v in row.items()), flush=True)
    return row


def sumy_agreement(home: Path, doc_id: str, k: int = 6, groups: int = 20) -> str:
    """Share of our LexRank's top-``k`` sentences per map group that sumy's LexRank also picks."""
    try:
        from sumy.models.dom import ObjectDocumentModel, Paragraph, Sentence
        from sumy.summarizers.lex_rank import LexRankSummarizer
    except ImportError:
        return "sumy not installed: no comparison"
    from longdoc.adapters.blob import LocalBlobStore
    from longdoc.adapters.state import SqliteStateStore
    from longdoc.core.documents import load_chunks, ready_document
    from longdoc.core.text import split_sentences
    from longdoc.summarize.lexrank import STOP_WORDS, terms, top_sentences
    from longdoc.summarize.units import make_groups, pieces_of

    class Words:
        language = "english"

        def to_words(self, text: str) -> list[str]:
            return terms(text)

    record = ready_document(SqliteStateStore(home / "state.sqlite3"), doc_id)
    assert record is not None
    chunks = load_chunks(LocalBlobStore(home / "bucket"), doc_id, record.doc_version)
    by_id = {c.chunk_id: c for c in chunks}
    summarizer = LexRankSummarizer()
    summarizer.stop_words = STOP_WORDS
    shared = total = 0
    for group in make_groups(chunks, None)[:groups]:
        texts = [p.text[a:b] for cid in group.chunk_ids for p in pieces_of(by_id[cid]) for a, b in split_sentences(p.text)]
        ours = {texts[i] for i in top_sentences(texts, k)}
        document = ObjectDocumentModel([Paragraph([Sentence(t, Words()) for t in texts])])
        theirs = {str(s) for s in summarizer(document, k)}
        shared += len(ours & theirs)
        total += len(ours)
    return f"our LexRank vs sumy 0.13 LexRankSummarizer: {shared}/{total} top-{k} picks shared over {groups} groups"


def main_bench() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--corpus", type=Path, default=ROOT.parent / "shared" / "corpus")
    parser.add_argument("--doc", default="gdpr-council-position-5419-16.pdf")
    args = parser.parse_args()
    pdf = args.corpus / args.doc
    if not pdf.is_file():
        raise SystemExit(f"bench-summarize: {pdf} is missing (pass --corpus DIR)")
    from tests.fakes.anthropic_server import FakeAnthropic, enable_streaming
    from tests.functional.summary_support import ClaudeShaped

    with tempfile.TemporaryDirectory(prefix="longdoc-bench-summarize-") as tmp:
        home = Path(tmp)
        base = {"LONGDOC_HOME": str(home), "LONGDOC_MODE": "local", "POWERTOOLS_METRICS_DISABLED": "true"}
        started = time.perf_counter()
        doc_id = ingest_chunks(home, pdf)
        print(f"{pdf.name}: parsed and chunked in {time.perf_counter() - started:.1f} s", flush=True)
        rows = [report("offline baseline", run(doc_id, {**base, "LONGDOC_MODEL": "baseline"}))]
        shaped = ClaudeShaped()
        with enable_streaming(FakeAnthropic(responder=shaped)) as fake:
            rows.append(report("Claude-shaped (fake, SSE)", run(doc_id, {
                **base, "LONGDOC_MODEL": "claude", "LONGDOC_CLAUDE_MODEL": PRICED_AS,
                "ANTHROPIC_API_KEY": "test-key-not-real", "ANTHROPIC_BASE_URL": fake.base_url})))
            print(f"fake received {len(fake.requests)} requests ({', '.join(sorted(set(shaped.kinds)))})")
        print(sumy_agreement(home, doc_id))
    return 0


if __name__ == "__main__":
    sys.exit(main_bench())
