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

The search step (issue 20): ``search_calls`` is the session's ``search_chunks`` budget in
calls (default: settings); 0 turns the step off (the offline baseline does not search, and
with no budget the ``not_found`` evidence rule does not apply). ``compare_search`` runs each
document twice in the same process, without the search step and with it, over the same
ingested chunks: the report is the one with search, plus ``without_search`` (that run's
rates, usage and per-clause-type strata) and ``search_changes`` (:func:`search_changes`: the
cases that missed without it and hit with it, and the reverse, per clause type).
"""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from decimal import Decimal
from pathlib import Path
from typing import TYPE_CHECKING

from longdoc.core.progress import reporter
from longdoc.eval.calibration import calibration_by_clause_type
from longdoc.eval.gold import GoldCase, default_corpus, load_gold
from longdoc.eval.scoring import FLAG_BELOW, enclosing_section_keys, normalise, overlaps, position, strata_groups
from longdoc.eval.store import EvalStore, document_text, store_root

if TYPE_CHECKING:  # pragma: no cover - typing only
    from longdoc.config import Settings
    from longdoc.core.messages import Usage
    from longdoc.core.models import Chunk
    from longdoc.core.ports import Model
    from longdoc.extract.catalogue import Catalogue
    from longdoc.extract.session import Deps, SessionOptions

MAX_SESSIONS = 60


def _model(threshold: float | None, search: bool = True) -> Model:
    """The configured model; the offline baseline (with ``threshold`` when given, its search step
    on or off) when it is the baseline."""
    from longdoc import wiring

    if wiring.uses_baseline():
        return wiring.baseline_model(threshold, search=search)
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


def _run(deps: Deps, settings: Settings, chunks: list[Chunk], names: list[str], options: SessionOptions,
         rel: str) -> dict:
    """Start a run on the document of ``chunks`` for clause types ``names``, drive sessions (with
    ``options``) until DONE, and return :func:`~longdoc.extract.runs.run_result`. Raises
    ``RuntimeError`` after :data:`MAX_SESSIONS` sessions."""
    from longdoc.extract.runs import run_result, start_run
    from longdoc.extract.session import run_session

    run = start_run(deps.state, deps.catalogue, doc_id=chunks[0].doc_id, doc_version=chunks[0].doc_version,
                    clause_types=names, model_name=deps.model.name, max_tokens=settings.max_tokens,
                    top_k=settings.top_k)
    for _ in range(MAX_SESSIONS):
        if run_session(deps, run.run_id, options).status == "DONE":
            return run_result(deps.state, run.run_id)
    raise RuntimeError(f"run {run.run_id} on {rel} not DONE after {MAX_SESSIONS} sessions")


def _variants(store: EvalStore, settings: Settings, catalogue: Catalogue, threshold: float | None,
              budget_tokens: int | None, search_calls: int | None,
              compare_search: bool) -> list[tuple[str, Deps, SessionOptions]]:
    """``(label, deps, options)`` per variant run on each document: ``"without_search"`` (only with
    ``compare_search``), then the main one (search budget ``search_calls``, default: settings)."""
    from longdoc.extract.session import Deps, SessionOptions

    calls = settings.search_max_calls if search_calls is None else search_calls
    out = []
    for label, budget in ([("without_search", 0)] if compare_search else []) + [("main", calls)]:
        deps = Deps(state=store.state, blobs=store.blobs, embedder=store.embedder, index=store.index,
                    model=_model(threshold, search=budget > 0), catalogue=catalogue)
        options = SessionOptions(budget_tokens=budget_tokens, search_max_calls=budget,
                                 search_max_tokens=settings.search_max_tokens,
                                 search_min_score=settings.search_min_score)
        out.append((label, deps, options))
    return out


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
        "confidence": _confidence(found or got),
        **shares,
    }


def _confidence(answers: list[dict]) -> float | None:
    """The answer's evidence confidence (issue 29): the best of its extractions' scores; None when unscored."""
    scores = [e["confidence"]["score"] for e in answers if e.get("confidence")]
    return max(scores) if scores else None


def _shares(result: dict, cases: int) -> dict:
    """Each of ``cases`` cases' equal share of the run's tokens (rounded) and cost (6 decimals, or None)."""
    usage = result["usage"]
    cost = Decimal(result["cost_usd"]) / cases if result["cost_usd"] is not None else None
    return {"input_tokens": round(usage["input_tokens"] / max(cases, 1)),
            "output_tokens": round(usage["output_tokens"] / max(cases, 1)),
            "cost_usd": None if cost is None else f"{cost:.6f}"}


def evaluate_extraction(gold: Path, corpus: Path | None = None, *, home: Path | None = None,
                        threshold: float | None = None, target_tokens: int | None = None,
                        budget_tokens: int | None = None, search_calls: int | None = None,
                        compare_search: bool = False, progress: Callable[[str], None] | None = None) -> dict:
    """Run the extraction evaluation; returns the report (see module docstring).

    ``threshold`` overrides the offline baseline's threshold (tuning); ``search_calls`` the search
    budget (0: no search step); ``compare_search`` adds the run without the search step. Raises
    ``FileNotFoundError`` for a missing document and ``RuntimeError`` when a run does not finish
    within :data:`MAX_SESSIONS` sessions.
    """
    from longdoc.config import get_settings
    from longdoc.core.messages import Usage

    started = time.monotonic()
    settings = get_settings()
    cases = load_gold(gold)
    corpus = Path(corpus) if corpus else default_corpus(gold)
    target = target_tokens or settings.chunk_target_tokens
    maximum = max(settings.chunk_max_tokens, target * 2)
    store = EvalStore(store_root(Path(home or settings.home), target, maximum), target, maximum)
    catalogue = _catalogue(settings, cases)
    variants = _variants(store, settings, catalogue, threshold, budget_tokens, search_calls, compare_search)
    by_doc: dict[str, list[GoldCase]] = defaultdict(list)
    for case in cases:
        by_doc[case.doc].append(case)
    rows: dict[str, list[dict]] = {label: [] for label, _, _ in variants}
    usage: dict[str, Usage] = {label: Usage() for label, _, _ in variants}
    shown = reporter()
    shown.start("eval extraction", len(by_doc), "documents")
    for rel, doc_cases in by_doc.items():
        t0 = time.monotonic()
        chunks = store.chunks(corpus, rel, {"doc_type": doc_cases[0].doc_type} if doc_cases[0].doc_type else None)
        reference = document_text(chunks)
        if doc_cases[0].doc_text and (corpus / doc_cases[0].doc_text).exists():
            reference = (corpus / doc_cases[0].doc_text).read_text(encoding="utf-8", errors="replace")
        names = list(dict.fromkeys(c.clause_type for c in doc_cases))
        for label, deps, options in variants:
            result = _run(deps, settings, chunks, names, options, rel)
            usage[label] = usage[label].add(Usage.model_validate(result["usage"]))
            rows[label] += _doc_rows(doc_cases, result, catalogue, reference)
            if progress:
                progress(f"{rel}{'' if label == 'main' else f' ({label})'}: {len(doc_cases)} cases, "
                         f"{result['sessions']} sessions, {time.monotonic() - t0:.1f} s")
        shown.advance("eval extraction")
    shown.finish("eval extraction")
    main = variants[-1]
    report = _report(gold, corpus, main[1].model, budget_tokens, rows["main"], usage["main"], started)
    report["search_calls"] = main[2].search_max_calls
    if compare_search:
        report["without_search"] = _rates(rows["without_search"])
        report["without_search"]["usage"] = usage["without_search"].model_dump()
        report["without_search"]["by_clause_type"] = _strata(rows["without_search"], ("clause_type",))
        report["search_changes"] = search_changes(rows["without_search"], rows["main"])
    return report


def _doc_rows(doc_cases: list[GoldCase], result: dict, catalogue: Catalogue, reference: str) -> list[dict]:
    """The scored rows of one document's cases from its run's result."""
    found_by: dict[str, list[dict]] = defaultdict(list)
    for e in result["extractions"]:
        found_by[normalise(e["clause_type"])].append(e)
    shares = _shares(result, len(doc_cases))
    return [_case_row(case, found_by.get(normalise(catalogue.resolve(case.clause_type).name), []), reference, shares)
            for case in doc_cases]


def search_changes(before: list[dict], after: list[dict]) -> dict:
    """Per-case differences between two runs of the same cases (without and with the search step).

    Returns ``{"now_correct": [...], "regressed": [...], "by_clause_type": [...]}``: the case ids
    (with clause type, expected status and answers) that were wrong before and correct after, and
    the reverse; per clause type with any change, found accuracy and silent-source rate before and
    after and the two counts.
    """
    old = {r["case_id"]: r for r in before}

    def brief(r: dict) -> dict:
        return {"case_id": r["case_id"], "clause_type": r["clause_type"], "expected": r["expected"],
                "answered_before": old[r["case_id"]]["answered"], "answered_after": r["answered"]}

    now = [brief(r) for r in after if r["correct"] and not old[r["case_id"]]["correct"]]
    lost = [brief(r) for r in after if not r["correct"] and old[r["case_id"]]["correct"]]
    changed = {c["clause_type"] for c in now + lost}
    table = []
    for clause in sorted(changed):
        b = _rates([r for r in before if r["clause_type"] == clause])
        a = _rates([r for r in after if r["clause_type"] == clause])
        table.append({"clause_type": clause, "cases": a["cases"], "found_cases": a["found_cases"],
                      "found_accuracy_before": b["found_accuracy"], "found_accuracy_after": a["found_accuracy"],
                      "silent_source_before": b["silent_source_rate"], "silent_source_after": a["silent_source_rate"],
                      "now_correct": sum(c["clause_type"] == clause for c in now),
                      "regressed": sum(c["clause_type"] == clause for c in lost)})
    return {"now_correct": now, "regressed": lost, "by_clause_type": table}


def _report(gold: Path, corpus: Path, model: Model, budget_tokens: int | None, rows: list[dict], total_usage: Usage,
            started: float) -> dict:
    """The report: headline rates, strata, usage with the estimated cost (None when unpriced), case rows."""
    from longdoc.core.cost import estimate_cost, load_prices

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
        "calibration": _calibration(rows),
        "calibration_by_clause_type": calibration_by_clause_type(rows),
        "seconds": round(time.monotonic() - started, 1),
    }


def _calibration(rows: list[dict]) -> dict:
    """ECE, AUROC (wrong against right, ties counted half) and precision above the accept threshold of
    the rows' confidences (:mod:`longdoc.eval.calibration`), plus ``wrong_above_09``: wrong answers
    scored 0.9 or more."""
    from longdoc.config import get_settings
    from longdoc.eval.calibration import calibration, confidence_pairs

    pairs = confidence_pairs(rows)
    return {**calibration(pairs, get_settings().review_accept_threshold),
            "wrong_above_09": sum(1 for c, ok in pairs if c >= 0.9 and not ok)}


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
    lines += _render_confidence(report, limit)
    if "without_search" in report:
        lines += _render_changes(report, pct)
    return "\n".join(lines)


def _render_confidence(report: dict, limit: int) -> list[str]:
    """The confidence lines: ECE, AUROC and the accept band overall, then per clause type, worst AUROC first."""
    cal = report.get("calibration")
    if not cal or not cal.get("cases"):
        return []

    def num(x: float | None) -> str:
        return "  n/a" if x is None else f"{x:.3f}"

    lines = ["", f"confidence: {cal['cases']} scored cases, {cal['wrong']} wrong; AUROC (wrong vs right, ties "
             f"count half) {num(cal['auroc'])}; ECE {num(cal['ece'])}; {cal['above']} at >= {cal['threshold']} "
             f"(precision {num(cal['precision_above'])}); {cal.get('wrong_above_09', 0)} wrong at >= 0.9",
             "by clause type, lowest AUROC first (n/a: all right or all wrong):"]
    for c in report.get("calibration_by_clause_type", [])[:limit]:
        lines.append(f"  {c['clause_type'][:40]:<40} n={c['cases']:<3} wrong {c['wrong']:<3} AUROC {num(c['auroc'])}  "
                     f"ECE {num(c['ece'])}")
    return lines


def _render_changes(report: dict, pct: Callable[[float | None], str]) -> list[str]:
    """The compare-search lines: both headlines, then each clause type whose cases changed."""
    off, changes = report["without_search"], report["search_changes"]
    lines = ["", f"search step (budget {report['search_calls']} calls per session) against none, same run:",
             f"  without search: accuracy {pct(off['accuracy'])}  found {pct(off['found_accuracy'])}  "
             f"silent-source {pct(off['silent_source_rate'])}",
             f"  with search:    accuracy {pct(report['accuracy'])}  found {pct(report['found_accuracy'])}  "
             f"silent-source {pct(report['silent_source_rate'])}",
             f"  {len(changes['now_correct'])} cases now correct, {len(changes['regressed'])} regressed"]
    for c in changes["by_clause_type"]:
        lines.append(f"  {c['clause_type'][:40]:<40} found {pct(c['found_accuracy_before'])} -> "
                     f"{pct(c['found_accuracy_after'])}  silent {pct(c['silent_source_before'])} -> "
                     f"{pct(c['silent_source_after'])}  +{c['now_correct']} -{c['regressed']}")
    return lines
