"""A loopback fake of Voyage AI's embeddings (``POST /v1/embeddings``) and rerank (``POST /v1/rerank``)
endpoints for tests.

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

Rerank (https://docs.voyageai.com/reference/reranker-api): the request is JSON ``{"query",
"documents": [str], "model", "top_k", "truncation"}``; the answer ``{"object": "list", "data":
[{"index", "relevance_score"}] best first, "model", "usage": {"total_tokens"}}``. The fake checks
the documented limits (at most 1,000 documents; query tokens x documents + document tokens within
:data:`RERANK_TOTAL_TOKENS` of the model; with ``truncation`` false, the query and each
query-document pair within the model's limits) and known models (:data:`RERANK_MODELS`), each
else a 400 with a ``detail``. Scores are deterministic: :func:`overlap_score`, the share of the
query's distinct words (as the vectors count them) that the document holds, ties by index. Faults
are injected as for embeddings (``fake.inject(status(429))``, ``status(400, "detail")``).
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

RERANK_MODELS = {"rerank-2.5": (8_000, 32_000, 600_000), "rerank-2.5-lite": (8_000, 32_000, 600_000),
                 "rerank-2": (4_000, 16_000, 600_000), "rerank-2-lite": (2_000, 8_000, 600_000),
                 "rerank-1": (2_000, 8_000, 300_000), "rerank-lite-1": (1_000, 4_000, 300_000)}
"""Rerank model -> (query tokens, query + document tokens, total tokens per request), as documented."""

_WORD = re.compile(r"[a-z0-9]+")
_TOKEN = re.compile(r"\w+|[^\w\s]")
_STOP = frozenset(
    ["a", "an", "and", "any", "are", "as", "at", "be", "by", "for", "from", "has", "have", "if", "in", "is", "it", "its", "of", "on", "or", "shall", "such", "that", "the", "this", "to", "under", "was", "were", "which", "will", "with", "you", "your", "not", "no", "all", "other", "may", "any"]
)


def count_tokens(text: str) -> int:
    """The fake's token count of ``text``: words and punctuation marks."""
    return len(_TOKEN.findall(text))


def stems(text: str) -> dict[str, int]:
    """Word stems of ``text`` with their counts (lower case, stop words and 1-letter words dropped, plural s cut)."""
    counts: dict[str, int] = {}
    for word in _WORD.findall(text.lower()):
        if word in _STOP or len(word) < 2:
            continue
        stem = word[:-1] if word.endswith("s") and len(word) > 3 else word
        counts[stem] = counts.get(stem, 0) + 1
    return counts


def overlap_score(query: str, document: str) -> float:
    """The fake reranker's relevance score: the share of the query's distinct stems found in ``document``
    (0.0 to 1.0, rounded to 4 places; 0.0 for a query without words)."""
    wanted = set(stems(query))
    return round(len(wanted & set(stems(document))) / len(wanted), 4) if wanted else 0.0


def hashed_vector(text: str, dimension: int) -> list[float]:
    """Deterministic unit vector of ``dimension`` floats: hashed bag of words of ``text``."""
    values = [0.0] * dimension
    counts = stems(text)
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

    def rerank_calls(self) -> list[dict[str, Any]]:
        """JSON bodies of every answered ``POST /v1/rerank`` request that succeeded."""
        with self.lock:
            return [r.body for r in self.requests if r.method == "POST" and r.path == "/v1/rerank" and r.answered == 200]

    def route(self, method: str, path: str, query: dict[str, list[str]], body: Any) -> tuple[int, Any]:
        """Answer ``POST /v1/embeddings`` and ``POST /v1/rerank``; anything else is a 404."""
        if (method, path) == ("POST", "/v1/rerank"):
            return self.rerank(body)
        if (method, path) != ("POST", "/v1/embeddings"):
            return 404, {"detail": f"fake serves POST /v1/embeddings and /v1/rerank only, not {method} {path}"}
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

    def rerank(self, body: Any) -> tuple[int, Any]:
        """One rerank request: a 400 naming the problem, or the documents best first by :func:`overlap_score`."""
        problem = _rerank_problem(body, self.max_texts)
        if problem:
            return 400, {"detail": problem}
        query, documents = body["query"], body["documents"]
        scored = sorted(((overlap_score(query, d), i) for i, d in enumerate(documents)), key=lambda p: (-p[0], p[1]))
        top_k = body.get("top_k") or len(documents)
        total = count_tokens(query) * len(documents) + sum(count_tokens(d) for d in documents)
        return 200, {"object": "list", "data": [{"index": i, "relevance_score": s} for s, i in scored[:top_k]],
                     "model": body["model"], "usage": {"total_tokens": total}}


def _rerank_problem(body: Any, max_documents: int) -> str | None:
    """What Voyage would refuse in a rerank request body (its 400 ``detail``), or None."""
    if not isinstance(body, dict) or not isinstance(body.get("query"), str) or not body["query"]:
        return "query must be a non-empty string"
    documents = body.get("documents")
    if not isinstance(documents, list) or not documents or not all(isinstance(d, str) for d in documents):
        return "documents must be a non-empty list of strings"
    if body.get("model") not in RERANK_MODELS:
        return f"Model {body.get('model')} is not supported. Supported models are {', '.join(RERANK_MODELS)}."
    if len(documents) > max_documents:
        return f"The number of documents cannot exceed {max_documents}. You sent {len(documents)}."
    query_limit, pair_limit, total_limit = RERANK_MODELS[body["model"]]
    q = count_tokens(body["query"])
    total = q * len(documents) + sum(count_tokens(d) for d in documents)
    if total > total_limit:
        return f"The total number of tokens is {total}, over the limit of {total_limit} for {body['model']}."
    if body.get("truncation") is False:
        if q > query_limit:
            return f"The query has {q} tokens, over the limit of {query_limit}, and truncation is false."
        over = next((i for i, d in enumerate(documents) if q + count_tokens(d) > pair_limit), None)
        if over is not None:
            return f"Query and document {over} exceed {pair_limit} tokens, and truncation is false."
    top_k = body.get("top_k")
    if top_k is not None and (not isinstance(top_k, int) or top_k < 1):
        return "top_k must be a positive integer"
    return None
