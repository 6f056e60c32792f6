"""Contract tests for the Reranker interface, then the Voyage rerank adapter against the loopback fake.

Every reranker in ``RERANKERS`` must pass the same contract (``NoRerank`` and ``VoyageReranker``
behind ``tests/fakes/voyage_server.py``); add an adapter by adding one entry. The fake scores a
document by the share of the query's words it holds (``overlap_score``), so the expected orders
below are exact. No test leaves loopback.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest

from longdoc.adapters.voyage import voyage_token_bound
from longdoc.adapters.voyage_rerank import RERANK_MAX_DOCUMENTS, VoyageReranker
from longdoc.core.documents import embedding_text
from longdoc.core.errors import RerankRequestError, RerankUnavailable
from longdoc.core.models import Chunk
from longdoc.extract.retrieve import NoRerank, Reranker
from tests.fakes.loopback import Fault, drop, not_json, slow, status
from tests.fakes.voyage_server import FakeVoyage, overlap_score

TEST_KEY = "pa-rerank-test-not-a-real-key"


def chunk(ordinal: int, text: str, doc: str = "msa") -> Chunk:
    """A one-page chunk of document ``doc`` (version v1) holding ``text``."""
    return Chunk(chunk_id=f"{doc}:v1:{ordinal:04d}", doc_id=doc, doc_version="v1", ordinal=ordinal, source=f"{doc}.pdf",
                 page_start=ordinal + 1, page_end=ordinal + 1, section_id=str(ordinal + 1), text=text, char_start=0,
                 char_end=len(text), token_count=max(1, len(text) // 4), content_hash=f"h{ordinal}")


def voyage_reranker(fake: FakeVoyage, **kwargs) -> VoyageReranker:  # type: ignore[no-untyped-def]
    kwargs.setdefault("retry_initial", 0.001)
    kwargs.setdefault("retry_max", 0.01)
    return VoyageReranker(TEST_KEY, base_url=fake.base_url, **kwargs)


RERANKERS: dict[str, Callable[[FakeVoyage], Reranker]] = {
    "none": lambda fake: NoRerank(),
    "voyage-fake": voyage_reranker,
}

CANDIDATES = [chunk(0, "Fees are payable within thirty days of invoice."),
              chunk(1, "This Agreement is governed by the laws of New York."),
              chunk(2, "Either party may terminate for convenience on notice."),
              chunk(3, "The courts of New York have exclusive jurisdiction over disputes."),
              chunk(4, "Notices must be in writing.")]
QUERY = "governing law New York courts jurisdiction"


# --- the contract --------------------------------------------------------------------------------

@pytest.mark.parametrize("name", sorted(RERANKERS))
@pytest.mark.parametrize("top_k", [1, 3, 5, 9])
def test_at_most_top_k_distinct_chunks_all_from_the_input(voyage: FakeVoyage, name: str, top_k: int) -> None:
    # Given a reranker and five candidates
    reranker = RERANKERS[name](voyage)
    # When it reranks them for a query keeping top_k
    got = reranker.rerank(QUERY, CANDIDATES, top_k)
    # Then it returns min(top_k, 5) chunks, each one of the inputs, none twice, none altered
    assert len(got) == min(top_k, len(CANDIDATES))
    assert all(c in CANDIDATES for c in got)
    assert len({c.chunk_id for c in got}) == len(got)


@pytest.mark.parametrize("name", sorted(RERANKERS))
def test_the_same_input_gives_the_same_order(voyage: FakeVoyage, name: str) -> None:
    # Given a reranker, When the same candidates are reranked twice for the same query
    reranker = RERANKERS[name](voyage)
    first = reranker.rerank(QUERY, CANDIDATES, 4)
    again = reranker.rerank(QUERY, list(CANDIDATES), 4)
    # Then both orders are equal
    assert [c.chunk_id for c in first] == [c.chunk_id for c in again]


@pytest.mark.parametrize("name", sorted(RERANKERS))
def test_nothing_to_rank_or_nothing_wanted_gives_nothing(voyage: FakeVoyage, name: str) -> None:
    # Given a reranker, When it gets no candidates, or is asked for none
    reranker = RERANKERS[name](voyage)
    # Then it returns an empty list, and a lone candidate comes back alone
    assert reranker.rerank(QUERY, [], 5) == []
    assert reranker.rerank(QUERY, CANDIDATES, 0) == []
    assert reranker.rerank(QUERY, CANDIDATES[:1], 5) == CANDIDATES[:1]


# --- Voyage-specific behaviour -------------------------------------------------------------------

def test_voyage_orders_by_the_servers_scores_and_sends_each_chunks_embedding_text(voyage: FakeVoyage) -> None:
    # Given candidates in fused order holding 0, 3, 0, 4 and 0 of the query's 6 words (governing,
    # law, new, york, court, jurisdiction)
    reranker = voyage_reranker(voyage)
    # When the Voyage adapter keeps the best three
    got = reranker.rerank(QUERY, CANDIDATES, 3)
    # Then they are ordered by the server's relevance score, ties in input order: 3 (courts,
    # jurisdiction, new, york), 1 (law, new, york), then the next-best of the rest
    scores = {c.ordinal: overlap_score(QUERY, embedding_text(c)) for c in CANDIDATES}
    assert scores[3] > scores[1] > max(scores[0], scores[2], scores[4])
    assert [c.ordinal for c in got] == [3, 1, 0]
    # And one request carried every chunk's embedding text (locator header first), the model,
    # top_k and truncation true, with the key as a bearer token only
    [call] = voyage.rerank_calls()
    assert call == {"query": QUERY, "documents": [embedding_text(c) for c in CANDIDATES], "model": "rerank-2.5",
                    "top_k": 3, "truncation": True}
    assert call["documents"][1].startswith("[doc: msa.pdf | section: 2 | page: 2]\n")
    assert [r.api_key for r in voyage.requests] == [TEST_KEY]
    assert TEST_KEY not in repr(reranker)
    # And the billed tokens Voyage reported are kept
    assert reranker.total_tokens > 0 and reranker.requests == 1


def test_voyage_retries_a_429_and_a_dropped_connection(voyage: FakeVoyage) -> None:
    # Given an API that throttles once and drops the connection once
    voyage.inject(status(429, "rate limited"), drop())
    # When reranking, Then the third attempt succeeded with the same order as without faults
    got = voyage_reranker(voyage).rerank(QUERY, CANDIDATES, 2)
    assert [c.ordinal for c in got] == [3, 1]
    assert len(voyage.calls("POST", "/v1/rerank")) == 3


def test_voyage_gives_up_after_max_attempts_with_rerank_unavailable(voyage: FakeVoyage) -> None:
    # Given an API that keeps answering 503
    voyage.inject(*[status(503, "overloaded")] * 5)
    # When reranking with 3 attempts allowed, Then RerankUnavailable names the last failure, after 3 requests
    with pytest.raises(RerankUnavailable, match="Voyage rerank failed after 3 attempts: HTTP 503: overloaded") as caught:
        voyage_reranker(voyage, max_attempts=3).rerank(QUERY, CANDIDATES, 2)
    assert TEST_KEY not in str(caught.value)
    assert len(voyage.calls("POST", "/v1/rerank")) == 3


def test_voyage_by_default_gives_up_after_three_attempts(voyage: FakeVoyage) -> None:
    # Given an API that keeps answering 503, and the adapter's default attempts
    voyage.inject(*[status(503, "overloaded")] * 5)
    # When reranking, Then it gives up after 3 requests (a session waits on it)
    with pytest.raises(RerankUnavailable, match="after 3 attempts"):
        VoyageReranker(TEST_KEY, base_url=voyage.base_url, retry_initial=0.001, retry_max=0.01).rerank(
            QUERY, CANDIDATES, 2)
    assert len(voyage.calls("POST", "/v1/rerank")) == 3


def test_voyage_a_server_that_never_answers_ends_in_bounded_time(voyage: FakeVoyage) -> None:
    # Given an API that accepts every request and answers only after 2 s, and a 0.2 s timeout
    voyage.inject(*[slow(2.0)] * 3)
    started = time.monotonic()
    # When reranking, Then each attempt times out and RerankUnavailable follows the third one, naming
    # the endpoint that never answered and the setting to check
    with pytest.raises(RerankUnavailable, match="after 3 attempts") as caught:
        voyage_reranker(voyage, timeout=0.2).rerank(QUERY, CANDIDATES, 2)
    assert time.monotonic() - started < 1.5
    assert str(caught.value).endswith(f"(no answer from {voyage.base_url}/rerank: check LONGDOC_VOYAGE_BASE_URL "
                                      "and the network)")


def test_voyage_an_answer_that_is_not_json_is_a_request_error_naming_it(voyage: FakeVoyage) -> None:
    # Given a proxy in front of the API that answers 200 with an HTML page
    voyage.inject(not_json(200, "<html>proxy login</html>"))
    # When reranking, Then a RerankRequestError names Voyage rerank, the setting to check and the body's start,
    # without retrying
    with pytest.raises(RerankRequestError) as caught:
        voyage_reranker(voyage).rerank(QUERY, CANDIDATES, 2)
    assert str(caught.value) == ("Voyage rerank answered (rerank model 'rerank-2.5', 5 documents) with a body that "
                                 "is not JSON (is LONGDOC_VOYAGE_BASE_URL right?): '<html>proxy login</html>'")
    assert len(voyage.calls("POST", "/v1/rerank")) == 1


def test_voyage_a_400_is_a_request_error_naming_model_and_problem_without_the_key(voyage: FakeVoyage) -> None:
    # Given a model the API does not serve (the fake refuses it as Voyage does, with a detail)
    reranker = voyage_reranker(voyage, model="rerank-9")
    # When reranking, Then a RerankRequestError names the model, the document count and Voyage's detail
    with pytest.raises(RerankRequestError) as caught:
        reranker.rerank(QUERY, CANDIDATES, 2)
    message = str(caught.value)
    assert "rerank model 'rerank-9', 5 documents" in message
    assert "HTTP 400: Model rerank-9 is not supported" in message
    # And it was not retried, and the key is nowhere in the error
    assert len(voyage.calls("POST", "/v1/rerank")) == 1
    assert TEST_KEY not in message and TEST_KEY not in repr(caught.value.__cause__)


def test_voyage_an_injected_400_detail_is_passed_on(voyage: FakeVoyage) -> None:
    # Given an API that refuses the request with its own detail
    voyage.inject(status(400, "The total number of tokens exceeds 600000."))
    # When reranking, Then the detail is in the error, after one request
    with pytest.raises(RerankRequestError, match="HTTP 400: The total number of tokens exceeds 600000"):
        voyage_reranker(voyage).rerank(QUERY, CANDIDATES, 2)
    assert len(voyage.calls("POST", "/v1/rerank")) == 1


def test_voyage_never_sends_more_than_1000_documents_and_merges_the_requests(voyage: FakeVoyage) -> None:
    # Given 2,500 candidates, a few of which hold more of the query's words
    texts = [f"Clause {i} on delivery schedules." for i in range(2500)]
    texts[2100] = "Governed by the laws of New York; the courts of New York have jurisdiction."
    texts[40] = "The laws of New York apply."
    texts[1500] = "Courts may hear disputes."
    candidates = [chunk(i, t) for i, t in enumerate(texts)]
    # When reranked keeping the best three
    got = voyage_reranker(voyage).rerank(QUERY, candidates, 3)
    # Then the requests held 1,000, 1,000 and 500 documents (the documented cap), none refused
    sizes = [len(call["documents"]) for call in voyage.rerank_calls()]
    assert sizes == [1000, 1000, 500] and max(sizes) <= RERANK_MAX_DOCUMENTS
    assert [r.answered for r in voyage.calls("POST", "/v1/rerank")] == [200, 200, 200]
    # And the merged answer is the best three over all requests, by the server's scores
    assert [c.ordinal for c in got] == [2100, 40, 1500]


def test_voyage_keeps_each_request_within_the_total_token_budget(voyage: FakeVoyage) -> None:
    # Given a per-request budget far below the documented 600K, and candidates of ~60 bound tokens each
    candidates = [chunk(i, f"Section {i}: the supplier shall deliver the goods to the buyer's premises.")
                  for i in range(30)]
    candidates[17] = chunk(17, "Governing law is New York; its courts have jurisdiction.")
    reranker = voyage_reranker(voyage, max_request_tokens=1000)
    # When reranked
    got = reranker.rerank(QUERY, candidates, 2)
    # Then several requests were sent, each within 90 % of the budget by query x documents + documents
    calls = voyage.rerank_calls()
    q = voyage_token_bound(QUERY)
    assert len(calls) > 1 and sum(len(c["documents"]) for c in calls) == 30
    assert all(q * len(c["documents"]) + sum(voyage_token_bound(d) for d in c["documents"]) <= 900 for c in calls)
    # And the best chunk over all of them comes first
    assert got[0].ordinal == 17


def test_voyage_sends_a_repeated_chunk_once(voyage: FakeVoyage) -> None:
    # Given candidates where one chunk appears twice
    got = voyage_reranker(voyage).rerank(QUERY, [CANDIDATES[3], CANDIDATES[1], CANDIDATES[3]], 5)
    # Then it was sent and returned once
    assert [len(c["documents"]) for c in voyage.rerank_calls()] == [2]
    assert [c.ordinal for c in got] == [3, 1]


@pytest.mark.parametrize("data", [
    [{"index": 7, "relevance_score": 0.9}],
    [{"index": 1, "relevance_score": 0.9}, {"index": 1, "relevance_score": 0.8}],
    [{"index": 0, "relevance_score": "high"}],
    [{"index": 0, "relevance_score": float("nan")}, {"index": 1, "relevance_score": 0.5}],
    [{"index": 0, "relevance_score": float("inf")}, {"index": 1, "relevance_score": 0.5}],
    {"index": 0},
])
def test_voyage_an_answer_that_is_not_a_ranking_of_the_documents_is_refused(voyage: FakeVoyage, data: object) -> None:
    # Given an API answering 200 with indexes out of range or repeated, a non-numeric score, or no list
    voyage.inject(Fault(status=200, body={"object": "list", "data": data, "usage": {"total_tokens": 1}}))
    # When reranking, Then RerankRequestError says the answer is bad (no chunk is invented or repeated)
    with pytest.raises(RerankRequestError, match="rerank answer"):
        voyage_reranker(voyage).rerank(QUERY, CANDIDATES[:3], 2)


@pytest.mark.parametrize("key", ["pa-SEC\nRET123", "pa-SECRET123 \r\nX-Evil: 1", "pa-SECRET€123"])
def test_voyage_a_key_no_header_can_carry_is_refused_without_printing_it(voyage: FakeVoyage, key: str) -> None:
    # Given a key with a line break inside it, or a character outside Latin-1
    reranker = VoyageReranker(key, base_url=voyage.base_url, retry_initial=0.001, retry_max=0.01)
    # When reranking, Then a RerankRequestError says what is wrong with the key without quoting it,
    # and nothing was sent
    with pytest.raises(RerankRequestError, match="the Voyage API key holds a line break") as caught:
        reranker.rerank(QUERY, CANDIDATES, 2)
    assert "SEC" not in str(caught.value) and "RET123" not in str(caught.value)
    assert voyage.calls("POST", "/v1/rerank") == []


@pytest.mark.parametrize("data", [[], [{"index": 1, "relevance_score": 0.9}]])
def test_voyage_an_answer_with_fewer_results_than_asked_is_refused(voyage: FakeVoyage, data: object) -> None:
    # Given an API answering 200 with no result, or with one where two were asked for (an empty answer
    # would otherwise pass the fused order off as reranked; the break-it test's finding)
    voyage.inject(Fault(status=200, body={"object": "list", "data": data, "usage": {"total_tokens": 1}}))
    # When reranking, Then RerankRequestError says how many results were expected
    with pytest.raises(RerankRequestError, match="is not a list of 2 results"):
        voyage_reranker(voyage).rerank(QUERY, CANDIDATES[:3], 2)


@pytest.mark.parametrize("usage", [{"total_tokens": "many"}, [1], {"total_tokens": -5}, {"total_tokens": True}])
def test_voyage_a_malformed_usage_is_a_request_error_not_a_crash(voyage: FakeVoyage, usage: object) -> None:
    # Given an answer whose ranking is fine but whose usage is not a token count
    data = [{"index": 1, "relevance_score": 0.9}, {"index": 0, "relevance_score": 0.1}]
    voyage.inject(Fault(status=200, body={"object": "list", "data": data, "usage": usage}))
    # When reranking, Then it is a RerankRequestError (triage then keeps its fused order), not a ValueError
    with pytest.raises(RerankRequestError, match="malformed usage"):
        voyage_reranker(voyage).rerank(QUERY, CANDIDATES[:3], 2)


def test_voyage_an_answer_trickled_a_byte_at_a_time_ends_at_the_timeout(voyage: FakeVoyage) -> None:
    # Given an API that sends its headers at once, then the body a byte every 0.1 s (about 10 s in all)
    from tests.fakes.loopback import drip
    voyage.inject(drip(0.1))
    started = time.monotonic()
    # When reranking with a 0.5 s timeout and one attempt, Then it gives up after about 0.5 s, not when
    # the body is done: the timeout bounds the whole request, not each socket read
    with pytest.raises(RerankUnavailable, match="after 1 attempts"):
        voyage_reranker(voyage, timeout=0.5, max_attempts=1).rerank(QUERY, CANDIDATES, 2)
    assert time.monotonic() - started < 2.0


def test_voyage_a_long_non_latin_query_is_cut_to_the_query_limit_and_sent_in_one_request(voyage: FakeVoyage) -> None:
    # Given a 12,000-character Cyrillic query (bound 2 tokens a character: 24,000, over rerank-2.5's
    # 8,000-token query limit) and 60 candidates
    query = ("Чемодан пропал в аэропорту, его так и не нашли. " * 300)[:12_000]
    candidates = [chunk(i, f"Baggage clause {i}: we pay for lost baggage up to the limit.") for i in range(60)]
    reranker = voyage_reranker(voyage)
    got = reranker.rerank(query, candidates, 60)
    # Then one request carried all 60, its query within the limit and the query's start kept
    [call] = voyage.rerank_calls()
    assert len(call["documents"]) == 60 and len(got) == 60
    assert voyage_token_bound(call["query"]) <= 8_000 and query.startswith(call["query"])


@pytest.mark.parametrize("fault", ["head", "error body"])
def test_voyage_a_trickled_status_line_or_error_body_also_ends_at_the_timeout(voyage: FakeVoyage, fault: str) -> None:
    # Given an API that sends its status line and headers a byte every 0.1 s, or a 503 whose body comes a
    # byte every 0.1 s (the second break-it test: POST /triage waited 518 s and 914 s)
    from tests.fakes.loopback import drip
    voyage.inject(drip(0.1, head=True) if fault == "head" else drip(0.1, fault=status(503, "x" * 500)))
    started = time.monotonic()
    # When reranking with a 0.5 s timeout and one attempt, Then it gives up after about 0.5 s
    with pytest.raises(RerankUnavailable, match="after 1 attempts"):
        voyage_reranker(voyage, timeout=0.5, max_attempts=1).rerank(QUERY, CANDIDATES, 2)
    assert time.monotonic() - started < 2.0
