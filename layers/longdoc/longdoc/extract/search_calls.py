"""The model's own search (``search_chunks``) and the evidence rule for ``record_not_found`` (issue 20).

Registry: the session's tools are ``extract_clause``, ``record_not_found`` and
``search_chunks`` (:data:`longdoc.extract.tools.TOOLS`), the same list in every
session and on every transport (synchronous loop, batch rounds), so the cached prefix stays
byte-identical.

``search_chunks`` runs the same hybrid retrieval as for clause types
(:func:`longdoc.extract.context.session_retriever`: the run's document version only, with its
``term`` / ``line_of_business`` filters) for the model's query, takes its ``top_k`` best
chunks and answers with those the session was not shown yet, fenced as in the prompt, naming
the ones left out. Every chunk shown to the session (prompt, next pages, searches) is in its
*shown* set; a citation of any other chunk is rejected. A query already searched in this run
is not run again. Budget per model conversation (a synchronous session, or a bulk conversation
across its rounds): :attr:`SessionOptions.search_max_calls` calls and
:attr:`SessionOptions.search_max_tokens` estimated tokens of returned chunks; past it the tool
answers an error saying so. Searches are recorded in CASE_FACTS (``searches``, checkpointed),
and their answers are input tokens of the next call, so usage and cost count them.

Evidence rule: ``record_not_found`` names the ``queries`` it searched and the ``chunk_ids``
it examined. When the best initial-retrieval similarity of that clause type is below
:attr:`SessionOptions.search_min_score`, a ``not_found`` without a search of the model's own
for it (a search naming the clause type, or one of the queries it names) is rejected while
the conversation's search budget lasts (one budget per model conversation: a synchronous session,
or a bulk conversation across its rounds).
"""

from __future__ import annotations

from typing import Any

from longdoc.core.messages import ToolUseBlock
from longdoc.core.records import NotFoundEvidence, SearchRecord
from longdoc.extract.context import session_retriever
from longdoc.extract.prompt import MAX_QUERY_CHARS, MAX_SEARCH_TOP_K, render_search_result
from longdoc.extract.retrieve import chunk_tokens
from longdoc.extract.session_types import Deps, Session, SessionOptions

DEFAULT_SEARCH_TOP_K = 5


def _key(query: str) -> str:
    return " ".join(query.casefold().split())


def budget_left(s: Session, options: SessionOptions) -> tuple[int, int]:
    """``(calls, tokens)`` of the conversation's search budget still unused: the searches recorded
    since the session its model conversation began in (:attr:`Session.conversation_from`; a
    synchronous session is one conversation, a bulk conversation spans rounds). One budget per
    conversation on both transports, so the evidence rule of ``record_not_found`` says the same to
    the same replies: a bulk round never finds a fresh budget the conversation has already spent
    and refuses a ``not_found`` the synchronous loop accepts."""
    start = s.number if s.conversation_from is None else s.conversation_from
    mine = [r for r in s.facts.searches if start <= r.session <= s.number]
    return options.search_max_calls - len(mine), options.search_max_tokens - sum(r.tokens for r in mine)


def _arguments(tool_input: dict[str, Any]) -> tuple[str, int, str | None]:
    """``(query, top_k, clause_type)`` of a ``search_chunks`` call; ValueError names what is wrong."""
    query, top_k = tool_input.get("query"), tool_input.get("top_k", DEFAULT_SEARCH_TOP_K)
    if not isinstance(query, str) or not query.strip() or len(query) > MAX_QUERY_CHARS:
        raise ValueError(f"query must be 1-{MAX_QUERY_CHARS} characters")
    if top_k is None:
        top_k = DEFAULT_SEARCH_TOP_K
    if not isinstance(top_k, int) or isinstance(top_k, bool) or not 1 <= top_k <= MAX_SEARCH_TOP_K:
        raise ValueError(f"top_k must be an integer from 1 to {MAX_SEARCH_TOP_K}")
    clause = tool_input.get("clause_type")
    return query.strip(), top_k, clause if isinstance(clause, str) and clause else None


def run_search(deps: Deps, s: Session, block: ToolUseBlock, options: SessionOptions) -> tuple[str, bool]:
    """Run one ``search_chunks`` call; returns ``(tool_result text, is_error)`` (never raises).

    Records the search on CASE_FACTS and adds the chunks it returns to the session's shown set.
    """
    try:
        query, top_k, clause = _arguments(block.input)
    except ValueError as exc:
        return f"rejected: {exc}", True
    earlier = next((r for r in s.facts.searches if _key(r.query) == _key(query)), None)
    if earlier is not None:
        return (f"already searched for {query!r} (session {earlier.session}); its chunks "
                f"{', '.join(earlier.chunk_ids) or '(none new)'} are in your context; not run again"), False
    calls, tokens = budget_left(s, options)
    if calls <= 0 or tokens <= 0:
        return (f"search budget of this session spent ({options.search_max_calls} calls, "
                f"{options.search_max_tokens} tokens); decide with the chunks you have"), True
    ranked = session_retriever(deps, s).rank(query, deps.embedder.embed_query(query), top_k)
    shown = s.shown if s.shown is not None else set()
    seen = [c.chunk_id for c in ranked if c.chunk_id in shown]
    fresh, used = [], 0
    for chunk in (c for c in ranked if c.chunk_id not in shown):
        if used + chunk_tokens(chunk) > tokens:
            break
        fresh.append(chunk)
        used += chunk_tokens(chunk)
    s.facts.searches.append(SearchRecord(session=s.number, query=query, clause_type=clause,
                                         chunk_ids=[c.chunk_id for c in fresh], seen=seen, tokens=used))
    shown.update(c.chunk_id for c in fresh)
    s.shown = shown
    return render_search_result(query, fresh, seen), False


def _strings(value: Any) -> list[str]:
    return [v for v in value if isinstance(v, str)] if isinstance(value, list) else []


def screen_not_found(s: Session, block: ToolUseBlock, options: SessionOptions) -> tuple[str | None, NotFoundEvidence]:
    """Check a ``record_not_found`` call against the evidence rule (module docstring).

    Returns ``(rejection text or None, evidence)``; the evidence keeps only queries the harness
    ran in this run and chunk ids the session was shown.
    """
    clause = block.input.get("clause_type")
    ran = {_key(r.query): r.query for r in s.facts.searches}
    queries = [ran[_key(q)] for q in _strings(block.input.get("queries")) if _key(q) in ran]
    shown = s.shown or set()
    evidence = NotFoundEvidence(queries=queries, chunk_ids=[c for c in _strings(block.input.get("chunk_ids"))
                                                            if c in shown],
                                reason=block.input.get("reason") if isinstance(block.input.get("reason"), str) else None)
    if not isinstance(clause, str) or clause in s.facts.open or clause not in s.facts.pending:
        return None, evidence
    searched = bool(queries) or any(r.clause_type == clause for r in s.facts.searches)
    score = s.facts.retrieval_scores.get(clause, 1.0)
    calls, tokens = budget_left(s, options)
    if searched or score >= options.search_min_score or calls <= 0 or tokens <= 0:
        return None, evidence
    return (f"rejected: the chunks retrieved for {clause} match it weakly (best similarity {score:.2f} < "
            f"{options.search_min_score:.2f}); call search_chunks with your own wording for {clause} (naming it "
            f"as clause_type), then record the result with the queries you ran ({calls} search call(s) left)"), evidence


def unseen_citation(s: Session, block: ToolUseBlock) -> str | None:
    """The rejection text when an ``extract_clause`` call cites a chunk the session was never shown (else None)."""
    shown = s.shown or set()
    cites = block.input.get("citations")
    ids = [c.get("chunk_id") for c in cites if isinstance(c, dict)] if isinstance(cites, list) else []
    unseen = [cid for cid in ids if isinstance(cid, str) and cid in s.chunks and cid not in shown]
    if not unseen:
        return None
    return (f"rejected: chunk(s) {', '.join(unseen)} were never shown to you in this session; cite only chunks "
            "of your context or of search_chunks results")

