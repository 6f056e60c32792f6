"""Voyage AI rerank over plain HTTPS: a :class:`~longdoc.extract.retrieve.Reranker` (issue 13).

:class:`VoyageReranker` reorders the fused retrieval candidates with Voyage's cross-encoder
(``LONGDOC_RERANKER=voyage``, wired by :func:`longdoc.wiring.reranker`). The request, its
retries, errors and key rotation are :class:`longdoc.adapters.voyage_rest.VoyageRest`, the same
code the embeddings adapter uses; no ``voyageai`` SDK.

Wire format (https://docs.voyageai.com/reference/reranker-api): ``POST {base_url}/rerank`` with
``Authorization: Bearer <key>`` and JSON ``{"query": str, "documents": [str], "model", "top_k",
"truncation"}``; the answer is ``{"object": "list", "data": [{"index": i, "relevance_score": s}],
"model", "usage": {"total_tokens": n}}``, ``data`` best first, ``index`` the document's position
in the request; errors are JSON ``{"detail": message}``.

Documented limits (same page, read 2026-11-30):

* at most 1,000 documents per request;
* the query at most 8,000 tokens for rerank-2.5 and rerank-2.5-lite, 4,000 for rerank-2, 2,000 for
  rerank-2-lite and rerank-1, 1,000 for rerank-lite-1 (:data:`RERANK_QUERY_TOKENS`);
* the query plus any one document at most 32,000 / 32,000 / 16,000 / 8,000 / 8,000 / 4,000 tokens
  (same order, :data:`RERANK_PAIR_TOKENS`);
* "the number of query tokens x the number of documents + sum of the number of tokens in all
  documents" at most 600K for rerank-2.5, rerank-2.5-lite, rerank-2 and rerank-2-lite, 300K for
  rerank-1 and rerank-lite-1 (:data:`RERANK_TOTAL_TOKENS`). This is also the count Voyage bills
  (``usage.total_tokens``; pricing in ``docs/operations.md``, "Reranking").

Unknown models get the smallest of each limit.

What is sent: each chunk as :func:`~longdoc.core.documents.embedding_text` (its locator header,
then its words): the text its vector and its BM25 entry were made from. A chunk id given twice
is sent once (its first place counts).

Requests: the candidates are cut, in order, into requests of at most 1,000 documents whose
total-token count, by :func:`~longdoc.adapters.voyage.voyage_token_bound` (a conservative count,
no tokenizer download) and the formula above, stays within :data:`RERANK_BUDGET_FILL` of the
model's budget (``max_request_tokens`` lowers it). Each request asks for its best ``top_k``; the
answers are merged by ``relevance_score``, ties in input order. A cross-encoder scores each
(query, document) pair on its own, so scores for one query compare across requests. The
:class:`~longdoc.extract.retrieve.Retriever` sends ``max(top_k, 20)`` candidates: one request.
One candidate (or ``top_k`` < 1) needs no request.

Truncation (decided): sent as ``true``, explicitly. Voyage then scores a document whose pair is
over the model's limit by its opening and truncates a query over the query limit, instead of
refusing the whole request: one long chunk must not fail every clause type's retrieval. The chunk
itself is returned whole (the model reads all of it), only its score is from its opening. Chunks
are cut far below the limits (``LONGDOC_CHUNK_MAX_TOKENS`` <= 8,000 estimated tokens; queries are
a clause type's hints or a ``search_chunks`` query of at most 300 characters), so this only
bites with the small legacy models; the adapter logs how many documents may be truncated.

Errors: 429/5xx/timeouts/dropped connections are retried (``max_attempts``, backoff with full
jitter), then :class:`~longdoc.core.errors.RerankUnavailable`; another 4xx is
:class:`~longdoc.core.errors.RerankRequestError` naming the model and the number of documents
with Voyage's ``detail``; an answer that is not a ranking of the documents sent (an index out of
range or twice) is a ``RerankRequestError`` too. The key is never logged or put in an error.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Sequence
from typing import Any, TypedDict

from longdoc.adapters.voyage import voyage_token_bound
from longdoc.adapters.voyage_rest import VoyageRest
from longdoc.core.batching import pack
from longdoc.core.documents import embedding_text
from longdoc.core.errors import RerankRequestError, RerankUnavailable
from longdoc.core.models import Chunk
from longdoc.core.text import cut_near_space

log = logging.getLogger(__name__)

RERANK_MAX_DOCUMENTS = 1000
"""Documents per rerank request (https://docs.voyageai.com/reference/reranker-api)."""
RERANK_QUERY_TOKENS = {"rerank-2.5": 8_000, "rerank-2.5-lite": 8_000, "rerank-2": 4_000, "rerank-2-lite": 2_000,
                       "rerank-1": 2_000, "rerank-lite-1": 1_000}
"""Tokens a query may hold, per model (same page)."""
RERANK_PAIR_TOKENS = {"rerank-2.5": 32_000, "rerank-2.5-lite": 32_000, "rerank-2": 16_000, "rerank-2-lite": 8_000,
                      "rerank-1": 8_000, "rerank-lite-1": 4_000}
"""Tokens of the query plus any one document, per model (same page)."""
RERANK_TOTAL_TOKENS = {"rerank-2.5": 600_000, "rerank-2.5-lite": 600_000, "rerank-2": 600_000,
                       "rerank-2-lite": 600_000, "rerank-1": 300_000, "rerank-lite-1": 300_000}
"""Query tokens x documents + all document tokens, per request and model (same page)."""
RERANK_BUDGET_FILL = 0.9
"""Share of :data:`RERANK_TOTAL_TOKENS` one request may fill, counted by ``voyage_token_bound``."""
DEFAULT_RERANK_MODEL = "rerank-2.5"


class RerankBounds(TypedDict, total=False):
    """Keyword bounds of :class:`VoyageReranker`: attempts, and seconds per attempt."""

    max_attempts: int
    timeout: float


NO_BOUNDS: RerankBounds = {}
"""The adapter's own defaults (3 attempts of at most 15 s)."""
INTERACTIVE_BOUNDS: RerankBounds = {"max_attempts": 2, "timeout": 6.0}
""":class:`VoyageReranker` keyword bounds for a request a caller waits on (``POST /triage``, answered inside
API Gateway's 29 s integration timeout, https://docs.aws.amazon.com/apigateway/latest/developerguide/limits.html):
2 attempts of at most 6 s each instead of 3 x 15 s, so a Voyage outage costs a triage about 13 s (the
backoff between the two included) and leaves the model call the rest of the 29 s. One triage rerank is
one request of at most 60 clause units (:data:`longdoc.triage.ranking.RERANK_TOP`)."""
INTERACTIVE_COOLDOWN = 60.0
"""Seconds a reranker for a waiting caller is not called after Voyage was unavailable
(:class:`~longdoc.adapters.rerank_cooldown.CooldownReranker`): during an outage a warm API function pays
the 2 x 6 s once a minute, not on every triage."""


class VoyageReranker:
    """Voyage rerank as a :class:`~longdoc.extract.retrieve.Reranker`; see the module docstring.

    Args:
        api_key: Voyage API key (header only), or a key source (``SecretKey``).
        model: rerank model (``rerank-2.5``; ``rerank-2.5-lite`` costs less); also :attr:`name`.
        max_attempts, timeout, base_url, retry_initial, retry_max: as the embeddings adapter
            (attempts, seconds per request, API root with ``/v1``, backoff seconds), but
            tighter by default: 3 attempts of at most 15 s. One request carries about 20
            chunks, and a session waits on it; a server that accepts and never answers
            costs a session about 50 s before ``RerankUnavailable`` (then the state
            machine's retry policy applies), not the embedder's 5 x 60 s.
        max_request_tokens: lowers the per-request total-token budget below the documented one.

    ``total_tokens`` sums ``usage.total_tokens`` (billed tokens) over this instance's lifetime;
    ``requests`` counts the requests that succeeded.
    """

    def __init__(self, api_key: str | Callable[..., str], model: str = DEFAULT_RERANK_MODEL, *,
                 max_attempts: int = 3, timeout: float = 15, base_url: str | None = None,
                 retry_initial: float = 1.0, retry_max: float = 20.0, max_request_tokens: int | None = None) -> None:
        self.name = model
        self.total_tokens = 0
        self.requests = 0
        self.query_tokens = RERANK_QUERY_TOKENS.get(model, min(RERANK_QUERY_TOKENS.values()))
        self.pair_tokens = RERANK_PAIR_TOKENS.get(model, min(RERANK_PAIR_TOKENS.values()))
        budget = RERANK_TOTAL_TOKENS.get(model, min(RERANK_TOTAL_TOKENS.values()))
        if max_request_tokens is not None:
            budget = min(budget, max_request_tokens)
        self.request_budget = int(budget * RERANK_BUDGET_FILL)
        self._rest = VoyageRest(api_key, "rerank", label="rerank", unavailable=RerankUnavailable,
                                rejected=RerankRequestError, max_attempts=max_attempts, timeout=timeout,
                                base_url=base_url, retry_initial=retry_initial, retry_max=retry_max)

    def __repr__(self) -> str:
        return f"VoyageReranker(model={self.name!r})"

    def rerank(self, query: str, chunks: Sequence[Chunk], top_k: int) -> list[Chunk]:
        """At most ``top_k`` of ``chunks``, best first by Voyage's relevance score, each at most once.

        Raises :class:`RerankUnavailable` (retries spent) or :class:`RerankRequestError`.
        """
        unique = _distinct(chunks)
        if top_k < 1 or not unique:
            return []
        if len(unique) == 1:
            return unique
        texts = [embedding_text(c) for c in unique]
        query = fit_query(query, self.query_tokens)
        query_cost = voyage_token_bound(query)
        costs = [query_cost + voyage_token_bound(t) for t in texts]  # counted once, used twice
        self._warn_truncation(query_cost, costs)
        scored: list[tuple[float, int]] = []
        for batch in self.batches(costs):
            scored += self._scores(query, [texts[i] for i in batch], batch, min(top_k, len(batch)))
        scored.sort(key=lambda pair: (-pair[0], pair[1]))
        return [unique[i] for _, i in scored[:top_k]]

    def batches(self, costs: Sequence[int]) -> list[list[int]]:
        """Document positions ``0..len(costs)-1`` cut in order into requests: at most 1,000 documents,
        and the sum of ``costs`` (each: query tokens + the document's tokens, by
        ``voyage_token_bound``) within :attr:`request_budget` tokens."""
        return list(pack(range(len(costs)), costs.__getitem__, max_items=RERANK_MAX_DOCUMENTS,
                         max_cost=self.request_budget))

    def _scores(self, query: str, documents: list[str], positions: list[int], top_k: int) -> list[tuple[float, int]]:
        """One request: ``(relevance_score, caller's position)`` of its best ``top_k`` documents."""
        about = f" (rerank model {self.name!r}, {len(documents)} documents)"
        answer = self._rest.post({"query": query, "documents": documents, "model": self.name, "top_k": top_k,
                                  "truncation": True}, about)
        ranking = _ranking(answer.get("data"), len(documents), top_k, about)
        self.requests += 1
        self.total_tokens += _billed(answer.get("usage"), about)
        return [(score, positions[index]) for score, index in ranking]

    def _warn_truncation(self, query_cost: int, costs: Sequence[int]) -> None:
        """Log (a count, no text) when the query or documents may be over the model's limits (``costs``:
        query plus document tokens per document, as :meth:`batches` takes them)."""
        long_docs = sum(1 for cost in costs if cost > self.pair_tokens)
        if query_cost > self.query_tokens or long_docs:
            log.warning("rerank input may be truncated by Voyage (scored by its opening)",
                        extra={"rerank_model": self.name, "query_over_limit": query_cost > self.query_tokens,
                               "documents_over_limit": long_docs})


def fit_query(query: str, limit: int) -> str:
    """``query`` cut at its end (at a space when one is near) to at most ``limit`` tokens by
    :func:`~longdoc.adapters.voyage.voyage_token_bound` (the model's query limit, :data:`RERANK_QUERY_TOKENS`).
    Voyage would truncate a longer query itself (``truncation: true``); cutting it here keeps the
    request packing honest (each document's cost counts the query once more), so a long non-Latin
    query, whose bound is 2 a character, does not split one request into several."""
    if voyage_token_bound(query) <= limit:
        return query
    low, high = 0, len(query)
    while low < high:  # the longest prefix within the limit
        middle = (low + high + 1) // 2
        if voyage_token_bound(query[:middle]) <= limit:
            low = middle
        else:
            high = middle - 1
    return cut_near_space(query, low)


def _billed(usage: Any, about: str) -> int:
    """``usage.total_tokens`` of a rerank answer (0 when there is no ``usage``); RerankRequestError when
    it is there but not a non-negative whole number."""
    if usage is None:
        return 0
    tokens = usage.get("total_tokens", 0) if isinstance(usage, dict) else None
    if not isinstance(tokens, int) or isinstance(tokens, bool) or tokens < 0:
        raise RerankRequestError(f"Voyage's rerank answer{about} has a malformed usage: {str(usage)[:120]}")
    return tokens


def _distinct(chunks: Sequence[Chunk]) -> list[Chunk]:
    """``chunks`` without repeated chunk ids, each at its first place."""
    first: dict[str, Chunk] = {}
    for chunk in chunks:
        first.setdefault(chunk.chunk_id, chunk)
    return list(first.values())


def _ranking(data: Any, count: int, top_k: int, about: str) -> list[tuple[float, int]]:
    """``(score, index)`` pairs of a rerank answer's ``data``; RerankRequestError unless each index is
    in ``range(count)`` at most once, each score a finite number, and there are exactly ``min(top_k, count)``
    (Voyage returns ``top_k`` results when asked for them: https://docs.voyageai.com/reference/reranker-api;
    fewer is not a ranking of what was sent, and an empty one would pass the fused order off as reranked)."""
    wanted = min(top_k, count)
    if not isinstance(data, list) or len(data) != wanted:
        raise RerankRequestError(f"Voyage's rerank answer{about} is not a list of {wanted} results")
    out: list[tuple[float, int]] = []
    seen: set[int] = set()
    for item in data:
        index = item.get("index") if isinstance(item, dict) else None
        score = item.get("relevance_score") if isinstance(item, dict) else None
        if (not isinstance(index, int) or isinstance(index, bool) or not 0 <= index < count or index in seen
                or not isinstance(score, int | float) or isinstance(score, bool) or not math.isfinite(score)):
            raise RerankRequestError(f"Voyage's rerank answer{about} holds a bad result: {str(item)[:120]}")
        seen.add(index)
        out.append((float(score), index))
    return out
