"""``longdoc eval triage``: recall of the gold clauses in the ranking, by claim kind, wording, split,
line of business and term, beside two baselines in the same run. No model calls.

Gold file: JSON Lines, one invented claim a line::

    {"id": "h01", "kind": "covered", "split": "dev", "claim": {... loss_date, line_of_business ...},
     "gold_doc": "homeowners-wording-2023", "gold": ["5.10"]}
    {"id": "r07", "kind": "trap", "claim": {...}, "gold_doc": "travel-wording",
     "gold_quotes": ["We will pay ... verbatim from the wording"]}

``kind`` is one of :data:`KINDS` (``-`` when absent), ``split`` ``dev`` or ``test`` (held-out
claims, written but never looked at while tuning). ``gold`` lists clause ids as the band cites
them: a ranked clause matches by its own id (a part id ``5.10#2`` names that part only), by its id
without the split-part suffix (``5.10#2`` -> ``5.10``) or an enclosing level (``Section 29(k)`` -> ``Section 29``), and a wording clause must come from
``gold_doc``. ``gold_quotes`` are verbatim sentences of the wording: the first k match a quote when one unit, or
two units of the first k that follow each other in the document (a quote the unit cut split),
hold at least 80 % of its words in order (the gold README's rule, which joins the top-K texts;
joined only pairwise here, so that common words scattered over three units cannot match), so the
figure does not depend on how a ranking cuts units. recall@k is the share of a claim's gold items among the
first k, averaged over claims. The file is checked whole before any ranking
(:mod:`longdoc.triage.gold`): a claim that does not resolve, a gold id or quote that no unit of the
gold wording has, a ``gold_doc`` outside the collection or a repeated ``id`` stops the run, each
problem named by line.

Rankings measured in the same run:

- ``triage``: today's ranking (clause units from structure, the claim's queries fused,
  :func:`longdoc.triage.ranking.rank_claim`);
- ``legacy``: the ranking before issue 31 (chunk sections as clauses, the whole claim text as
  one query, :func:`longdoc.triage.ranking.legacy_rank`), over the same documents in force;
- ``writer`` (``--query-writer`` only): today's ranking with the model-written queries appended
  (:mod:`longdoc.triage.query_writer`; one cached request per claim; with no model configured it
  repeats ``triage`` and the report says so);
- ``naive``: BM25 with the claim text over the whole collection (no term resolution, no
  line-of-business filter): over 1,000-character windows of each document's text for
  quote gold, over every chunk section for id gold (windows carry no clause ids).

``band_recall`` is recall within the clause band the model would be sent (filled in rank order to
the default budget's band, 1,200 tokens: :func:`~longdoc.triage.clauses.fill_band`), for today's
ranking and the legacy one, with the mean number of clauses in it (``band_clauses``): recall@3
counts units, so it favours a ranking of larger units; the band counts what a handler reads.
``wrong_term_top3`` is the share of claims whose first three include a clause of a document not
in force; ``top_over_band`` the share whose top clause alone is over the default clause band.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from longdoc.core.documents import load_chunks
from longdoc.core.errors import GoldFileInvalid, RerankRequestError, RerankUnavailable
from longdoc.core.models import Chunk
from longdoc.search.bm25 import BM25, bm25_tokens
from longdoc.triage.budget import DEFAULT_INPUT_BUDGET, clause_band
from longdoc.triage.claim import claim_from_json
from longdoc.triage.clauses import Clause, clauses_of, fill_band, gold_keys, units_as_clauses
from longdoc.triage.collections import Member, load_collection
from longdoc.triage.gold import KINDS, QUOTE_COVER, check_against, in_line_order, quote_in, read_gold_lines
from longdoc.triage.evaluate_report import render, render_html, summarise
from longdoc.triage.prompt import fixed_parts
from longdoc.triage.query_writer import log_skipped, queries_with_writer
from longdoc.triage.ranking import RERANK_TOP, legacy_rank, rank_claim
from longdoc.triage.service import TriageDeps, claim_context
from longdoc.triage.terms import resolve
from longdoc.triage.unit_vectors import pool_vectors
from longdoc.triage.units import document_text

__all__ = ["KINDS", "QUOTE_COVER", "evaluate", "quote_in", "read_gold", "render", "render_html"]

KS = (1, 3)
WINDOW_CHARS = 1_000
"""Window size of the naive baseline (characters)."""


def read_gold(path: Path) -> list[dict[str, Any]]:
    """The gold claims of a JSON Lines file (:mod:`longdoc.triage.gold`); :class:`GoldFileInvalid`
    naming each bad line (``FILE:LINE: ... (claim ID)``), every one of them, not only the first."""
    lines, problems = read_gold_lines(path)
    if problems:
        raise GoldFileInvalid(problems)
    return [g.case for g in lines]


def _hits(ranked: Sequence[Clause], case: dict[str, Any], k: int) -> float:
    gold_doc = case.get("gold_doc")
    top = [c for c in ranked[:k] if c.endorsement or gold_doc is None or c.doc_id == gold_doc]
    if case.get("gold_quotes"):
        quotes = [str(q) for q in case["gold_quotes"]]
        spans = [c.text for c in top] + [a.text + " " + b.text for a in top for b in top
                                         if b.doc_id == a.doc_id and b.order == a.order + 1]
        return sum(1 for q in quotes if any(quote_in(q, t) for t in spans)) / len(quotes)
    gold = [str(g) for g in case["gold"]]
    found = {key for c in top for key in gold_keys(c.clause_id)}
    return sum(1 for g in gold if g.casefold() in found) / len(gold)


def windows(chunks: Sequence[Chunk], endorsement: bool, size: int = WINDOW_CHARS) -> list[Clause]:
    """The document's text in ``size``-character windows (the naive baseline's units), cut at a space."""
    text, a = document_text(chunks), 0
    out: list[Clause] = []
    first = chunks[0]
    while a < len(text):
        b = min(len(text), a + size)
        if b < len(text) and text.rfind(" ", a, b) > a:
            b = text.rfind(" ", a, b)
        out.append(Clause(f"{first.doc_id}:{first.doc_version}~{a}", f"w{len(out) + 1}", first.doc_id,
                          first.doc_version, first.chunk_id, (), text[a:b], endorsement, len(out), 0))
        a = b
    return out


class _Pools:
    """Units, legacy clauses and windows per collection member, loaded once."""

    def __init__(self, deps: TriageDeps, members: list[Member]):
        self.deps = deps
        self.members = {m.doc_id: m for m in members}
        self.cache: dict[tuple[str, str], list[Clause]] = {}

    def of(self, doc_ids: Sequence[str], kind: str = "units") -> list[Clause]:
        out: list[Clause] = []
        for doc_id in doc_ids:
            if (doc_id, kind) not in self.cache:
                m = self.members[doc_id]
                chunks = load_chunks(self.deps.blobs, m.doc_id, m.doc_version)
                make = {"units": units_as_clauses, "legacy": clauses_of}.get(kind)
                self.cache[(doc_id, kind)] = (make(chunks, endorsement=m.is_endorsement) if make
                                              else windows(chunks, m.is_endorsement))
            out += self.cache[(doc_id, kind)]
        return [Clause(**{**c.__dict__, "order": i}) for i, c in enumerate(out)]


def _score(case: dict[str, Any], collection: str, members: list[Member], pools: _Pools, deps: TriageDeps,
           embed: Callable[[str], Sequence[float]] | None, query_writer: bool = False) -> dict[str, Any]:
    claim = claim_from_json(case["claim"])
    loss, lob = claim_context(claim, members, None, None)
    resolution = resolve(collection, members, lob, loss)
    live = [m.doc_id for m in resolution.members]
    index = deps.index if embed is not None else None
    units = pools.of(live)
    vectors, parts = pool_vectors(deps.blobs, deps.embedder, units) if embed is not None and deps.embedder \
        else (None, None)
    # strict: a figure reported as reranked must be reranked (a failed rerank stops the run, naming the error)
    result = rank_claim(units, claim, index=index, embed=embed, reranker=deps.reranker, vectors=vectors,
                        passages=parts, strict_rerank=True)
    ranked = result.clauses
    writer = (rank_claim(units, claim, index=index, embed=embed, reranker=deps.reranker, vectors=vectors,
                         passages=parts, queries=queries_with_writer(deps.model, deps.blobs, claim, units),
                         strict_rerank=True).clauses
              if query_writer else None)
    legacy = legacy_rank(pools.of(live, "legacy"), claim, index=index, embed=embed)
    everything = list(pools.members)
    naive_pool = pools.of(everything, "windows" if case.get("gold_quotes") else "legacy")
    naive = _bm25(naive_pool, claim.text)
    fixed = fixed_parts(claim)
    band = clause_band(DEFAULT_INPUT_BUDGET, fixed.instructions, fixed.examples, fixed.claim, fixed.task)
    row: dict[str, Any] = {
        "id": case.get("id"), "kind": case.get("kind") or "-", "split": case.get("split") or "dev",
        "wording": case.get("gold_doc") or resolution.wording.doc_id, "line_of_business": lob,
        "term": resolution.wording.term or "-"}
    rankings = [("", ranked), ("legacy_", legacy), ("naive_", naive)] + ([("writer_", writer)] if writer is not None
                                                                        else [])
    for name, ranking in rankings:
        for k in KS:
            row[f"{name}recall@{k}"] = _hits(ranking, case, k)
    row[f"recall@{RERANK_TOP}"] = _hits(ranked, case, RERANK_TOP)  # the most a reranker could bring up
    for name, ranking, found in (("", ranked, result.ranked_count), ("legacy_", legacy, len(legacy))):
        sent = fill_band(ranking, band).clauses  # what the model reads: the clause band, filled in rank order
        # a clause no query found fills the band in document order: it is not credited as ranked in
        row[f"{name}band_recall"] = _hits(sent[:found], case, len(sent[:found]))
        row[f"{name}band_clauses"] = len(sent)
    if writer is not None:
        row["writer_top3"] = [c.clause_id for c in writer[:3]]
    live_set = set(live)
    row.update({"top_over_band": ranked[0].tokens > band if ranked else False,
                "wrong_term_top3": any(c.doc_id not in live_set for c in ranked[:3]),
                "naive_wrong_term_top3": any(c.doc_id not in live_set for c in naive[:3]),
                "top3": [c.clause_id for c in ranked[:3]],
                "found_by": [result.reasons.get(c.key, []) for c in ranked[:3]],
                "legacy_top3": [c.clause_id for c in legacy[:3]], "naive_top3": [c.clause_id for c in naive[:3]],
                "gold": [str(g) for g in case.get("gold") or case.get("gold_quotes") or []]})
    return row


def _bm25(pool: list[Clause], query: str) -> list[Clause]:
    index = BM25([bm25_tokens(" ".join(c.heading_path) + " " + c.text) for c in pool])
    ranked = [pool[i] for i, _ in index.rank(bm25_tokens(query))]
    seen = {c.key for c in ranked}
    return ranked + [c for c in pool if c.key not in seen]


def evaluate(gold_path: Path, collection: str, deps: TriageDeps,
             progress: Callable[[str], None] | None = None, query_writer: bool = False) -> dict[str, Any]:
    """Score every gold claim; returns overall figures and strata (kind, wording, split, line of
    business, term), each with the legacy and naive baselines of the same run. No model calls unless
    ``query_writer``: then one (cached) ``write_queries`` request per claim with ``deps.model``, and
    the ``writer_recall@k`` columns.

    The whole gold file is read and checked against the collection first
    (:func:`~longdoc.triage.gold.read_gold_lines`, :func:`~longdoc.triage.gold.check_against`): any bad
    line raises :class:`~longdoc.core.errors.GoldFileInvalid` listing every problem, before anything is
    ranked. :class:`~longdoc.core.errors.UnknownCollection` for an unknown ``collection``."""
    lines, problems = read_gold_lines(gold_path)
    members = load_collection(deps.state, collection)
    pools = _Pools(deps, members)
    problems += check_against(gold_path, lines, collection, members, pools.of)
    if problems:
        raise GoldFileInvalid(in_line_order(gold_path, problems))
    cases = [g.case for g in lines]
    if query_writer and deps.model is None:
        log_skipped()  # once for the run, not once per claim
    vectors: dict[str, Sequence[float]] = {}
    embedder = deps.embedder

    def embed(text: str) -> Sequence[float]:
        if text not in vectors:
            assert embedder is not None
            vectors[text] = embedder.embed_query(text)
        return vectors[text]

    hybrid = deps.index is not None and embedder is not None
    rows = []
    for case in cases:
        try:
            rows.append(_score(case, collection, members, pools, deps, embed if hybrid else None, query_writer))
        except (RerankUnavailable, RerankRequestError) as exc:  # say where the run stopped
            raise type(exc)(f"claim {case.get('id')} ({len(rows)} of {len(cases)} ranked before it): {exc}") from exc
        if progress:
            progress(f"{rows[-1]['id']} [{rows[-1]['kind']}]: top3 {rows[-1]['top3']} r@3 {rows[-1]['recall@3']}")
    strata: dict[str, dict[str, Any]] = {}
    for key in ("kind", "wording", "split", "line_of_business", "term"):
        for value in sorted({r[key] for r in rows}):
            strata[f"{key}={value}"] = summarise([r for r in rows if r[key] == value])
    mode = "hybrid (BM25 + dense)" if hybrid else "BM25"
    mode += ", reranked" if deps.reranker is not None else ""
    chunking = {m.doc_id: f"{m.chunks} chunks" for m in members}
    return {"collection": collection, "gold": str(gold_path), "ranking": mode,
            "legacy": "one query (the claim text) over chunk sections, same documents in force",
            "naive": f"BM25, whole collection ({WINDOW_CHARS}-character windows for quote gold)",
            **({"query_writer": deps.model.name if deps.model is not None else
                "no model configured: the writer columns repeat the offline ranking"} if query_writer else {}),
            "members": chunking, "overall": summarise(rows), "strata": strata, "claims": rows}
