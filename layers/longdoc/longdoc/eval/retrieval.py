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
``hybrid`` (dense + BM25 on chunk text, weighted RRF, the document's opening chunk moved
up to rank 2), ``hybrid+headers`` (the same with BM25 also over each chunk's locator
header; what the session uses), and the naive ``baseline``: fixed 1,000-character
chunks of the same text, the same embedder, dense only (its vectors cached under
``eval/naive/`` in the same blob folder). ``naive-bm25`` (the same chunks ranked by BM25)
is reported beside it for reference.
"""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from longdoc.extract.retrieve import DENSE_WEIGHT, LEAD_RANK, BM25, Retriever, bm25_tokens, chunk_tokens
from longdoc.core.tokens import estimate_tokens
from longdoc.eval.gold import GoldCase, default_corpus, load_gold
from longdoc.eval.scoring import Haystack, enclosing_section_keys, normalise, position, strata_groups, words
from longdoc.core.models import Chunk

KS = (1, 3, 5, 10)
MRR_DEPTH = 10
FLAG_BELOW = 0.90
NAIVE_CHARS = 1000
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


def chunker_fingerprint() -> str:
    """8 hex digits of a SHA-256 over the source of the parsing and chunking modules.

    The eval cache keeps each document's chunks and vectors under a folder named with it,
    so a change to the parser or chunker is measured on fresh chunks, never on chunks cut
    by the previous code (an ingested version is otherwise reused as it stands).
    """
    import hashlib
    import inspect

    import importlib
    import pkgutil

    from longdoc.core import text, tokens
    from longdoc.ingest import chunk, parse

    modules = [tokens, text]
    for package in (parse, chunk):
        modules.append(package)
        modules += [importlib.import_module(f"{package.__name__}.{m.name}")
                    for m in sorted(pkgutil.iter_modules(package.__path__), key=lambda m: m.name)]
    digest = hashlib.sha256()
    for module in modules:
        digest.update(inspect.getsource(module).encode("utf-8"))
    return digest.hexdigest()[:8]


def store_root(home: Path, target: int, maximum: int) -> Path:
    """The eval cache folder for one chunk size and the current chunker code."""
    return home / "eval" / f"chunks-{target}-{maximum}-{chunker_fingerprint()}"


@dataclass
class EvalStore:
    """The local adapters of the eval cache (see module docstring)."""

    root: Path
    target_tokens: int
    max_tokens: int
    blobs: object = field(init=False)
    state: object = field(init=False)
    index: object = field(init=False)
    embedder: object = field(init=False)

    def __post_init__(self) -> None:
        from longdoc.adapters.blob import LocalBlobStore
        from longdoc.adapters.embedders import MiniLMEmbedder
        from longdoc.adapters.state import SqliteStateStore
        from longdoc.adapters.vector_index import LanceDBIndex

        self.root.mkdir(parents=True, exist_ok=True)
        self.blobs = LocalBlobStore(self.root / "bucket")
        self.state = SqliteStateStore(self.root / "state.sqlite3")
        self.embedder = MiniLMEmbedder()
        self.index = LanceDBIndex(self.root / "lancedb", self.embedder.dimension)

    def chunks(self, corpus: Path, rel: str, metadata: dict | None = None) -> list[Chunk]:
        """Ingest ``corpus/rel`` unless its version is READY; return its chunks (from the blob store)."""
        from longdoc.ingest.pipeline import IngestDeps, IngestOptions, ingest_document
        from longdoc.ingest.source import IngestSource
        from longdoc.core.documents import load_chunks

        data = (corpus / rel).read_bytes()
        result = ingest_document(IngestSource(key=rel, data=data, object_metadata=metadata or {}),
                                 IngestDeps(blobs=self.blobs, state=self.state, embedder=self.embedder, index=self.index),
                                 IngestOptions(target_tokens=self.target_tokens, max_tokens=self.max_tokens))
        return load_chunks(self.blobs, result.doc_id, result.doc_version)

    def naive_vectors(self, doc_id: str, doc_version: str, texts: list[str]) -> list[list[float]]:
        """Vectors of the naive chunks, embedded once and cached by text hash."""
        import hashlib

        from longdoc.ingest.embeddings import load_embedding_cache, save_embedding_cache

        key = f"eval/naive/{self.embedder.name}/{NAIVE_CHARS}/{doc_id}/{doc_version}.json"
        cache = load_embedding_cache(self.blobs, key)
        hashes = [hashlib.sha256(t.encode("utf-8")).hexdigest() for t in texts]
        todo = [(h, t) for h, t in dict(zip(hashes, texts)).items() if h not in cache]
        if todo:
            for h, v in zip([h for h, _ in todo], self.embedder.embed_documents([t for _, t in todo])):
                cache[h] = [float(x) for x in v]
            save_embedding_cache(self.blobs, key, self.embedder.name, self.embedder.dimension, cache)
        return [cache[h] for h in hashes]


def document_text(chunks: Sequence[Chunk]) -> str:
    """The parsed document text rebuilt from its chunks (``chunk.text == text[char_start:char_end]``)."""
    end = max((c.char_end for c in chunks), default=0)
    buf = [" "] * end
    for c in chunks:
        buf[c.char_start:c.char_end] = list(c.text)
    return "".join(buf)


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


def _score(ranked: list[str], ordinal: dict[str, int], cost: dict[str, int], hay: Haystack,
           needles: list[list[str]], section_keys: set[str], sections: dict[str, set[str]],
           budget: int) -> CaseResult:
    """Hits at each K, first hit rank, and the budget hit for one ranking (keys of ``hay``)."""
    memo: dict[int, bool] = {}

    def hit(keys: list[str]) -> bool:
        keys = sorted(keys, key=ordinal.__getitem__)
        if section_keys and any(sections.get(k, set()) & section_keys for k in keys):
            return True
        return any(hay.contains(keys, n) for n in needles)

    def at(k: int) -> bool:
        if k not in memo:
            memo[k] = hit(ranked[:k])
        return memo[k]

    hits = {k: at(k) for k in KS}
    first = None
    if at(MRR_DEPTH):
        lo, hi = 1, MRR_DEPTH  # smallest k with at(k): monotone in k
        while lo < hi:
            mid = (lo + hi) // 2
            if at(mid):
                hi = mid
            else:
                lo = mid + 1
        first = lo
    chosen: list[str] = []
    used = 0
    top_over = False
    for key in ranked:
        if used + cost[key] > budget:
            if not chosen:
                top_over = True
                chosen.append(key)
            break
        chosen.append(key)
        used += cost[key]
    keys = sorted(chosen, key=ordinal.__getitem__)
    got = [hay.contains(keys, n) for n in needles]
    hit_budget = any(got) or bool(section_keys and any(sections.get(k, set()) & section_keys for k in keys))
    return CaseResult(hits, first, hit_budget, (sum(got) / len(got)) if got else 0.0, top_over)


def _summary(results: list[CaseResult]) -> dict:
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
    out = []
    for values, results in strata_groups(rows, keys).items():
        s = _summary(results)
        entry = dict(zip(keys, values))
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
    from longdoc.core.errors import UnknownClauseType

    started = time.monotonic()
    settings = get_settings()
    cases = load_gold(gold)
    corpus = Path(corpus) if corpus else default_corpus(gold)
    target = target_tokens or settings.chunk_target_tokens
    maximum = max_tokens or max(settings.chunk_max_tokens, target * 2)
    store = EvalStore(store_root(Path(home or settings.home), target, maximum), target, maximum)
    catalogue = load_catalogue(settings.clause_catalogue)
    query_vectors: dict[str, list[float]] = {}

    def query_for(case: GoldCase) -> str:
        try:
            return catalogue.resolve(case.clause_type).query_text()
        except UnknownClauseType:
            return f"{case.clause_type}. {case.question}".strip()

    def vector(text: str) -> list[float]:
        if text not in query_vectors:
            query_vectors[text] = store.embedder.embed_query(text)
        return query_vectors[text]

    by_doc: dict[str, list[GoldCase]] = defaultdict(list)
    for case in cases:
        by_doc[case.doc].append(case)
    rows: dict[str, list[tuple[dict, CaseResult]]] = defaultdict(list)
    not_found = 0
    docs_info = []
    for rel, doc_cases in by_doc.items():
        t0 = time.monotonic()
        chunks = store.chunks(corpus, rel, {"doc_type": doc_cases[0].doc_type} if doc_cases[0].doc_type else None)
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
        for key, piece in zip(naive_keys, naive):
            hay.add(key, piece)
            ordinal[key] = int(key.split(":")[1])
            cost[key] = estimate_tokens(piece)
        import numpy as np

        naive_matrix = np.asarray(store.naive_vectors(chunks[0].doc_id, chunks[0].doc_version, naive), dtype=np.float32)
        naive_bm25 = BM25([bm25_tokens(p) for p in naive])
        retrievers = {name: Retriever(chunks, store.index, mode=mode, headers=headers, dense_weight=weight,
                                      lead_rank=lead)
                      for name, (mode, headers, weight, lead) in CONFIGS.items()}
        reference_text = text
        if doc_cases[0].doc_text and (corpus / doc_cases[0].doc_text).exists():
            reference_text = (corpus / doc_cases[0].doc_text).read_text(encoding="utf-8", errors="replace")
        for case in doc_cases:
            if case.expected != "found" or not (case.snippets or case.section_ids):
                not_found += case.expected != "found"
                continue
            needles = [w for w in (words(s) for s in case.snippets) if w]
            section_keys = {normalise(s) for s in case.section_ids}
            meta = {"doc_type": case.doc_type, "clause_type": case.clause_type,
                    "position": next((p for p in (position(reference_text, s) for s in case.snippets) if p), None)}
            query = query_for(case)
            qv = vector(query)
            for name, retriever in retrievers.items():
                ranked = [c.chunk_id for c in retriever.rank(query, qv)]
                rows[name].append((meta, _score(ranked, ordinal, cost, hay, needles, section_keys, sections,
                                                budget_tokens)))
            sims = naive_matrix @ np.asarray(qv, dtype=np.float32)
            dense_naive = [naive_keys[i] for i in np.argsort(-sims, kind="stable")]
            rows["baseline"].append((meta, _score(dense_naive, ordinal, cost, hay, needles, set(), {},
                                                  budget_tokens)))
            ranked_bm25 = [naive_keys[i] for i, _ in naive_bm25.rank(bm25_tokens(query))]
            ranked_bm25 += [k for k in naive_keys if k not in set(ranked_bm25)]
            rows["naive-bm25"].append((meta, _score(ranked_bm25, ordinal, cost, hay, needles, set(), {},
                                                    budget_tokens)))
        docs_info.append({"doc": rel, "chunks": len(chunks), "naive_chunks": len(naive),
                          "seconds": round(time.monotonic() - t0, 2)})
        if progress:
            progress(f"{rel}: {len(chunks)} chunks, {len(doc_cases)} cases, {time.monotonic() - t0:.1f} s")

    def block(name: str) -> dict:
        results = [r for _, r in rows[name]]
        out = _summary(results)
        out["strata"] = _strata(rows[name], ("doc_type", "clause_type", "position"))
        out["by"] = {k: _strata(rows[name], (k,)) for k in ("clause_type", "doc_type", "position")}
        return out

    primary = block(PRIMARY)
    baseline = block("baseline")
    report = {
        "gold": str(gold),
        "corpus": str(corpus),
        "config": PRIMARY,
        "chunk_target_tokens": target,
        "budget_tokens": budget_tokens,
        "not_found_cases": not_found,
        "total_cases": len(cases),
        **primary,
        "baseline": baseline,
        "naive_bm25": block("naive-bm25"),
        "configs": {name: {k: v for k, v in block(name).items() if k not in ("strata", "by")} for name in CONFIGS},
        "delta": {
            "recall_at": {k: round(primary["recall_at"][k] - baseline["recall_at"][k], 4) for k in primary["recall_at"]},
            "recall_at_budget": round(primary["recall_at_budget"] - baseline["recall_at_budget"], 4),
            "mrr": round(primary["mrr"] - baseline["mrr"], 4),
        },
        "documents": docs_info,
        "seconds": round(time.monotonic() - started, 1),
    }
    return report


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
    lines.append(f"worst strata (doc type x clause type x position), {limit} of {len(report['strata'])}")
    for s in report["strata"][:limit]:
        lines.append(f"{'*' if s['flagged'] else ' '} {str(s['doc_type'])[:18]:<18} {s['clause_type'][:34]:<34} "
                     f"{s['position']:<7} n={s['cases']:<3} R@budget {_pct(s['recall_at_budget'])}")
    return "\n".join(lines)


