"""Triage's ranking: each named query of the claim ranked on its own, fused, optionally reranked, with reasons.

For every :class:`~longdoc.triage.queries.Query`: BM25 over the clause units' items (each unit
ranked by its best sentence or list item, :mod:`longdoc.triage.passages`) and, with an embedder,
the dense ranking of the units (each by its best passage vector mixed with its whole vector). All rankings are fused by
reciprocal rank fusion (:func:`longdoc.search.fusion.rrf`, ``k`` = :data:`TRIAGE_RRF_K`), each
weighted by its query's weight. A :class:`~longdoc.core.ports.Reranker` (Voyage rerank with
``LONGDOC_RERANKER=voyage``, on AWS and locally; none offline) then reorders the first
:data:`RERANK_TOP` with the claim as a handler reads it (:func:`rerank_query`: an instruction, the
form's descriptive fields and the whole note, conditions and the quantum question included); when the
reranker fails, the fused order stands and :attr:`Ranked.rerank_error` says why; a pinned query's first hit (:attr:`~longdoc.triage.queries.Query.pin`) is then held
within the first :data:`~longdoc.triage.queries.PIN_RANK`. ``reasons`` name, for each clause, the queries that had it in their first
:data:`REASON_DEPTH` (``loss#1``, ``defined terms#2``), shown by ``--explain``.

:data:`LEGACY` is the ranking before issue 31 (one query: the whole claim text), kept callable
as a named baseline for ``longdoc eval triage``.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from longdoc.core.errors import RerankRequestError, RerankUnavailable
from longdoc.core.models import Chunk
from longdoc.core.text import cut_near_space
from longdoc.core.ports import Reranker, VectorIndex
from longdoc.search.fusion import rrf
from longdoc.triage.claim import Claim
from longdoc.triage.clauses import DENSE_WEIGHT, Clause, bm25_ranking, dense_ranking, rank
from longdoc.triage.passages import dense_passage_ranking, passage_bm25_ranking
from longdoc.triage.unit_vectors import dense_unit_ranking
from longdoc.triage.routing import unit_roles
from longdoc.triage.vocabulary import lay_tokens
from longdoc.triage.queries import (PIN_RANK, Definition, Query, claim_queries, definitions, is_definitions,
                                    loss_fields, rare_words)

RERANK_TOP = 60
"""Fused candidates the reranker reorders (the rest keep their fused order after them). Measured
(docs/benchmarks.md, "Triage: how deep the reranker must read"): on blind claims over wordings not in
this repository (sets 14-16) the deciding unit is within the fused first 20 for 0.64-0.89 of claims (BM25
alone, as the API function ranks: 0.61-0.89), within the first 60 for 0.86-1.0; on the shared wordings
0.96-0.98 at both depths. A reranker reading 20 could not reach 0.90 on two of those sets whatever it scored; 60 units
of at most 400 tokens and a query of at most 3,000 are one Voyage request (well under its 600K tokens)."""
RERANK_INSTRUCTION = ("Instruction: find the insurance policy clause that decides this claim: the cover it falls "
                      "under, or the exclusion, condition (notice, reporting, conduct after the loss) or limit that "
                      "applies to it.")
"""Opens every triage rerank query. Voyage's rerank-2.5 and rerank-2.5-lite follow a natural-language
instruction given with the query (https://docs.voyageai.com/docs/reranker; the models' release note
of 2025-08-11 on instruction-following); a claim's deciding clause is often not the one sharing its
words (an exclusion, a notice condition, a sub-limit), which the instruction names."""
RERANK_QUERY_CHARS = 12_000
"""Most characters of a rerank query (about 3,000 tokens at 4 characters a token): under the 8,000-token
query limit of rerank-2.5 / rerank-2.5-lite (https://docs.voyageai.com/reference/reranker-api), and
small beside the 600K tokens a request may hold with 60 clauses (query tokens x documents + document
tokens, same page). A longer claim is cut at a word; the adapter also sends ``truncation: true``."""
UNIT_DENSE_WEIGHT = 1.0
"""The dense ranking's weight over unit vectors (BM25's is 1): units are small enough for the
vector to stand for the clause, unlike a large extraction chunk's."""
DEFINITION_WEIGHT = 0.5
"""Fused score factor of a unit that is a run of definitions: it shares words with every claim, but
decides none; its terms reach the ranking through the ``defined terms`` query instead."""
NAMED_DEFINITION_WEIGHT = 0.75
"""... and of one that defines a term of two words or more that the claim names (:func:`_factor`)."""
CONTENTS_WEIGHT = 0.0
"""Fused score factor of a table-of-contents unit (:func:`is_contents`): it names every benefit and
exclusion by title, so it shares words with every claim, and decides none; it ranks after every unit
a query found."""
_JSON_CONTAINER = re.compile(r"^\s*[\[{]")
"""A claim field flattened from a nested list or object (:func:`~longdoc.triage.claim.claim_from_json`
keeps it as JSON text)."""
_TERM_LINE = re.compile(r"^\s*[\"“']?([A-Z][\w’'/&-]*,?(?:\s+(?:[A-Z][\w’'/&-]*|of|and|or|the|for|in|to),?){1,5}?)"
                        r"[\"”']?\s*(?:means\b|shall mean\b|refers to\b|is defined as\b|[-–—:]\s)", re.MULTILINE)
"""A definition line whose term has two to six words, each capitalised or a joining word
(``Intensive Care Unit - a section ...``, ``"Personal Money" means ...``, ``Sickness, Disease or
Illness - ...``): one word (``Hospital``) is in nearly every claim of its line."""
_CONTENTS_LINE = re.compile(r"(?:[.…_·] ?){4,}\s*(?:\d{1,4}|[ivxlc]{1,6})\s*$", re.IGNORECASE)
_PAGE_NUMBER = re.compile(r"^\s*(?:\d{1,4}|[ivxlc]{1,6})\s*$", re.IGNORECASE)
_CONTENTS_HEADING = re.compile(r"^\W*(?:table\s+of\s+)?contents\W*$", re.IGNORECASE)
TRIAGE_RRF_K = 5
"""Reciprocal rank fusion constant of triage's query fusion (extraction keeps
:data:`longdoc.search.fusion.RRF_K` = 60). A claim's queries are few and unequal: the ``loss``
query's first hit is strong evidence, which ``k = 60`` flattens until a spurious secondary query
(a defined term that shares two words) outvotes it. Measured (docs/benchmarks.md, "Triage fusion
constant"): k = 5 lifted recall@3 on every set, most on blind claims over wordings not in this
repository (0.571 -> 0.679 on 56 claims); 10 was close, 2 and 20 worse."""
REASON_DEPTH = 5
"""A query is named as a reason for a clause when the clause is in that query's first this many."""
LEGACY = "legacy-single-query"
"""Name of the pre-issue-31 ranking (the claim text as one query over chunk sections)."""


@dataclass
class Ranked:
    """The ranked pool: ``clauses`` best first, the ``queries`` used, and ``reasons`` per clause key
    (``["loss#1", "condition#3"]``: query name and the clause's rank in that query)."""

    clauses: list[Clause]
    queries: list[Query]
    reasons: dict[str, list[str]] = field(default_factory=dict)
    found: int | None = None
    """How many of ``clauses``, from the first, some query scored (or the reranker ranked: its first
    :data:`RERANK_TOP`); the rest follow in pool (document) order, found by none (None: all of them)."""
    reranked: bool = False
    """Whether a reranker reordered the first :data:`RERANK_TOP` (False: none wired, or it failed)."""
    rerank_error: str | None = None
    """Why the wired reranker did not reorder (its error, one line, no key), the fused order standing; None else."""

    @property
    def ranked_count(self) -> int:
        """:attr:`found`, or every clause when it is None."""
        return len(self.clauses) if self.found is None else self.found


def pool_definitions(clauses: Sequence[Clause]) -> list[Definition]:
    """The defined terms of the pool's wordings (their definitions sections), in pool order."""
    return definitions([c.text for c in clauses])


def offline_queries(clauses: Sequence[Clause], claim: Claim) -> list[Query]:
    """The claim's offline queries over this pool (:func:`~longdoc.triage.queries.claim_queries` with the
    pool's definitions, rare words and wording words): what :func:`rank_claim` uses without ``queries``."""
    texts = [c.text for c in clauses]
    words = {w for t in texts for w in lay_tokens(t)}
    return claim_queries(claim, pool_definitions(clauses), rare_words(texts), words)


def rank_claim(clauses: Sequence[Clause], claim: Claim, *, index: VectorIndex | None = None,
               embed: Callable[[str], Sequence[float]] | None = None, reranker: Reranker | None = None,
               queries: Sequence[Query] | None = None, dense_weight: float = DENSE_WEIGHT,
               vectors: dict[str, list[float]] | None = None, unit_weight: float = UNIT_DENSE_WEIGHT,
               passages: dict[str, list[list[float]]] | None = None, strict_rerank: bool = False) -> Ranked:
    """Every clause of the pool, best first for ``claim``'s queries (see the module docstring).

    ``embed`` maps a query text to its vector (None: BM25 only). With ``vectors`` (clause key ->
    unit vector, :func:`longdoc.triage.unit_vectors.unit_vectors`) the dense ranking is over the
    units, weighted ``unit_weight`` (with ``passages``, clause key -> passage vectors from
    :func:`longdoc.triage.unit_vectors.passage_vectors`, each unit scored by its best passage mixed
    with its whole vector: :func:`~longdoc.triage.passages.dense_passage_ranking`); else, with an
    ``index``, over their chunks, weighted ``dense_weight``. BM25 ranks each unit by its best item
    (:func:`~longdoc.triage.passages.passage_bm25_ranking`). ``queries`` overrides
    :func:`~longdoc.triage.queries.claim_queries` (e.g. a model-written set). Clauses no query found
    follow in pool order, so every clause has a rank.

    ``reranker`` reorders the first :data:`RERANK_TOP` with :func:`rerank_query`. When it raises
    :class:`~longdoc.core.errors.RerankUnavailable` or :class:`~longdoc.core.errors.RerankRequestError`,
    the fused order is kept and :attr:`Ranked.rerank_error` names the error (a synchronous triage
    still answers); with ``strict_rerank`` (an evaluation, whose figures must be the reranked ones)
    the error propagates.
    """
    if not clauses:
        return Ranked([], list(queries or []))
    qs = list(queries) if queries is not None else offline_queries(clauses, claim)
    rankings: list[list[str]] = []
    weights: list[float] = []
    reasons: dict[str, list[str]] = {}
    roles = {c.key: unit_roles(c.heading_path, c.text) for c in clauses}
    contents = {c.key: is_contents(c.text, c.heading_path) for c in clauses}
    pinned: list[str] = []
    for q in qs:
        scoped = [c for c in clauses if q.scope in roles[c.key]] if q.scope else list(clauses)
        if not scoped:
            continue
        lists = [passage_bm25_ranking(scoped, q.text, bm25_ranking(scoped, q.text))]
        ws = [q.weight]
        if vectors is not None and embed is not None:
            vector = embed(q.text)
            lists.append(dense_passage_ranking(scoped, vectors, passages, vector) if passages is not None
                         else dense_unit_ranking(scoped, vectors, vector))
            ws.append(q.weight * unit_weight)
        elif index is not None and embed is not None:
            lists.append(dense_ranking(scoped, index, embed(q.text)))
            ws.append(q.weight * dense_weight)
        fused = [k for k, _ in rrf(lists, k=TRIAGE_RRF_K, weights=ws)] if len(lists) > 1 else lists[0]
        for pos, key in enumerate(fused[:REASON_DEPTH], start=1):
            reasons.setdefault(key, []).append(f"{q.name}#{pos}")
        first = next((k for k in fused if not contents[k]), None)  # a contents page is never pinned
        if q.pin and first is not None:
            pinned.append(first)
        rankings += lists
        weights += ws
    by_key = {c.key: c for c in clauses}
    said = _words(claim.text)
    scaled = [(k, v * _factor(by_key[k], said, contents[k])) for k, v in rrf(rankings, k=TRIAGE_RRF_K, weights=weights)]
    keys = [k for k, _ in sorted(scaled, key=lambda p: -p[1])]
    found = len(keys)
    seen = set(keys)
    keys += [c.key for c in clauses if c.key not in seen]
    ordered = [by_key[k] for k in keys]
    error = None
    if reranker is not None:
        ordered, error = _reranked(reranker, rerank_query(claim, qs), ordered, strict_rerank)
        if error is None:  # the reranker has ranked its head, whether a query found those clauses or not
            found = max(found, min(RERANK_TOP, len(ordered)))
    return Ranked(_pin(ordered, pinned), qs, reasons, found, reranker is not None and error is None, error)


def _reranked(reranker: Reranker, query: str, ordered: list[Clause], strict: bool) -> tuple[list[Clause], str | None]:
    """``(ordered reranked, None)``, or ``(ordered, the error in one line)`` when the reranker raised
    :class:`RerankUnavailable` or :class:`RerankRequestError` (re-raised when ``strict``)."""
    try:
        return _rerank(reranker, query, ordered), None
    except (RerankUnavailable, RerankRequestError) as exc:
        if strict:
            raise
        return ordered, f"{type(exc).__name__}: {exc}".splitlines()[0]


def rerank_query(claim: Claim, queries: Sequence[Query] = ()) -> str:
    """The query a cross-encoder reranks a claim's clauses with: :data:`RERANK_INSTRUCTION`, then the
    claim as a handler reads it: the form's descriptive fields (:func:`~longdoc.triage.queries.loss_fields`:
    no policy number, names or amount fields) and the adjuster's note whole, its condition-like
    sentences, dates and the quantum question included (a notice condition turns on "six weeks later",
    a sub-limit on the amount claimed), then the wording's own terms that the offline queries found
    (the ``defined terms`` and ``wording terms`` queries) when there are any. A claim with neither
    descriptive field nor note gives its whole text. A field holding a nested list or object (a JSON
    text: witnesses with their names and phones) is left out. At most :data:`RERANK_QUERY_CHARS`
    characters, cut at a space near the end (a note in a script without spaces is cut where the
    limit falls); whitespace collapsed."""
    described = [value for _, value in loss_fields(claim) if not _JSON_CONTAINER.match(value)]
    body = " ".join([*described, claim.note]).strip() or claim.text
    terms = " ".join(q.text for q in queries if q.name in ("defined terms", "wording terms"))
    text = " ".join((f"{RERANK_INSTRUCTION} Claim: {body}" + (f" Wording terms: {terms}" if terms else "")).split())
    return cut_near_space(text, RERANK_QUERY_CHARS)


def is_contents(text: str, heading_path: Sequence[str] = ()) -> bool:
    """True when a unit is (mostly) a table of contents: at least three non-blank lines, half of them
    or more ending in a page number after dot leaders, an ellipsis or a rule (``2.9 Freedom from
    Restriction ....... 6``; a line that is only a page number counts for neither), or a heading of
    its path reading ``Contents`` / ``Table of contents``."""
    lines = [line for line in text.splitlines() if line.strip() and not _PAGE_NUMBER.match(line)]
    entries = sum(1 for line in lines if _CONTENTS_LINE.search(line))
    return (len(lines) >= 3 and 2 * entries >= len(lines)) or any(_CONTENTS_HEADING.match(h) for h in heading_path)


def _words(text: str) -> str:
    """``text`` lower-cased, hyphens and commas as spaces, spaces collapsed (``Intensive-Care  Unit`` ->
    ``intensive care unit``): how a term and a claim are compared."""
    return " ".join(re.sub(r"[-‐–,]", " ", text.lower()).split())


def _factor(clause: Clause, said: str, contents: bool | None = None) -> float:
    """The fused score factor of ``clause`` for a claim whose text, as :func:`_words` gives it, is
    ``said``: :data:`CONTENTS_WEIGHT` for contents (``contents``: :func:`is_contents` of the clause
    when the caller has it, else found here); :data:`DEFINITION_WEIGHT` for a run of definitions,
    unless it defines a term of two words or more that the claim names (``intensive care unit``: the
    claim turns on what the term covers), else 1."""
    if is_contents(clause.text, clause.heading_path) if contents is None else contents:
        return CONTENTS_WEIGHT
    if not is_definitions(clause.text, clause.heading_path):
        return 1.0
    named = any(re.search(rf"\b{re.escape(_words(m.group(1)))}s?\b", said) for m in _TERM_LINE.finditer(clause.text))
    return NAMED_DEFINITION_WEIGHT if named else DEFINITION_WEIGHT


def _pin(ordered: list[Clause], keys: Sequence[str]) -> list[Clause]:
    """``ordered`` with each of ``keys`` (pinned queries' first hits) moved up to rank
    :data:`~longdoc.triage.queries.PIN_RANK` when it ranks lower; the others keep their order."""
    out = list(ordered)
    for key in keys:
        at = next((i for i, c in enumerate(out) if c.key == key), None)
        if at is not None and at >= PIN_RANK:
            out.insert(PIN_RANK - 1, out.pop(at))
    return out


def _rerank(reranker: Reranker, query: str, ordered: list[Clause]) -> list[Clause]:
    """The first :data:`RERANK_TOP` clauses reordered by ``reranker`` (each sent as its chunk with the
    clause's own text and key), the rest after them in fused order."""
    head = ordered[:RERANK_TOP]
    by_key = {c.key: c for c in head}
    order = [by_key[ch.chunk_id] for ch in reranker.rerank(query, [_stand_in(c) for c in head], len(head))
             if ch.chunk_id in by_key]
    picked = {c.key for c in order}
    return order + [c for c in head if c.key not in picked] + ordered[RERANK_TOP:]


def _stand_in(clause: Clause) -> Chunk:
    """The clause as a chunk for the :class:`Reranker` port (chunk id = the clause's pool key)."""
    return Chunk(chunk_id=clause.key, doc_id=clause.doc_id, doc_version=clause.doc_version, ordinal=clause.order,
                 source=clause.doc_id, page_start=None, page_end=None, section_id=clause.clause_id,
                 heading_path=list(clause.heading_path), text=clause.text, char_start=0, char_end=len(clause.text),
                 token_count=clause.tokens, content_hash=hashlib.sha256(clause.text.encode("utf-8")).hexdigest())


def legacy_rank(clauses: Sequence[Clause], claim: Claim, *, index: VectorIndex | None = None,
                embed: Callable[[str], Sequence[float]] | None = None) -> list[Clause]:
    """The pre-issue-31 ranking (:data:`LEGACY`): the whole claim text as one hybrid query."""
    vector = embed(claim.text) if index is not None and embed is not None else None
    return rank(clauses, claim.text, index=index if vector is not None else None, vector=vector)
