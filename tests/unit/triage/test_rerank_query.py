"""Issue 31, item 3: the reranker reads the claim as a handler reads it, and a failed rerank never loses a triage."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from longdoc.core.errors import RerankRequestError, RerankUnavailable
from longdoc.core.models import Chunk
from longdoc.triage.claim import claim_from_json
from longdoc.triage.clauses import Clause
from longdoc.triage.queries import Query
from longdoc.triage.ranking import RERANK_INSTRUCTION, RERANK_QUERY_CHARS, RERANK_TOP, rank_claim, rerank_query


def _clause(n: int, heading: str, text: str) -> Clause:
    return Clause(f"k{n}", str(n), "wording", "v1", f"c{n}", (heading,), text, False, n, 50)


POOL = [_clause(1, "Water damage", "We cover sudden and accidental escape of water from a plumbing system."),
        _clause(2, "Notice of loss", "You must tell us of any loss as soon as possible and within 30 days."),
        _clause(3, "Mould", "We do not cover mould or fungi, however caused."),
        _clause(4, "Sewer back-up", "We cover water backing up through a sewer or drain, up to $10,000.")]


def _claim(note: str, **form: str) -> object:
    return claim_from_json({"claim_id": "c-9", "loss_date": "2024-03-02", "line_of_business": "home",
                            "policy_number": "HO-77-12345", "claimant": "Sam Example", "claim_amount": "$4,120.50",
                            "claim_form": {"description": "Water from a burst pipe in the kitchen", **form},
                            "adjuster_note": note})


class _Recording:
    """A :class:`~longdoc.core.ports.Reranker` stand-in: records the query, answers the chunks reversed."""

    def __init__(self) -> None:
        self.queries: list[str] = []

    def rerank(self, query: str, chunks: Sequence[Chunk], top_k: int) -> list[Chunk]:
        self.queries.append(query)
        return list(reversed(chunks))[:top_k]


class _Failing:
    def __init__(self, error: Exception) -> None:
        self.error = error

    def rerank(self, query: str, chunks: Sequence[Chunk], top_k: int) -> list[Chunk]:
        raise self.error


def test_the_rerank_query_is_the_instruction_then_the_claim_with_its_conditions_and_dates() -> None:
    # Given a claim whose note tells a late notice with a date, and form fields of boilerplate
    claim = _claim("The pipe burst on 2 March. The insured told us only on 20 April, after the floor was replaced.")
    query = rerank_query(claim)  # type: ignore[arg-type]
    # Then the instruction opens it, the description and the whole note follow (the late notice and its dates too)
    assert query == (f"{RERANK_INSTRUCTION} Claim: Water from a burst pipe in the kitchen The pipe burst on 2 March. "
                     "The insured told us only on 20 April, after the floor was replaced.")
    # And the policy number, the claimant's name and the amount field are left out (no clause turns on them)
    assert "HO-77-12345" not in query and "Sam Example" not in query and "4,120.50" not in query


def test_the_wordings_own_terms_join_the_rerank_query_and_a_long_claim_is_cut_at_a_word() -> None:
    claim = _claim("Water everywhere. " * 2000)
    queries = [Query("loss", "water burst pipe", 1.0), Query("wording terms", "escape of water", 0.5),
               Query("defined terms", "Plumbing System", 1.0)]
    query = rerank_query(claim, queries)  # type: ignore[arg-type]
    assert len(query) <= RERANK_QUERY_CHARS and query.endswith("everywhere.")
    short = rerank_query(_claim("Pipe burst."), queries)  # type: ignore[arg-type]
    assert short.endswith("Pipe burst. Wording terms: escape of water Plumbing System")


def test_rank_claim_reranks_with_that_query_and_says_so() -> None:
    claim = _claim("The pipe burst on 2 March. We were told six weeks later.")
    fused = [c.clause_id for c in rank_claim(POOL, claim).clauses]  # type: ignore[arg-type]
    reranker = _Recording()
    ranked = rank_claim(POOL, claim, reranker=reranker)  # type: ignore[arg-type]
    assert reranker.queries == [rerank_query(claim, ranked.queries)]  # type: ignore[arg-type]
    assert ranked.reranked and ranked.rerank_error is None
    assert [c.clause_id for c in ranked.clauses] == list(reversed(fused))


@pytest.mark.parametrize("error", [RerankUnavailable("Voyage rerank failed after 2 attempts: HTTP 503"),
                                   RerankRequestError("Voyage rerank (rerank-2.5, 4 documents) rejected: bad key")])
def test_a_failed_rerank_keeps_the_fused_order_and_names_the_error_unless_strict(error: Exception) -> None:
    claim = _claim("The pipe burst on 2 March.")
    fused = [c.clause_id for c in rank_claim(POOL, claim).clauses]  # type: ignore[arg-type]
    ranked = rank_claim(POOL, claim, reranker=_Failing(error))  # type: ignore[arg-type]
    assert [c.clause_id for c in ranked.clauses] == fused
    assert not ranked.reranked
    assert ranked.rerank_error == f"{type(error).__name__}: {error}"
    # An evaluation's figures must be the reranked ones: strict re-raises
    with pytest.raises(type(error)):
        rank_claim(POOL, claim, reranker=_Failing(error), strict_rerank=True)  # type: ignore[arg-type]


class _Counting(_Recording):
    def __init__(self) -> None:
        super().__init__()
        self.sizes: list[int] = []

    def rerank(self, query: str, chunks: Sequence[Chunk], top_k: int) -> list[Chunk]:
        self.sizes.append(len(chunks))
        return super().rerank(query, chunks, top_k)


def test_the_reranker_reads_the_first_60_units_not_20() -> None:
    # Given a wording of 70 units (blind wordings hold the deciding unit within the fused first 20 for
    # only 0.61-0.79 of claims, within 60 for 0.86-1.0: docs/benchmarks.md)
    pool = [_clause(n, f"Clause {n}", f"We cover water damage of kind {n} to the home.") for n in range(1, 71)]
    reranker = _Counting()
    ranked = rank_claim(pool, _claim("Water came through the ceiling."), reranker=reranker)  # type: ignore[arg-type]
    # Then one request carries the first 60, and the other 10 follow in fused order
    assert reranker.sizes == [60] and RERANK_TOP == 60
    fused = rank_claim(pool, _claim("Water came through the ceiling.")).clauses  # type: ignore[arg-type]
    assert [c.key for c in ranked.clauses[60:]] == [c.key for c in fused[60:]]
    assert [c.key for c in ranked.clauses[:60]] == [c.key for c in reversed(fused[:60])]


def test_a_long_note_without_spaces_is_cut_where_the_limit_falls_not_dropped() -> None:
    # Given a 13,000-character note in a script that writes no spaces (the break-it test: the cut went
    # back to the last space, the one after the description, and the whole note was lost)
    note = "行李在机场延误了三天才送到酒店" * 900
    query = rerank_query(_claim(note))  # type: ignore[arg-type]
    # Then the query is full (up to the limit) and holds the note's start
    assert RERANK_QUERY_CHARS - 200 <= len(query) <= RERANK_QUERY_CHARS
    assert "Water from a burst pipe in the kitchen 行李在机场延误了三天才送到酒店" in query


def test_a_nested_field_with_names_and_phones_stays_out_of_the_rerank_query() -> None:
    # Given witnesses as a list of objects (name, phone) beside the description
    claim = claim_from_json({"loss_date": "2024-03-02", "line_of_business": "home",
                             "claim_form": {"description": "Kitchen flooded by a burst hose"},
                             "witnesses": [{"name": "Anna Schmidt", "phone": "+44 20 7946 0000"}],
                             "adjuster_note": "The washing machine hose split overnight."})
    query = rerank_query(claim)  # type: ignore[arg-type]
    # Then the witness list is not sent; the description and the note are
    assert "Anna Schmidt" not in query and "7946" not in query
    assert query.endswith("Claim: Kitchen flooded by a burst hose The washing machine hose split overnight.")


def test_what_the_reranker_ranked_counts_as_ranked_even_when_no_query_found_it() -> None:
    # Given a claim that shares no word with the wording (a note of names only, or in another language:
    # the second break-it test saw "reranked" beside a warning that the band was in document order)
    claim = claim_from_json({"line_of_business": "home", "adjuster_note": "Jane Doe und John Smith"})
    plain = rank_claim(POOL, claim)  # type: ignore[arg-type]
    assert plain.found == 0
    # When a reranker orders the pool
    ranked = rank_claim(POOL, claim, reranker=_Recording())  # type: ignore[arg-type]
    # Then every clause it ordered counts as ranked
    assert ranked.reranked and ranked.found == len(POOL) and ranked.ranked_count == len(POOL)
