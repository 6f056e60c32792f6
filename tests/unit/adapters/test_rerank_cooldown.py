"""The circuit breaker in front of POST /triage's reranker (second break-it test: during a Voyage outage
every triage paid the 2 x 6 s again, and four at once on `longdoc serve` took up to 54 s)."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from longdoc.adapters.rerank_cooldown import CooldownReranker
from longdoc.core.errors import RerankRequestError, RerankUnavailable
from longdoc.core.models import Chunk


class _Scripted:
    """Raises the queued errors in turn, then answers the chunks as given; counts calls."""

    def __init__(self, *errors: Exception) -> None:
        self.errors = list(errors)
        self.calls = 0

    def rerank(self, query: str, chunks: Sequence[Chunk], top_k: int) -> list[Chunk]:
        self.calls += 1
        if self.errors:
            raise self.errors.pop(0)
        return list(chunks)[:top_k]


class _Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_after_an_outage_the_service_is_not_called_until_the_cooldown_has_passed() -> None:
    inner, clock = _Scripted(RerankUnavailable("Voyage rerank failed after 2 attempts: HTTP 503")), _Clock()
    breaker = CooldownReranker(inner, 60, clock)
    # Given one call that found the service unavailable
    with pytest.raises(RerankUnavailable, match="HTTP 503"):
        breaker.rerank("q", [], 3)
    # When triage asks again 30 s later, Then it fails at once, saying why, and the service is not called
    clock.now += 30
    with pytest.raises(RerankUnavailable, match=r"^not called: the reranker was unavailable 30 s ago"):
        breaker.rerank("q", [], 3)
    assert inner.calls == 1
    # And once 60 s have passed the service is tried again, and answers
    clock.now += 31
    assert breaker.rerank("q", [], 3) == [] and inner.calls == 2


def test_a_rejected_request_does_not_open_it() -> None:
    # Given a rejected request (a bad key: answered at once, nothing to wait for)
    inner = _Scripted(RerankRequestError("Voyage rejected the API key: HTTP 401"))
    breaker = CooldownReranker(inner, 60, _Clock())
    with pytest.raises(RerankRequestError):
        breaker.rerank("q", [], 3)
    # Then the next call goes to the service
    assert breaker.rerank("q", [], 3) == [] and inner.calls == 2
