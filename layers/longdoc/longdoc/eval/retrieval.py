"""``longdoc eval retrieval``: recall@K, MRR and recall within a token budget, per stratum.

Documents are ingested once with the local adapters into their own cache under
``$LONGDOC_HOME/eval/chunks-<target>-<max>/`` (blob folder, SQLite registry, LanceDB), by
:func:`~longdoc.ingest.pipeline.ingest_document`; re-runs find the versions READY and skip
them. No model is called.

For each ``found`` case the query is the clause type's catalogue query text (or
``"<clause type>. <question>"`` when the catalogue does not know it). A case is a hit at K
when the top-K chunks, concatenated in document order (the order the prompt shows them),
contain one of its snippets by the 80% rule (:mod:`longdoc.eval.scoring`), or when one
of them carries a gold section id. MRR uses the first K (1..10) at which the case is a
hit (0 when none). Recall within the budget takes chunks in rank order, with their
headers, until the next would pass ``budget_tokens`` (so large and small chunks compete
fairly). ``not_found`` cases have no snippet and are only counted.

Configurations measured in the same run: ``dense``, ``bm25`` (chunk text only),
``hybrid`` (dense + BM25 on chunk text + BM25 of each chunk's best section span, weighted
RRF, the document's opening chunk moved up to rank 2), ``hybrid+headers`` (the same with
both BM25 rankings also over each chunk's locator header; what the session uses), and the naive ``baseline``: fixed 1,000-character
chunks of the same text, the same embedder, dense only (its vectors cached under
``eval/naive/`` in the same blob folder). ``naive-bm25`` (the same chunks ranked by BM25)
is reported beside it for reference.
"""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from longdoc.core.models import Chunk
from longdoc.core.tokens import estimate_tokens
from longdoc.core.progress import reporter
from longdoc.eval.gold import GoldCase, default_corpus, load_gold
from longdoc.eval.scoring import (FLAG_BELOW, Haystack, enclosing_section_keys, normalise, position, strata_groups,
                                  words)
from longdoc.eval.store import NAIVE_CHARS, EvalStore, chunker_fingerprint, document_text, store_root
from longdoc.extract.retrieve import DENSE_WEIGHT, LEAD_RANK, Retriever, chunk_tokens
from longdoc.search.bm25 import BM25, bm25_terms

if TYPE_CHECKING:  # pragma: no cover - typing only
    from longdoc.core.ports import Embedder
    from longdoc.extract.catalogue import Catalogue

__all__ = ["CONFIGS", "FLAG_BELOW", "NAIVE_CHARS", "CaseResult", "EvalStore", "chunker_fingerprint",
           "document_text", "evaluate", "naive_chunks", "render", "store_root"]

KS = (1, 3, 5, 10)
MRR_DEPTH = 10
DEFAULT_BUDGET = 5000
PRIMARY = "hybrid+headers"
CONFIGS: dict[str, tuple[str, bool, float, int | None]] = {
    "dense": ("dense", True, 1.0, None),
    "bm25": ("bm25", False, 1.0, None),
    "hybrid": ("hybrid", False, DENSE_WEIGHT, LEAD_RANK),
    "hybrid+headers": ("hybrid", True, DENSE_WEIGHT, LEAD_RANK),
}
"""Name -> (Retriever mode, BM25 over headers, dense weight in RRF, lead rank). Dense vectors
always carry the header (as ingested)."""


def naive_chunks(text: str, size: int = NAIVE_CHARS) -> list[str]:
    """Fixed ``size``-character pieces of ``text``, no overlap, no regard for words or sections."""
    return [text[i:i + size] for i in range(0, len(text), size)]


@dataclass
class CaseResult:
    """Per-case retrieval outcome for one configuration."""

    hit_at: dict[int, bool]
    first_rank: int | None
    hit_budget: bool
    snippets_budget: float
    top_over_budget: bool


@dataclass
class Prepared:
    """One document ready for scoring: its chunks and naive pieces in one haystack, keyed by chunk id
    or ``naive:<i>``, with each key's document-order ordinal, token cost and enclosing section keys."""

    chunks: list[Chunk]
    hay: Haystack
    ordinal: dict[str, int]
    cost: dict[str, int]
    sections: dict[str, set[str]]
    naive_keys: list[str]
    naive_matrix: Any
    naive_bm25: BM25
    retrievers: dict[str, Retriever]
    reference_text: str


def prepare(store: EvalStore, corpus: Path, rel: str, cases: Sequence[GoldCase]) -> Prepared:
    """Ingest ``corpus/rel`` (cached) and build its haystack, naive pieces (embedded, cached) and retrievers.

    ``reference_text`` is the case's ``doc_text`` file when it exists (positions are judged
    on it), else the text rebuilt from the chunks. Raises ``FileNotFoundError`` for a missing document.
    """
    import numpy as np

    first = cases[0]
    chunks = store.chunks(corpus, rel, {"doc_type": first.doc_type} if first.doc_type else None)
    text = document_text(chunks)
    hay = Haystack()
    ordinal: dict[str, int] = {}
    cost: dict[str, int] = {}
    sections: dict[str, set[str]] = {}
    for c in chunks:
        hay.add(c.chunk_id, c.text)
        ordinal[c.chunk_id] = c.ordinal
        cost[c.chunk_id] = chunk_tokens(c)
        sections[c.chunk_id] = {k for s in c.section_ids + ([c.section_id] if c.section_id else [])
                                for k in enclosing_section_keys(s)}
    naive = naive_chunks(text)
    naive_keys = [f"naive:{i}" for i in range(len(naive))]
    for i, (key, piece) in enumerate(zip(naive_keys, naive, strict=True)):
        hay.add(key, piece)
        ordinal[key] = i
        cost[key] = estimate_tokens(piece)
    matrix = np.asarray(store.naive_vectors(chunks[0].doc_id, chunks[0].doc_version, naive), dtype=np.float32)
    retrievers = {name: Retriever(chunks, store.index, mode=mode, headers=headers, dense_weight=weight, lead_rank=lead)
                  for name, (mode, headers, weight, lead) in CONFIGS.items()}
    reference = text
    if first.doc_text and (corpus / first.doc_text).exists():
        reference = (corpus / first.doc_text).read_text(encoding="utf-8", errors="replace")
    return Prepared(chunks, hay, ordinal, cost, sections, naive_keys, matrix, BM25([bm25_terms(p) for p in naive]),
                    retrievers, reference)


def _first_hit(at: Callable[[int], bool]) -> int | None:
    """Smallest k in 1..MRR_DEPTH with ``at(k)`` (``at`` is monotone in k), by bisection; None if none."""
    if not at(MRR_DEPTH):
        return None
    lo, hi = 1, MRR_DEPTH
    while lo < hi:
        mid = (lo + hi) // 2
        if at(mid):
            hi = mid
        else:
            lo = mid + 1
    return lo


def _within_budget(ranked: list[str], cost: dict[str, int], budget: int) -> tuple[list[str], bool]:
    """Keys taken in rank order until the next would pass ``budget`` tokens; True when the top one alone
    is over budget (it is then taken alone)."""
    chosen: list[str] = []
    used = 0
    for key in ranked:
        if used + cost[key] > budget:
            if not chosen:
                return [key], True
            break
        chosen.append(key)
        used += cost[key]
    return chosen, False


def _score(ranked: list[str], doc: Prepared, needles: list[list[str]], section_keys: set[str],
           budget: int) -> CaseResult:
    """Hits at each K, first hit rank, and the budget hit for one ranking (keys of ``doc.hay``)."""
    memo: dict[int, bool] = {}

    def hit(keys: list[str]) -> bool:
        keys = sorted(keys, key=doc.ordinal.__getitem__)
        if section_keys and any(doc.sections.get(k, set()) & section_keys for k in keys):
            return True
        return any(doc.hay.contains(keys, n) for n in needles)

    def at(k: int) -> bool:
        if k not in memo:
            memo[k] = hit(ranked[:k])
        return memo[k]

    hits = {k: at(k) for k in KS}
    chosen, top_over = _within_budget(ranked, doc.cost, budget)
    keys = sorted(chosen, key=doc.ordinal.__getitem__)
    got = [doc.hay.contains(keys, n) for n in needles]
    hit_budget = any(got) or bool(section_keys and any(doc.sections.get(k, set()) & section_keys for k in keys))
    return CaseResult(hits, _first_hit(at), hit_budget, (sum(got) / len(got)) if got else 0.0, top_over)


def score_case(doc: Prepared, case: GoldCase, query: str, query_vector: list[float],
               budget: int) -> dict[str, CaseResult]:
    """The case's outcome under every configuration of :data:`CONFIGS`, ``baseline`` and ``naive-bm25``."""
    import numpy as np

    needles = [w for w in (words(s) for s in case.snippets) if w]
    section_keys = {normalise(s) for s in case.section_ids}
    out = {name: _score([c.chunk_id for c in retriever.rank(query, query_vector)], doc, needles, section_keys,
                        budget)
           for name, retriever in doc.retrievers.items()}
    sims = doc.naive_matrix @ np.asarray(query_vector, dtype=np.float32)
    out["baseline"] = _score([doc.naive_keys[i] for i in np.argsort(-sims, kind="stable")], doc, needles, set(),
                             budget)
    ranked_bm25 = [doc.naive_keys[i] for i, _ in doc.naive_bm25.rank(bm25_terms(query))]
    ranked_bm25 += [k for k in doc.naive_keys if k not in set(ranked_bm25)]
    out["naive-bm25"] = _score(ranked_bm25, doc, needles, set(), budget)
    return out


class Queries:
    """Query text per case (the catalogue's query text, else ``"<clause type>. <question>"``) and
    query vectors, each embedded once."""

    def __init__(self, catalogue: Catalogue, embedder: Embedder) -> None:
        """Resolve clause types with ``catalogue``; embed with ``embedder``."""
        self.catalogue = catalogue
        self.embedder = embedder
        self._vectors: dict[str, list[float]] = {}

    def text(self, case: GoldCase) -> str:
        """The retrieval query for ``case``."""
        from longdoc.core.errors import UnknownClauseType

        try:
            return self.catalogue.resolve(case.clause_type).query_text()
        except UnknownClauseType:
            return f"{case.clause_type}. {case.question}".strip()

    def vector(self, text: str) -> list[float]:
        """The query vector of ``text`` (cached)."""
        if text not in self._vectors:
            self._vectors[text] = self.embedder.embed_query(text)
        return self._vectors[text]


def _summary(results: list[CaseResult]) -> dict:
    """Recall at each K, within the budget, MRR and the count of top chunks over budget, over ``results``."""
    n = len(results)

    def share(values: list[bool]) -> float:
        return round(sum(values) / n, 4) if n else 0.0

    return {
        "cases": n,
        "recall_at": {str(k): share([r.hit_at[k] for r in results]) for k in KS},
        "recall_at_budget": share([r.hit_budget for r in results]),
        "snippet_recall_at_budget": round(sum(r.snippets_budget for r in results) / n, 4) if n else 0.0,
        "mrr": round(sum(1 / r.first_rank for r in results if r.first_rank) / n, 4) if n else 0.0,
        "top_chunk_over_budget": sum(r.top_over_budget for r in results),
    }


def _strata(rows: list[tuple[dict, CaseResult]], keys: Sequence[str]) -> list[dict]:
    """One summary per combination of the ``keys`` values, worst recall within budget first."""
    out = []
    for values, results in strata_groups(rows, keys).items():
        s = _summary(results)
        entry = dict(zip(keys, values, strict=True))
        entry.update(cases=s["cases"], recall_at=s["recall_at"], recall_at_budget=s["recall_at_budget"],
                     mrr=s["mrr"], flagged=s["recall_at_budget"] < FLAG_BELOW)
        out.append(entry)
    out.sort(key=lambda e: (e["recall_at_budget"], e["recall_at"]["5"], -e["cases"], tuple(e[k] for k in keys)))
    return out


def evaluate(gold: Path, corpus: Path | None = None, *, budget_tokens: int = DEFAULT_BUDGET,
             home: Path | None = None, target_tokens: int | None = None, max_tokens: int | None = None,
             progress: Callable[[str], None] | None = None) -> dict:
    """Run the retrieval evaluation and return the report (see module docstring and :func:`render`).

    ``home`` defaults to ``$LONGDOC_HOME``; ``target_tokens``/``max_tokens`` to the chunking
    settings. Raises ``FileNotFoundError`` for a missing document, ``ValueError`` for a bad
    gold file.
    """
    from longdoc.config import get_settings
    from longdoc.extract.catalogue import load_catalogue

    started = time.monotonic()
    settings = get_settings()
    cases = load_gold(gold)
    corpus = Path(corpus) if corpus else default_corpus(gold)
    target = target_tokens or settings.chunk_target_tokens
    maximum = max_tokens or max(settings.chunk_max_tokens, target * 2)
    store = EvalStore(store_root(Path(home or settings.home), target, maximum), target, maximum)
    queries = Queries(load_catalogue(settings.clause_catalogue), store.embedder)
    by_doc: dict[str, list[GoldCase]] = defaultdict(list)
    for case in cases:
        by_doc[case.doc].append(case)
    rows: dict[str, list[tuple[dict, CaseResult]]] = defaultdict(list)
    documents = []
    shown = reporter()
    shown.start("eval retrieval", len(by_doc), "documents")
    for rel, doc_cases in by_doc.items():
        t0 = time.monotonic()
        doc = prepare(store, corpus, rel, doc_cases)
        for case in doc_cases:
            if case.expected == "found" and (case.snippets or case.section_ids):
                meta = {"doc_type": case.doc_type, "clause_type": case.clause_type,
                        "position": next((p for p in (position(doc.reference_text, s) for s in case.snippets) if p),
                                         None)}
                query = queries.text(case)
                for name, result in score_case(doc, case, query, queries.vector(query), budget_tokens).items():
                    rows[name].append((meta, result))
        documents.append({"doc": rel, "chunks": len(doc.chunks), "naive_chunks": len(doc.naive_keys),
                          "seconds": round(time.monotonic() - t0, 2)})
        if progress:
            progress(f"{rel}: {len(doc.chunks)} chunks, {len(doc_cases)} cases, {time.monotonic() - t0:.1f} s")
        shown.advance("eval retrieval")
    shown.finish("eval retrieval")
    report = {"gold": str(gold), "corpus": str(corpus), "config": PRIMARY, "embedder": store.embedder.name,
              "chunk_target_tokens": target,
              "budget_tokens": budget_tokens, "not_found_cases": sum(c.expected != "found" for c in cases),
              "total_cases": len(cases)}
    return {**report, **_blocks(rows), "documents": documents, "seconds": round(time.monotonic() - started, 1)}


def _blocks(rows: dict[str, list[tuple[dict, CaseResult]]]) -> dict:
    """The report's figures: the primary configuration's summary and strata at the top level, then
    ``baseline``, ``naive_bm25``, every configuration's summary and the primary's delta to the baseline."""

    def block(name: str) -> dict:
        out = _summary([r for _, r in rows[name]])
        out["strata"] = _strata(rows[name], ("doc_type", "clause_type", "position"))
        out["by"] = {k: _strata(rows[name], (k,)) for k in ("clause_type", "doc_type", "position")}
        return out

    primary = block(PRIMARY)
    baseline = block("baseline")
    return {
        **primary,
        "baseline": baseline,
        "naive_bm25": block("naive-bm25"),
        "configs": {name: {k: v for k, v in block(name).items() if k not in ("strata", "by")} for name in CONFIGS},
        "delta": {
            "recall_at": {k: round(primary["recall_at"][k] - baseline["recall_at"][k], 4) for k in primary["recall_at"]},
            "recall_at_budget": round(primary["recall_at_budget"] - baseline["recall_at_budget"], 4),
            "mrr": round(primary["mrr"] - baseline["mrr"], 4),
        },
    }


def _pct(x: float) -> str:
    return f"{100 * x:5.1f}"


def _signed(x: float) -> str:
    return f"{100 * x:+5.1f}"


def render(report: dict, limit: int = 25) -> str:
    """A readable table of the report: configurations vs the naive baseline, then the worst strata."""
    b = report["baseline"]
    lines = [f"retrieval eval: {report['cases']} found cases ({report['not_found_cases']} not_found cases excluded), "
             f"budget {report['budget_tokens']} tokens, chunks ~{report['chunk_target_tokens']} tokens, "
             f"{report['seconds']} s",
             f"{'config':<16} {'R@1':>6} {'R@3':>6} {'R@5':>6} {'R@10':>6} {'R@budget':>9} {'MRR':>6}"]

    def row(name: str, s: dict) -> str:
        r = s["recall_at"]
        return (f"{name:<16} {_pct(r['1']):>6} {_pct(r['3']):>6} {_pct(r['5']):>6} {_pct(r['10']):>6} "
                f"{_pct(s['recall_at_budget']):>9} {s['mrr']:>6.3f}")

    lines.append(row("baseline (naive)", b))
    lines.append(row("naive-bm25", report["naive_bm25"]))
    for name, s in report["configs"].items():
        lines.append(row(name, s))
        r = s["recall_at"]
        lines.append(f"{'  vs baseline':<16} " + " ".join(f"{_signed(r[k] - b['recall_at'][k]):>6}" for k in r)
                     + f" {_signed(s['recall_at_budget'] - b['recall_at_budget']):>9} {s['mrr'] - b['mrr']:>+6.3f}")
    lines.append(f"top chunk alone over budget: {report['top_chunk_over_budget']} cases")
    lines.append("")
    lines.append(f"by clause type ({report['config']}), worst first; * = under {int(FLAG_BELOW * 100)}% within budget")
    for s in report["by"]["clause_type"]:
        lines.append(f"{'*' if s['flagged'] else ' '} {s['clause_type'][:40]:<40} n={s['cases']:<3} "
                     f"R@5 {_pct(s['recall_at']['5'])}  R@budget {_pct(s['recall_at_budget'])}")
    lines.append("")
    lines.append("by position")
    for s in report["by"]["position"]:
        lines.append(f"{'*' if s['flagged'] else ' '} {s['position']:<8} n={s['cases']:<4} R@budget {_pct(s['recall_at_budget'])}")
    lines.append("")
    lines.append(f"worst strata (doc type x clause type x position), "
                 f"{min(limit, len(report['strata']))} of {len(report['strata'])}")
    for s in report["strata"][:limit]:
        lines.append(f"{'*' if s['flagged'] else ' '} {str(s['doc_type'])[:18]:<18} {s['clause_type'][:34]:<34} "
                     f"{s['position']:<7} n={s['cases']:<3} R@budget {_pct(s['recall_at_budget'])}")
    return "\n".join(lines)


