"""What every strict fake exposes of its :class:`tests.fakes.strict_claude.ClaudeContract`."""

from __future__ import annotations

from typing import Any


class HoldsContract:
    """Mixin of the strict fakes (``StrictClaude``, ``StrictBatches``, ``StrictBedrock``): the
    refused requests and the prompt-cache totals of the fake's ``contract``."""

    contract: Any

    @property
    def rejected(self) -> list[Any]:
        """Every refused request (:class:`tests.fakes.strict_claude.Rejection`), in order."""
        return self.contract.rejected

    def cache_stats(self) -> dict[str, Any]:
        """This fake's cache totals (:meth:`tests.fakes.claude_cache.StrictCache.stats`): read,
        written and uncached input tokens, totals and per request."""
        return self.contract.cache_stats()
