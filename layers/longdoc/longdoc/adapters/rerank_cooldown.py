"""A reranker that stops calling for a while after its service was unavailable (a circuit breaker).

``POST /triage`` waits on its reranker inside API Gateway's 29 s: during a Voyage outage each request
would pay the full retries (2 x 6 s, :data:`longdoc.adapters.voyage_rerank.INTERACTIVE_BOUNDS`) before
answering in fused order. :class:`CooldownReranker` remembers the outage: for ``cooldown`` seconds
after a :class:`~longdoc.core.errors.RerankUnavailable` it raises one at once, naming when the
service failed, so triage answers in fused order with its warning without waiting; the first call
after the cool-down tries the service again. A :class:`~longdoc.core.errors.RerankRequestError`
(a rejected key or request, answered at once) does not open it.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

from longdoc.core.errors import RerankUnavailable
from longdoc.core.models import Chunk
from longdoc.core.ports import Reranker


class CooldownReranker:
    """``inner`` (a :class:`~longdoc.core.ports.Reranker`), skipped for ``cooldown`` seconds after it raised
    :class:`RerankUnavailable`; ``clock`` gives seconds (``time.monotonic``; tests pass their own).
    ``inner`` is kept as :attr:`inner`; the state is this instance's (one per process: a warm Lambda
    remembers the outage between invocations)."""

    def __init__(self, inner: Reranker, cooldown: float, clock: Callable[[], float] = time.monotonic) -> None:
        self.inner = inner
        self.cooldown = cooldown
        self._clock = clock
        self._failed_at: float | None = None

    def rerank(self, query: str, chunks: Sequence[Chunk], top_k: int) -> list[Chunk]:
        """``inner.rerank(query, chunks, top_k)``; raises :class:`RerankUnavailable` without calling it
        while cooling down, and when it raises that itself (which starts the cool-down)."""
        now = self._clock()
        if self._failed_at is not None and now - self._failed_at < self.cooldown:
            raise RerankUnavailable(f"not called: the reranker was unavailable {now - self._failed_at:.0f} s ago "
                                    f"(tried again {self.cooldown:.0f} s after that)")
        try:
            ranked = self.inner.rerank(query, chunks, top_k)
        except RerankUnavailable:
            self._failed_at = self._clock()
            raise
        self._failed_at = None
        return ranked
