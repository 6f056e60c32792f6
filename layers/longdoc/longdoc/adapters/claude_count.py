"""Claude's token-counting endpoint as a :class:`longdoc.core.ports.TokenCounter` (issue 25, item 4).

The token-counting endpoint takes the same request as creating a message and returns its input
tokens; under API version 2026-10-21 the same request rules apply to it (MIG1021,
https://platform.claude.com/docs/en/api/migration-2026-10-21). The count is an estimate the API
makes, free of the model's cost.
"""

from __future__ import annotations

import hashlib
import logging

from longdoc.adapters.claude import ClaudeModel
from longdoc.core.messages import ModelRequest

log = logging.getLogger(__name__)


class ClaudeTokenCounter:
    """A :class:`longdoc.core.ports.TokenCounter` on Claude's token-counting endpoint.

    ``count_text(text)`` counts ``text`` as the one user message of a request to ``model``
    (:meth:`ClaudeModel.count_tokens`, job ``extract``, no system or tools), so the count holds
    the few tokens of a message's framing besides the text: a slight over-count, the safe side for
    a budget. Counts are cached in-process by the SHA-256 of the text. When the endpoint fails
    (no key, throttled, unavailable, Bedrock's InvokeModel which has none), the calibrated
    estimate :func:`longdoc.core.tokens.estimate_tokens` for the model is returned instead and
    the failure is logged once: a budget never fails a run.
    """

    def __init__(self, model: ClaudeModel) -> None:
        self.model = model
        self._cache: dict[str, int] = {}
        self._failed = False

    def count_text(self, text: str) -> int:
        """Input tokens of ``text`` on the model (tokens); never raises (see the class docstring)."""
        from longdoc.core.errors import LongdocError
        from longdoc.core.messages import Message
        from longdoc.core.tokens import estimate_tokens

        key = hashlib.sha256(text.encode("utf-8")).hexdigest()
        if key in self._cache:
            return self._cache[key]
        if self._failed or not text:
            return estimate_tokens(text, self.model.name)
        request = ModelRequest(system=[], tools=[], max_tokens=1,
                               messages=[Message(role="user", content=[{"type": "text", "text": text}])])
        try:
            counted = self.model.count_tokens(request)
        except (LongdocError, NotImplementedError) as exc:
            log.warning("token counting unavailable for %s (%s); using the calibrated estimate", self.model.name, exc)
            self._failed = True
            return estimate_tokens(text, self.model.name)
        self._cache[key] = counted
        return counted
