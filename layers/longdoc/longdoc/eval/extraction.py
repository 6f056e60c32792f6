"""``longdoc eval extraction``: the configured model against gold cases, per stratum.

Documents are ingested into the same cache as the retrieval eval
(:class:`~longdoc.eval.retrieval.EvalStore`). For each document one run asks for every
clause type its cases name (as ``longdoc extract DOC --clause-types ...`` would); the run
is driven by calling the domain session loop (:func:`~longdoc.extract.session.run_session`)
until it is DONE, not through the state machine: the same extraction code, without the
Step Functions plumbing, so the eval stays fast. Clause types the catalogue does not know
(hand cases) are added from the case's question.

Per case: ``correct`` (found: status found and a quote overlapping a gold snippet by the
80% rule in either direction; not_found: answered not_found), ``status_correct``,
``section_correct`` / ``page_correct`` (hand cases that give them: any citation on a gold
section / page), ``exact_values`` reproduced byte for byte in a quote or clause text.
Tokens and estimated cost are the run's totals shared equally among its cases.
"""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from decimal import Decimal
from pathlib import Path
from typing import TYPE_CHECKING

from longdoc.eval.gold import GoldCase, default_corpus, load_gold
from longdoc.eval.scoring import FLAG_BELOW, enclosing_section_keys, normalise, overlaps, position, strata_groups
from longdoc.eval.store import EvalStore, document_text, store_root

if TYPE_CHECKING:  # pragma: no cover - typing only
    from longdoc.config import Settings
    from longdoc.core.messages import Usage
    from longdoc.core.models import Chunk
    from longdoc.core.ports import Model
    from longdoc.extract.catalogue import Catalogue
    from longdoc.extract.session import Deps

MAX_SESSIONS = 60


def _model(threshold: float | None) -> Model:
    """The configured model; the offline baseline with ``threshold`` when it is the baseline and one is given."""
    from longdoc import wiring
    from longdoc.adapters.baseline import BASELINE_NAME, OfflineBaselineModel

    if wiring.model_name() == BASELINE_NAME:
        return OfflineBaselineModel() if threshold is None else OfflineBaselineModel(threshold=threshold)
    return wiring.model()


def _catalogue(settings: Settings, cases: Sequence[GoldCase]) -> Catalogue:
    """The configured catalogue plus a clause type (from the case's question) for each one it does not know."""
    from longdoc.extract.catalogue import ClauseType, load_catalogue

    catalogue = load_catalogue(settings.clause_catalogue)
    extra = [ClauseType(name=c.clause_type, description=c.question or c.clause_type,
                        hints=[c.question or c.clause_type]) for c in cases if c.clause_type not in catalogue]
    if extra:
        catalogue = catalogue.merged({normalise(e.name): e for e in extra}.values())
    return catalogue


def _run(deps: Deps, settings: Settings, chunks: list[Chunk], names: list[str], budget_tokens: int | None,
         rel: str) -> dict:
    """Start a run on the document of ``chunks`` for clause types ``names``, drive sessions until DONE,
    and return :func:`~longdoc.extract.runs.run_result`. Raises ``RuntimeError`` after
    :data:`MAX_SESSIONS` sessions."""
    from longdoc.extract.runs import run_result, start_run
    from longdoc.extract.session import SessionOptions, run_session

    run = start_run(deps.state, deps.catalogue, doc_id=chunks[0].doc_id, doc_version=chunks[0].doc_version,
                    clause_types=names, model_name=deps.model.name, max_tokens=settings.max_tokens,
                    top_k=settings.top_k)
    for _ in range(MAX_SESSIONS):
        if run_session(deps, run.run_id, SessionOptions(budget_tokens=budget_tokens)).status == "DONE":
            return run_result(deps.state, run.run_id)
    raise RuntimeError(f"run {run.run_id} on {rel} not DONE after {MAX_SESSIONS} sessions")


def _case_row(case: GoldCase, got: list[dict], reference: str, shares: dict) -> dict:
    """The scored row of one case given the run's extractions ``got`` of its clause type.

    ``shares`` holds the case's share of the run's ``input_tokens``, ``output_tokens`` and
    ``cost_usd`` (a string, or None when the model is unpriced).
    """
    found = [e for e in got if e["status"] == "found"]
    citations = [c for e in found for c in e["citations"]]
    quotes = [c["quote"] for c in citations]
    texts = quotes + [e["clause_text"] for e in found if e.get("clause_text")]
    expected_found = case.expected == "found"
    status_ok = bool(found) == expected_found
    quote_ok = any(overlaps(q, s) for q in quotes for s in case.snippets)
    section_ok = (any(normalise(s) in enclosing_section_keys(c.get("section_id")) for s in case.section_ids
                      for c in citations) if case.section_ids else None)
    page_ok = any(c.get("page") in case.page_numbers for c in citations) if case.page_numbers else None
    return {
        "case_id": case.case_id, "doc_type": case.doc_type, "clause_type": case.clause_type,
        "position": next((p for p in (position(reference, s) for s in case.snippets) if p),
                         None if expected_found else "absent"),
        "expected": case.expected, "answered": "found" if found else "not_found",
        "status_correct": status_ok, "correct": (status_ok and quote_ok) if expected_found else status_ok,
        "section_correct": section_ok, "page_correct": page_ok,
        "exact_values_ok": sum(any(v in t for t in texts) for v in case.exact_values),
        "exact_values_total": len(case.exact_values),
        **shares,
    }


def _shares(result: dict, cases: int) -> dict:
    """Each of ``cases`` cases' equal share of the run's tokens (rounded) and cost (6 decimals, or None)."""
    usage = result["usage"]
    cost = Decimal(result["cost_usd"]) / cases if result["cost_usd"] is not None else None
    return {"input_tokens": round(usage["input_tokens"] / max(cases, 1)),
            "output_tokens": round(usage["output_tokens"] / max(cases, 1)),
            "cost_usd": None if cost is None else f"{cost:.6f}"}


def evaluate_extraction(gold: Path, corpus: Path | None = None, *, home: Path | None = None,
                        threshold: float | None = None, target_tokens: int | None = None,
                        budget_tokens: int | None = None,
                        progress: Callable[[str], None] | None = None) -> dict:
    """Run the extraction evaluation; returns the report (see module docstring).

    ``threshold`` overrides the offline baseline's threshold (tuning). Raises
    ``FileNotFoundError`` for a missing document and ``RuntimeError`` when a run does
    not finish within :data:`MAX_SESSIONS` sessions.
    """
    from longdoc.config import get_settings
    from longdoc.core.messages import Usage
    from longdoc.extract.session import Deps

    started = time.monotonic()
    settings = get_settings()
    cases = load_gold(gold)
    corpus = Path(corpus) if corpus else default_corpus(gold)
    target = target_tokens or settings.chunk_target_tokens
    maximum = max(settings.chunk_max_tokens, target * 2)
    store = EvalStore(store_root(Path(home or settings.home), target, maximum), target, maximum)
    catalogue = _catalogue(settings, cases)
    model = _model(threshold)
    deps = Deps(state=store.state, blobs=store.blobs, embedder=store.embedder, index=store.index, model=model,
                catalogue=catalogue)
    by_doc: dict[str, list[GoldCase]] = defaultdict(list)
    for case in cases:
        by_doc[case.doc].append(case)
    rows: list[dict] = []
    total_usage = Usage()
    for rel, doc_cases in by_doc.items():
        t0 = time.monotonic()
        chunks = store.chunks(corpus, rel, {"doc_type": doc_cases[0].doc_type} if doc_cases[0].doc_type else None)
        reference = document_text(chunks)
        if doc_cases[0].doc_text and (corpus / doc_cases[0].doc_text).exists():
            reference = (corpus / doc_cases[0].doc_text).read_text(encoding="utf-8", errors="replace")
        result = _run(deps, settings, chunks, list(dict.fromkeys(c.clause_type for c in doc_cases)), budget_tokens,
                      rel)
        total_usage = total_usage.add(Usage.model_validate(result["usage"]))
        found_by: dict[str, list[dict]] = defaultdict(list)
        for e in result["extractions"]:
            found_by[normalise(e["clause_type"])].append(e)
        shares = _shares(result, len(doc_cases))
        rows += [_case_row(case, found_by.get(normalise(catalogue.resolve(case.clause_type).name), []), reference,
                           shares) for case in doc_cases]
        if progress:
            progress(f"{rel}: {len(doc_cases)} cases, {result['sessions']} sessions, {time.monotonic() - t0:.1f} s")
    return _report(gold, corpus, model, budget_tokens, rows, total_usage, started)


def _report(gold: Path, corpus: Path, model: Model, budget_tokens: int | None, rows: list[dict], total_usage: Usage,
            started: float) -> dict:
    """The report: headline rates, strata, usage with the estimated cost (None when unpriced), case rows."""
    from longdoc.extract.cost import estimate_cost, load_prices

    try:
        total_cost = estimate_cost(total_usage, model.name, load_prices(None))
    except Exception:  # noqa: BLE001 - an unpriced model has no cost estimate
        total_cost = None
    return {
        "gold": str(gold), "corpus": str(corpus), "model": model.name,
        "threshold": getattr(model, "threshold", None), "budget_tokens": budget_tokens,
        **_rates(rows),
        "strata": _strata(rows, ("doc_type", "clause_type", "position")),
        "by": {k: _strata(rows, (k,)) for k in ("clause_type", "doc_type", "position")},
        "usage": {**total_usage.model_dump(), "cost_usd": total_cost,
                  "input_tokens_per_case": round(total_usage.input_tokens / max(len(rows), 1)),
                  "output_tokens_per_case": round(total_usage.output_tokens / max(len(rows), 1))},
        "case_results": rows,
        "seconds": round(time.monotonic() - started, 1),
    }


def _rates(rows: list[dict]) -> dict:
    """Headline shares over case rows (None where a share has no cases); see the module docstring."""
    found = [r for r in rows if r["expected"] == "found"]
    absent = [r for r in rows if r["expected"] != "found"]
    with_values = [r for r in rows if r["exact_values_total"]]

    def share(items: list, key: str) -> float | None:
        return round(sum(bool(i[key]) for i in items) / len(items), 4) if items else None

    return {
        "cases": len(rows),
        "found_cases": len(found),
        "not_found_cases": len(absent),
        "accuracy": share(rows, "correct"),
        "found_accuracy": share(found, "correct"),
        "found_status_rate": share(found, "status_correct"),
        "silent_source_rate": share(absent, "correct"),
        "exact_value_rate": (round(sum(r["exact_values_ok"] for r in with_values)
                                   / sum(r["exact_values_total"] for r in with_values), 4) if with_values else None),
        "section_accuracy": share([r for r in rows if r["section_correct"] is not None], "section_correct"),
        "page_accuracy": share([r for r in rows if r["page_correct"] is not None], "page_correct"),
    }


def _strata(rows: list[dict], keys: tuple[str, ...]) -> list[dict]:
    """One rates summary per combination of the ``keys`` values, worst accuracy first."""
    out = []
    for values, items in strata_groups(((r, r) for r in rows), keys).items():
        rates = _rates(items)
        entry = dict(zip(keys, values, strict=True))
        entry.update(cases=rates["cases"], accuracy=rates["accuracy"], found_accuracy=rates["found_accuracy"],
                     silent_source_rate=rates["silent_source_rate"], flagged=(rates["accuracy"] or 0.0) < FLAG_BELOW)
        out.append(entry)
    out.sort(key=lambda e: (e["accuracy"] or 0.0, -e["cases"], tuple(e[k] for k in keys)))
    return out


def render_extraction(report: dict, limit: int = 20) -> str:
    """A readable summary: headline rates, then clause types worst first."""
    def pct(x: float | None) -> str:
        return "  n/a" if x is None else f"{100 * x:5.1f}"

    lines = [f"extraction eval: {report['cases']} cases ({report['found_cases']} found, "
             f"{report['not_found_cases']} not_found), model {report['model']}"
             + (f" threshold {report['threshold']}" if report.get("threshold") is not None else "")
             + f", {report['seconds']} s",
             f"accuracy {pct(report['accuracy'])}  found (with correct quote) {pct(report['found_accuracy'])}  "
             f"found status {pct(report['found_status_rate'])}  silent-source {pct(report['silent_source_rate'])}  "
             f"exact values {pct(report['exact_value_rate'])}",
             f"usage: {report['usage']['input_tokens']} input / {report['usage']['output_tokens']} output tokens, "
             f"{report['usage']['input_tokens_per_case']} input tokens per case, cost {report['usage']['cost_usd']}",
             "", f"by clause type, worst first; * = accuracy under {int(FLAG_BELOW * 100)}%"]
    for s in report["by"]["clause_type"][:limit]:
        lines.append(f"{'*' if s['flagged'] else ' '} {s['clause_type'][:40]:<40} n={s['cases']:<3} "
                     f"acc {pct(s['accuracy'])}  silent {pct(s['silent_source_rate'])}")
    return "\n".join(lines)
