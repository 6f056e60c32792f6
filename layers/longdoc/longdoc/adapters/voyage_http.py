"""Voyage AI embeddings over plain HTTPS, without the ``voyageai`` SDK.

:class:`VoyageHttpEmbedder` is a drop-in for :class:`longdoc.adapters.embedders.VoyageEmbedder`
(same constructor, methods, limits, retries and errors) that speaks the REST endpoint itself
with the standard library. Batching, length checks and the split on a token-limit 400 are not
repeated here: both adapters inherit them from :class:`longdoc.adapters.voyage.VoyageBatching`
(batches counted by :func:`~longdoc.adapters.voyage.voyage_token_bound`, a refused batch sent
again only as halves, never unchanged). The request itself (retries, errors, key rotation) is
:class:`longdoc.adapters.voyage_rest.VoyageRest`, shared with the rerank adapter. The reason for
no SDK is size: ``import voyageai`` loads numpy, pillow, tokenizers, huggingface-hub and
langchain (about 130 MB unzipped in a Lambda function, ``docs/operations.md``), none of which an
embeddings call needs.

Wire format (https://docs.voyageai.com/reference/embeddings-api): ``POST {base_url}/embeddings``
with ``Authorization: Bearer <key>`` and JSON ``{"input": [str], "model", "input_type",
"truncation": false, "output_dimension", "encoding_format": "base64"}``; the answer is
``{"data": [{"embedding": <base64 of little-endian float32>, "index": i}], "usage":
{"total_tokens": n}}``; errors are JSON ``{"detail": message}``. ``base_url`` defaults to
``https://api.voyageai.com/v1``.

Retries: HTTP 429, 500, 502, 503, 504, timeouts and dropped connections are retried with
exponential backoff and full jitter (as ``VoyageEmbedder``) for ``max_attempts`` attempts in
all, then raise :class:`~longdoc.core.errors.EmbeddingUnavailable`; any other 4xx raises
:class:`~longdoc.core.errors.EmbeddingRequestError` at once. The key is sent in the header
only, never logged or put in an error message.

Key rotation: ``api_key`` may be a key source (``source(refresh=False) -> str``, e.g.
:class:`longdoc.adapters.secrets.SecretKey`); every request asks it for the current key, and a
401 asks again with ``refresh=True`` and retries once when the key changed.
"""

from __future__ import annotations

import base64
import math
import struct
from collections.abc import Callable
from typing import Any, Literal

from longdoc.adapters.voyage import VoyageBatching
from longdoc.adapters.voyage_rest import VoyageRest
from longdoc.core.errors import EmbeddingRequestError, EmbeddingUnavailable


class VoyageHttpEmbedder(VoyageBatching):
    """Voyage AI embeddings through the REST endpoint (AWS mode); see the module docstring.

    Args:
        api_key: Voyage API key (header only), or a key source (see the module docstring).
        model: embedding model (``voyage-3.5``); also :attr:`name`.
        dimension: ``output_dimension`` and the length of every returned vector.
        max_attempts: attempts per request, retries included.
        timeout: seconds per HTTP request.
        base_url: API root including ``/v1`` (tests: a loopback fake).
        retry_initial, retry_max: backoff multiplier and cap in seconds (full jitter).
        max_request_tokens: lowers the per-request token budget below the model's documented one.

    Shapes and limits are those of ``VoyageEmbedder`` (the same :class:`VoyageBatching` code):
    unit-length vectors in input order; at most 1,000 texts and 90 % of the model's token budget
    per request, counted by ``voyage_token_bound``; a token-limit 400 splits the batch in halves
    down to single texts; ``EmbeddingInputTooLong`` before any request for a text whose bound
    exceeds the model's context length, or for a single text Voyage refuses for its tokens.
    ``total_tokens`` sums ``usage.total_tokens`` over this instance's lifetime.
    """

    def __init__(self, api_key: str | Callable[..., str], model: str = "voyage-3.5", dimension: int = 1024, *, max_attempts: int = 5,
                 timeout: float = 60, base_url: str | None = None, retry_initial: float = 1.0,
                 retry_max: float = 20.0, max_request_tokens: int | None = None) -> None:
        self.name = model
        self.dimension = dimension
        self.total_tokens = 0
        self._rest = VoyageRest(api_key, "embeddings", label="embeddings", unavailable=EmbeddingUnavailable,
                                rejected=EmbeddingRequestError, max_attempts=max_attempts, timeout=timeout,
                                base_url=base_url, retry_initial=retry_initial, retry_max=retry_max)
        self._set_limits(model, max_request_tokens)

    def __repr__(self) -> str:
        return f"VoyageHttpEmbedder(model={self.name!r}, dimension={self.dimension})"

    def _call(self, texts: list[str], input_type: Literal["document", "query"]) -> list[list[float]]:
        """One embeddings request with retries (:class:`VoyageRest`); vectors checked and normalised."""
        answer = self._rest.post({"input": texts, "model": self.name, "input_type": input_type, "truncation": False,
                                  "output_dimension": self.dimension, "encoding_format": "base64"})
        self.total_tokens += int((answer.get("usage") or {}).get("total_tokens") or 0)
        data = sorted(answer.get("data") or [], key=lambda item: item.get("index", 0))
        vectors = [_decode(item["embedding"], self.dimension) for item in data]
        if len(vectors) != len(texts) or any(len(v) != self.dimension for v in vectors):
            raise ValueError(f"Voyage returned {len(vectors)} vectors for {len(texts)} texts "
                             f"(expected dimension {self.dimension})")
        return [_unit(v) for v in vectors]


def _decode(embedding: Any, dimension: int) -> list[float]:
    """A vector from base64 little-endian float32 (or a JSON list, accepted as well)."""
    if isinstance(embedding, str):
        raw = base64.b64decode(embedding)
        return list(struct.unpack(f"<{len(raw) // 4}f", raw))
    return [float(x) for x in embedding]


def _unit(vector: list[float]) -> list[float]:
    """``vector`` scaled to unit L2 length (a zero vector unchanged)."""
    norm = math.sqrt(sum(x * x for x in vector))
    return vector if norm == 0 else [x / norm for x in vector]
