"""A loopback fake of Voyage AI's embeddings endpoint (``POST /v1/embeddings``) for tests.

Wire format, as the real ``voyageai`` SDK (0.5) speaks it and as documented at
https://docs.voyageai.com/reference/embeddings-api: the request is JSON
``{"input": [str], "model", "input_type", "truncation", "output_dimension",
"encoding_format": "base64"}`` (the SDK always asks for base64 and decodes it as
little-endian float32); the answer is ``{"object": "list", "data": [{"object":
"embedding", "embedding": <base64 float32> | [float], "index": i}], "model", "usage":
{"total_tokens": n}}``. Errors are JSON ``{"detail": message}``; the SDK maps 400 to
``InvalidRequestError``, 401 to ``AuthenticationError``, 429 to ``RateLimitError``, 500 to
``ServerError`` and 502/503/504 to ``ServiceUnavailableError``.

The fake enforces the documented per-request limits: at most 1,000 texts, at most
:attr:`FakeVoyage.max_request_tokens` tokens per request (by default the documented
budget of the requested model, :data:`MODEL_REQUEST_TOKENS`: 120K for voyage-law-2, 320K
for voyage-3.5), and, with ``truncation`` false, no text over
:attr:`FakeVoyage.context_tokens`; otherwise a 400 (``InvalidRequestError``) worded as
Voyage words it (``The max allowed tokens per submitted batch is 120000. Your batch has
136012 tokens after truncation. ...``). Tokens are counted as words, numbers and
punctuation marks (a stand-in for Voyage's tokenizer: the 200 KB rate schedule of
``../shared/cases`` counts 133,514, near the ~136,000 Voyage reported).

Vectors are deterministic *hashed bags of words* (stop words dropped, log term
frequency), L2-normalised: texts that share words are close, so retrieval tests mean
something. Queries and documents share one space.
"""

from __future__ import annotations

import base64
import hashlib
import math
import re
import struct
from typing import Any

from tests.fakes.loopback import LoopbackFake

MODEL_REQUEST_TOKENS = {"voyage-3.5": 320_000, "voyage-4": 320_000, "voyage-2": 320_000,
                        "voyage-3.5-lite": 1_000_000, "voyage-4-lite": 1_000_000, "voyage-law-2": 120_000,
                        "voyage-3-large": 120_000, "voyage-4-large": 120_000, "voyage-code-3": 120_000,
                        "voyage-finance-2": 120_000}
"""Tokens per request by model (https://docs.voyageai.com/reference/embeddings-api); others get 120,000."""

_WORD = re.compile(r"[a-z0-9]+")
_TOKEN = re.compile(r"\w+|[^\w\s]")
_STOP = frozenset(
    ["a", "an", "and", "any", "are", "as", "at", "be", "by", "for", "from", "has", "have", "if", "in", "is", "it", "its", "of", "on", "or", "shall", "such", "that", "the", "this", "to", "under", "was", "were", "which", "will", "with", "you", "your", "not", "no", "all", "other", "may", "any"]
)


def count_tokens(text: str) -> int:
    """The fake's token count of ``text``: words and punctuation marks."""
    return len(_TOKEN.findall(text))


def hashed_vector(text: str, dimension: int) -> list[float]:
    """Deterministic unit vector of ``dimension`` floats: hashed bag of words of ``text``."""
    values = [0.0] * dimension
    counts: dict[str, int] = {}
    for word in _WORD.findall(text.lower()):
        if word in _STOP or len(word) < 2:
            continue
        stem = word[:-1] if word.endswith("s") and len(word) > 3 else word
        counts[stem] = counts.get(stem, 0) + 1
    for word, count in counts.items():
        digest = hashlib.blake2b(word.encode(), digest_size=8).digest()
        slot = int.from_bytes(digest[:4], "little") % dimension
        sign = 1.0 if digest[4] & 1 else -1.0
        values[slot] += sign * (1.0 + math.log(count))
    norm = math.sqrt(sum(v * v for v in values))
    if norm == 0:
        values[0] = 1.0
        return values
    return [v / norm for v in values]


class FakeVoyage(LoopbackFake):
    """Loopback Voyage embeddings API. ``base_url`` (``http://127.0.0.1:<port>/v1``) goes to the SDK.

    Attributes:
        max_texts: texts allowed per request (1,000, as documented).
        max_request_tokens: tokens allowed per request; None (default): the model's documented budget.
        context_tokens: tokens allowed per text (32,000 for voyage-3.5).
        embedded: every text embedded successfully, in order (to count re-embeddings).
    """

    name = "fake-voyage"

    def __init__(self, max_texts: int = 1000, max_request_tokens: int | None = None, context_tokens: int = 32_000):
        self.max_texts = max_texts
        self.max_request_tokens = max_request_tokens
        self.context_tokens = context_tokens
        self.embedded: list[str] = []
        super().__init__()
        self.base_url = f"{self.url}/v1"

    def rejected_calls(self) -> list[dict[str, Any]]:
        """JSON bodies of every ``POST /v1/embeddings`` request answered 400."""
        with self.lock:
            return [r.body for r in self.requests
                    if r.method == "POST" and r.path == "/v1/embeddings" and r.answered == 400]

    def embedding_calls(self) -> list[dict[str, Any]]:
        """JSON bodies of every answered ``POST /v1/embeddings`` request that succeeded."""
        with self.lock:
            return [r.body for r in self.requests
                    if r.method == "POST" and r.path == "/v1/embeddings" and r.answered == 200]

    def route(self, method: str, path: str, query: dict[str, list[str]], body: Any) -> tuple[int, Any]:
        """Answer ``POST /v1/embeddings``; anything else is a 404."""
        if (method, path) != ("POST", "/v1/embeddings"):
            return 404, {"detail": f"fake serves POST /v1/embeddings only, not {method} {path}"}
        texts = body.get("input")
        if isinstance(texts, str):
            texts = [texts]
        if not isinstance(texts, list) or not texts:
            return 400, {"detail": "input must be a non-empty list of strings"}
        if len(texts) > self.max_texts:
            return 400, {"detail": f"The batch size limit is {self.max_texts}. Your batch size is {len(texts)}."}
        if body.get("input_type") not in (None, "query", "document"):
            return 400, {"detail": f"input_type {body.get('input_type')!r} is not supported"}
        tokens = [count_tokens(t) for t in texts]
        cap = self.max_request_tokens or MODEL_REQUEST_TOKENS.get(str(body.get("model")), 120_000)
        if sum(tokens) > cap:
            return 400, {"detail": f"Request to model '{body.get('model')}' failed. The max allowed tokens "
                                   f"per submitted batch is {cap}. Your batch has {sum(tokens)} tokens after "
                                   "truncation. Please lower the number of tokens in the batch."}
        if body.get("truncation") is False:
            for i, n in enumerate(tokens):
                if n > self.context_tokens:
                    return 400, {"detail": f"Input {i} has {n} tokens, over the context length of "
                                           f"{self.context_tokens}, and truncation is false."}
        dimension = int(body.get("output_dimension") or 1024)
        data = []
        for i, text in enumerate(texts):
            vector = hashed_vector(text, dimension)
            if body.get("encoding_format") == "base64":
                encoded: Any = base64.b64encode(struct.pack(f"<{dimension}f", *vector)).decode()
            else:
                encoded = vector
            data.append({"object": "embedding", "embedding": encoded, "index": i})
        with self.lock:
            self.embedded.extend(texts)
        return 200, {"object": "list", "data": data, "model": body.get("model"),
                     "usage": {"total_tokens": sum(tokens)}}
