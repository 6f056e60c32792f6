"""Text views of a triage result: the band table, the budget bands (``--explain``) and the answer."""

from __future__ import annotations

from typing import Any


UNNAMED = "in no query's first 5 (ranked in by the fusion of all)"
UNRANKED = "found by no query (fills the band in document order)"
"""What ``--explain`` says of a clause that no query had in its first five."""


def _cut(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def band_table(result: dict[str, Any]) -> list[str]:
    """One line per clause sent: rank, clause id, document, heading path, tokens; then the band's total."""
    band = result["band"]
    width = max([len("CLAUSE"), *(len(c["clause_id"]) for c in band["clauses"])]) + 2
    lines = [f"{'RANK':<5}{'CLAUSE':<{width}}{'HEADING PATH':<50}{'TOKENS':>6}"]
    for c in band["clauses"]:
        path = " > ".join(c["heading_path"][1:] or c["heading_path"]) or "-"
        lines.append(f"{c['rank']:<5}{c['clause_id']:<{width}}{_cut(path, 49):<50}{c['tokens']:>6}")
    over = "  (the top clause alone is over the band: sent and counted)" if band["top_over_band"] else ""
    lines.append(f"clause band: {band['tokens']} of {band['limit']} tokens, {len(band['clauses'])} clause(s){over}")
    lines += [f"warning: {w}" for w in result.get("warnings", [])]
    return lines


def explain_table(result: dict[str, Any]) -> list[str]:
    """The claim's queries, which query found each clause sent (``loss#1``: first for the loss query),
    then each band's estimated tokens against the input budget (``--explain``)."""
    budget = result["budget"]
    lines = [f"query {q['name']} (weight {q['weight']}): {_cut(q['text'], 100)}" for q in result.get("queries", [])]
    lines += [f"  {c['clause_id']} " + (f"found by {', '.join(c['found_by'])}" if c.get("found_by") else
                                         UNNAMED if c.get("ranked", True) else UNRANKED)
              for c in result["band"]["clauses"]]
    lines += [f"input budget {budget['input_budget']} tokens from {budget['source']}"]
    lines += [f"  {name:<22}{tokens:>7}" for name, tokens in budget["bands"].items()]
    return lines


def answer_lines(result: dict[str, Any]) -> list[str]:
    """The decision (labelled when it is the offline baseline or unverified), reasons and citations."""
    label = " (offline baseline: ranked clauses only, no decision)" if result["baseline"] else ""
    label += "" if result["verified"] else " (unverified: the model's citations failed the harness)"
    lines = [f"decision: {result['decision']}{label}   model: {result['model']}"]
    lines += [f"  reason: {r}" for r in result["reasons"]]
    lines += [f"  cites {c['clause_id']} ({c['doc_id']}): \"{_cut(' '.join(c['quote'].split()), 110)}\""
              for c in result["citations"]]
    if result["case_facts"]:
        lines.append("  CASE_FACTS: " + ", ".join(f"{k}={v}" for k, v in result["case_facts"].items()))
    return lines


def render(result: dict[str, Any], explain: bool = False) -> str:
    """The whole view: the wording in force, the band table, (the budget bands,) the answer."""
    w = result["wording"]
    head = (f"claim {result['claim_id'] or '-'}: {result['line_of_business']} loss on {result['loss_date']} -> "
            f"{w['doc_id']} (term {w['term'] or '-'}, {w['effective_from'] or ''}..{w['effective_to'] or ''})")
    if result["endorsements"]:
        head += " + " + ", ".join(e["doc_id"] for e in result["endorsements"])
    parts = [head, *band_table(result)]
    if explain:
        parts += explain_table(result)
    return "\n".join([*parts, *answer_lines(result)])
