"""``longdoc eval triage``: recall of the gold clauses in the ranking, by line of business and term. No model calls.

Gold file: JSON Lines, one invented claim a line::

    {"id": "h01", "claim": {... claim JSON with loss_date, line_of_business ...},
     "gold_doc": "homeowners-wording-2023", "gold": ["5.10"]}

``gold`` lists clause ids as the band cites them (an endorsement's with its doc_id prefix);
a ranked clause matches a gold id by string equality of its id without the split-part
suffix (``5.10#2`` -> ``5.10``) or of an enclosing level (``Section 29(k)`` -> ``Section 29``,
the extraction eval's convention), and a wording clause must also come from ``gold_doc`` (the
same number in another term's wording is another clause). recall@k is the share of a
claim's gold ids among the first k ranked clauses, averaged over claims.

The naive baseline, in the same run: BM25 over every clause of every document of the
collection (no term resolution, no line-of-business filter, every endorsement), with the
claim text as the query. ``wrong_term_top3`` is the share of claims whose first three
clauses include one from a document not in force for that claim. ``top_over_band`` is the
share of claims whose top clause alone is over the clause band (default budget).
"""

from __future__ import annotations

import html
import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from longdoc.core.documents import load_chunks
from longdoc.core.errors import TriageError
from longdoc.triage.budget import DEFAULT_INPUT_BUDGET, clause_band
from longdoc.triage.claim import claim_from_json
from longdoc.triage.clauses import Clause, clauses_of, enclosing_ids, rank
from longdoc.triage.collections import Member, load_collection
from longdoc.triage.prompt import fixed_parts
from longdoc.triage.service import TriageDeps, claim_context
from longdoc.triage.terms import resolve

KS = (1, 3)


def read_gold(path: Path) -> list[dict[str, Any]]:
    """The gold claims of a JSON Lines file; TriageError naming the line for a bad one."""
    cases = []
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            case = json.loads(line)
        except json.JSONDecodeError as exc:
            raise TriageError(f"{path}:{n}: not JSON ({exc})") from None
        if not isinstance(case, dict) or not isinstance(case.get("claim"), dict) or not case.get("gold"):
            raise TriageError(f"{path}:{n}: a gold claim needs \"claim\" (object) and \"gold\" (clause ids)")
        cases.append(case)
    if not cases:
        raise TriageError(f"no gold claims in {path}")
    return cases


def _hits(ranked: Sequence[Clause], gold: list[str], gold_doc: str | None, k: int) -> float:
    found = {key for c in ranked[:k] if c.endorsement or gold_doc is None or c.doc_id == gold_doc
             for key in enclosing_ids(c.clause_id)}
    return sum(1 for g in gold if g in found) / len(gold)


class _Pools:
    """Clauses per collection member, loaded once."""

    def __init__(self, deps: TriageDeps, members: list[Member]):
        self.deps = deps
        self.members = {m.doc_id: m for m in members}
        self.cache: dict[str, list[Clause]] = {}

    def of(self, doc_ids: Sequence[str]) -> list[Clause]:
        out: list[Clause] = []
        for doc_id in doc_ids:
            if doc_id not in self.cache:
                m = self.members[doc_id]
                self.cache[doc_id] = clauses_of(load_chunks(self.deps.blobs, m.doc_id, m.doc_version),
                                                endorsement=m.is_endorsement)
            out += self.cache[doc_id]
        return [Clause(**{**c.__dict__, "order": i}) for i, c in enumerate(out)]


def _score(case: dict[str, Any], collection: str, members: list[Member], pools: _Pools,
           deps: TriageDeps) -> dict[str, Any]:
    claim = claim_from_json(case["claim"])
    loss, lob = claim_context(claim, members, None, None)
    resolution = resolve(collection, members, lob, loss)
    live = {m.doc_id for m in resolution.members}
    pool = pools.of([m.doc_id for m in resolution.members])
    vector = deps.embedder.embed_query(claim.text) if deps.embedder is not None and deps.index is not None else None
    ranked = rank(pool, claim.text, index=deps.index if vector is not None else None, vector=vector)
    naive = rank(pools.of(list(pools.members)), claim.text)
    fixed = fixed_parts(claim)
    band = clause_band(DEFAULT_INPUT_BUDGET, fixed.instructions, fixed.examples, fixed.claim, fixed.task)
    gold, gold_doc = [str(g) for g in case["gold"]], case.get("gold_doc")
    return {"id": case.get("id"), "line_of_business": lob, "term": resolution.wording.term or "-",
            **{f"recall@{k}": _hits(ranked, gold, gold_doc, k) for k in KS},
            **{f"naive_recall@{k}": _hits(naive, gold, gold_doc, k) for k in KS},
            "top_over_band": ranked[0].tokens > band if ranked else False,
            "wrong_term_top3": any(c.doc_id not in live for c in ranked[:3]),
            "naive_wrong_term_top3": any(c.doc_id not in live for c in naive[:3]),
            "top3": [c.clause_id for c in ranked[:3]], "naive_top3": [c.clause_id for c in naive[:3]], "gold": gold}


_METRICS = ("recall@1", "recall@3", "naive_recall@1", "naive_recall@3", "top_over_band", "wrong_term_top3",
            "naive_wrong_term_top3")


def _summary(rows: list[dict[str, Any]]) -> dict[str, Any]:
    n = len(rows)
    return {"claims": n, **{m: round(sum(float(r[m]) for r in rows) / n, 3) if n else None for m in _METRICS}}


def evaluate(gold_path: Path, collection: str, deps: TriageDeps,
             progress: Callable[[str], None] | None = None) -> dict[str, Any]:
    """Score every gold claim (no model calls); returns overall, per line of business and per term figures."""
    cases = read_gold(gold_path)
    members = load_collection(deps.state, collection)
    pools = _Pools(deps, members)
    rows = []
    for case in cases:
        rows.append(_score(case, collection, members, pools, deps))
        if progress:
            progress(f"{rows[-1]['id']}: top3 {rows[-1]['top3']} gold {rows[-1]['gold']}")
    strata: dict[str, dict[str, Any]] = {}
    for key in ("line_of_business", "term"):
        for value in sorted({r[key] for r in rows}):
            strata[f"{key}={value}"] = _summary([r for r in rows if r[key] == value])
    mode = "hybrid (BM25 + dense)" if deps.index is not None and deps.embedder is not None else "BM25"
    return {"collection": collection, "gold": str(gold_path), "ranking": mode, "naive": "BM25, whole collection",
            "overall": _summary(rows), "strata": strata, "claims": rows}


def render(report: dict[str, Any]) -> str:
    """The report as a text table: one row overall, one per stratum."""
    head = ("STRATUM", "CLAIMS", "R@1", "R@3", "NAIVE R@1", "NAIVE R@3", "TOP>BAND", "WRONG TERM@3", "NAIVE WRONG@3")
    rows = [("overall", report["overall"]), *report["strata"].items()]
    lines = [f"triage recall on {report['collection']} ({report['ranking']}; naive: {report['naive']})",
             "  ".join(f"{h:<13}" for h in head)]
    for name, s in rows:
        cells = [name, str(s["claims"]), *(f"{s[m]:.3f}" for m in _METRICS)]
        lines.append("  ".join(f"{c:<13}" for c in cells))
    return "\n".join(lines)


def render_html(report: dict[str, Any]) -> str:
    """The report as a self-contained HTML page (the same table, and each claim's top three)."""
    table = "".join(f"<tr><td>{html.escape(line)}</td></tr>" for line in render(report).splitlines())
    claims = "".join(f"<tr><td>{html.escape(str(r['id']))}</td><td>{html.escape(', '.join(r['gold']))}</td>"
                     f"<td>{html.escape(', '.join(r['top3']))}</td><td>{html.escape(', '.join(r['naive_top3']))}</td></tr>"
                     for r in report["claims"])
    return (f"<!doctype html><meta charset='utf-8'><title>triage eval</title><pre><table>{table}</table></pre>"
            f"<table border=1><tr><th>claim</th><th>gold</th><th>top 3</th><th>naive top 3</th></tr>{claims}</table>")
