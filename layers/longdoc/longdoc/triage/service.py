"""One triage: collection, claim, term in force, filter, rank, band, prompt, answer.

Used by ``longdoc triage``, ``POST /triage`` and ``make demo``. The model is optional: with
none (no API key: the offline baseline is configured) no model is called and the answer is
the labelled baseline (:func:`longdoc.triage.answer.baseline_answer`).
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from longdoc.core.documents import load_chunks
from longdoc.core.errors import TriageError
from longdoc.core.ports import BlobStore, Embedder, Model, Reranker, StateStore, TokenCounter, VectorIndex
from longdoc.core.tokens import document_measure
from longdoc.triage.answer import Answer, baseline_answer, run_model
from longdoc.triage.budget import (DEFAULT_INPUT_BUDGET, RESERVED_OUTPUT_TOKENS, Bands, clause_band,
                                   parse_cost_line)
from longdoc.triage.claim import Claim, claim_from_json, decode_text, read_claim, surrogate_field
from longdoc.triage.clauses import Band, Clause, fill_band, units_as_clauses
from longdoc.triage.query_writer import log_skipped, queries_with_writer
from longdoc.triage.ranking import Ranked, rank_claim
from longdoc.triage.unit_vectors import pool_vectors
from longdoc.triage.collections import Member, load_collection
from longdoc.triage.prompt import DEFAULT_EXAMPLES, build_request, fixed_parts
from longdoc.triage.terms import Resolution, resolve

log = logging.getLogger(__name__)


MAX_EXAMPLES_CHARS = 100_000
"""Longest worked examples accepted (characters; ``examples`` of :class:`TriageRequest`): the cached prompt
prefix stays well inside the input budget of a claim."""


class TriageRequest(BaseModel):
    """What one triage needs (the CLI's flags, ``POST /triage``'s body).

    ``claim`` is the claim file's JSON object or its text. ``loss_date`` (``YYYY-MM-DD``) and
    ``line_of_business`` override the claim's own. The input budget is ``budget_tokens``, or
    derived from ``cost_line`` (:func:`~longdoc.triage.budget.parse_cost_line`), else
    :data:`~longdoc.triage.budget.DEFAULT_INPUT_BUDGET`; not both. ``examples`` replaces the
    built-in worked examples.
    """

    model_config = ConfigDict(extra="forbid")

    collection: str = Field(min_length=1, max_length=200,
                            description="the policy set (collection of list_documents) whose wording in force is read")
    claim: dict[str, Any] | str = Field(description="the claim: a JSON object (loss_date, line_of_business, "
                                                    "description, ...) or its plain text")
    loss_date: str | None = Field(None, max_length=40,
                                  description="YYYY-MM-DD; picks the wording in force that day (default: the claim's)")
    line_of_business: str | None = Field(None, min_length=1, max_length=200,
                                         description="default: the claim's, or the collection's only one")
    budget_tokens: int | None = Field(None, ge=1, le=1_000_000,
                                      description="input tokens the triage prompt may use (not with cost_line)")
    cost_line: str | None = Field(None, max_length=200,
                                  description="cost,input_price,output_price,reserve_tokens (USD per claim, USD "
                                              "per million tokens, tokens): the budget derived from it "
                                              "(not with budget_tokens)")
    examples: str | None = Field(None, max_length=MAX_EXAMPLES_CHARS,
                                 description="worked examples replacing the built-in ones (text)")

    @model_validator(mode="after")
    def _one_budget(self) -> "TriageRequest":
        if self.budget_tokens is not None and self.cost_line is not None:
            raise ValueError("give budget_tokens or cost_line, not both")
        return self


@dataclass
class TriageDeps:
    """The stores and models one triage uses; ``embedder``/``index`` None: BM25 only; ``model`` None: baseline."""

    state: StateStore
    blobs: BlobStore
    embedder: Embedder | None = None
    index: VectorIndex | None = None
    model: Model | None = None
    tokens: TokenCounter | None = None
    """Sizes the clause band: the token-counting endpoint with a key, else the offline estimate."""
    reranker: Reranker | None = None
    """Reorders the fused top clauses (``LONGDOC_RERANKER=voyage``: Voyage rerank); None keeps the fused order."""
    query_writer: bool = False
    """``LONGDOC_TRIAGE_QUERY_WRITER=model``: ``model`` writes extra queries, one cached request per claim
    (:mod:`longdoc.triage.query_writer`); skipped when ``model`` is None."""


def parse_claim(request: TriageRequest) -> Claim:
    """The request's claim (JSON object or text), errors as one line naming the claim."""
    if isinstance(request.claim, dict):
        return claim_from_json(request.claim)
    if surrogate_field(request.claim):
        raise TriageError("claim in the request holds a lone UTF-16 surrogate (a \\ud800-\\udfff escape), which is "
                          "not a character: send the text as UTF-8", "claim")
    return read_claim(request.claim.encode("utf-8"), "in the request")


def claim_context(claim: Claim, members: list[Member], loss_date: str | None,
                  line_of_business: str | None) -> tuple[str, str]:
    """The loss date and line of business: the flags first, then the claim; one line when either is missing.

    A collection with a single line of business needs none named.
    """
    loss = loss_date or claim.loss_date
    if not loss:
        raise TriageError("no loss date: pass --loss-date YYYY-MM-DD or put loss_date in the claim", "loss_date")
    lob = line_of_business or claim.line_of_business
    lines = sorted({m.line_of_business for m in members if m.line_of_business and not m.is_endorsement})
    if not lob and len(lines) == 1:
        lob = lines[0]
    if not lob:
        raise TriageError(f"no line of business: pass --line-of-business (collection has: {', '.join(lines)})",
                          "line_of_business")
    return loss, lob


def pool(blobs: BlobStore, resolution: Resolution, tokens: TokenCounter | None = None) -> list[Clause]:
    """The clause units of the wording in force and of its endorsements in force: the only ones ranked,
    each sized with ``tokens`` (None: the offline estimate). Units come from the documents' structure
    (:func:`~longdoc.triage.clauses.units_as_clauses`), whatever chunk size the ingest used."""
    out: list[Clause] = []
    for member in resolution.members:
        chunks = load_chunks(blobs, member.doc_id, member.doc_version)
        out += units_as_clauses(chunks, endorsement=member.is_endorsement, start=len(out),
                          count=document_measure(tokens, [c.text for c in chunks]))
    return out


def ranked_clauses(deps: TriageDeps, resolution: Resolution, claim: Claim) -> Ranked:
    """Every clause of the documents in force, best first for the claim's queries (hybrid when an
    index is wired; reranked when a reranker is), with the queries and each clause's reasons. With
    ``deps.query_writer`` and no model, one warning line says the step is skipped
    (:func:`~longdoc.triage.query_writer.log_skipped`)."""
    clauses = pool(deps.blobs, resolution, deps.tokens)
    embedder, index = deps.embedder, deps.index
    embed = embedder.embed_query if embedder is not None and index is not None else None
    vectors, parts = pool_vectors(deps.blobs, embedder, clauses) if embedder is not None and embed is not None \
        else (None, None)
    if deps.query_writer and deps.model is None:
        log_skipped()
    queries = queries_with_writer(deps.model, deps.blobs, claim, clauses) if deps.query_writer else None
    return rank_claim(clauses, claim, index=index if embed is not None else None, embed=embed,
                      reranker=deps.reranker, vectors=vectors, queries=queries, passages=parts)


def input_budget(request: TriageRequest) -> tuple[int, int, str]:
    """``(input budget, reserved output tokens, where the budget came from)``."""
    if request.cost_line:
        line = parse_cost_line(request.cost_line)
        return line.input_budget(), line.reserve or RESERVED_OUTPUT_TOKENS, f"cost line {request.cost_line}"
    if request.budget_tokens:
        return request.budget_tokens, RESERVED_OUTPUT_TOKENS, "budget tokens"
    return DEFAULT_INPUT_BUDGET, RESERVED_OUTPUT_TOKENS, "default (the design's cost line 0.005,1,4,160)"


def wording_line(resolution: Resolution) -> str:
    """``home-2024 (home, term 2024, 2024-01-01..2024-12-31) with endorsement hw-e1``."""
    w = resolution.wording
    text = f"{w.doc_id} ({w.line_of_business}, term {w.term or '-'}, {w.period()})"
    if resolution.endorsements:
        text += " with endorsement(s) " + ", ".join(e.doc_id for e in resolution.endorsements)
    return text


def unranked_count(band: Band, found: int | None) -> int:
    """How many of the band's clauses no query found: those past the first ``found`` of the ranking
    (:attr:`~longdoc.triage.ranking.Ranked.found`; None: every clause was found)."""
    return 0 if found is None else max(0, len(band.clauses) - found)


def unranked_warning(band: Band, found: int) -> str | None:
    """The warning for a band holding clauses that no query found (they fill it in document order
    after the ranked ones), or None when every clause sent was ranked in."""
    unranked = unranked_count(band, found)
    if not unranked:
        return None
    if found == 0:
        return ("no query found any clause of the wording: the band is its first clauses in document order, "
                "not a ranking (the claim shares no word with the wording; describe the loss, or use --explain)")
    return (f"{unranked} of the band's {len(band.clauses)} clauses were found by no query: they follow the "
            f"ranked ones in document order")


def rerank_warning(error: str | None) -> str | None:
    """The warning for a triage whose reranker failed (:attr:`~longdoc.triage.ranking.Ranked.rerank_error`),
    the clauses then in fused order; None when it did not fail."""
    if error is None:
        return None
    log.info("triage rerank failed, fused order kept: %s", error)  # the answer's warnings say it to the caller
    return f"the reranker failed ({error}): the clauses are in fused order, not reranked"


def _band_json(band: Band, reasons: dict[str, list[str]] | None = None, found: int | None = None) -> dict[str, Any]:
    return {"limit": band.limit, "tokens": band.tokens, "top_over_band": band.top_over_band,
            "unranked": unranked_count(band, found),
            "clauses": [{"rank": i + 1, "clause_id": c.clause_id, "doc_id": c.doc_id, "chunk_id": c.chunk_id,
                         "heading_path": list(c.heading_path), "tokens": c.tokens, "endorsement": c.endorsement,
                         "found_by": (reasons or {}).get(c.key, []), "ranked": found is None or i < found}
                        for i, c in enumerate(band.clauses)]}


def run_triage(request: TriageRequest, deps: TriageDeps) -> dict[str, Any]:
    """Triage one claim; returns the result as JSON (shape in docs/triage.md).

    Raises :class:`~longdoc.core.errors.TriageError` (one line) for bad input, and the
    model port's errors when the model fails.
    """
    members = load_collection(deps.state, request.collection)
    claim = parse_claim(request)
    loss, lob = claim_context(claim, members, request.loss_date, request.line_of_business)
    resolution = resolve(request.collection, members, lob, loss)
    budget, reserve, source = input_budget(request)
    examples = request.examples if request.examples is not None else DEFAULT_EXAMPLES
    fixed = fixed_parts(claim, examples)
    # the budget is checked before anything is ranked: a claim too long for it is refused at once
    limit = clause_band(budget, fixed.instructions, fixed.examples, fixed.claim, fixed.task)
    ranking_result = ranked_clauses(deps, resolution, claim)
    band = fill_band(ranking_result.clauses, limit)
    if deps.model is None:
        answer: Answer = baseline_answer()
    else:
        req = build_request(band.clauses, claim, wording_line(resolution), examples=examples, max_tokens=reserve)
        answer = run_model(deps.model, req, band.clauses)
    bands = Bands(budget, fixed.instructions, fixed.examples, band.tokens, fixed.claim, fixed.task, reserve, band.limit)
    ranking = "hybrid (BM25 + dense)" if deps.embedder is not None and deps.index is not None else "bm25"
    ranking += ", reranked" if ranking_result.reranked else ""
    warnings = [w for w in [unranked_warning(band, ranking_result.ranked_count),
                            rerank_warning(ranking_result.rerank_error)] if w]
    return {"collection": request.collection, "claim_id": claim.claim_id, "loss_date": resolution.loss_date,
            "line_of_business": lob, "wording": _member(resolution.wording),
            "endorsements": [_member(e) for e in resolution.endorsements], "case_facts": claim.case_facts,
            **answer.to_json(), "ranking": ranking,
            "queries": [{"name": q.name, "text": q.text, "weight": q.weight} for q in ranking_result.queries],
            "band": _band_json(band, ranking_result.reasons, ranking_result.ranked_count),
            "warnings": warnings,
            "budget": {"input_budget": budget, "source": source, "bands": dict(bands.rows())}}


def _member(member: Member) -> dict[str, Any]:
    return {"doc_id": member.doc_id, "doc_version": member.doc_version, "term": member.term,
            "effective_from": member.effective_from, "effective_to": member.effective_to}


def request_from_file(data: bytes, name: str, **fields: Any) -> TriageRequest:
    """A :class:`TriageRequest` for a claim file's bytes (checked as :func:`read_claim` checks them, decoded
    as :func:`~longdoc.triage.claim.decode_text` decodes them)."""
    read_claim(data, name)  # one clear line for an empty, binary or malformed file, naming it
    text = decode_text(data, name)
    claim: dict[str, Any] | str = json.loads(text) if text.lstrip().startswith("{") else text
    return TriageRequest(claim=claim, **fields)


def read_examples(data: bytes, name: str) -> str:
    """The worked examples of an examples file's bytes (decoded as a claim file is,
    :func:`~longdoc.triage.claim.decode_text`). Raises :class:`TriageError` naming the file when it is
    binary, empty (only blanks: the built-in examples would be silently replaced by none), or over
    :data:`MAX_EXAMPLES_CHARS` characters."""
    text = decode_text(data, name, "examples file")
    if not text.strip():
        raise TriageError(f"examples file {name} is empty: give worked examples, or leave out --examples for the "
                          "built-in ones", "examples")
    if len(text) > MAX_EXAMPLES_CHARS:
        raise TriageError(f"examples file {name} is {len(text)} characters, over the {MAX_EXAMPLES_CHARS}-character "
                          "limit of worked examples", "examples")
    return text
