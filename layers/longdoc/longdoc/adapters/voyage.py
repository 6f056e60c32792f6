"""Voyage AI embeddings: request limits, token bound, the batching both adapters share, and the SDK adapter.

:class:`VoyageBatching` is the one implementation of batching, length checks and the split on a
token-limit 400; :class:`VoyageEmbedder` (the ``voyageai`` SDK) and
:class:`longdoc.adapters.voyage_http.VoyageHttpEmbedder` (plain HTTPS, what AWS mode wires) add
only how one request is sent.

``voyageai`` is imported on first use (client construction), never when this module is imported.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from typing import Any, Literal

from longdoc.core.batching import pack
from longdoc.core.errors import EmbeddingInputTooLong, EmbeddingRequestError, EmbeddingUnavailable

# --- Voyage AI (AWS mode) ----------------------------------------------------------------

# Documented per-request limits of the Voyage embeddings endpoint
# (https://docs.voyageai.com/reference/embeddings-api): at most 1,000 texts per request, and
# "the total number of tokens in the list is at most 1M for voyage-4-lite and voyage-3.5-lite;
# 320K for voyage-4, voyage-3.5 and voyage-2; and 120K for voyage-4-large, voyage-3-large,
# voyage-code-3, voyage-finance-2, and voyage-law-2" (unknown models get the smallest, 120K).
VOYAGE_MAX_TEXTS_PER_REQUEST = 1000
VOYAGE_MAX_TOKENS_PER_REQUEST = {
    "voyage-3.5": 320_000,
    "voyage-4": 320_000,
    "voyage-2": 320_000,
    "voyage-3.5-lite": 1_000_000,
    "voyage-4-lite": 1_000_000,
    "voyage-4-large": 120_000,
    "voyage-3-large": 120_000,
    "voyage-code-3": 120_000,
    "voyage-finance-2": 120_000,
    "voyage-law-2": 120_000,
}
VOYAGE_DEFAULT_MAX_TOKENS_PER_REQUEST = 120_000  # the smallest documented budget
# Kept for importers only: the share of the budget an adapter counting chars / 4 would fill.
# Both Voyage adapters count with voyage_token_bound instead (VoyageBatching) and fill
# VOYAGE_BUDGET_FILL of the budget.
VOYAGE_TOKEN_SAFETY = 0.5
VOYAGE_BUDGET_FILL = 0.9
"""Share of the documented per-request token budget a batch may fill, counted by :func:`voyage_token_bound`."""


# Context length (tokens one text may hold) per model, from the same docs page:
# 32K for voyage-3.5 / -lite / voyage-4 / voyage-3-large; 16K for voyage-law-2 and
# voyage-code-2 (voyage-2: 4K, the smallest, also used for unknown models).
VOYAGE_CONTEXT_TOKENS = {
    "voyage-3.5": 32_000,
    "voyage-3.5-lite": 32_000,
    "voyage-4": 32_000,
    "voyage-4-lite": 32_000,
    "voyage-4-large": 32_000,
    "voyage-3-large": 32_000,
    "voyage-2": 16_000,
    "voyage-law-2": 16_000,
    "voyage-code-2": 16_000,
}
VOYAGE_DEFAULT_CONTEXT_TOKENS = 4_000  # the smallest documented context length

_DIGIT_OR_MARK = re.compile(r"[0-9!-/:-@\[-`{-~]")
_ASCII_LETTERS = re.compile(r"[A-Za-z]+")
_EXTRA_SPACE = re.compile(r"\s{2,}|\n")


def voyage_token_bound(text: str) -> int:
    """A conservative count of the tokens Voyage bills for ``text`` (tokens), with no tokenizer download.

    The SDK can count exactly (``Client.count_tokens``) but loads the model's tokenizer from
    Hugging Face at run time, and the ingest function has no network for that. Voyage's
    tokenizers (https://docs.voyageai.com/docs/tokenization: voyage-law-2, voyage-2 and the
    other 2-series models use Llama 2's) split numbers into single digits and punctuation
    into marks, so numeric tables run near 1.5 characters per token, far from the 4 of prose
    (a 200 KB rate schedule: ~136,000 tokens, not 50,000). Counted here: every digit and
    every ASCII mark 1, ASCII letters 1 per 3 (rounded up per word), every non-ASCII
    character 2, and each line break or extra blank 1. That is about twice the real count
    on English prose and 1.5 times on tables (the rate schedule: ~199,000); CJK characters
    that fall back to UTF-8 bytes may take 3, so a request over the limit is still split
    on Voyage's 400 (:meth:`VoyageEmbedder.embed_documents`).
    """
    letters = sum(-(-len(word) // 3) for word in _ASCII_LETTERS.findall(text))
    marks = len(_DIGIT_OR_MARK.findall(text))
    other = sum(2 for ch in text if not ch.isascii() and not ch.isspace())
    blanks = sum(len(run) - 1 if run != "\n" else 1 for run in _EXTRA_SPACE.findall(text))
    return letters + marks + other + blanks


def _is_token_limit(message: str) -> bool:
    """Whether a Voyage 400 says a request or one input holds too many tokens."""
    lowered = message.lower()
    return "tokens" in lowered and ("max allowed" in lowered or "context length" in lowered
                                    or "too many" in lowered or "exceed" in lowered)


class VoyageBatching:
    """Request batching, length checks and split-on-400, shared by both Voyage adapters.

    :class:`VoyageEmbedder` (the ``voyageai`` SDK, local mode and tests) and
    :class:`longdoc.adapters.voyage_http.VoyageHttpEmbedder` (plain HTTPS, AWS) inherit this one
    implementation and only say how one request is sent (:meth:`_call`). Limits come from
    :meth:`_set_limits`: the model's documented per-request token budget (lowered by
    ``max_request_tokens``), of which a batch fills :data:`VOYAGE_BUDGET_FILL` counted by
    :func:`voyage_token_bound`, and the model's context length per text.
    """

    name: str
    dimension: int
    context_tokens: int
    _token_budget: int

    def _set_limits(self, model: str, max_request_tokens: int | None) -> None:
        """Set the batch token budget and the context length for ``model``."""
        budget = VOYAGE_MAX_TOKENS_PER_REQUEST.get(model, VOYAGE_DEFAULT_MAX_TOKENS_PER_REQUEST)
        if max_request_tokens is not None:
            budget = min(budget, max_request_tokens)
        self._token_budget = int(budget * VOYAGE_BUDGET_FILL)
        self.context_tokens = VOYAGE_CONTEXT_TOKENS.get(model, VOYAGE_DEFAULT_CONTEXT_TOKENS)

    def _call(self, texts: list[str], input_type: Literal["document", "query"]) -> list[list[float]]:
        """Send one embeddings request; raise EmbeddingRequestError (with Voyage's message) on a 4xx."""
        raise NotImplementedError

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        """Embed chunk texts (``input_type="document"``), batching within Voyage's request limits.

        Raises EmbeddingInputTooLong (before any request, or when Voyage rejects one text
        alone for its length), EmbeddingUnavailable or EmbeddingRequestError.
        """
        self.check_lengths(texts)
        vectors: list[list[float]] = []
        position = 0
        for batch in self.batches(texts):
            vectors.extend(self._embed_splitting(batch, position))
            position += len(batch)
        return vectors

    def _embed_splitting(self, texts: list[str], offset: int) -> list[list[float]]:
        """Send ``texts`` (``offset`` = position of the first in the caller's list); on a token-limit
        400 send each half instead, never the same batch again; a single text so rejected raises
        EmbeddingInputTooLong naming its position."""
        try:
            return self._call(texts, "document")
        except EmbeddingRequestError as exc:
            if not _is_token_limit(str(exc)):
                raise
            if len(texts) == 1:
                limit = self.context_tokens
                raise EmbeddingInputTooLong(offset, voyage_token_bound(texts[0]), limit) from exc
        half = len(texts) // 2
        return self._embed_splitting(texts[:half], offset) + self._embed_splitting(texts[half:], offset + half)

    def embed_query(self, text: str) -> list[float]:
        """Embed one retrieval query (``input_type="query"``)."""
        self.check_lengths([text])
        return self._call([text], "query")[0]

    def check_lengths(self, texts: Sequence[str]) -> None:
        """Raise EmbeddingInputTooLong for the first text whose token bound exceeds the model's context length."""
        for index, text in enumerate(texts):
            tokens = voyage_token_bound(text)
            if tokens > self.context_tokens:
                raise EmbeddingInputTooLong(index, tokens, self.context_tokens)

    def batches(self, texts: Sequence[str]) -> list[list[str]]:
        """Split ``texts`` in order into request batches of at most 1,000 texts and the token budget.

        The budget is :data:`VOYAGE_BUDGET_FILL` of the model's documented per-request
        tokens, texts counted by :func:`voyage_token_bound`. A single text above the budget
        still gets a batch of its own (the API then decides; with ``truncation=False`` it
        rejects rather than truncates).
        """
        return list(pack(texts, voyage_token_bound, max_items=VOYAGE_MAX_TEXTS_PER_REQUEST,
                         max_cost=self._token_budget))


class VoyageEmbedder(VoyageBatching):
    """Voyage AI embeddings through the ``voyageai`` SDK (AWS mode wires the SDK-free ``VoyageHttpEmbedder``).

    Shapes: ``embed_documents`` returns one ``dimension``-float vector per text, in input
    order; Voyage vectors are unit length (Voyage FAQ: "Voyage AI embeddings are
    normalized to length 1"). Documents are sent with ``input_type="document"``, queries
    with ``input_type="query"``, always with ``truncation=False`` so an over-long text is
    an API error instead of a silently shortened vector.

    Batching follows the documented per-request limits of the embeddings endpoint
    (https://docs.voyageai.com/reference/embeddings-api): at most 1,000 texts, and at most
    :data:`VOYAGE_MAX_TOKENS_PER_REQUEST` tokens in total (320K for voyage-3.5, 120K for
    voyage-law-2 and the large models, 1M for the -lite ones; unknown models 120K). Tokens
    are counted with :func:`voyage_token_bound` (conservative, no tokenizer download) and a
    batch fills at most :data:`VOYAGE_BUDGET_FILL` of the budget (:meth:`batches`). Should
    Voyage still answer a batch with a token-limit 400 (``max allowed tokens per submitted
    batch``), the batch is split in halves and each half sent, down to single texts; a
    failing batch is never sent again unchanged. A single text rejected so is
    :class:`~longdoc.core.errors.EmbeddingInputTooLong`.

    Over-long texts: a text whose bound exceeds the model's context length (32K tokens for
    voyage-3.5, 16K for voyage-law-2, :data:`VOYAGE_CONTEXT_TOKENS`) raises
    :class:`~longdoc.core.errors.EmbeddingInputTooLong` naming its position before
    anything is sent; chunks are cut far below (``chunk_max_tokens``, and
    :mod:`longdoc.ingest.chunk.oversize` for unbroken text).

    Retries: 429 (``RateLimitError``), 500 (``ServerError``), 502/503/504
    (``ServiceUnavailableError``), timeouts and dropped connections (``APIConnectionError``)
    are retried with exponential backoff and full jitter (tenacity's
    ``wait_exponential_jitter`` with multiplier and jitter ``retry_initial``, capped at
    ``retry_max`` seconds) for
    ``max_attempts`` attempts in all, then raise
    :class:`~longdoc.core.errors.EmbeddingUnavailable`. Other 4xx answers raise
    :class:`~longdoc.core.errors.EmbeddingRequestError` at once. (The SDK's own retry loop
    leaves out 500 and dropped connections, so it is set to one attempt and this loop
    does the retrying.) ``timeout`` is seconds per request; ``base_url`` points the SDK
    at another endpoint (tests use a loopback fake).

    ``total_tokens`` counts the tokens Voyage reported as used (``usage.total_tokens``)
    over this instance's lifetime.
    """

    def __init__(
        self,
        api_key: str,
        model: str = "voyage-3.5",
        dimension: int = 1024,
        *,
        max_attempts: int = 5,
        timeout: float = 60,
        base_url: str | None = None,
        retry_initial: float = 1.0,
        retry_max: float = 20.0,
        max_request_tokens: int | None = None,
    ):
        """Create the SDK client (no network call). ``dimension`` is sent as ``output_dimension``.

        ``max_request_tokens`` lowers the per-request token budget below the model's
        documented limit (e.g. to stay within a low tokens-per-minute rate limit);
        :data:`VOYAGE_BUDGET_FILL` applies to it too.
        """
        import voyageai

        self.name = model
        self.dimension = dimension
        self.total_tokens = 0
        self._client: Any = voyageai.Client(api_key=api_key, max_retries=1, timeout=timeout, base_url=base_url)
        self._set_limits(model, max_request_tokens)
        self._max_attempts = max_attempts
        self._retry_initial = retry_initial
        self._retry_max = retry_max

    def _call(self, texts: list[str], input_type: Literal["document", "query"]) -> list[list[float]]:
        from tenacity import Retrying, retry_if_exception_type, stop_after_attempt, wait_exponential_jitter
        from voyageai import error as voyage_error

        transient = (voyage_error.RateLimitError, voyage_error.ServerError, voyage_error.ServiceUnavailableError,
                     voyage_error.Timeout, voyage_error.APIConnectionError)
        try:
            for attempt in Retrying(
                reraise=True,
                stop=stop_after_attempt(self._max_attempts),
                wait=wait_exponential_jitter(multiplier=self._retry_initial, max=self._retry_max,
                                            jitter=self._retry_initial),
                retry=retry_if_exception_type(transient),
            ):
                with attempt:
                    result = self._client.embed(
                        texts,
                        model=self.name,
                        input_type=input_type,
                        truncation=False,
                        output_dimension=self.dimension,
                    )
        except transient as exc:
            raise EmbeddingUnavailable(
                f"Voyage embeddings failed after {self._max_attempts} attempts: {type(exc).__name__}: {exc}"
            ) from exc
        except voyage_error.VoyageError as exc:
            raise EmbeddingRequestError(f"Voyage rejected the request: {type(exc).__name__}: {exc}") from exc
        self.total_tokens += int(getattr(result, "total_tokens", 0) or 0)
        embeddings = [list(map(float, v)) for v in result.embeddings]
        if len(embeddings) != len(texts) or any(len(v) != self.dimension for v in embeddings):
            raise ValueError(
                f"Voyage returned {len(embeddings)} vectors for {len(texts)} texts "
                f"(expected dimension {self.dimension})"
            )
        return [_unit(v) for v in embeddings]


def _unit(vector: list[float]) -> list[float]:
    """Return ``vector`` scaled to unit L2 length (a zero vector is returned unchanged)."""
    norm = math.sqrt(sum(x * x for x in vector))
    return vector if norm == 0 else [x / norm for x in vector]
